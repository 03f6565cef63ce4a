export { archiveLines, type ArchiveSource } from './archive';
export {
  Digest,
  exportLines,
  exportRealm,
  FILE_CHUNK_BYTES,
  withSnapshot,
  writeTo,
  type ExportLinesOptions,
  type ExportRealmOptions,
  type ExportResult,
} from './export';
export {
  checkSubdomainFree,
  defaultHost,
  IdMap,
  importRealm,
  RealmImportError,
  type ImportRealmOptions,
  type ImportResult,
} from './import';
export { Progress, type ProgressListener, type ProgressSnapshot } from './progress';
export {
  EXPORT_FORMAT,
  EXPORT_FORMAT_VERSION,
  EXPORT_TABLES,
  ExportType,
  TABLE_BY_NAME,
  type ExportTypeValue,
  type MappedTable,
  type TableSpec,
} from './tables';
