// The client of Zulip's Mobile Push Notification Service ("the bouncer"), as Zulip's
// zerver/lib/remote_server.py speaks to it: JSON or form posts under
// {PUSH_NOTIFICATION_BOUNCER_URL}/api/v1/remotes/, HTTP Basic with the server's uuid and key
// (ZULIP_ORG_ID, ZULIP_ORG_KEY), a ZulipServer/<version> user agent. The bouncer knows users by
// uuid (and legacy id): ours are name-based uuids of the server's and the user's ids, stable
// across restarts, so what a device registered with is what a notification names.

import { createHash } from 'node:crypto';
import { ZULIP_VERSION } from '@teamchat/domain';
import { bouncerUrl, type NotificationsConfig } from './config';
import type { JsonObject } from './payloads';

/** The bouncer could not take the request now (unreachable, 5xx, timeout): retry later. */
export class BouncerRetryLaterError extends Error {}

/** The bouncer refused the request (4xx): retrying the same request will not help. */
export class BouncerRefusedError extends Error {
  constructor(
    message: string,
    readonly code: string | null,
    readonly status: number,
  ) {
    super(message);
  }
}

/** An RFC 4122 version 5 (SHA-1, name-based) uuid of `name` in the namespace `namespace` (a uuid). */
export function uuidV5(name: string, namespace: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1')
    .update(Buffer.concat([ns, Buffer.from(name, 'utf8')]))
    .digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const NIL_NAMESPACE = '00000000-0000-0000-0000-000000000000';

export interface PushDevice {
  kind: number;
  token: string;
}

export const TokenKind = { APNS: 1, FCM: 2 } as const;

export interface NotifyResult {
  total_android_devices: number;
  total_apple_devices: number;
  deleted_devices: { android_devices: string[]; apple_devices: string[] };
}

export class BouncerClient {
  readonly url: string;

  constructor(
    private readonly config: NotificationsConfig,
    private readonly timeoutMs = 30_000,
  ) {
    const url = bouncerUrl(config);
    if (url === null) throw new Error('push notifications are not configured');
    this.url = url;
  }

  /** The bouncer is configured (Zulip's uses_notification_bouncer + push_notifications_configured). */
  static configured(config: NotificationsConfig): boolean {
    return bouncerUrl(config) !== null;
  }

  private namespace(): string {
    // ZULIP_ORG_ID is a uuid; anything else still names a stable namespace.
    return /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i.test(this.config.ZULIP_ORG_ID)
      ? this.config.ZULIP_ORG_ID
      : uuidV5(this.config.ZULIP_ORG_ID, NIL_NAMESPACE);
  }

  userUuid(userId: number): string {
    return uuidV5(`user:${userId}`, this.namespace());
  }

  realmUuid(realmId: number): string {
    return uuidV5(`realm:${realmId}`, this.namespace());
  }

  /** POST remotes/push/register (Zulip's add_push_device_token). */
  async registerDevice(user: { id: number; realmId: number }, device: PushDevice & { iosAppId?: string | null }) {
    const body: Record<string, string> = {
      server_uuid: this.config.ZULIP_ORG_ID,
      user_uuid: this.userUuid(user.id),
      realm_uuid: this.realmUuid(user.realmId),
      user_id: String(user.id),
      token: device.token,
      token_kind: String(device.kind),
    };
    if (device.kind === TokenKind.APNS && device.iosAppId) body.ios_app_id = device.iosAppId;
    return this.post('push/register', body, 'form');
  }

  /** POST remotes/push/unregister (Zulip's remove_push_device_token). */
  async unregisterDevice(user: { id: number; realmId: number }, device: PushDevice) {
    return this.post(
      'push/unregister',
      {
        server_uuid: this.config.ZULIP_ORG_ID,
        realm_uuid: this.realmUuid(user.realmId),
        user_uuid: this.userUuid(user.id),
        user_id: String(user.id),
        token: device.token,
        token_kind: String(device.kind),
      },
      'form',
    );
  }

  /** POST remotes/push/notify (Zulip's send_notifications_to_bouncer). */
  async notify(
    user: { id: number; realmId: number },
    payloads: { apns: JsonObject; gcm: JsonObject; gcmOptions: JsonObject },
    devices: PushDevice[],
  ): Promise<NotifyResult> {
    const answer = await this.post(
      'push/notify',
      {
        user_uuid: this.userUuid(user.id),
        // Registrations made with the legacy user id are found by it.
        user_id: user.id,
        realm_uuid: this.realmUuid(user.realmId),
        apns_payload: payloads.apns,
        gcm_payload: payloads.gcm,
        gcm_options: payloads.gcmOptions,
        android_devices: devices.filter((d) => d.kind === TokenKind.FCM).map((d) => d.token),
        apple_devices: devices.filter((d) => d.kind === TokenKind.APNS).map((d) => d.token),
      },
      'json',
    );
    const deleted = (answer.deleted_devices ?? {}) as Partial<NotifyResult['deleted_devices']>;
    return {
      total_android_devices: Number(answer.total_android_devices ?? 0),
      total_apple_devices: Number(answer.total_apple_devices ?? 0),
      deleted_devices: { android_devices: deleted.android_devices ?? [], apple_devices: deleted.apple_devices ?? [] },
    };
  }

  /** POST remotes/push/test_notification (Zulip's send_test_push_notification). */
  async testNotification(user: { id: number; realmId: number }, device: PushDevice, base: JsonObject) {
    return this.post(
      'push/test_notification',
      {
        realm_uuid: this.realmUuid(user.realmId),
        user_uuid: this.userUuid(user.id),
        user_id: user.id,
        token: device.token,
        token_kind: device.kind,
        base_payload: base,
      },
      'json',
    );
  }

  /** POST remotes/server/register (Zulip's manage.py register_server): no credentials, they are the body. */
  async registerServer(input: { hostname: string; contactEmail: string; newOrgKey?: string }) {
    const body: Record<string, string> = {
      zulip_org_id: this.config.ZULIP_ORG_ID,
      zulip_org_key: this.config.ZULIP_ORG_KEY,
      hostname: input.hostname,
      contact_email: input.contactEmail,
    };
    if (input.newOrgKey) body.new_org_key = input.newOrgKey;
    return this.post('server/register', body, 'form', false);
  }

  private async post(
    endpoint: string,
    body: Record<string, unknown>,
    encoding: 'json' | 'form',
    authenticate = true,
  ): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = {
      'User-Agent': `ZulipServer/${ZULIP_VERSION}`,
      'Content-Type': encoding === 'json' ? 'application/json' : 'application/x-www-form-urlencoded',
    };
    if (authenticate) {
      const credentials = `${this.config.ZULIP_ORG_ID}:${this.config.ZULIP_ORG_KEY}`;
      headers.Authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    }
    const encoded =
      encoding === 'json' ? JSON.stringify(body) : new URLSearchParams(body as Record<string, string>).toString();
    let response: Response;
    try {
      response = await fetch(`${this.url}/api/v1/remotes/${endpoint}`, {
        method: 'POST',
        headers,
        body: encoded,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new BouncerRetryLaterError(`push notification bouncer unreachable: ${(error as Error).message}`);
    }
    const text = await response.text().catch(() => '');
    if (response.status >= 500) {
      throw new BouncerRetryLaterError(`Received 500 from push notification bouncer (${response.status})`);
    }
    let answer: Record<string, unknown> = {};
    try {
      answer = JSON.parse(text) as Record<string, unknown>;
    } catch {
      if (response.status === 200) return {};
    }
    if (response.status >= 400) {
      const code = typeof answer.code === 'string' ? answer.code : null;
      const msg = typeof answer.msg === 'string' ? answer.msg : 'Error received from push notification bouncer';
      throw new BouncerRefusedError(msg, code, response.status);
    }
    if (response.status !== 200)
      throw new BouncerRetryLaterError(`unexpected status ${response.status} from the bouncer`);
    return answer;
  }
}
