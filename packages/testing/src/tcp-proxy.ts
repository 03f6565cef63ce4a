// A TCP proxy in front of Redis (a process's own REDIS_URL points here), so a test can cut that
// one process off while every other process keeps talking to Redis:
// - hold(ms): stop forwarding in both directions (a partition that drops nothing: TCP buffers
//   the bytes, the replica's commands just do not get answers), then deliver everything;
// - cut(ms): reset every connection and refuse new ones (RST) for ms, then accept again;
// - cut(ms, { delay }): the same, but when connections come back, the ones that match (by the
//   name ioredis gives them with CLIENT SETNAME, or the first N reconnects) are held for a while
//   before they reach Redis, so connections come back in another order than they left (the
//   known loss: intake connections were back ~0.6 s before the commands connection).

import net from 'node:net';
import { sleep } from './wait';

interface Pair {
  client: net.Socket;
  upstream?: net.Socket;
  /** Bytes from the client not yet forwarded (before the upstream is open, or while held). */
  pending: Buffer[];
  /** The connection's name from its CLIENT SETNAME (ioredis sends it first), once seen. */
  name?: string;
}

export interface DelayRule {
  /** Connections whose CLIENT SETNAME matches (e.g. /:commands$/) are held this long. */
  nameMatches?: RegExp;
  /** The first `firstN` connections after the cut are held (whatever their name). */
  firstN?: number;
  ms: number;
}

export class TcpProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<Pair>();
  private refuseUntil = 0;
  private holdUntil = 0;
  private holdTimer: NodeJS.Timeout | undefined;
  private delay: (DelayRule & { until: number; seen: number }) | undefined;
  port = 0;
  /** What happened, for the report: connections accepted, refused, reset, delayed. */
  readonly counts = { accepted: 0, refused: 0, reset: 0, delayed: 0 };

  constructor(
    private readonly upstreamPort: () => number,
    private readonly upstreamHost = '127.0.0.1',
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async listen(): Promise<this> {
    const server = net.createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return this;
  }

  private get held(): boolean {
    return Date.now() < this.holdUntil;
  }

  private accept(client: net.Socket): void {
    client.setNoDelay(true);
    if (Date.now() < this.refuseUntil) {
      // A refused connection, as a firewall's REJECT with tcp-reset does it.
      this.counts.refused++;
      client.resetAndDestroy();
      return;
    }
    this.counts.accepted++;
    const pair: Pair = { client, pending: [] };
    this.pairs.add(pair);
    const rule = this.delay && Date.now() < this.delay.until ? this.delay : undefined;
    let decided = false;
    const open = (delayMs: number) => {
      decided = true;
      if (delayMs > 0) this.counts.delayed++;
      setTimeout(() => this.connectUpstream(pair), delayMs);
    };
    client.on('data', (chunk: Buffer) => {
      if (pair.upstream && !this.held && pair.pending.length === 0) {
        pair.upstream.write(chunk);
        return;
      }
      pair.pending.push(chunk);
      if (!decided) {
        // ioredis names its connections first thing (CLIENT SETNAME): decide once the name is seen.
        pair.name = /SETNAME\r\n\$\d+\r\n([^\r]*)\r\n/i.exec(Buffer.concat(pair.pending).toString('latin1'))?.[1];
        if (pair.name !== undefined) open(this.delayFor(pair, rule));
      }
    });
    // A connection that names itself late (or never) is decided after a moment all the same.
    setTimeout(() => {
      if (!decided && !client.destroyed) open(this.delayFor(pair, rule));
    }, 250);
    const drop = () => this.drop(pair);
    client.on('error', drop);
    client.on('close', drop);
  }

  private delayFor(pair: Pair, rule: (DelayRule & { seen: number }) | undefined): number {
    if (!rule) return 0;
    const index = rule.seen++;
    const byName = rule.nameMatches !== undefined && pair.name !== undefined && rule.nameMatches.test(pair.name);
    const byOrder = rule.firstN !== undefined && index < rule.firstN;
    return byName || byOrder ? rule.ms : 0;
  }

  private connectUpstream(pair: Pair): void {
    if (pair.client.destroyed) return;
    const upstream = net.connect(this.upstreamPort(), this.upstreamHost);
    upstream.setNoDelay(true);
    pair.upstream = upstream;
    upstream.on('connect', () => this.flush(pair));
    upstream.on('data', (chunk: Buffer) => {
      if (this.held) {
        // Nothing reaches the replica while held; TCP keeps the rest in the kernel's buffers.
        upstream.pause();
        upstream.unshift(chunk);
        return;
      }
      pair.client.write(chunk);
    });
    const drop = () => this.drop(pair);
    upstream.on('error', drop);
    upstream.on('close', drop);
  }

  private flush(pair: Pair): void {
    if (this.held || !pair.upstream || pair.upstream.connecting || pair.upstream.destroyed) return;
    for (const chunk of pair.pending.splice(0)) pair.upstream.write(chunk);
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream?.destroy();
  }

  /** Stops forwarding in both directions for `ms` (connections stay open), then delivers what waited. */
  hold(ms: number): Promise<void> {
    this.holdUntil = Date.now() + ms;
    clearTimeout(this.holdTimer);
    return new Promise((resolve) => {
      this.holdTimer = setTimeout(() => {
        this.holdUntil = 0;
        for (const pair of this.pairs) {
          this.flush(pair);
          pair.upstream?.resume();
        }
        resolve();
      }, ms);
    });
  }

  /**
   * Resets every connection and refuses new ones for `ms`; then accepts again, holding the
   * reconnects `delay` names for `delay.ms` (for `delay.ms * 4` after the cut ends, the window in
   * which the replica's connections come back).
   */
  async cut(ms: number, delay?: DelayRule): Promise<void> {
    this.refuseUntil = Date.now() + ms;
    for (const pair of [...this.pairs]) {
      this.counts.reset++;
      pair.client.resetAndDestroy();
      pair.upstream?.destroy();
      this.pairs.delete(pair);
    }
    this.delay = delay ? { ...delay, until: Date.now() + ms + Math.max(5_000, delay.ms * 4), seen: 0 } : undefined;
    await sleep(ms);
  }

  /** Connections open now, with their names (for the report). */
  connectionNames(): string[] {
    return [...this.pairs].map((pair) => pair.name ?? '?');
  }

  async close(): Promise<void> {
    clearTimeout(this.holdTimer);
    for (const pair of [...this.pairs]) this.drop(pair);
    await new Promise((resolve) => this.server?.close(resolve) ?? resolve(undefined));
  }
}
