// HTTP requests to addresses that users chose (an outgoing webhook bot's service URL), so they
// may reach only what the operator allows: Zulip sends them through Smokescreen, which refuses
// private networks (zerver/lib/outgoing_http.py; docs/operations.md, "Outgoing webhooks").
// Here the check is made on the address each connection is actually opened to (the lookup the
// request uses), so a name that resolves to a public address when checked and to a private one
// when connecting cannot get through.

import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/** Loopback, link-local, private, shared, multicast and reserved ranges: the cluster's own and the host's. */
const REFUSED = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv6');
}

/** Whether `address` is in a range no outgoing request goes to unless its host is allowed. */
export function isRefusedAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return REFUSED.check(mapped[1], 'ipv4');
  const family = net.isIP(address);
  if (family === 0) return true;
  return REFUSED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The request went to no address the operator allows (Smokescreen answers these 407). */
export class DisallowedAddressError extends Error {
  constructor(readonly host: string) {
    super(`${host} is not an address outgoing requests may go to`);
    this.name = 'DisallowedAddressError';
  }
}

/** The service took longer than the timeout to answer. */
export class RequestTimeoutError extends Error {
  constructor(readonly seconds: number) {
    super(`Request timed out after ${seconds} seconds.`);
    this.name = 'RequestTimeoutError';
  }
}

export interface GuardedRequest {
  url: string;
  body: string;
  contentType: string;
  userAgent: string;
  timeoutSeconds: number;
  /**
   * Hosts (a name, an address, or either with ":port") whose private addresses may be called:
   * OUTGOING_WEBHOOK_ALLOWED_HOSTS.
   */
  allowedHosts: ReadonlySet<string>;
}

export interface GuardedResponse {
  status: number;
  body: Buffer;
}

/** The most of an answer that is read: a reply is a chat message. */
const MAX_RESPONSE_BYTES = 1 << 20;

/** OUTGOING_WEBHOOK_ALLOWED_HOSTS as a set of lowercase entries. */
export function parseAllowedHosts(setting: string): Set<string> {
  return new Set(
    setting
      .split(',')
      .map((entry) => entry.trim().toLowerCase())
      .filter((entry) => entry.length > 0),
  );
}

/**
 * POSTs `body` to `url`; answers the status and body. Throws DisallowedAddressError (nothing was
 * sent), RequestTimeoutError, or the connection's error.
 */
export function guardedPost(request: GuardedRequest): Promise<GuardedResponse> {
  const url = new URL(request.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(new DisallowedAddressError(url.host));
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const allowed = request.allowedHosts.has(hostname) || request.allowedHosts.has(`${hostname}:${port}`);
  // A literal address is connected to without a lookup: checked here.
  if (net.isIP(hostname) !== 0 && !allowed && isRefusedAddress(hostname)) {
    return Promise.reject(new DisallowedAddressError(url.host));
  }
  const lookup: net.LookupFunction = (name, options, callback) => {
    dns.lookup(name, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      if (!allowed && addresses.some((entry) => isRefusedAddress(entry.address))) {
        return callback(new DisallowedAddressError(url.host), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, all: dns.LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const outgoing = client.request(
      url,
      {
        method: 'POST',
        lookup,
        headers: {
          'content-type': request.contentType,
          'content-length': Buffer.byteLength(request.body),
          'user-agent': request.userAgent,
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk);
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      },
    );
    outgoing.setTimeout(request.timeoutSeconds * 1000, () =>
      outgoing.destroy(new RequestTimeoutError(request.timeoutSeconds)),
    );
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}
