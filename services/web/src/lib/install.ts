// Installing Zulip's built web app into the folder the service serves (var/zulip-web by default),
// from a Zulip Server release tarball (zulip-server-10.2/: prod-static/serve/, templates/,
// webpack-stats-production.json) or from a built folder laid out as served (static/, templates/,
// webpack-stats-production.json). Pinned: the manifest's sha256 must be the one of Zulip 10.2's
// reproducible build, checked on the source before anything is copied and on the copy after, and
// every file the manifest names must be there. The old folder is replaced only by a complete one.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256OfFile, WEBPACK_STATS_FILE, ZULIP_WEB_STATS_SHA256 } from './zulip-web-dir';

export class InstallError extends Error {}

interface SourceLayout {
  stats: string;
  staticDir: string;
  templatesDir: string;
  license: string | null;
}

/** Where the three parts are in `dir`: a built folder, or the top of an unpacked release tarball. */
function layoutOf(dir: string): SourceLayout | null {
  const existing = (file: string) => (fs.existsSync(file) ? file : null);
  if (fs.existsSync(path.join(dir, 'static')) && fs.existsSync(path.join(dir, WEBPACK_STATS_FILE))) {
    return {
      stats: path.join(dir, WEBPACK_STATS_FILE),
      staticDir: path.join(dir, 'static'),
      templatesDir: path.join(dir, 'templates'),
      license: existing(path.join(dir, 'LICENSE')),
    };
  }
  if (fs.existsSync(path.join(dir, 'prod-static', 'serve')) && fs.existsSync(path.join(dir, WEBPACK_STATS_FILE))) {
    return {
      stats: path.join(dir, WEBPACK_STATS_FILE),
      staticDir: path.join(dir, 'prod-static', 'serve'),
      templatesDir: path.join(dir, 'templates'),
      license: existing(path.join(dir, 'LICENSE')),
    };
  }
  // A release tarball unpacks into one folder (zulip-server-10.2/).
  const entries = fs.readdirSync(dir, { withFileTypes: true });
  if (entries.length === 1 && entries[0].isDirectory()) return layoutOf(path.join(dir, entries[0].name));
  return null;
}

function checkPin(statsFile: string, expected: string): void {
  const actual = sha256OfFile(statsFile);
  if (actual !== expected) {
    throw new InstallError(
      `${statsFile} has sha256 ${actual}, not ${expected} (Zulip Server 10.2's): not the pinned build, nothing installed`,
    );
  }
}

/** Every file of every entry point the manifest names is in the copy (a truncated copy is refused). */
function checkBundles(dir: string): void {
  const stats = JSON.parse(fs.readFileSync(path.join(dir, WEBPACK_STATS_FILE), 'utf8')) as {
    chunks: Record<string, string[]>;
  };
  const files = new Set(Object.values(stats.chunks).flat());
  const missing = [...files].filter((file) => !fs.existsSync(path.join(dir, 'static', 'webpack-bundles', file)));
  if (missing.length) throw new InstallError(`the bundles are incomplete: ${missing.slice(0, 5).join(', ')} missing`);
  if (!fs.existsSync(path.join(dir, 'templates', 'zerver', 'app', 'index.html')))
    throw new InstallError('templates/zerver/app/index.html is missing');
}

export interface InstallOptions {
  /** A release tarball (.tar.gz, .tgz, .tar.xz) or a folder. */
  from: string;
  to: string;
  /** The manifest's expected sha256 (another release's, at the operator's own risk). */
  sha256?: string;
}

export function installZulipWeb({ from, to, sha256 = ZULIP_WEB_STATS_SHA256 }: InstallOptions): void {
  const source = path.resolve(from);
  const target = path.resolve(to);
  if (!fs.existsSync(source)) throw new InstallError(`${source} does not exist`);
  let unpacked: string | null = null;
  const staging = `${target}.installing-${process.pid}`;
  try {
    let dir = source;
    if (fs.statSync(source).isFile()) {
      unpacked = fs.mkdtempSync(path.join(os.tmpdir(), 'zulip-web-'));
      execFileSync('tar', ['-xf', source, '-C', unpacked], { stdio: ['ignore', 'ignore', 'pipe'] });
      dir = unpacked;
    }
    const layout = layoutOf(dir);
    if (!layout)
      throw new InstallError(
        `${source} is neither a Zulip Server release (prod-static/serve/, templates/, ${WEBPACK_STATS_FILE}) nor a built web app folder (static/, templates/, ${WEBPACK_STATS_FILE})`,
      );
    checkPin(layout.stats, sha256);

    fs.rmSync(staging, { recursive: true, force: true });
    fs.mkdirSync(staging, { recursive: true });
    fs.cpSync(layout.staticDir, path.join(staging, 'static'), { recursive: true });
    fs.cpSync(layout.templatesDir, path.join(staging, 'templates'), { recursive: true });
    fs.copyFileSync(layout.stats, path.join(staging, WEBPACK_STATS_FILE));
    if (layout.license) fs.copyFileSync(layout.license, path.join(staging, 'LICENSE'));
    checkPin(path.join(staging, WEBPACK_STATS_FILE), sha256);
    checkBundles(staging);

    const previous = `${target}.previous-${process.pid}`;
    if (fs.existsSync(target)) fs.renameSync(target, previous);
    fs.renameSync(staging, target);
    fs.rmSync(previous, { recursive: true, force: true });
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
    if (unpacked) fs.rmSync(unpacked, { recursive: true, force: true });
  }
}
