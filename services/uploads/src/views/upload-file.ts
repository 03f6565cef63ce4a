// POST /api/v1/user_uploads: one file in a multipart body, whatever its field's name
// (python-zulip-api names the field after the file's path), streamed straight to storage.

import type { Request, Response } from 'express';
import multer from 'multer';
import { JsonableError, type AuthedContext, type Requester } from '@teamchat/core';
import { ObjectTooLargeError, uploadKeys } from '@teamchat/storage';
import { doCreateAttachment, type StoredUpload } from '../actions/attachments';
import type { UploadsDeps } from '../deps';
import {
  boundedFileName,
  checkFileName,
  clientFileName,
  multipartFileName,
  newPathId,
  sanitizeName,
  storedContentType,
  uploadUrl,
} from '../lib/files';
import { FileTooLargeError } from '../lib/limits';

type ReceivedFile = Express.Multer.File & { upload: StoredUpload };

/** A multer storage engine that writes the file part into our storage under a new path id. */
function storageEngine(deps: UploadsDeps, requester: Requester): multer.StorageEngine {
  return {
    _handleFile(_req, file, callback) {
      let fileName: string;
      try {
        const given = multipartFileName(file.originalname);
        checkFileName(given);
        fileName = boundedFileName(clientFileName(given) ?? 'uploaded-file');
        checkFileName(fileName); // a %00 escape, decoded
      } catch (error) {
        return callback(error as Error);
      }
      const pathId = newPathId(requester.realmId, sanitizeName(fileName));
      // busboy reports a part without a Content-Type header (python-zulip-api sends none) as
      // text/plain, so that value counts as undeclared: a real text file gets it from its name.
      const contentType = storedContentType(file.mimetype === 'text/plain' ? undefined : file.mimetype, fileName);
      deps.storage.put(pathId, file.stream, { contentType, maxBytes: deps.config.maxFileSizeBytes }).then(
        ({ size }) => callback(null, { upload: { pathId, fileName, contentType, size } } as Partial<ReceivedFile>),
        (error: unknown) => callback(error as Error),
      );
    },
    _removeFile(_req, file, callback) {
      const { upload } = file as ReceivedFile;
      if (!upload) return callback(null);
      deps.storage.delete(uploadKeys(deps.storage, upload.pathId)).then(() => callback(null), callback);
    },
  };
}

async function receiveFiles(
  req: Request,
  res: Response,
  deps: UploadsDeps,
  requester: Requester,
): Promise<ReceivedFile[]> {
  const parse = multer({ storage: storageEngine(deps, requester), limits: { files: 1, fields: 1000 } }).any();
  try {
    await new Promise<void>((resolve, reject) =>
      parse(req, res, (error?: unknown) => (error ? reject(error) : resolve())),
    );
  } catch (error) {
    throw asUploadError(error, deps.config.maxFileSizeBytes);
  }
  return (req.files as ReceivedFile[] | undefined) ?? [];
}

function asUploadError(error: unknown, maxBytes: number): unknown {
  if (error instanceof ObjectTooLargeError) return new FileTooLargeError(maxBytes);
  if (error instanceof multer.MulterError) {
    if (error.code === 'LIMIT_FILE_COUNT') return new JsonableError('You may only upload one file at a time');
    return new JsonableError(`Malformed request body: ${error.message}`);
  }
  const message = (error as Error)?.message ?? '';
  // busboy's refusals: "Malformed part header", "Unexpected end of form", "Multipart: Boundary not found"...
  if (/Multipart|Malformed|Unexpected end of (form|file)|boundary|aborted/i.test(message))
    return new JsonableError('Malformed multipart body');
  return error;
}

export async function uploadFile(ctx: AuthedContext<UploadsDeps>) {
  const { deps, requester } = ctx;
  const files = await receiveFiles(ctx.req, ctx.res, deps, requester);
  if (files.length === 0) throw new JsonableError('You must specify a file to upload');
  const { upload } = files[0];
  try {
    await doCreateAttachment(deps, requester, upload);
  } catch (error) {
    // Not recorded (over quota, or any failure): the stored bytes must go too.
    await deps.storage.delete(uploadKeys(deps.storage, upload.pathId));
    throw error;
  }
  const url = uploadUrl(upload.pathId);
  return { uri: url, url, filename: upload.fileName };
}
