// JSON as Python's json.dumps writes it, where Zulip shows or stores its output: a widget's
// submessage, webhook messages. pythonJsonReindent works from the text itself: Zulip's JSON
// integration posts the payload so, and JavaScript's own parse loses what Python keeps (1.0 stays
// 1.0, big integers stay exact, integer-like keys keep their place).

type Node =
  | { kind: 'object'; entries: Map<string, Node> }
  | { kind: 'array'; items: Node[] }
  | { kind: 'string'; value: string }
  | { kind: 'number'; text: string }
  | { kind: 'literal'; text: 'true' | 'false' | 'null' };

class JsonTextReader {
  private at = 0;
  constructor(private readonly text: string) {}

  document(): Node {
    const node = this.value();
    this.skipSpace();
    if (this.at !== this.text.length) throw new SyntaxError('Extra data');
    return node;
  }

  private skipSpace(): void {
    while (this.at < this.text.length && ' \t\n\r'.includes(this.text[this.at]!)) this.at++;
  }

  private value(): Node {
    this.skipSpace();
    const char = this.text[this.at];
    if (char === '{') return this.object();
    if (char === '[') return this.array();
    if (char === '"') return { kind: 'string', value: this.string() };
    for (const literal of ['true', 'false', 'null'] as const) {
      if (this.text.startsWith(literal, this.at)) {
        this.at += literal.length;
        return { kind: 'literal', text: literal };
      }
    }
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.at, this.at + 400));
    if (!number) throw new SyntaxError('Expecting value');
    this.at += number[0].length;
    return { kind: 'number', text: number[0] };
  }

  private object(): Node {
    this.at++;
    // Python's dict: a repeated key keeps its first place and takes its last value.
    const entries = new Map<string, Node>();
    this.skipSpace();
    if (this.text[this.at] === '}') {
      this.at++;
      return { kind: 'object', entries };
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.at] !== '"') throw new SyntaxError('Expecting property name');
      const key = this.string();
      this.skipSpace();
      if (this.text[this.at++] !== ':') throw new SyntaxError("Expecting ':'");
      entries.set(key, this.value());
      this.skipSpace();
      const next = this.text[this.at++];
      if (next === '}') return { kind: 'object', entries };
      if (next !== ',') throw new SyntaxError("Expecting ','");
    }
  }

  private array(): Node {
    this.at++;
    const items: Node[] = [];
    this.skipSpace();
    if (this.text[this.at] === ']') {
      this.at++;
      return { kind: 'array', items };
    }
    for (;;) {
      items.push(this.value());
      this.skipSpace();
      const next = this.text[this.at++];
      if (next === ']') return { kind: 'array', items };
      if (next !== ',') throw new SyntaxError("Expecting ','");
    }
  }

  private string(): string {
    // eslint-disable-next-line no-control-regex -- JSON strings may not hold raw control characters.
    const match = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(this.text.slice(this.at));
    if (!match) throw new SyntaxError('Invalid string');
    this.at += match[0].length;
    return JSON.parse(match[0]) as string;
  }
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
};

/** A string as json.dumps writes it with ensure_ascii: anything outside space..~ escaped. */
export function pythonJsonString(value: string): string {
  const escaped = value.replace(
    /["\\]|[^ -~]/g,
    (char) => SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `"${escaped}"`;
}

/** json.dumps(value) with its default separators (", " and ": ") and ensure_ascii. */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    const items = Object.entries(value).map(([key, item]) => `${pythonJsonString(key)}: ${pythonJsonDumps(item)}`);
    return `{${items.join(', ')}}`;
  }
  return typeof value === 'string' ? pythonJsonString(value) : JSON.stringify(value);
}

/** Python's repr of an int or float literal. */
function pythonNumber(text: string): string {
  if (/^-?\d+$/.test(text)) return BigInt(text).toString();
  const value = Number(text);
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  const [mantissa, exponentText] = Math.abs(value).toExponential().split('e');
  const exponent = Number(exponentText);
  const digits = mantissa!.replace('.', '');
  const sign = value < 0 || Object.is(value, -0) ? '-' : '';
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
    const fraction = digits.slice(exponent + 1) || '0';
    return `${sign}${whole}.${fraction}`;
  }
  const shortMantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const exponentSign = exponent < 0 ? '-' : '+';
  return `${sign}${shortMantissa}e${exponentSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
}

function write(node: Node, indent: number, depth: number): string {
  const inner = '\n' + ' '.repeat(indent * (depth + 1));
  const outer = '\n' + ' '.repeat(indent * depth);
  switch (node.kind) {
    case 'object': {
      if (node.entries.size === 0) return '{}';
      const items = [...node.entries].map(
        ([key, item]) => `${pythonJsonString(key)}: ${write(item, indent, depth + 1)}`,
      );
      return `{${inner}${items.join(`,${inner}`)}${outer}}`;
    }
    case 'array': {
      if (node.items.length === 0) return '[]';
      const items = node.items.map((item) => write(item, indent, depth + 1));
      return `[${inner}${items.join(`,${inner}`)}${outer}]`;
    }
    case 'string':
      return pythonJsonString(node.value);
    case 'number':
      return pythonNumber(node.text);
    case 'literal':
      return node.text;
  }
}

/** json.dumps(json.loads(text), indent=indent); throws SyntaxError on text that is not JSON. */
export function pythonJsonReindent(text: string, indent: number): string {
  return write(new JsonTextReader(text).document(), indent, 0);
}

/** Python's str() of a decoded JSON scalar (a float that was written 1.0 reads back as 1 here). */
export function pythonStr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pythonNumber(String(value));
  if (typeof value === 'string') return value;
  return pythonJsonReindent(JSON.stringify(value), 0).replace(/\n/g, '');
}
