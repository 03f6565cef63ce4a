// Dependency-free SVG charts for the benchmark reports: a line chart (several series, a left
// and an optional right y axis) and a histogram (several series overlaid, optional vertical
// markers such as a goal), and `stack` to put charts one above the other in one file.
import fs from 'node:fs';
import path from 'node:path';
import { resultsDir } from './report';

const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#17becf',
  '#bcbd22',
];
const FONT = 'font-family="sans-serif" font-size="11"';
const MARGIN = { top: 34, right: 64, bottom: 44, left: 64 };
const LEGEND_ROW = 16;

export interface LineSeries {
  name: string;
  /** [x, y] points; non-finite y values leave a gap. */
  points: Array<[number, number]>;
  axis?: 'left' | 'right';
  color?: string;
  dashed?: boolean;
}

export interface LineChart {
  title: string;
  x: { label: string };
  left: { label: string };
  right?: { label: string };
  series: LineSeries[];
  width?: number;
  height?: number;
}

export interface HistogramSeries {
  name: string;
  values: number[];
  color?: string;
}

export interface Histogram {
  title: string;
  x: { label: string };
  y?: { label: string };
  series: HistogramSeries[];
  /** Bin width in x units (default: about 40 bins over the range). */
  binWidth?: number;
  /** Vertical lines, e.g. a goal. */
  markers?: Array<{ x: number; label: string }>;
  width?: number;
  height?: number;
}

const escape = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const fixed = (n: number) => Number(n.toFixed(2));

/** Round tick values (1, 2, 5 x 10^k) covering [min, max]. */
export function ticks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) max = min + 1;
  const raw = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let v = Math.floor(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  if (out[out.length - 1] < max) out.push(Number((out[out.length - 1] + step).toPrecision(12)));
  return out;
}

const label = (n: number) =>
  Math.abs(n) >= 10_000 ? `${n / 1000}k` : Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(3)));

function frame(width: number, height: number, body: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">\n<rect width="${width}" height="${height}" fill="white"/>\n${body}</svg>\n`;
}

interface Axis {
  min: number;
  max: number;
  ticks: number[];
}

function axisOf(values: number[], fromZero: boolean, count = 5): Axis {
  const finite = values.filter(Number.isFinite);
  let min = finite.length ? Math.min(...finite) : 0;
  const max = finite.length ? Math.max(...finite) : 1;
  if (fromZero) min = Math.min(0, min);
  const t = ticks(min, max, count);
  return { min: t[0], max: t[t.length - 1], ticks: t };
}

/** Legend entries per row: as many as fit their longest name (about 6.5 px a character), at most 4. */
function legendColumns(width: number, legend: Array<{ name: string }>): number {
  const longest = Math.max(1, ...legend.map((entry) => entry.name.length));
  return Math.max(1, Math.min(4, Math.floor((width - MARGIN.left) / (longest * 6.5 + 32))));
}

/** The plot area, axes, grid, title and legend; `scaleX`/`scaleY` map data to pixels. */
function plotFrame(opts: {
  title: string;
  width: number;
  height: number;
  x: Axis;
  xLabel: string;
  left: Axis;
  leftLabel: string;
  right?: Axis;
  rightLabel?: string;
  legend: Array<{ name: string; color: string; dashed?: boolean; box?: boolean }>;
}) {
  const columns = legendColumns(opts.width, opts.legend);
  const legendRows = Math.ceil(opts.legend.length / columns);
  const top = MARGIN.top;
  const bottom = opts.height - MARGIN.bottom - legendRows * LEGEND_ROW;
  const left = MARGIN.left;
  const right = opts.width - MARGIN.right;
  const scaleX = (v: number) => fixed(left + ((v - opts.x.min) / (opts.x.max - opts.x.min)) * (right - left));
  const scale = (axis: Axis) => (v: number) =>
    fixed(bottom - ((v - axis.min) / (axis.max - axis.min)) * (bottom - top));
  const scaleLeft = scale(opts.left);
  const parts: string[] = [];
  parts.push(
    `<text x="${opts.width / 2}" y="18" text-anchor="middle" font-family="sans-serif" font-size="14" font-weight="bold">${escape(opts.title)}</text>`,
  );
  for (const t of opts.left.ticks) {
    const y = scaleLeft(t);
    parts.push(`<line x1="${left}" y1="${y}" x2="${right}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end" ${FONT}>${label(t)}</text>`);
  }
  for (const t of opts.x.ticks) {
    const x = scaleX(t);
    parts.push(`<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 4}" stroke="#333"/>`);
    parts.push(`<text x="${x}" y="${bottom + 16}" text-anchor="middle" ${FONT}>${label(t)}</text>`);
  }
  parts.push(
    `<rect x="${left}" y="${top}" width="${right - left}" height="${bottom - top}" fill="none" stroke="#333"/>`,
  );
  parts.push(
    `<text x="${(left + right) / 2}" y="${bottom + 32}" text-anchor="middle" ${FONT}>${escape(opts.xLabel)}</text>`,
  );
  parts.push(
    `<text transform="translate(16 ${(top + bottom) / 2}) rotate(-90)" text-anchor="middle" ${FONT}>${escape(opts.leftLabel)}</text>`,
  );
  let scaleRight = scaleLeft;
  if (opts.right) {
    scaleRight = scale(opts.right);
    for (const t of opts.right.ticks)
      parts.push(`<text x="${right + 6}" y="${scaleRight(t) + 4}" ${FONT}>${label(t)}</text>`);
    parts.push(
      `<text transform="translate(${opts.width - 14} ${(top + bottom) / 2}) rotate(90)" text-anchor="middle" ${FONT}>${escape(opts.rightLabel ?? '')}</text>`,
    );
  }
  const columnWidth = (opts.width - MARGIN.left) / columns;
  opts.legend.forEach((entry, i) => {
    const x = MARGIN.left + (i % columns) * columnWidth;
    const y = bottom + 44 + Math.floor(i / columns) * LEGEND_ROW;
    parts.push(
      entry.box
        ? `<rect x="${x}" y="${y - 8}" width="16" height="9" fill="${entry.color}" fill-opacity="0.55"/>`
        : `<line x1="${x}" y1="${y - 4}" x2="${x + 16}" y2="${y - 4}" stroke="${entry.color}" stroke-width="2"${entry.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    parts.push(`<text x="${x + 21}" y="${y}" ${FONT}>${escape(entry.name)}</text>`);
  });
  return { parts, scaleX, scaleLeft, scaleRight, top, bottom, left, right };
}

/** A line chart: every series on the left axis unless it says `axis: 'right'`. */
export function lineChart(chart: LineChart): string {
  const width = chart.width ?? 760;
  const series = chart.series.map((s, i) => ({ ...s, color: s.color ?? PALETTE[i % PALETTE.length] }));
  const legend = series.map((s) => ({
    name: chart.right ? `${s.name} (${s.axis === 'right' ? 'right' : 'left'})` : s.name,
    color: s.color,
    dashed: s.dashed,
  }));
  const height = (chart.height ?? 340) + Math.ceil(legend.length / legendColumns(width, legend)) * LEGEND_ROW;
  const xs = series.flatMap((s) => s.points.map(([x]) => x));
  const ysOf = (axis: 'left' | 'right') =>
    series.filter((s) => (s.axis ?? 'left') === axis).flatMap((s) => s.points.map(([, y]) => y));
  const x = axisOf(xs, false, 8);
  const f = plotFrame({
    title: chart.title,
    width,
    height,
    x,
    xLabel: chart.x.label,
    left: axisOf(ysOf('left'), true),
    leftLabel: chart.left.label,
    right: chart.right ? axisOf(ysOf('right'), true) : undefined,
    rightLabel: chart.right?.label,
    legend,
  });
  for (const s of series) {
    const scaleY = s.axis === 'right' ? f.scaleRight : f.scaleLeft;
    const dash = s.dashed ? ' stroke-dasharray="5 3"' : '';
    // A gap at every non-finite y.
    let run: string[] = [];
    const flush = () => {
      if (run.length > 1)
        f.parts.push(`<polyline points="${run.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`);
      run = [];
    };
    for (const [px, py] of s.points) {
      if (!Number.isFinite(py)) {
        flush();
        continue;
      }
      run.push(`${f.scaleX(px)},${scaleY(py)}`);
      f.parts.push(`<circle cx="${f.scaleX(px)}" cy="${scaleY(py)}" r="2.5" fill="${s.color}"/>`);
    }
    flush();
  }
  return frame(width, height, f.parts.join('\n') + '\n');
}

/** A histogram of each series' values in shared bins, bars overlaid (translucent). */
export function histogram(chart: Histogram): string {
  const width = chart.width ?? 760;
  const series = chart.series.map((s, i) => ({ ...s, color: s.color ?? PALETTE[i % PALETTE.length] }));
  const legend = [
    ...series.map((s) => ({ name: `${s.name} (n=${s.values.length})`, color: s.color, box: true })),
    ...(chart.markers ?? []).map((m) => ({ name: m.label, color: '#555', dashed: true })),
  ];
  const height = (chart.height ?? 340) + Math.ceil(legend.length / legendColumns(width, legend)) * LEGEND_ROW;
  const all = series.flatMap((s) => s.values).filter(Number.isFinite);
  const low = Math.min(0, ...all);
  const high = Math.max(low + 1, ...all, ...(chart.markers ?? []).map((m) => m.x));
  const binWidth = chart.binWidth ?? ticks(0, (high - low) / 40, 1)[1];
  const first = Math.floor(low / binWidth) * binWidth;
  const binCount = Math.max(1, Math.ceil((high - first) / binWidth) + (high % binWidth === 0 ? 1 : 0));
  const counts = series.map((s) => {
    const bins = new Array<number>(binCount).fill(0);
    for (const v of s.values)
      if (Number.isFinite(v)) bins[Math.min(binCount - 1, Math.floor((v - first) / binWidth))]++;
    return bins;
  });
  const x = axisOf([first, first + binCount * binWidth], false, 8);
  const f = plotFrame({
    title: chart.title,
    width,
    height,
    x,
    xLabel: chart.x.label,
    left: axisOf(counts.flat(), true),
    leftLabel: chart.y?.label ?? 'deliveries',
    legend,
  });
  series.forEach((s, k) => {
    counts[k].forEach((count, i) => {
      if (!count) return;
      const x0 = f.scaleX(first + i * binWidth);
      const x1 = f.scaleX(first + (i + 1) * binWidth);
      const y = f.scaleLeft(count);
      f.parts.push(
        `<rect x="${x0}" y="${y}" width="${fixed(Math.max(0.5, x1 - x0 - 0.5))}" height="${fixed(f.bottom - y)}" fill="${s.color}" fill-opacity="0.55"/>`,
      );
    });
  });
  for (const m of chart.markers ?? []) {
    const mx = f.scaleX(m.x);
    f.parts.push(`<line x1="${mx}" y1="${f.top}" x2="${mx}" y2="${f.bottom}" stroke="#555" stroke-dasharray="5 3"/>`);
    f.parts.push(`<text x="${mx + 4}" y="${f.top + 12}" ${FONT}>${escape(m.label)}</text>`);
  }
  return frame(width, height, f.parts.join('\n') + '\n');
}

/** Charts one above the other, in one SVG document. */
export function stack(charts: string[]): string {
  let y = 0;
  let width = 0;
  const parts = charts.map((svg) => {
    const w = Number(/width="([\d.]+)"/.exec(svg)![1]);
    const h = Number(/height="([\d.]+)"/.exec(svg)![1]);
    const nested = svg.replace('<svg ', `<svg y="${y}" `);
    y += h;
    width = Math.max(width, w);
    return nested;
  });
  return frame(width, y, parts.join(''));
}

/** Writes bench/results/<name>.svg (beside the suite's JSON) and returns its path. */
export function writeSvg(name: string, svg: string): string {
  const dir = resultsDir();
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.svg`);
  fs.writeFileSync(file, svg);
  return file;
}
