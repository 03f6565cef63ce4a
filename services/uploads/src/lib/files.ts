// Names, paths and types of uploaded files, as Zulip derives them (zerver/lib/upload/__init__.py,
// zerver/lib/mime_types.py, django.utils.http.content_disposition_header).

import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import mime from 'mime-types';
import { JsonableError, type Logger } from '@teamchat/core';
import { INLINE_IMAGE_TYPES } from '@teamchat/domain';

/**
 * A name safe in a file system, in S3 and in a URL: Unicode letters and digits, "_", ".", "-"
 * (Zulip's sanitize_name). `strict` keeps ASCII only, for tus uploads as Zulip does.
 */
export function sanitizeName(value: string, options: { strict?: boolean } = {}): string {
  const kept = options.strict
    ? value.replace(/[^A-Za-z0-9_ .-]/g, '').trim()
    : value
        .normalize('NFKC')
        .replace(/[^\p{L}\p{N}_\s.-]/gu, '')
        .trim();
  const name = kept.replace(/[-\s]+/g, '-');
  return name === '' || name === '.' || name === '..' ? 'uploaded-file' : name;
}

/**
 * The filename parameter of a multipart part as its UTF-8 text. Parsers (busboy, under
 * multer) read a plain filename="..." as latin1, but clients send UTF-8 there (requests,
 * browsers), as Django reads it; names from filename*=UTF-8'' arrive decoded already.
 */
export function multipartFileName(parsed: string): string {
  // eslint-disable-next-line no-control-regex -- the test is for latin1, controls included
  if (!/^[\x00-\xff]*$/.test(parsed)) return parsed;
  const bytes = Buffer.from(parsed, 'latin1');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return parsed;
  }
}

/**
 * The name a client gave its file, as Zulip keeps it: the last path segment, without
 * unprintable characters, percent-escapes decoded. null when nothing usable is left.
 */
export function clientFileName(raw: string): string | null {
  const base = raw.split('/').pop()!.split('\\').pop()!;
  const printable = base.replace(/[\p{C}\p{Zl}\p{Zp}]/gu, '').replace(/[^\P{Zs} ]/gu, '');
  if (printable === '' || printable === '.' || printable === '..') return null;
  return percentDecode(printable);
}

/** Python's unquote: %XX sequences decoded as UTF-8, malformed ones left as they are. */
function percentDecode(text: string): string {
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    const bytes = Buffer.from(run.replace(/%/g, ''), 'hex');
    return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  });
}

/** Django's limit on an uploaded file's name (UploadedFile's name setter), in characters. */
export const MAX_FILE_NAME_LENGTH = 255;
/** The most a stored name (the path id's last segment) takes, in UTF-8 bytes: far below any file system's 255. */
export const MAX_STORED_NAME_BYTES = 100;

/** Python's os.path.splitext: the extension is from the last dot, unless the name starts there. */
function splitExtension(name: string): [string, string] {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || /^\.+$/.test(name.slice(0, dot + 1))) return [name, ''];
  return [name.slice(0, dot), name.slice(dot)];
}

/** At most `max` of `units(text)`, cut between code points. */
function cut(text: string, max: number, units: (part: string) => number): string {
  let kept = '';
  for (const char of text) {
    if (units(kept + char) > max) break;
    kept += char;
  }
  return kept;
}

const codePoints = (text: string) => Array.from(text).length;

/**
 * An upload's name as Django keeps it: at most 255 characters, the stem cut so the extension
 * stays (an extension of 255 characters or more is cut itself).
 */
export function boundedFileName(name: string): string {
  if (codePoints(name) <= MAX_FILE_NAME_LENGTH) return name;
  const [stem, extension] = splitExtension(name);
  const keptExtension = cut(extension, MAX_FILE_NAME_LENGTH, codePoints);
  return cut(stem, MAX_FILE_NAME_LENGTH - codePoints(keptExtension), codePoints) + keptExtension;
}

/** A sanitised name cut to MAX_STORED_NAME_BYTES of UTF-8, keeping a short extension. */
function storedName(sanitizedName: string): string {
  if (Buffer.byteLength(sanitizedName) <= MAX_STORED_NAME_BYTES) return sanitizedName;
  const [stem, extension] = splitExtension(sanitizedName);
  const keptExtension = Buffer.byteLength(extension) <= 16 ? extension : '';
  return cut(stem, MAX_STORED_NAME_BYTES - Buffer.byteLength(keptExtension), Buffer.byteLength) + keptExtension;
}

/**
 * "{realm_id}/{24 random URL-safe characters}/{sanitised name}": the key and URL path of an
 * upload. The name is cut to a fixed budget, so no path's length depends on the client's name.
 */
export function newPathId(realmId: number, sanitizedName: string): string {
  return `${realmId}/${crypto.randomBytes(18).toString('base64url')}/${storedName(sanitizedName)}`;
}

export function uploadUrl(pathId: string): string {
  return `/user_uploads/${pathId}`;
}

export function guessContentType(fileName: string): string | null {
  return mime.lookup(fileName) || null;
}

export const OCTET_STREAM = 'application/octet-stream';

// RFC 9110 media types: type "/" subtype, then ";"-separated token=value parameters (a value a
// token or a quoted string). Anything else (a comma, a second type, CR/LF) is no media type.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t \\x20-\\x7e\\x80-\\xff])*"';
// Each run of blanks has one place to go: no backtracking blow-up on long inputs.
const PARAMETER = `${TOKEN}=(?:${TOKEN}|${QUOTED_STRING})[\\t ]*`;
const MEDIA_TYPE = new RegExp(`^(${TOKEN})/(${TOKEN})[\\t ]*(?:;[\\t ]*(?:${PARAMETER})?)*$`);

/**
 * "type/subtype" of a Content-Type value, lower-cased, without its parameters; null when the
 * value is not exactly one well-formed media type. Browsers read "text/plain;x=y,text/html" as
 * text/html: only the parsed essence may decide how a file is served.
 */
export function mediaTypeEssence(value: string): string | null {
  const text = value.replace(/^[\t ]+|[\t ]+$/g, '');
  if (text.length > 1000) return null;
  const match = MEDIA_TYPE.exec(text);
  return match ? `${match[1]}/${match[2]}`.toLowerCase() : null;
}

/**
 * The type to store: the essence of the one the client declared, else a guess from the name,
 * else application/octet-stream (Zulip's get_file_info). A declared type that does not parse
 * is application/octet-stream: never served inline.
 */
export function storedContentType(declared: string | undefined, fileName: string): string {
  if (declared === undefined || declared.trim() === '') return guessContentType(fileName) ?? OCTET_STREAM;
  return mediaTypeEssence(declared) ?? OCTET_STREAM;
}

/** The type a stored file is served as; rows stored before types were normalised are parsed here too. */
export function servedContentType(stored: string | null, fileName: string): string {
  if (stored === null || stored === '') return guessContentType(fileName) ?? OCTET_STREAM;
  return mediaTypeEssence(stored) ?? OCTET_STREAM;
}

/**
 * Types browsers may show inline from our origin. Everything else is served as a download.
 * (Zulip's list, without image/svg+xml: SVG can carry scripts.)
 */
const INLINE_MIME_TYPES = new Set([
  'application/pdf',
  'audio/aac',
  'audio/flac',
  'audio/mp4',
  'audio/mpeg',
  'audio/wav',
  'audio/webm',
  ...INLINE_IMAGE_TYPES,
  'text/plain',
  'video/mp4',
  'video/webm',
]);

/** Only an exact essence from the list: `contentType` is what servedContentType returned. */
export function isInlineContentType(contentType: string): boolean {
  return INLINE_MIME_TYPES.has(contentType);
}

export const FILENAME_WITH_NUL = 'Filename contains NULL (0x00) characters.';

/** PostgreSQL text cannot hold NUL: a name with one is refused, never stored. */
export function checkFileName(name: string): void {
  if (name.includes('\u0000')) throw new JsonableError(FILENAME_WITH_NUL);
}

/** Django's content_disposition_header: a quoted ASCII name, or RFC 5987 filename*= otherwise. */
export function contentDisposition(asAttachment: boolean, fileName: string): string {
  const disposition = asAttachment ? 'attachment' : 'inline';
  if (/^[\t \x21-\x7e]*$/.test(fileName)) {
    return `${disposition}; filename="${fileName.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  }
  return `${disposition}; filename*=utf-8''${pythonQuote(fileName)}`;
}

/** Python's urllib.parse.quote: everything but A-Z a-z 0-9 _ . - ~ / percent-encoded as UTF-8. */
function pythonQuote(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, '/');
}

/**
 * Ends a file answer whose headers are set: the body streamed, or nothing (HEAD). A client gone
 * or storage failing mid-stream leaves nothing more to say on this response: it is logged and cut.
 */
export async function sendFileBody(
  res: Response,
  body: Readable | null,
  log: Pick<Logger, 'warn'>,
  details: Record<string, unknown>,
): Promise<void> {
  if (!body) {
    res.end();
    return;
  }
  try {
    await pipeline(body, res);
  } catch (error) {
    log.warn({ err: error, ...details }, 'file download cut short');
    res.destroy();
  }
}
