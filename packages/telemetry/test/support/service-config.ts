// What the services themselves say about their configuration, read from their sources: the
// environment variables each one reads (env.ts specs) and its default port. The manifests are
// checked against these, so a renamed variable or a moved port cannot go unnoticed.

import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './processes';

const ENV_DEFINITION = /\b([A-Z][A-Z0-9_]*)\s*:\s*env\.(?:string|int|url|bool|oneOf)\(/g;
const PORT_DEFINITION = /\bPORT\s*:\s*env\.int\(\s*(['"`])(?:(?!\1).)*\1\s*,\s*([\d_]+)\s*\)/;

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The workspace packages a workspace depends on, transitively (by folder). */
function workspaceDependencies(packageDir: string, seen = new Set<string>()): Set<string> {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
  for (const name of Object.keys(manifest.dependencies ?? {})) {
    if (!name.startsWith('@teamchat/')) continue;
    const dir = name.startsWith('@teamchat/service-')
      ? path.join(repoRoot, 'services', name.slice('@teamchat/service-'.length))
      : path.join(repoRoot, 'packages', name.slice('@teamchat/'.length));
    if (seen.has(dir) || !fs.existsSync(dir)) continue;
    seen.add(dir);
    workspaceDependencies(dir, seen);
  }
  return seen;
}

/** Every variable the service's env specs define (its own and those of the packages it uses). */
export function variablesReadBy(service: string): Set<string> {
  const serviceDir = path.join(repoRoot, 'services', service);
  const dirs = [serviceDir, ...workspaceDependencies(serviceDir)];
  const names = new Set<string>();
  for (const dir of dirs) {
    for (const file of sourceFiles(path.join(dir, 'src'))) {
      for (const [, name] of fs.readFileSync(file, 'utf8').matchAll(ENV_DEFINITION)) names.add(name);
    }
  }
  return names;
}

/** Variables the spec requires (no default): read from the common specs every service loads. */
export const REQUIRED_VARIABLES = ['DATABASE_URL', 'INTERNAL_JWT_SECRET'];

/**
 * Variables every process may be given without an env spec naming them: the telemetry
 * preload's and Node's standard ones, and where the services are (USERS_URL, ...: every
 * process gets them all, as `npm start` does, and reads those it calls).
 */
export function isPlatformVariable(name: string): boolean {
  return (
    name.startsWith('OTEL_') ||
    name === 'NODE_ENV' ||
    name === 'NODE_OPTIONS' ||
    /^(USERS|MESSAGES|CHANNELS|UPLOADS|EVENTS|WEB)_URL$/.test(name)
  );
}

/** The port a service listens on when PORT is not set (its env spec's default). */
export function defaultPort(service: string): number {
  for (const file of sourceFiles(path.join(repoRoot, 'services', service, 'src'))) {
    const match = PORT_DEFINITION.exec(fs.readFileSync(file, 'utf8'));
    if (match) return Number(match[2].replace(/_/g, ''));
  }
  throw new Error(`services/${service}/src defines no PORT default`);
}

/** Folders of services/ with an entry point (the deployable processes). */
export function serviceFolders(): string[] {
  return fs
    .readdirSync(path.join(repoRoot, 'services'))
    .filter((name) => fs.existsSync(path.join(repoRoot, 'services', name, 'src/main.ts')))
    .sort();
}
