// Calls from one service to another (e.g. users → channels to subscribe a new account):
// the owning service's own HTTP API, with an internal token the calling service signs for
// the acting user, exactly as if the gateway had forwarded the request. No service writes
// another service's tables.

import { randomUUID } from 'node:crypto';
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

/** A service's answer as it came: its status and body text (for an answer passed on unparsed). */
export interface RawServiceAnswer {
  status: number;
  text: string;
}

export async function callService<T = Record<string, unknown>>(
  baseUrl: string,
  secret: string,
  call: ServiceCall,
): Promise<T> {
  const { status, text } = await callServiceRaw(baseUrl, secret, call);
  const body = JSON.parse(text) as Record<string, unknown>;
  if (body.result !== 'success') throw serviceError(status, body);
  return body as T;
}

/** The call of callService, its answer unparsed (register's megabytes embedded in a page as they are). */
export async function callServiceRaw(baseUrl: string, secret: string, call: ServiceCall): Promise<RawServiceAnswer> {
  const requestId = call.requestId ?? randomUUID();
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
  const url = `${baseUrl}${call.path}${inQuery && form.size ? `?${form}` : ''}`;
  const response = await fetch(url, {
    method: call.method,
    headers: {
      [INTERNAL_TOKEN_HEADER]: token,
      [REQUEST_ID_HEADER]: requestId,
      ...(inQuery ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
    },
    body: inQuery ? undefined : form.toString(),
  });
  return { status: response.status, text: await response.text() };
}

/** The error a service answered (its body parsed), as this process's own. */
export function serviceError(status: number, body: Record<string, unknown>): JsonableError {
  const { msg, code, result: _result, ...data } = body;
  return new JsonableError(String(msg ?? 'Internal request failed'), { code: code as never, status, data });
}
