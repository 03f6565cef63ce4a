// Where Zulip's built web app is installed (ZULIP_WEB_DIR), and what a usable folder holds. The
// service, `npm start` (through dist/manage.js locate) and the tests all resolve it here.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The webpack manifest: the files of each entry point, by content-hashed name. */
export const WEBPACK_STATS_FILE = 'webpack-stats-production.json';

/**
 * sha256 of Zulip Server 10.2's webpack-stats-production.json. Zulip's production build is
 * reproducible (built twice with identical content hashes) and every bundle is named by the hash
 * of its content, so this one file pins every bundle the pages link to.
 */
export const ZULIP_WEB_STATS_SHA256 = '9d5b4381fb74a5af6e540f0211baadcb0e81395d9bce4d9232759c9cbdd0f51e';

/** The repository's root: the folder holding services/web (from src/lib in tests, from dist/ when bundled). */
export function repositoryRoot(from = __dirname): string | null {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'services', 'web', 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return null;
  }
}

/** Where `npm run web:install` puts the folder. */
export function defaultInstallDir(root = repositoryRoot()): string | null {
  return root && path.join(root, 'var', 'zulip-web');
}

function hasWebApp(dir: string): boolean {
  return fs.existsSync(path.join(dir, WEBPACK_STATS_FILE)) && fs.existsSync(path.join(dir, 'static'));
}

/**
 * The folder to serve: ZULIP_WEB_DIR when set, else var/zulip-web under the repository if
 * installed there, else ../shared/zulip-web beside the checkout (the build our tests use);
 * null when there is none.
 */
export function resolveZulipWebDir(configured: string | undefined, root = repositoryRoot()): string | null {
  if (configured) return path.resolve(configured);
  if (!root) return null;
  const candidates = [path.join(root, 'var', 'zulip-web'), path.join(root, '..', 'shared', 'zulip-web')];
  return candidates.find(hasWebApp) ?? null;
}

export function sha256OfFile(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** What is wrong with `dir` as a web app folder (empty: nothing). */
export function zulipWebDirProblems(dir: string): string[] {
  const problems: string[] = [];
  for (const entry of [WEBPACK_STATS_FILE, 'static/webpack-bundles', 'templates/zerver/app/index.html']) {
    if (!fs.existsSync(path.join(dir, entry))) problems.push(`${path.join(dir, entry)} is missing`);
  }
  return problems;
}

export const INSTALL_HINT =
  "Zulip's web app is not installed: `npm run web:install -- --from <zulip-server-10.2.tar.gz or a built folder>` " +
  '(or set ZULIP_WEB_DIR); see docs/web-app.md.';

/** The folder to serve and what is wrong with it (empty: usable; no folder at all: how to install one). */
export function locateZulipWebDir(configured: string | undefined): { dir: string | null; problems: string[] } {
  const dir = resolveZulipWebDir(configured);
  return { dir, problems: dir ? zulipWebDirProblems(dir) : [INSTALL_HINT] };
}
