// Bundling a test program the way scripts/build.mjs bundles a service: the program as main.js
// and the telemetry preload as telemetry.js, workspace packages inside, npm packages external.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build, type Plugin } from 'esbuild';
import { repoRoot } from './processes';

const keepNpmPackagesExternal: Plugin = {
  name: 'external-npm-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@teamchat/') ? undefined : { path: args.path, external: true },
    );
  },
};

/** Bundles `entry` with the preload into a temporary directory; returns their paths. */
export async function bundleWithPreload(
  entry: string,
  serviceName: string,
): Promise<{ dir: string; main: string; preload: string }> {
  // Inside the repository, so the bundles resolve npm packages from its node_modules.
  fs.mkdirSync(path.join(repoRoot, 'var'), { recursive: true });
  const dir = fs.mkdtempSync(path.join(repoRoot, 'var', `telemetry-test-${os.userInfo().username}-`));
  const common = {
    bundle: true,
    platform: 'node' as const,
    target: 'node20',
    format: 'cjs' as const,
    logLevel: 'warning' as const,
    plugins: [keepNpmPackagesExternal],
  };
  const main = path.join(dir, 'main.js');
  const preload = path.join(dir, 'telemetry.js');
  await build({ ...common, entryPoints: [entry], outfile: main });
  await build({
    ...common,
    entryPoints: [path.join(repoRoot, 'packages/telemetry/src/preload.ts')],
    outfile: preload,
    define: { TEAMCHAT_SERVICE: JSON.stringify(serviceName) },
  });
  return { dir, main, preload };
}
