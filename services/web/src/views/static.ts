// GET /static/...: the files of Zulip's built web app (ZULIP_WEB_DIR/static), as Zulip's nginx
// serves them: streamed, typed by name, cached for a year when the name carries a content hash
// (Django adds 12 hex digits, webpack 20) and briefly otherwise, a 404 page for what is not there.
// Nothing outside the folder is reachable: every segment is decoded and checked first.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import mime from 'mime-types';
import { RESPONDED, type AuthedContext, type ViewResult } from '@teamchat/core';
import type { WebDeps } from '../deps';
import { sendNotFoundPage } from '../lib/error-pages';
import { installedWebApp } from './home';

const STATIC_PREFIX = '/static/';

/** Zulip's nginx rule for names that change with their content. */
const HASHED_NAME = /\.[0-9a-f]{12}\.|[./][0-9a-f]{20}\./;
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';
export const SHORT_CACHE = 'public, max-age=3600';

/** The file's path under `root` for a URL path after /static/, or null when it would leave it. */
export function staticFilePath(root: string, urlPath: string): string | null {
  const segments: string[] = [];
  for (const raw of urlPath.split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (segment === '' || segment === '.') continue;
    if (segment === '..' || segment.includes('/') || segment.includes('\\') || segment.includes('\u0000')) return null;
    segments.push(segment);
  }
  if (!segments.length) return null;
  const file = path.join(root, ...segments);
  return file.startsWith(root + path.sep) ? file : null;
}

export async function serveStatic(ctx: AuthedContext<WebDeps>): Promise<ViewResult> {
  const { req, res } = ctx;
  const webApp = installedWebApp(ctx.deps);
  const file = staticFilePath(webApp.staticDir, req.path.slice(STATIC_PREFIX.length));
  const stat = file ? await fs.promises.stat(file).catch(() => null) : null;
  if (!file || !stat?.isFile()) {
    sendNotFoundPage(res, webApp);
    return RESPONDED;
  }
  const name = path.basename(file);
  res.writeHead(200, {
    'Content-Type': mime.contentType(name) || 'application/octet-stream',
    'Content-Length': stat.size,
    'Cache-Control': HASHED_NAME.test(req.path) ? IMMUTABLE_CACHE : SHORT_CACHE,
    'Last-Modified': stat.mtime.toUTCString(),
    'Access-Control-Allow-Origin': '*',
    'Timing-Allow-Origin': '*',
    'X-Content-Type-Options': 'nosniff',
  });
  if (req.method === 'HEAD') res.end();
  // A client gone mid-file ends the stream; that is not the server's failure.
  else await pipeline(fs.createReadStream(file), res).catch(() => res.destroy());
  return RESPONDED;
}
