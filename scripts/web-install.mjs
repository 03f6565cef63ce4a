// npm run web:install -- --from <zulip-server-10.2.tar.gz | built folder> [--to <dir>]: installs
// Zulip's built web app where the web service finds it (var/zulip-web), pinned by checksum
// (services/web/src/manage.ts, docs/web-app.md).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { build } from './build.mjs';
import { root } from './lib/deps.mjs';

await build({ quiet: true, only: ['web'] });
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', path.join(root, 'services/web/dist/manage.js'), 'install', ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
