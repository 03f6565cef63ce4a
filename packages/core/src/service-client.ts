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
  /** The user the call acts as (permission checks apply to them). */
  actingAs: Requester;
  /** Form parameters: strings as they are, anything else JSON-encoded (the Zulip wire format). */
  params?: Record<string, unknown>;
  requestId?: string;
}

export async function callService<T = Record<string, unknown>>(
  baseUrl: string,
  secret: string,
  call: ServiceCall,
): Promise<T> {
  const requestId = call.requestId ?? randomUUID();
  const token = signInternalToken(secret, {
    user: call.actingAs,
    realmId: call.actingAs.realmId,
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
  const body = (await response.json()) as Record<string, unknown>;
  if (body.result !== 'success') {
    const { msg, code, result: _result, ...data } = body;
    throw new JsonableError(String(msg ?? 'Internal request failed'), {
      code: code as never,
      status: response.status,
      data,
    });
  }
  return body as T;
}
