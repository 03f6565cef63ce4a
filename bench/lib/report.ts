// Shared measuring and reporting for every benchmark suite.
import fs from 'node:fs';
import path from 'node:path';

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export interface Row {
  metric: string;
  /** The system under test. */
  value: number;
  /** The baseline measured in the same run. */
  baseline: number;
  unit: string;
  /** "higher" if a bigger number is better (throughput), "lower" for latency/memory. */
  better: 'higher' | 'lower';
  /** The goal for value/baseline, e.g. ">= 0.5". */
  goal?: string;
}

/** value / baseline, the figure the goals are stated in. */
export function ratio(row: Row): number {
  return row.value / row.baseline;
}

function format(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(3);
}

/** Where the reports go: BENCH_RESULTS_DIR (set by bench/run.mjs), else bench/results. */
export function resultsDir(): string {
  return process.env.BENCH_RESULTS_DIR ?? path.join(__dirname, '..', 'results');
}

/** Prints the table (raw numbers beside ratios) and writes bench/results/<suite>.json. */
export function report(suite: string, rows: Row[], extra: Record<string, unknown> = {}): void {
  const lines = [['metric', 'teamchat', 'baseline', 'unit', 'ratio', 'goal']];
  for (const row of rows)
    lines.push([
      row.metric,
      format(row.value),
      format(row.baseline),
      row.unit,
      `${format(ratio(row))}x`,
      row.goal ?? '',
    ]);
  const widths = lines[0].map((_, i) => Math.max(...lines.map((line) => line[i].length)));
  for (const [i, line] of lines.entries()) {
    console.log(line.map((cell, j) => cell.padEnd(widths[j])).join('  '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
  const dir = resultsDir();
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, `${suite}.json`),
    JSON.stringify(
      { suite, at: new Date().toISOString(), rows: rows.map((row) => ({ ...row, ratio: ratio(row) })), ...extra },
      null,
      2,
    ),
  );
}
