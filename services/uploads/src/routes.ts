// The whole HTTP surface of the uploads service.
import type { Route } from '@teamchat/core';
import type { UploadsDeps } from './deps';
import { deleteAttachment, listAttachments } from './views/attachments';
import {
  downloadUpload,
  getTemporaryFileUrl,
  serveTemporaryFile,
  serveThumbnail,
  serveUpload,
} from './views/serve-file';
import { deactivateRealmEmoji, servePublicFile, uploadRealmEmoji } from './views/realm-emoji';
import { deleteRealmExport, getRealmExportConsents, listRealmExports, requestRealmExport } from './views/realm-exports';
import { handleTus } from './views/tus';
import { uploadFile } from './views/upload-file';

export const routes: Route<UploadsDeps>[] = [
  { method: 'POST', path: '/api/v1/user_uploads', view: uploadFile, body: 'raw' },
  { method: 'GET', path: '/api/v1/user_uploads/*path', view: getTemporaryFileUrl },
  { method: 'GET', path: '/api/v1/attachments', view: listAttachments },
  { method: 'DELETE', path: '/api/v1/attachments/:attachment_id', view: deleteAttachment },
  // tus: creation, then HEAD (served by the GET route), PATCH and DELETE per upload.
  { method: 'POST', path: '/api/v1/tus', view: handleTus, body: 'raw' },
  { method: 'GET', path: '/api/v1/tus/:upload_id', view: handleTus, body: 'raw' },
  { method: 'PATCH', path: '/api/v1/tus/:upload_id', view: handleTus, body: 'raw' },
  { method: 'DELETE', path: '/api/v1/tus/:upload_id', view: handleTus, body: 'raw' },
  // Files (HEAD is served by the GET routes); the download, thumbnail and temporary forms first,
  // as they are also paths.
  { method: 'GET', path: '/user_uploads/download/*path', view: downloadUpload },
  { method: 'GET', path: '/user_uploads/thumbnail/*path', view: serveThumbnail },
  { method: 'GET', path: '/user_uploads/temporary/*path', view: serveTemporaryFile, auth: 'anonymous' },
  { method: 'GET', path: '/user_uploads/*path', view: serveUpload },
  // Custom emoji: the images, written here, are served from /user_avatars/ without credentials.
  { method: 'POST', path: '/api/v1/realm/emoji/*emoji_name', view: uploadRealmEmoji, body: 'raw' },
  { method: 'DELETE', path: '/api/v1/realm/emoji/*emoji_name', view: deactivateRealmEmoji },
  { method: 'GET', path: '/user_avatars/*path', view: servePublicFile, auth: 'anonymous' },
  // Data exports: the worker writes the archive into this service's storage (/user_avatars/exports/...).
  { method: 'POST', path: '/api/v1/export/realm', view: requestRealmExport },
  { method: 'GET', path: '/api/v1/export/realm', view: listRealmExports },
  { method: 'GET', path: '/api/v1/export/realm/consents', view: getRealmExportConsents },
  { method: 'DELETE', path: '/api/v1/export/realm/:export_id', view: deleteRealmExport },
];
