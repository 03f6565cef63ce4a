// node scripts/zulip-flutter-contract.mjs <zulip-flutter checkout> [out.json] [version label]
//
// Extracts what Zulip's mobile app (zulip-flutter) requires of the server's JSON: for each API
// class its json_serializable code parses (lib/api/**/*.g.dart), the keys it reads, whether a
// missing or null value would throw (a non-nullable cast), the JSON type it casts to, the
// class of nested objects, and the values of strict enums (no unknownValue fallback). The
// output is the fixture of services/events/test/mobile-app.test.ts; rerun this against a newer
// checkout of the app to refresh it. Keys the app reads through hand-written code (readValue
// helpers, custom fromJson) are marked `custom` and not checked.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const [checkout, out = 'services/events/test/fixtures/zulip-flutter-contract.json', label] = process.argv.slice(2);
if (!checkout) throw new Error('usage: node scripts/zulip-flutter-contract.mjs <zulip-flutter checkout> [out.json]');

function dartFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? dartFiles(full) : entry.name.endsWith('.g.dart') ? [full] : [];
  });
}

/** The text up to the parenthesis that closes the one opened just before `start`. */
function balanced(source, start) {
  let depth = 1;
  let i = start;
  while (depth) {
    const c = source[i++];
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
  }
  return source.slice(start, i - 1);
}

/** Splits a constructor call's arguments at its top-level commas. */
function topLevelArguments(body) {
  const args = [];
  let depth = 0;
  let current = '';
  for (const c of body) {
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    if (c === ',' && depth === 0) {
      args.push(current);
      current = '';
    } else current += c;
  }
  args.push(current);
  return args.map((arg) => arg.trim()).filter(Boolean);
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const classes = {};
const enums = {};
const files = dartFiles(path.join(checkout, 'lib/api'));
for (const file of files) {
  const source = fs.readFileSync(file, 'utf8');
  for (const match of source.matchAll(/^\w+ _\$(\w+)FromJson\(\s*Map<String, dynamic> json,?\s*\) =>\s*\w+\(/gm)) {
    const fields = {};
    for (const arg of topLevelArguments(balanced(source, match.index + match[0].length))) {
      // Read through a hand-written helper: `X._readY(json, 'key')` or `X._yFromJson(json['key'])`.
      const custom = [
        ...arg.matchAll(/\(\s*json,\s*'([^']+)'\s*\)/g),
        ...arg.matchAll(/\w+\._\w+\(\s*json\['([^']+)'\]\s*\)/g),
      ].map((m) => m[1]);
      const plain = [...arg.matchAll(/json\['([^']+)'\]/g)].map((m) => m[1]).filter((key) => !custom.includes(key));
      for (const key of [...plain, ...custom]) {
        const nullable = arg.includes('?') || arg.includes('Nullable') || arg.includes('== null');
        const cast = arg.match(new RegExp(`json\\['${escape(key)}'\\]\\s+as\\s+(\\w+)`));
        const strictEnum = arg.match(
          new RegExp(`\\$enumDecode\\(\\s*(_\\$\\w+EnumMap),\\s*json\\['${escape(key)}'\\](,\\s*unknownValue)?`),
        );
        const nested = arg.match(/(\w+)\.fromJson\(/);
        fields[key] = {
          required: !nullable && !custom.includes(key),
          ...(custom.includes(key) ? { custom: true } : {}),
          ...(cast ? { type: cast[1] } : {}),
          ...(strictEnum && !strictEnum[2] ? { enum: strictEnum[1] } : {}),
          ...(nested
            ? {
                nested: nested[1],
                shape: arg.includes('as List') ? 'list' : arg.includes('MapEntry') ? 'map' : 'object',
              }
            : {}),
        };
      }
    }
    classes[match[1]] = fields;
  }
  for (const match of source.matchAll(/const (_\$\w+EnumMap) = \{(.*?)\};/gs)) {
    enums[match[1]] = [...match[2].matchAll(/:\s*([^,]+),/g)].map((m) => m[1].trim().replace(/^'|'$/g, ''));
  }
}
const usedEnums = new Set(
  Object.values(classes).flatMap((fields) =>
    Object.values(fields)
      .map((field) => field.enum)
      .filter(Boolean),
  ),
);
let commit = label;
try {
  commit ??= execFileSync('git', ['-C', checkout, 'log', '-1', '--format=%H (%cs)'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
} catch {
  // not a git checkout (an exported tree): pass the version as the third argument
}
commit ??= 'unknown commit';
const contract = {
  source: `zulip-flutter ${commit}, lib/api/**/*.g.dart (json_serializable)`,
  classes,
  enums: Object.fromEntries(Object.entries(enums).filter(([name]) => usedEnums.has(name))),
};
fs.writeFileSync(out, `${JSON.stringify(contract, null, 1)}\n`);
console.log(`${Object.keys(classes).length} classes, ${usedEnums.size} strict enums -> ${out}`);
