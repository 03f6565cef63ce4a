// Progress of an export or import: counts per table and of files and bytes, reported at most
// every `intervalMs` (and at each table's end) with rates since the start.

export interface ProgressSnapshot {
  phase: 'tables' | 'files' | 'derived' | 'done';
  /** The table being read or written. */
  table?: string;
  /** Rows of `table` done, and how many it has (when known). */
  tableRows?: number;
  tableTotal?: number;
  /** Rows done in all tables, and the total the archive's or database's counts announce. */
  rows: number;
  totalRows?: number;
  files: number;
  totalFiles?: number;
  /** Bytes of uploaded files copied. */
  fileBytes: number;
  elapsedMs: number;
  rowsPerSecond: number;
}

export type ProgressListener = (snapshot: ProgressSnapshot, line: string) => void;

export class Progress {
  private readonly started = Date.now();
  private lastReport = 0;
  phase: ProgressSnapshot['phase'] = 'tables';
  table?: string;
  tableRows = 0;
  tableTotal?: number;
  rows = 0;
  totalRows?: number;
  files = 0;
  totalFiles?: number;
  fileBytes = 0;

  constructor(
    private readonly verb: string,
    private readonly listener?: ProgressListener,
    private readonly intervalMs = 2000,
  ) {}

  startTable(table: string, total?: number): void {
    this.phase = 'tables';
    this.table = table;
    this.tableRows = 0;
    this.tableTotal = total;
  }

  row(count = 1): void {
    this.tableRows += count;
    this.rows += count;
    this.maybeReport();
  }

  /** A line per table that had rows (empty ones would only be noise). */
  endTable(): void {
    if (this.tableRows > 0) this.report();
  }

  file(bytes: number): void {
    this.phase = 'files';
    this.files += 1;
    this.fileBytes += bytes;
    this.maybeReport();
  }

  bytes(count: number): void {
    this.fileBytes += count;
    this.maybeReport();
  }

  done(): void {
    this.phase = 'done';
    this.report();
  }

  snapshot(): ProgressSnapshot {
    const elapsedMs = Date.now() - this.started;
    return {
      phase: this.phase,
      table: this.table,
      tableRows: this.tableRows,
      tableTotal: this.tableTotal,
      rows: this.rows,
      totalRows: this.totalRows,
      files: this.files,
      totalFiles: this.totalFiles,
      fileBytes: this.fileBytes,
      elapsedMs,
      rowsPerSecond: elapsedMs > 0 ? Math.round((this.rows * 1000) / elapsedMs) : 0,
    };
  }

  private maybeReport(): void {
    if (Date.now() - this.lastReport >= this.intervalMs) this.report();
  }

  report(): void {
    this.lastReport = Date.now();
    if (!this.listener) return;
    const s = this.snapshot();
    const seconds = s.elapsedMs / 1000;
    const of = (done: number, total?: number) => (total === undefined ? `${done}` : `${done}/${total}`);
    const mib = (s.fileBytes / 1048576).toFixed(1);
    const mibPerSecond = seconds > 0 ? (s.fileBytes / 1048576 / seconds).toFixed(1) : '0.0';
    const where = s.phase === 'tables' && s.table ? ` ${s.table} ${of(s.tableRows ?? 0, s.tableTotal)}` : ` ${s.phase}`;
    this.listener(
      s,
      `${this.verb}:${where}; rows ${of(s.rows, s.totalRows)} (${s.rowsPerSecond}/s); files ${of(s.files, s.totalFiles)}, ${mib} MiB (${mibPerSecond} MiB/s); ${seconds.toFixed(1)} s`,
    );
  }
}
