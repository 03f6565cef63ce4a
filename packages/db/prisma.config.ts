// Prisma CLI configuration: the JS schema engine (no native binary download, which these
// machines cannot reach) with a migrate-only adapter. See ../../docs/adr/0001-prisma-6-js-engine.md.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { MigratePgAdapterFactory } from './src/migrate-adapter';

process.env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/teamchat';

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join(__dirname, 'prisma', 'schema.prisma'),
  migrations: { path: path.join(__dirname, 'prisma', 'migrations') },
  async adapter() {
    return new MigratePgAdapterFactory(process.env.DATABASE_URL!);
  },
});
