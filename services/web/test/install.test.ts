// npm run web:install: Zulip's built web app copied where the service serves it, from a built
// folder or a release tarball, refused (and the installed folder kept) when the manifest's
// checksum is not the pinned one or a bundle is missing.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installZulipWeb } from '../src/lib/install';
import { resolveZulipWebDir, sha256OfFile, WEBPACK_STATS_FILE, ZULIP_WEB_STATS_SHA256 } from '../src/lib/zulip-web-dir';

const built = resolveZulipWebDir(process.env.ZULIP_WEB_DIR)!;
let scratch: string;

beforeAll(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'web-install-'));
  // The command line as npm run web:install runs it: the bundled dist/manage.js.
  execFileSync(process.execPath, [path.join(__dirname, '../../../scripts/build.mjs'), 'web'], { stdio: 'ignore' });
}, 120_000);

afterAll(() => {
  fs.rmSync(scratch, { recursive: true, force: true });
});

const manage = path.join(__dirname, '..', 'dist', 'manage.js');

/** A release tarball's layout holding the manifest, the templates and every bundle (not the images). */
function releaseTree(root: string, stats = fs.readFileSync(path.join(built, WEBPACK_STATS_FILE))): string {
  const top = path.join(root, 'zulip-server-10.2');
  fs.mkdirSync(path.join(top, 'prod-static', 'serve'), { recursive: true });
  fs.cpSync(path.join(built, 'static', 'webpack-bundles'), path.join(top, 'prod-static', 'serve', 'webpack-bundles'), {
    recursive: true,
  });
  fs.cpSync(path.join(built, 'templates'), path.join(top, 'templates'), { recursive: true });
  fs.writeFileSync(path.join(top, WEBPACK_STATS_FILE), stats);
  return top;
}

test('the manifest served by the tests is the pinned one', () => {
  expect(sha256OfFile(path.join(built, WEBPACK_STATS_FILE))).toBe(ZULIP_WEB_STATS_SHA256);
});

test('a built folder is installed whole and found by the service', () => {
  const target = path.join(scratch, 'var', 'zulip-web');
  installZulipWeb({ from: built, to: target });
  for (const file of [WEBPACK_STATS_FILE, 'static/images/default-avatar.png', 'templates/zerver/app/index.html']) {
    expect(fs.readFileSync(path.join(target, file)).equals(fs.readFileSync(path.join(built, file)))).toBe(true);
  }
  expect(fs.readdirSync(path.join(target, 'static/generated/emoji/images-google-64')).length).toBe(
    fs.readdirSync(path.join(built, 'static/generated/emoji/images-google-64')).length,
  );
  // var/zulip-web under a checkout comes before ../shared/zulip-web.
  fs.mkdirSync(path.join(scratch, 'services', 'web'), { recursive: true });
  fs.writeFileSync(path.join(scratch, 'services', 'web', 'package.json'), '{}');
  expect(resolveZulipWebDir('', scratch)).toBe(target);
  expect(resolveZulipWebDir('/elsewhere', scratch)).toBe('/elsewhere');
});

test('a release tarball is installed through the command line', () => {
  const tree = path.join(scratch, 'release');
  releaseTree(tree);
  const tarball = path.join(scratch, 'zulip-server-10.2.tar.gz');
  execFileSync('tar', ['-czf', tarball, '-C', tree, 'zulip-server-10.2']);
  const target = path.join(scratch, 'from-tarball');
  const output = execFileSync(process.execPath, [manage, 'install', '--from', tarball, '--to', target]).toString();
  expect(output).toContain(`installed in ${target}`);
  expect(sha256OfFile(path.join(target, WEBPACK_STATS_FILE))).toBe(ZULIP_WEB_STATS_SHA256);
  expect(fs.existsSync(path.join(target, 'static', 'webpack-bundles'))).toBe(true);
  expect(fs.existsSync(path.join(target, 'templates', 'zerver', 'base.html'))).toBe(true);
});

test('another manifest is refused before anything is copied, and the installed folder is kept', () => {
  const target = path.join(scratch, 'kept');
  fs.mkdirSync(target);
  fs.writeFileSync(path.join(target, 'marker'), 'installed before');
  const original = fs.readFileSync(path.join(built, WEBPACK_STATS_FILE), 'utf8');
  const tree = releaseTree(path.join(scratch, 'tampered'), Buffer.from(original.replace('"done"', '"done" ')));
  let failure: { status: number; stderr: Buffer } | undefined;
  try {
    execFileSync(process.execPath, [manage, 'install', '--from', tree, '--to', target], { stdio: 'pipe' });
  } catch (error) {
    failure = error as { status: number; stderr: Buffer };
  }
  expect(failure?.status).toBe(1);
  expect(failure?.stderr.toString()).toContain(`not ${ZULIP_WEB_STATS_SHA256}`);
  expect(fs.readdirSync(target)).toEqual(['marker']);
  expect(fs.readdirSync(scratch).filter((name) => name.includes('.installing-'))).toEqual([]);
});

test('a tree missing a bundle is refused', () => {
  const tree = releaseTree(path.join(scratch, 'truncated'));
  const bundles = path.join(tree, 'prod-static', 'serve', 'webpack-bundles');
  const app = fs.readdirSync(bundles).find((name) => /^app\..*\.js$/.test(name))!;
  fs.rmSync(path.join(bundles, app));
  const target = path.join(scratch, 'never');
  expect(() => installZulipWeb({ from: tree, to: target })).toThrow(`${app} missing`);
  expect(fs.existsSync(target)).toBe(false);
});
