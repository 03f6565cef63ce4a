// Every event leaves its change through the one outbox helper: no file but packages/bus's
// outbox.ts writes event_outbox rows itself.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const HELPER = path.join('packages', 'bus', 'src', 'outbox.ts');
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', '.git', 'generated', 'coverage']);
const SOURCE = /\.(ts|tsx|js|mjs|cjs|sql)$/;
// Split so that this file does not match itself.
const OUTBOX_INSERT = new RegExp(['INSERT', 'INTO', '"?event_outbox'].join('\\s+'), 'i');

function sourceFiles(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRECTORIES.has(entry.name) ? [] : sourceFiles(full);
    return SOURCE.test(entry.name) ? [full] : [];
  });
}

test('only the outbox helper writes event_outbox rows', () => {
  const files = ['packages', 'services', 'tests', 'bench', 'scripts'].flatMap((top) =>
    sourceFiles(path.join(root, top)),
  );
  expect(files.length).toBeGreaterThan(100);
  expect(files).toContain(path.join(root, HELPER));
  const writers = files
    .filter((file) => OUTBOX_INSERT.test(fs.readFileSync(file, 'utf8')))
    .map((file) => path.relative(root, file));
  expect(writers).toEqual([HELPER]);
});
