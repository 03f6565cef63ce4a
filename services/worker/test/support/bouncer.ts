// A stand-in for Zulip's push notification service (the bouncer), which is outside us: an HTTP
// server that checks each request against the protocol (zerver/lib/remote_server.py's
// send_to_push_bouncer and zilencer's views: paths, Basic auth of the server's uuid and key,
// the user agent, JSON or form bodies and the fields each endpoint requires) and records it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BouncerRequest {
  endpoint: string;
  body: Record<string, any>;
  /** The status it was answered with. */
  status: number;
  /** When it arrived whole, and when its answer went out (unset: held, or the client was gone). */
  receivedAt: number;
  answeredAt?: number;
}

const REQUIRED: Record<string, string[]> = {
  'push/notify': [
    'user_uuid',
    'user_id',
    'realm_uuid',
    'apns_payload',
    'gcm_payload',
    'gcm_options',
    'android_devices',
    'apple_devices',
  ],
  'push/register': ['server_uuid', 'user_uuid', 'realm_uuid', 'user_id', 'token', 'token_kind'],
  'push/unregister': ['server_uuid', 'realm_uuid', 'user_uuid', 'user_id', 'token', 'token_kind'],
  'push/test_notification': ['realm_uuid', 'user_uuid', 'user_id', 'token', 'token_kind', 'base_payload'],
  'server/register': ['zulip_org_id', 'zulip_org_key', 'hostname', 'contact_email'],
};
const JSON_ENDPOINTS = new Set(['push/notify', 'push/test_notification']);

export class BouncerStandIn {
  readonly requests: BouncerRequest[] = [];
  /** Protocol violations seen (a test asserts there are none). */
  readonly violations: string[] = [];
  /** Answer this many of the next requests `failWhen` picks (all by default) with a 500. */
  failNext = 0;
  failWhen: (endpoint: string, body: Record<string, any>) => boolean = () => true;
  /** Hold each answer this long (the request is recorded when it has arrived whole). */
  answerDelayMs = 0;
  /** Hold every answer until release() (the requests are recorded as they arrive). */
  holdAnswers = false;
  private held: (() => void)[] = [];
  /** Tokens to report as deleted (unknown to FCM/APNs). */
  deletedTokens = new Set<string>();
  private server!: http.Server;

  constructor(
    readonly orgId: string,
    readonly orgKey: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => void this.handle(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  notifies(): BouncerRequest[] {
    return this.requests.filter((request) => request.endpoint === 'push/notify' && request.status === 200);
  }

  private async handle(req: http.IncomingMessage, raw: string, res: http.ServerResponse) {
    let recorded: BouncerRequest | undefined;
    const record = (request: Omit<BouncerRequest, 'receivedAt'>) =>
      this.requests.push((recorded = { ...request, receivedAt: Date.now() }));
    const answer = (status: number, body: Record<string, unknown>) => {
      const send = () => {
        if (recorded && !req.socket.destroyed) recorded.answeredAt = Date.now();
        res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      };
      if (this.holdAnswers) this.held.push(send);
      else if (this.answerDelayMs > 0) setTimeout(send, this.answerDelayMs);
      else send();
    };
    const match = /^\/api\/v1\/remotes\/(.+)$/.exec(req.url ?? '');
    const endpoint = match?.[1] ?? '';
    if (req.method !== 'POST' || !(endpoint in REQUIRED)) {
      this.violations.push(`unknown endpoint ${req.method} ${req.url}`);
      return answer(404, { result: 'error', msg: 'Not found', code: 'BAD_REQUEST' });
    }
    if (!/^ZulipServer\//.test(req.headers['user-agent'] ?? '')) this.violations.push(`${endpoint}: user agent`);
    if (endpoint !== 'server/register') {
      const expected = `Basic ${Buffer.from(`${this.orgId}:${this.orgKey}`).toString('base64')}`;
      if (req.headers.authorization !== expected) {
        this.violations.push(`${endpoint}: credentials`);
        return answer(401, { result: 'error', msg: 'Invalid credentials', code: 'UNAUTHORIZED' });
      }
    }
    const isJson = JSON_ENDPOINTS.has(endpoint);
    const type = req.headers['content-type'] ?? '';
    if (isJson ? !type.startsWith('application/json') : !type.startsWith('application/x-www-form-urlencoded')) {
      this.violations.push(`${endpoint}: content type ${type}`);
    }
    const body: Record<string, any> = isJson ? JSON.parse(raw) : Object.fromEntries(new URLSearchParams(raw));
    const missing = REQUIRED[endpoint].filter((field) => !(field in body));
    if (missing.length > 0) this.violations.push(`${endpoint}: missing ${missing.join(', ')}`);
    if (this.failNext > 0 && this.failWhen(endpoint, body)) {
      this.failNext--;
      record({ endpoint, body, status: 500 });
      return answer(500, { result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' });
    }
    record({ endpoint, body, status: 200 });
    if (endpoint === 'push/notify') {
      const deleted = (tokens: string[]) => tokens.filter((token) => this.deletedTokens.has(token));
      return answer(200, {
        result: 'success',
        msg: '',
        total_android_devices: body.android_devices.length,
        total_apple_devices: body.apple_devices.length,
        deleted_devices: { android_devices: deleted(body.android_devices), apple_devices: deleted(body.apple_devices) },
        realm: null,
      });
    }
    if (endpoint === 'push/test_notification' && this.deletedTokens.has(body.token)) {
      return answer(400, {
        result: 'error',
        msg: 'Device not recognized by the push bouncer',
        code: 'INVALID_REMOTE_PUSH_DEVICE_TOKEN',
      });
    }
    return answer(200, { result: 'success', msg: '' });
  }

  /** Answers the held requests (to whoever is still listening) and stops holding. */
  release(): void {
    this.holdAnswers = false;
    for (const send of this.held.splice(0)) {
      try {
        send();
      } catch {
        // The client is gone.
      }
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
