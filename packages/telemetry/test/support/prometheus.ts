// Reading the Prometheus text exposition format (version 0.0.4) in tests.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** # TYPE lines: metric name → counter, gauge, histogram, summary. */
  types: Record<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types[name] = type;
      continue;
    }
    if (line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL))
      labels[name] = value.replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return { samples, types };
}

/** The value of the sample `name` whose labels include `labels`, or undefined. */
export function sampleValue(
  exposition: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  return exposition.samples.find(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  )?.value;
}

export async function scrape(url: string): Promise<{ contentType: string; exposition: Exposition; text: string }> {
  const response = await fetch(`${url}/metrics`);
  if (response.status !== 200) throw new Error(`GET ${url}/metrics answered ${response.status}`);
  const text = await response.text();
  return { contentType: response.headers.get('content-type') ?? '', exposition: parseExposition(text), text };
}
