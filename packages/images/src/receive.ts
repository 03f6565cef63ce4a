// An image upload's multipart body (Zulip's request.FILES): every file part, kept in memory up
// to a byte limit (a larger one is read through and dropped, so the request still gets Zulip's
// answer), and the text fields beside them, left in req.body for the parameter parser.

import type { Request, Response } from 'express';
import multer from 'multer';
import { JsonableError } from '@teamchat/core';

export interface UploadedImageFile {
  /** The bytes, or null when the part went past the limit. */
  data: Buffer | null;
  /** The part's file name, as sent. */
  fileName: string;
  /** The part's declared Content-Type ('' when it declares none, or only a generic one). */
  contentType: string;
}

/** Types that say nothing about a part's content. */
const UNDECLARED_TYPES = new Set(['text/plain', 'application/octet-stream']);

/** At most this many file parts are read: Zulip wants exactly one, and says so past it. */
const MAX_FILE_PARTS = 10;

export interface UploadedFiles {
  files: UploadedImageFile[];
  /** More file parts than were read. */
  tooMany: boolean;
}

/**
 * The file's bytes, or Zulip's refusal of a file over `maxMiB` (one the receiver dropped past its
 * own limit included).
 */
export function uploadedFileBytes(file: UploadedImageFile, maxMiB: number): Buffer {
  if (!file.data || file.data.length > maxMiB * 1024 * 1024)
    throw new JsonableError(`Uploaded file is larger than the allowed limit of ${maxMiB} MiB`);
  return file.data;
}

/**
 * Reads the file parts of a multipart request, each up to `maxBytes`. A request that is not
 * multipart has no files.
 */
export async function receiveUploadedFiles(req: Request, res: Response, maxBytes: number): Promise<UploadedFiles> {
  const files: UploadedImageFile[] = [];
  if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) return { files, tooMany: false };
  const storage: multer.StorageEngine = {
    _handleFile(_req, file, callback) {
      const chunks: Buffer[] = [];
      let size = 0;
      file.stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= maxBytes) chunks.push(chunk);
      });
      file.stream.on('error', callback);
      file.stream.on('end', () => {
        // busboy gives a part without a Content-Type text/plain (RFC 7578's default): as Django,
        // call that nothing declared, and so the generic binary type clients send.
        const declared = UNDECLARED_TYPES.has(file.mimetype) ? '' : file.mimetype;
        files.push({
          data: size <= maxBytes ? Buffer.concat(chunks) : null,
          fileName: file.originalname,
          contentType: declared,
        });
        callback(null, {});
      });
    },
    _removeFile(_req, _file, callback) {
      callback(null);
    },
  };
  const parse = multer({ storage, limits: { files: MAX_FILE_PARTS, fields: 1000, fieldSize: 1024 * 1024 } }).any();
  try {
    await new Promise<void>((resolve, reject) =>
      parse(req, res, (error?: unknown) => (error ? reject(error) : resolve())),
    );
  } catch (error) {
    if (error instanceof multer.MulterError) {
      if (error.code === 'LIMIT_FILE_COUNT') return { files, tooMany: true };
      throw new JsonableError(`Malformed multipart body: ${error.message}`);
    }
    if (error instanceof JsonableError) throw error;
    throw new JsonableError(`Malformed multipart body: ${(error as Error)?.message ?? 'bad request'}`);
  }
  return { files, tooMany: false };
}
