// Requests to the web service as the gateway forwards them: an internal token for the user (or
// none, for an anonymous page), the raw path as given (so traversal attempts reach the service).
import http from 'node:http';
import { INTERNAL_TOKEN_HEADER, signInternalToken, type Requester } from '@teamchat/core';
import type { Stack, TestUser } from '@teamchat/stack';

export interface PageAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
}

export function requesterOf(user: TestUser): Requester {
  return {
    userId: user.id,
    realmId: user.realm.id,
    role: user.profile.role,
    email: user.email,
    isBot: false,
  };
}

export function webRequest(
  stack: Stack,
  rawPath: string,
  options: { user?: TestUser; method?: 'GET' | 'HEAD'; headers?: http.OutgoingHttpHeaders } = {},
): Promise<PageAnswer> {
  const method = options.method ?? 'GET';
  const pathOnly = rawPath.split('?')[0];
  const token = signInternalToken(stack.deps.env.INTERNAL_JWT_SECRET, {
    user: options.user ? requesterOf(options.user) : null,
    realmId: stack.realm.id,
    // The service checks the token against the method as express sees it (HEAD is a GET route).
    method,
    path: pathOnly,
  });
  const url = new URL(stack.serviceUrls.web!);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: rawPath,
        headers: { [INTERNAL_TOKEN_HEADER]: token, ...options.headers },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: response.statusCode!, headers: response.headers, body, text: body.toString() });
        });
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/** The JSON of the page's #page-params (its data-params attribute, unescaped as a browser would). */
export function pageParamsOf(html: string): Record<string, unknown> {
  const match = /<div hidden id="page-params" data-params='([^']*)'><\/div>/.exec(html);
  if (!match) throw new Error('no #page-params in the page');
  const unescaped = match[1].replace(
    /&(quot|amp|lt|gt|#39);/g,
    (_whole, name: string) => ({ quot: '"', amp: '&', lt: '<', gt: '>', '#39': "'" })[name]!,
  );
  return JSON.parse(unescaped) as Record<string, unknown>;
}
