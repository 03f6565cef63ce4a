// An in-process Teamchat stack for API tests: a fresh database cloned from the migrated
// template, its own Redis key prefix, the requested services and the real gateway, each on
// its own port. Tests speak HTTP to the gateway, as clients do.
// Its own package above the services (tests and benches depend on it, never a service), so
// @teamchat/testing stays free of service imports.

import crypto from 'node:crypto';
import type http from 'node:http';
import type { Realm, UserProfile } from '@teamchat/db';
import {
  groupForSettingValue,
  Role,
  setGroupSetting,
  STREAM_GROUP_SETTING_DEFAULTS,
  systemGroupId,
  type SystemGroupName,
} from '@teamchat/domain';
import { SessionStore, sessionIdFromCookies } from '@teamchat/bus';
import { transaction, type Stream } from '@teamchat/db';
import { createBaseDeps, listen, serverUrl, type BaseDeps, type BaseEnv, type RunningService } from '@teamchat/runtime';
import { commonEnv, createLogger, loadEnv } from '@teamchat/core';
import { doCreateRealm, doCreateUser, type CreateUserInput } from '@teamchat/service-users';
import { createGateway } from '@teamchat/service-gateway';
import { ApiClient, createTestDatabase, testRedisTarget, type ApiResponse, type TestDatabase } from '@teamchat/testing';

export type ServiceName = 'users' | 'messages' | 'channels' | 'uploads' | 'events' | 'worker' | 'web';

type ServiceFactory = (deps: BaseDeps, env: NodeJS.ProcessEnv) => Promise<RunningService>;

/** Loaded on demand, so a test starts only the services it needs. */
function serviceFactory(name: ServiceName): ServiceFactory {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(`@teamchat/service-${name}`).createService as ServiceFactory;
}

export interface StackOptions {
  /** Services to start besides the gateway; "users" is always started. */
  services?: ServiceName[];
  /** Extra environment for the services (e.g. storage settings). */
  env?: NodeJS.ProcessEnv;
  /** Where the stack's log lines go (all services and the gateway log through one logger). */
  logs?: { level: string; destination: NonNullable<Parameters<typeof createLogger>[2]> };
  /** The rate limits of the gateway and of the event tier's direct entry (default: generous, see GENEROUS_RATE_LIMITS). */
  rateLimits?: Partial<GatewayRateLimitEnv>;
  /** Event-tier layout shared by producers and replicas (EVENT_PARTITIONS 4 and one recipient shard by default). */
  eventTier?: Pick<BaseEnv, 'EVENT_PARTITIONS' | 'EVENT_RECIPIENT_SHARDS'>;
  /** The auth cache's lifetime in Redis for every process (AUTH_CACHE_TTL_SECONDS; default 60). */
  authCacheTtlSeconds?: number;
}

type GatewayRateLimitEnv = NonNullable<Parameters<typeof createGateway>[0]['env']>;

/** A second gateway of the stack (see Stack.startGatewayReplica). */
export interface GatewayReplica {
  /** A client of `user` that goes through this replica (with the stack's Host header). */
  client(user: Pick<TestUser, 'deliveryEmail' | 'apiKey'>): ApiClient;
  close(): Promise<void>;
}

/**
 * Tests make many requests per user in quick succession: the stack's gateway runs the rate
 * limiter (the real code path) with budgets no test reaches. Rate-limit tests set their own.
 */
export const GENEROUS_RATE_LIMITS = {
  RATE_LIMIT_ENABLED: true,
  RATE_LIMIT_USER_REQUESTS: 1_000_000,
  RATE_LIMIT_USER_WINDOW_SECONDS: 60,
  RATE_LIMIT_IP_REQUESTS: 1_000_000,
  RATE_LIMIT_IP_WINDOW_SECONDS: 60,
} satisfies Partial<GatewayRateLimitEnv>;

export interface TestUser {
  id: number;
  email: string;
  deliveryEmail: string;
  apiKey: string;
  realm: Realm;
  profile: UserProfile;
  client: ApiClient;
}

export class Stack {
  private constructor(
    readonly database: TestDatabase,
    readonly deps: BaseDeps,
    readonly gatewayUrl: string,
    readonly realm: Realm,
    readonly serviceUrls: Partial<Record<ServiceName, string>>,
    private readonly servers: http.Server[],
    private readonly services: RunningService[],
  ) {}

  static async start(options: StackOptions = {}): Promise<Stack> {
    const database = await createTestDatabase();
    const prefix = `t:${crypto.randomBytes(6).toString('hex')}:`;
    const env: BaseEnv = {
      DATABASE_URL: database.url,
      ...testRedisTarget(),
      REDIS_PREFIX: prefix,
      INTERNAL_JWT_SECRET: crypto.randomBytes(24).toString('hex'),
      // Checked as a service checks it at boot (a misspelt TEST_LOG_LEVEL fails here, not in pino).
      LOG_LEVEL: loadEnv(
        { LOG_LEVEL: commonEnv.LOG_LEVEL },
        { LOG_LEVEL: options.logs?.level ?? process.env.TEST_LOG_LEVEL ?? 'silent' },
      ).LOG_LEVEL,
      HOST: '127.0.0.1',
      EXTERNAL_SCHEME: 'http',
      EVENT_PARTITIONS: 4,
      DB_POOL_SIZE: 8,
      // npm test's replica pass: heavy reads may be served by the standby, as in production.
      ...(database.replicaUrl ? { DATABASE_REPLICA_URL: database.replicaUrl } : {}),
      ...options.eventTier,
      ...(options.authCacheTtlSeconds ? { AUTH_CACHE_TTL_SECONDS: options.authCacheTtlSeconds } : {}),
      // A server setting the in-process services share (createBaseDeps applies it).
      ...(options.env?.ENABLE_GRAVATAR ? { ENABLE_GRAVATAR: options.env.ENABLE_GRAVATAR !== 'false' } : {}),
      ...(options.env?.WEB_PUBLIC_STREAMS_ENABLED
        ? { WEB_PUBLIC_STREAMS_ENABLED: options.env.WEB_PUBLIC_STREAMS_ENABLED !== 'false' }
        : {}),
    };
    const logger = createLogger('test', env.LOG_LEVEL, options.logs?.destination);
    const deps = createBaseDeps('test', env, { logger });
    const names = [...new Set<ServiceName>(['users', ...(options.services ?? [])])];
    // Listen first, so every service can be told where the others are (USERS_URL, ...).
    const handlers = new Map<ServiceName, http.RequestListener>();
    const servers: http.Server[] = [];
    const serviceUrls: Partial<Record<ServiceName, string>> = {};
    for (const name of names) {
      const server = await listen((req, res) => handlers.get(name)!(req, res), 0, '127.0.0.1');
      servers.push(server);
      serviceUrls[name] = serverUrl(server);
    }
    const urlVars = Object.fromEntries(
      Object.entries(serviceUrls).map(([name, url]) => [`${name.toUpperCase()}_URL`, url]),
    );
    // The event tier rate-limits the polls clients send it directly (docs/adr/0006) with the gateway's settings.
    const rateLimits = stringValues({ ...GENEROUS_RATE_LIMITS, ...options.rateLimits });
    const serviceEnv: NodeJS.ProcessEnv = {
      ...process.env,
      ...stringValues(env),
      ...rateLimits,
      ...urlVars,
      ...options.env,
    };
    const services: RunningService[] = [];
    for (const name of names) {
      const service = await serviceFactory(name)(deps, serviceEnv);
      services.push(service);
      handlers.set(name, service.handler);
    }
    const unreachable = 'http://127.0.0.1:9';
    const gateway = createGateway({
      env: {
        INTERNAL_JWT_SECRET: env.INTERNAL_JWT_SECRET,
        REDIS_PREFIX: prefix,
        AUTH_CACHE_TTL_SECONDS: deps.env.AUTH_CACHE_TTL_SECONDS,
        UPSTREAM_TIMEOUT_MS: 60_000,
        ...GENEROUS_RATE_LIMITS,
        ...options.rateLimits,
      },
      db: deps.db,
      redis: deps.redis,
      logger,
      serviceUrls: {
        users: serviceUrls.users!,
        messages: serviceUrls.messages ?? unreachable,
        channels: serviceUrls.channels ?? unreachable,
        uploads: serviceUrls.uploads ?? unreachable,
        events: serviceUrls.events ?? unreachable,
        web: serviceUrls.web ?? unreachable,
      },
    });
    services.push(gateway);
    const gatewayServer = await listen(gateway.handler, 0, '127.0.0.1');
    servers.push(gatewayServer);
    const gatewayUrl = serverUrl(gatewayServer);
    const realm = await doCreateRealm(deps.db, {
      stringId: '',
      name: 'Test Organization',
      host: new URL(gatewayUrl).host,
    });
    await deps.reads.recordWrite(realm.id);
    return new Stack(database, deps, gatewayUrl, realm, serviceUrls, servers, services);
  }

  get db() {
    return this.deps.db;
  }

  get redis() {
    return this.deps.redis;
  }

  /** A client without credentials. */
  anonymous(): ApiClient {
    return new ApiClient(this.gatewayUrl);
  }

  client(credentials: { email: string; apiKey: string }): ApiClient {
    return new ApiClient(this.gatewayUrl, credentials);
  }

  /**
   * The login form's POST as a browser sends it: the form's page first (GET /login/, which gives
   * the CSRF cookie), then `fields` with the page's csrfmiddlewaretoken and that cookie. `host`:
   * another realm's.
   */
  async postLoginForm(fields: Record<string, string>, options: { host?: string } = {}): Promise<ApiResponse> {
    const client = options.host ? this.anonymous().withHost(options.host) : this.anonymous();
    const page = await client.get('/login/', {}, { validate: false });
    const token = /name="csrfmiddlewaretoken" value="([^"]*)"/.exec(String(page.body))?.[1];
    const cookie = [page.headers['set-cookie'] ?? []].flat().find((line) => line.startsWith('csrftoken='));
    if (page.status !== 200 || !token || !cookie) throw new Error(`login page: ${page.status}`);
    return client.post(
      '/accounts/login/',
      { ...fields, csrfmiddlewaretoken: token },
      { validate: false, headers: { cookie: cookie.split(';', 1)[0] } },
    );
  }

  /**
   * A browser's client, as the web app calls /json: logged in through the login form, with its
   * session cookie and the session's CSRF token (answered too, for forms that carry it).
   */
  async sessionClient(
    user: Pick<TestUser, 'deliveryEmail'>,
    password: string,
  ): Promise<{ browser: ApiClient; csrfToken: string }> {
    const login = await this.postLoginForm({ username: user.deliveryEmail, password });
    if (login.status !== 302) throw new Error(`login: ${login.status} ${JSON.stringify(login.body)}`);
    const cookie = String(login.headers['set-cookie']![0]).split(';', 1)[0];
    const session = await new SessionStore(this.redis, this.deps.env.REDIS_PREFIX).get(sessionIdFromCookies(cookie)!);
    const csrfToken = session!.csrfToken;
    return { browser: new ApiClient(this.gatewayUrl, null, { cookie, 'x-csrftoken': csrfToken }), csrfToken };
  }

  /** Another realm, served on `host` (send that Host header to address it). */
  async createRealm(stringId: string, host: string, name = `Realm ${stringId}`): Promise<Realm> {
    const realm = await doCreateRealm(this.db, { stringId, name, host });
    await this.fixtureWritten(realm.id);
    return realm;
  }

  /**
   * After a fixture written straight to the database: records the realm's write position as a
   * service's write request does, so the API's reads after it see it (with a read replica, they
   * wait for the standby to replay it or read the primary). Tests that write with `stack.db`
   * and then read through the API call it too.
   */
  fixtureWritten(realmId = this.realm.id): Promise<void> {
    return this.deps.reads.recordWrite(realmId);
  }

  private userCounter = 0;

  /** A user of the test realm (or `realm`), with a client that authenticates as them. */
  async createUser(input: Partial<CreateUserInput> & { realm?: Realm } = {}): Promise<TestUser> {
    const n = ++this.userCounter;
    const realm = input.realm ?? this.realm;
    const { user, apiKey } = await doCreateUser(this.deps, realm, {
      email: input.email ?? `user${n}@example.com`,
      fullName: input.fullName ?? `User ${n}`,
      role: input.role ?? Role.MEMBER,
      ...input,
    });
    await this.fixtureWritten(realm.id);
    let client = this.client({ email: user.delivery_email, apiKey });
    if (realm.id !== this.realm.id) client = client.withHost(realm.host);
    return { id: user.id, email: user.email, deliveryEmail: user.delivery_email, apiKey, realm, profile: user, client };
  }

  /**
   * A channel written straight to the database, with Zulip's default group settings, for tests
   * of services that need one to exist. (The channels service's own tests create them through
   * the API.)
   */
  async createStream(input: {
    name: string;
    realm?: Realm;
    creatorId?: number;
    inviteOnly?: boolean;
    isWebPublic?: boolean;
    historyPublicToSubscribers?: boolean;
    subscribers?: number[];
  }): Promise<Stream> {
    const realm = input.realm ?? this.realm;
    const created = await transaction(this.db, async ({ db }) => {
      const stream = await db.stream.create({
        data: {
          realm_id: realm.id,
          name: input.name,
          invite_only: input.inviteOnly ?? false,
          is_web_public: input.isWebPublic ?? false,
          history_public_to_subscribers: input.historyPublicToSubscribers ?? !(input.inviteOnly ?? false),
          creator_id: input.creatorId ?? null,
        },
      });
      for (const [name, holder] of Object.entries(STREAM_GROUP_SETTING_DEFAULTS)) {
        const groupId =
          holder === 'creator'
            ? input.creatorId
              ? await groupForSettingValue(db, realm.id, name, {
                  direct_members: [input.creatorId],
                  direct_subgroups: [],
                })
              : await systemGroupId(db, realm.id, 'role:nobody')
            : await systemGroupId(db, realm.id, holder);
        await setGroupSetting(db, realm.id, 'stream', stream.id, name, groupId);
      }
      if (input.subscribers?.length) {
        await db.subscription.createMany({
          data: input.subscribers.map((userId) => ({ user_profile_id: userId, stream_id: stream.id })),
        });
      }
      return stream;
    });
    await this.fixtureWritten(realm.id);
    return created;
  }

  /** Subscribes users to a channel straight in the database (a fixture, like createStream). */
  async subscribe(streamId: number, userIds: number[]): Promise<void> {
    await this.db.subscription.createMany({
      data: userIds.map((userId) => ({ user_profile_id: userId, stream_id: streamId })),
      skipDuplicates: true,
    });
    const stream = await this.db.stream.findUniqueOrThrow({ where: { id: streamId }, select: { realm_id: true } });
    await this.fixtureWritten(stream.realm_id);
  }

  /** Points a realm group-setting permission at a system group ("role:members"...), a fixture (no event). */
  async setRealmGroupSetting(name: string, systemGroup: SystemGroupName): Promise<void> {
    await setGroupSetting(
      this.db,
      this.realm.id,
      'realm',
      this.realm.id,
      name,
      await systemGroupId(this.db, this.realm.id, systemGroup),
    );
    await this.fixtureWritten();
  }

  /**
   * Another gateway replica on the stack's database, Redis (same prefix) and users service,
   * the other services unreachable, as a second pod would be. `env` overrides its settings
   * (another internal secret, other rate limits).
   */
  async startGatewayReplica(env: Partial<GatewayRateLimitEnv> = {}): Promise<GatewayReplica> {
    const unreachable = 'http://127.0.0.1:9';
    const replica = createGateway({
      env: {
        INTERNAL_JWT_SECRET: this.deps.env.INTERNAL_JWT_SECRET,
        REDIS_PREFIX: this.deps.env.REDIS_PREFIX,
        AUTH_CACHE_TTL_SECONDS: this.deps.env.AUTH_CACHE_TTL_SECONDS,
        UPSTREAM_TIMEOUT_MS: 10_000,
        ...GENEROUS_RATE_LIMITS,
        ...env,
      },
      db: this.db,
      redis: this.redis,
      logger: createLogger('replica', 'silent'),
      serviceUrls: {
        users: this.serviceUrls.users!,
        messages: unreachable,
        channels: unreachable,
        uploads: unreachable,
        events: unreachable,
        web: unreachable,
      },
    });
    const server = await listen(replica.handler, 0, '127.0.0.1');
    const host = new URL(this.gatewayUrl).host;
    return {
      client: (user) =>
        new ApiClient(serverUrl(server), { email: user.deliveryEmail, apiKey: user.apiKey }).withHost(host),
      close: async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await replica.close();
      },
    };
  }

  async close(): Promise<void> {
    for (const server of this.servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    for (const service of this.services) {
      await service.drain?.();
      await service.close();
    }
    await this.deps.close();
    await this.database.drop();
  }
}

function stringValues(values: object): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, String(value)]));
}

export const startStack = (options?: StackOptions) => Stack.start(options);
