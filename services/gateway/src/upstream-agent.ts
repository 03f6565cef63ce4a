// Keep-alive connections to the services that do not outlive a scale-out. A Kubernetes Service
// balances per TCP connection, so a connection kept forever stays on the replica it first
// reached: sockets opened before new replicas started would never send them a request (the
// event tier's long-polls, reused at once after every answer, never even go idle). So each
// upstream socket is closed after the response it is serving once it is older than a maximum
// age (jittered, so sockets opened together are not all replaced at the same moment), and a
// free socket after an idle time. Reuse within that age stays: a connection per request would
// cost more than the requests when thousands of parked polls are answered together.

import http from 'node:http';
import type stream from 'node:stream';

export interface UpstreamAgentOptions {
  /** Longest time a socket is reused; after that it is closed once its current response is done. */
  maxSocketAgeMs: number;
  /** A free socket is closed after being idle this long. */
  idleSocketMs: number;
  /** Free sockets kept per upstream. */
  maxFreeSockets: number;
}

/** Up to this fraction of the maximum age is taken off each socket's, at random. */
const AGE_JITTER = 0.2;

export class UpstreamAgent extends http.Agent {
  /** When each socket stops being reused (ms since the epoch), set when it is opened. */
  private readonly retireAt = new WeakMap<stream.Duplex, number>();

  constructor(private readonly limits: UpstreamAgentOptions) {
    // `timeout` is the free sockets' idle timeout: while a request uses a socket, the request's
    // own timeout applies instead (0 for long-polls).
    super({
      keepAlive: true,
      maxSockets: Infinity,
      maxFreeSockets: limits.maxFreeSockets,
      timeout: limits.idleSocketMs,
    });
  }

  override createConnection(
    options: http.ClientRequestArgs,
    callback?: (error: Error | null, socket: stream.Duplex) => void,
  ): stream.Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    if (socket) this.retireAt.set(socket, Date.now() + this.limits.maxSocketAgeMs * (1 - Math.random() * AGE_JITTER));
    return socket;
  }

  /** Called when a response is done and the socket could be kept for the next request. */
  override keepSocketAlive(socket: stream.Duplex): boolean {
    if (Date.now() >= (this.retireAt.get(socket) ?? 0)) return false;
    // node's own rule (idle timeout, the server's Keep-Alive hint); typed void, returns a boolean.
    return (super.keepSocketAlive(socket) as unknown as boolean | undefined) !== false;
  }
}
