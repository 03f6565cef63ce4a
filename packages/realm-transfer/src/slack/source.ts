// A Slack export as the converter reads it: a directory, or the .zip Slack hands out. The zip is
// read with node's zlib (stored and deflated entries; no ZIP64, which Slack's exports of a size
// this tool handles do not need). Names are read as UTF-8 whatever the entry's flag says, as
// Zulip does: Slack writes UTF-8 names without setting the flag.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export interface SlackSource {
  /** Every file's path, "/"-separated, relative to the export's top. */
  files(): string[];
  read(name: string): Buffer;
  has(name: string): boolean;
}

export class SlackImportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SlackImportError';
  }
}

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  offset: number;
}

// Zulip's check: only .json files, at the top or one directory down, and directories.
const SLACK_ZIP_NAME = /^[^/]+(\.json|\/([^/]+\.json)?)$/;

/** A zip's entries, from its central directory. */
function zipEntries(zip: Buffer): ZipEntry[] {
  const minimum = Math.max(0, zip.length - 65557);
  let end = -1;
  for (let at = zip.length - 22; at >= minimum; at--) {
    if (zip.readUInt32LE(at) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) throw new SlackImportError('This zip file does not look like a Slack archive');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  if (count === 0xffff || at === 0xffffffff) throw new SlackImportError('ZIP64 archives are not supported');
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new SlackImportError('This zip file is damaged');
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    entries.push({
      method: zip.readUInt16LE(at + 10),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      offset: zip.readUInt32LE(at + 42),
      name: zip.toString('utf8', at + 46, at + 46 + nameLength),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

function entryBytes(zip: Buffer, entry: ZipEntry): Buffer {
  const at = entry.offset;
  if (zip.readUInt32LE(at) !== 0x04034b50) throw new SlackImportError('This zip file is damaged');
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  const raw = zip.subarray(start, start + entry.compressedSize);
  if (entry.method === 0) return raw;
  if (entry.method === 8) return zlib.inflateRawSync(raw, { maxOutputLength: Math.max(entry.size, 1) });
  throw new SlackImportError(`${entry.name}: unsupported zip compression method ${entry.method}`);
}

/** A Slack export's .zip, checked as Zulip checks it before extracting. */
export function zipSource(file: string): SlackSource {
  const zip = fs.readFileSync(file);
  const entries = zipEntries(zip);
  let total = 0;
  for (const entry of entries) {
    if (!SLACK_ZIP_NAME.test(entry.name))
      throw new SlackImportError('This zip file does not look like a Slack archive');
    total += entry.size;
  }
  // Zulip's rule: more than 1 GiB unpacked and more than ten times the zip is suspect.
  if (total > 1024 ** 3 && total > 10 * zip.length) throw new SlackImportError('This zip file is possibly malicious');
  const byName = new Map(entries.filter((entry) => !entry.name.endsWith('/')).map((entry) => [entry.name, entry]));
  return {
    files: () => [...byName.keys()],
    has: (name) => byName.has(name),
    read: (name) => {
      const entry = byName.get(name);
      if (!entry) throw new SlackImportError(`${name}: not in the export`);
      return entryBytes(zip, entry);
    },
  };
}

/** An unpacked Slack export. */
export function directorySource(dir: string): SlackSource {
  const walk = (relative: string): string[] =>
    fs.readdirSync(path.join(dir, relative), { withFileTypes: true }).flatMap((entry) => {
      const name = relative ? `${relative}/${entry.name}` : entry.name;
      return entry.isDirectory() ? walk(name) : [name];
    });
  return {
    files: () => walk(''),
    has: (name) => fs.existsSync(path.join(dir, name)),
    read: (name) => fs.readFileSync(path.join(dir, name)),
  };
}

export function openSlackExport(location: string): SlackSource {
  if (!fs.existsSync(location)) throw new SlackImportError(`${location}: no such file or directory`);
  return fs.statSync(location).isDirectory() ? directorySource(location) : zipSource(location);
}
