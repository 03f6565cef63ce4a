// Calls from one service to another (e.g. users → channels to subscribe a new account):
// the owning service's own HTTP API, with an internal token the calling service signs for
// the acting user, exactly as if the gateway had forwarded the request. No service writes
// another service's tables.

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { JsonableError } from './errors';
import { INTERNAL_TOKEN_HEADER, REQUEST_ID_HEADER, signInternalToken, type Requester } from './internal-token';

export interface ServiceCall {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** e.g. "/api/v1/users/me/subscriptions" */
  path: string;
  /** The user the call acts as (permission checks apply to them); null for an anonymous route of `realmId`. */
  actingAs: Requester | null;
  realmId?: number;
  /** Form parameters: strings as they are, anything else JSON-encoded (the Zulip wire format). */
  params?: Record<string, unknown>;
  requestId?: string;
}

/** The request of a call: its URL (with the query of a GET), headers and form body. */
function prepareCall(baseUrl: string, secret: string, call: ServiceCall) {
  const token = signInternalToken(secret, {
    user: call.actingAs,
    realmId: call.actingAs?.realmId ?? call.realmId ?? null,
    method: call.method,
    path: call.path,
  });
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(call.params ?? {})) {
    if (value !== undefined) form.set(name, typeof value === 'string' ? value : JSON.stringify(value));
  }
  const inQuery = call.method === 'GET';
  return {
    url: `${baseUrl}${call.path}${inQuery && form.size ? `?${form}` : ''}`,
    headers: {
      [INTERNAL_TOKEN_HEADER]: token,
      [REQUEST_ID_HEADER]: call.requestId ?? randomUUID(),
      ...(inQuery ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
    },
    body: inQuery ? undefined : form.toString(),
  };
}

export async function callService<T = Record<string, unknown>>(
  baseUrl: string,
  secret: string,
  call: ServiceCall,
): Promise<T> {
  const { url, headers, body: form } = prepareCall(baseUrl, secret, call);
  const response = await fetch(url, { method: call.method, headers, body: form });
  const body = (await response.json()) as Record<string, unknown>;
  if (body.result !== 'success') throw serviceError(response.status, body);
  return body as T;
}

/** Connections kept open between calls (a page's register per page view). */
const rawCallAgent = new http.Agent({ keepAlive: true });

/**
 * The call of callService, a success's answer as the stream it arrives as, unparsed and undecoded
 * (register's megabytes, passed into a page as they come: collecting them costs a major garbage
 * collection per page); an error answer (a few hundred bytes) is read and thrown as callService
 * throws it. Node's http, not fetch: fetch's web streams cost about twice the CPU.
 */
export async function callServiceRaw(
  baseUrl: string,
  secret: string,
  call: ServiceCall,
): Promise<http.IncomingMessage> {
  const { url, headers, body } = prepareCall(baseUrl, secret, call);
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: call.method,
        agent: rawCallAgent,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      resolve,
    );
    request.on('error', reject);
    request.end(body);
  });
  if (response.statusCode === 200) return response;
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  throw serviceError(
    response.statusCode ?? 500,
    JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>,
  );
}

/** The error a service answered (its body parsed), as this process's own. */
export function serviceError(status: number, body: Record<string, unknown>): JsonableError {
  const { msg, code, result: _result, ...data } = body;
  return new JsonableError(String(msg ?? 'Internal request failed'), { code: code as never, status, data });
}
