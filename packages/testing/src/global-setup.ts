// jest globalSetup: the migrated template exists before any test file clones it.
import { dropStaleTestDatabases, ensureTemplateDatabase } from './database';

export default async function globalSetup(): Promise<void> {
  await dropStaleTestDatabases();
  await ensureTemplateDatabase();
}
