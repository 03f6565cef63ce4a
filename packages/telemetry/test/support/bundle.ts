// Bundling a test program the way scripts/build.mjs bundles a service (the program as main.js
// and the telemetry preload as telemetry.js, workspace packages inside, npm packages external),
// and running it the way a service runs.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build, type Plugin } from 'esbuild';
import { testRedisUrl } from '@teamchat/testing';
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

export interface BundleRun {
  code: number | null;
  /** What it printed on stdout, one JSON object per line. */
  lines: Record<string, any>[];
  stderr: string;
}

/**
 * Runs a bundle as a service is run (`node --require telemetry.js main.js`) against the test
 * Redis, under a Redis prefix of its own, with only PATH and `env` in its environment.
 */
export function runBundle(bundle: { main: string; preload: string }, env: NodeJS.ProcessEnv): Promise<BundleRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--require', bundle.preload, bundle.main], {
      env: {
        PATH: process.env.PATH,
        REDIS_URL: testRedisUrl(),
        REDIS_PREFIX: `t:${crypto.randomBytes(6).toString('hex')}:`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('exit', (code) => {
      const lines = stdout
        .split('\n')
        .filter((line) => line.trim())
        .map((line) => JSON.parse(line));
      resolve({ code, lines, stderr });
    });
  });
}
