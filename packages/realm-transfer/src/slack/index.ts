// importSlack: a new organisation from a Slack export (Zulip's convert_slack_data followed by
// import), for `manage import-slack`. The export is converted into an organisation archive
// (convert.ts) whose lines go straight into importRealm: one transaction, nothing left behind
// when it fails.
//
// Uploads: a Slack export holds links to its files, not their bytes (Zulip downloads them with
// a token). Files found in the export under __uploads/<file id>/<name> (the layout of exports
// made with their files, e.g. by slackdump) are imported; the others are reported missing.
// Avatars and custom emoji images are Slack URLs too: users keep the default avatar, and
// custom emoji are imported by name with their image reported missing.

import fs from 'node:fs';
import { importRealm, type ImportRealmOptions, type ImportResult } from '../import';
import { conversionLines, convertSlackExport, type RemoteFile, type SlackUser } from './convert';
import { openSlackExport, SlackImportError, type SlackSource } from './source';

export { conversionLines, convertSlackExport, slackEmojiCode } from './convert';
export type { ConvertSlackOptions, RemoteFile, SlackConversion, SlackUser } from './convert';
export { convertToZulipMarkdown } from './markdown';
export { directorySource, openSlackExport, SlackImportError, zipSource, type SlackSource } from './source';

export interface ImportSlackOptions extends Omit<ImportRealmOptions, 'source' | 'host'> {
  /** The export: Slack's .zip or its unpacked directory. */
  exportPath: string;
  /** The new organisation's host; its domain also names users Slack gives no address. */
  host: string;
  /** A file with Slack's users.list answer (or its members), for the addresses an export lacks. */
  usersFile?: string;
  /** A file with Slack's emoji.list answer (or its emoji map). */
  emojiFile?: string;
  convertThreads?: boolean;
}

export interface ImportSlackResult {
  result: ImportResult;
  warnings: string[];
  /** Files Zulip would download from Slack that this import could not (no network). */
  notFetched: RemoteFile[];
}

function readJsonFile(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    throw new SlackImportError(`${file}: ${(error as Error).message}`);
  }
}

/** Slack's users.list answer, its `members`, or a bare list. */
export function readSlackUsers(file: string): SlackUser[] {
  const data = readJsonFile(file) as { members?: SlackUser[] } | SlackUser[];
  const users = Array.isArray(data) ? data : data.members;
  if (!Array.isArray(users)) throw new SlackImportError(`${file}: not a Slack user list`);
  return users;
}

/** Slack's emoji.list answer, or its `emoji` map. */
export function readSlackEmoji(file: string): Record<string, string> {
  const data = readJsonFile(file) as { emoji?: Record<string, string> } | Record<string, string>;
  const emoji = typeof data.emoji === 'object' && data.emoji !== null ? data.emoji : data;
  return emoji as Record<string, string>;
}

/** The bytes of an upload the export carries (under __uploads/<Slack file id>/). */
function uploadBytes(source: SlackSource, file: RemoteFile): Buffer | null {
  if (!file.slackFileId || !file.name) return null;
  const name = `__uploads/${file.slackFileId}/${file.name}`;
  return source.has(name) ? source.read(name) : null;
}

export async function importSlack(options: ImportSlackOptions): Promise<ImportSlackResult> {
  const source = openSlackExport(options.exportPath);
  const conversion = convertSlackExport({
    source,
    subdomain: options.subdomain,
    host: options.host,
    users: options.usersFile ? readSlackUsers(options.usersFile) : undefined,
    customEmoji: options.emojiFile ? readSlackEmoji(options.emojiFile) : undefined,
    convertThreads: options.convertThreads,
  });
  const fetched = new Set<string>();
  const result = await importRealm({
    ...options,
    host: options.host,
    source: conversionLines(conversion, (file) => {
      const bytes = uploadBytes(source, file);
      if (bytes) fetched.add(file.key);
      return bytes;
    }),
  });
  return {
    result,
    warnings: conversion.warnings,
    notFetched: conversion.remoteFiles.filter((file) => !fetched.has(file.key)),
  };
}
