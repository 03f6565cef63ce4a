// npm run db:migrate: applies the Prisma migrations (packages/db/prisma/migrations) to the
// database, as `npm start` does before the services start. DATABASE_URL when set; otherwise the
// local stack's database `teamchat` (PostgreSQL on 127.0.0.1:5432, else the embedded one).
import { ensureInstalled } from './lib/deps.mjs';
import { ensurePostgres } from './lib/infra.mjs';
import { migrate, varDir } from './lib/stack.mjs';

ensureInstalled();
const postgres = await ensurePostgres('teamchat', { varDir });
const shown = new URL(postgres.url);
if (shown.password) shown.password = '***';
try {
  console.log(`» applying migrations to ${shown}`);
  migrate(postgres.url);
  console.log('» the database is up to date');
} catch {
  // Prisma has printed why on stderr.
  console.error('» the migrations were not applied');
  process.exitCode = 1;
} finally {
  await postgres.stop();
}
