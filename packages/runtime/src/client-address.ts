// The client's address (what the per-address rate limits and the login throttle count by) is
// decided in one place, by one setting, RATE_LIMIT_TRUST_FORWARDED_FOR:
//  - a public entry (the gateway, and the event tier serving polls directly: docs/adr/0006) sees
//    the client's socket; behind a proxy, when the setting says so, it takes the last
//    X-Forwarded-For entry, the one the proxy appended (earlier entries are the client's own);
//  - the gateway hands what it resolved to the service it forwards to in CLIENT_ADDRESS_HEADER,
//    a header it strips from clients' requests, like the internal token every service requires
//    (packages/core/src/http.ts), so a service's peer is always the gateway or another service.
//    Services read that header and never X-Forwarded-For.

import type http from 'node:http';

export const CLIENT_ADDRESS_HEADER = 'x-teamchat-client-address';

function lastHeaderEntry(value: string | string[] | undefined): string | undefined {
  return (Array.isArray(value) ? value.join(',') : (value ?? '')).split(',').pop()?.trim() || undefined;
}

/** At a public entry: the socket's address, or the proxy's X-Forwarded-For entry when trusted. */
export function publicClientAddress(req: http.IncomingMessage, trustForwardedFor: boolean): string {
  return (
    (trustForwardedFor ? lastHeaderEntry(req.headers['x-forwarded-for']) : undefined) ??
    req.socket.remoteAddress ??
    'unknown'
  );
}

/** In a service: the address the gateway resolved (the socket's when another service calls). */
export function clientAddressFromGateway(req: http.IncomingMessage): string {
  return lastHeaderEntry(req.headers[CLIENT_ADDRESS_HEADER]) ?? req.socket.remoteAddress ?? 'unknown';
}
