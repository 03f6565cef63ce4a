// Bundles every service's entry points (src/main.ts, and src/manage.ts where present) into
// services/<name>/dist/ with esbuild, plus dist/telemetry.js: the OpenTelemetry preload every
// launcher runs first (`node --require ./dist/telemetry.js ./dist/main.js`). Workspace packages
// are bundled in; npm packages stay external and are loaded from node_modules at run time.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureInstalled, root } from './lib/deps.mjs';

/** The preload next to each service's main.js; launchers pass it to `node --require`. */
export const TELEMETRY_PRELOAD = 'telemetry.js';

/** Builds the named services (all when `only` is empty); returns the names built. */
export async function build({ quiet = false, only = [] } = {}) {
  ensureInstalled();
  const esbuild = await import('esbuild');
  const keepNpmPackagesExternal = {
    name: 'external-npm-packages',
    setup(b) {
      // A workspace package's package.json is only ever looked up at run time (require.resolve
      // of its location, as packages/db's migrations do): external too.
      const bundled = (p) => p.startsWith('@teamchat/') && !p.endsWith('/package.json');
      b.onResolve({ filter: /^[^./]/ }, (args) =>
        bundled(args.path) ? undefined : { path: args.path, external: true },
      );
    },
  };
  // Each output is written to a temporary file and renamed over the old one, so a process started
  // from dist/ meanwhile (a test rebuilding while another boots a service) reads the old bundle or
  // the new one, never a truncated file: node runs an empty main.js and exits 0, silently.
  const buildAtomically = async (options) => {
    const result = await esbuild.build({ ...options, write: false });
    for (const file of result.outputFiles) {
      fs.mkdirSync(path.dirname(file.path), { recursive: true });
      const temporary = `${file.path}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, file.contents);
      fs.renameSync(temporary, file.path);
    }
  };
  const services = fs
    .readdirSync(path.join(root, 'services'))
    .filter((name) => fs.existsSync(path.join(root, 'services', name, 'src/main.ts')))
    .filter((name) => only.length === 0 || only.includes(name));
  const common = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: true,
    logLevel: quiet ? 'warning' : 'info',
    plugins: [keepNpmPackagesExternal],
  };
  await Promise.all(
    services.flatMap((name) => {
      const dir = path.join(root, 'services', name);
      const entryPoints = ['main.ts', 'manage.ts']
        .map((file) => path.join(dir, 'src', file))
        .filter((file) => fs.existsSync(file));
      return [
        buildAtomically({ ...common, entryPoints, outdir: path.join(dir, 'dist') }),
        buildAtomically({
          ...common,
          entryPoints: [path.join(root, 'packages/telemetry/src/preload.ts')],
          outfile: path.join(dir, 'dist', TELEMETRY_PRELOAD),
          define: { TEAMCHAT_SERVICE: JSON.stringify(name) },
        }),
      ];
    }),
  );
  return services;
}

/**
 * Every service through turbo (`npm run build`): each workspace's `build` task is this script
 * with its name, and turbo restores an unchanged service's dist/ from its cache. Tests and
 * `npm start` call build() directly instead: a cache restore rewrites dist/ in place, which a
 * service starting meanwhile could read half-written (build() renames complete files).
 */
function buildThroughTurbo() {
  ensureInstalled();
  const result = spawnSync(path.join(root, 'node_modules/.bin/turbo'), ['run', 'build', '--output-logs=new-only'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' },
  });
  process.exit(result.status ?? 1);
}

// node scripts/build.mjs: every service, through turbo; node scripts/build.mjs <service ...>: those, directly.
if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.length === 2) buildThroughTurbo();
  else
    build({ only: process.argv.slice(2) }).catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
