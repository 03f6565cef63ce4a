// The admin command line (Zulip's manage.py equivalent). Run it with `npm run manage -- <command>`.
//
//   create-realm   --string-id <id> --name <name> --host <host[:port]>
//   create-user    --realm <string-id|host> --email <email> --name <full name> [--role owner|admin|moderator|member|guest]
//                  [--password <pw>] [--bot --owner <owner email>]
//   reset-api-key  --realm <r> --email <email>                 revoke every key, print a new one
//   write-zuliprc  --realm <r> --email <email> --path <file> [--site <url>]   issue a key, write a zuliprc
//   list-users     --realm <r>
//   change-user-role --realm <r> --email <email> --permission can_create_users [--revoke]
//                  grant (or revoke) Zulip's can_create_users permission (POST /users)
//   seed-demo      --host <host[:port]> --dir <zuliprc folder>   the demo realm and users, once; zuliprc files when missing
//   register-server --hostname <host> --contact-email <email> [--new-org-key <key>]
//                  register this server with the push notification bouncer (Zulip's manage.py register_server):
//                  PUSH_NOTIFICATION_BOUNCER_URL, ZULIP_ORG_ID and ZULIP_ORG_KEY from the environment
//   export-realm   --realm <r> --output <file.jsonl.gz>
//                  a complete backup of the organisation (Zulip's manage.py export): every user's data,
//                  private messages included, and the uploaded files' bytes (docs/export-format.md)
//   import-realm   <archive> --subdomain <new> [--host <host[:port]>]
//                  a new organisation from an archive (Zulip's manage.py import), every id new
//   import-slack   <export.zip|dir> --realm <new subdomain> --host <host[:port]> [--users <users.list.json>]
//                  [--emoji <emoji.list.json>] [--no-convert-slack-threads]
//                  a new organisation from a Slack export (Zulip's convert_slack_data and import)

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { env, loadEnv } from '@teamchat/core';
import type { Db, Realm } from '@teamchat/db';
import { BotType, realmUrl, Role, ROLE_BY_NAME } from '@teamchat/domain';
import { BouncerClient, loadNotificationsConfig } from '@teamchat/notifications';
import { exportRealm, ExportType, importRealm, RealmImportError, writeTo } from '@teamchat/realm-transfer';
import { importSlack, SlackImportError } from '@teamchat/realm-transfer/src/slack';
import { createStorage, loadStorageConfig, type ObjectStorage } from '@teamchat/storage';
import { baseEnvSpec, createBaseDeps, type BaseDeps } from '@teamchat/runtime';
import { doSetCanCreateUsers } from './actions/admin-users';
import { doCreateRealm } from './actions/realms';
import { doCreateUser, doIssueApiKey, doRegenerateApiKey } from './actions/users';

const USAGE = `usage: manage <command> [options]
  create-realm   --string-id <id> --name <name> --host <host[:port]>
  create-user    --realm <string-id|host> --email <email> --name <full name> [--role owner|admin|moderator|member|guest]
                 [--password <pw>] [--bot --owner <owner email>]
  reset-api-key  --realm <r> --email <email>
  write-zuliprc  --realm <r> --email <email> --path <file> [--site <url>]
  list-users     --realm <r>
  change-user-role --realm <r> --email <email> --permission can_create_users [--revoke]
  seed-demo      --host <host[:port]> --dir <zuliprc folder>
  register-server --hostname <host> --contact-email <email> [--new-org-key <key>]
  export-realm   --realm <r> --output <file.jsonl.gz>
  import-realm   <archive> --subdomain <new> [--host <host[:port]>]
  import-slack   <export.zip|dir> --realm <new subdomain> --host <host[:port]> [--users <file>] [--emoji <file>]
                 [--no-convert-slack-threads]`;

class UsageError extends Error {}
/** A command's refusal (no usage text). */
class CommandError extends Error {}

async function withStorage<T>(io: CommandIo, fn: (storage: ObjectStorage) => Promise<T>): Promise<T> {
  if (io.storage) return fn(io.storage);
  const storage = createStorage(loadStorageConfig(process.env));
  try {
    return await fn(storage);
  } finally {
    await storage.close();
  }
}

function need(value: string | undefined, name: string): string {
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

/** The one file a command reads (an archive, an export): given, alone, and present. */
function inputFile(positionals: string[], what: string, described = what): string {
  const file = positionals[0];
  if (!file) throw new UsageError(`the ${described} is required`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
  if (!fs.existsSync(file)) throw new UsageError(`no such ${what} '${file}'`);
  return file;
}

/** Where a long command's progress lines go: the caller's, else stderr. */
const progressOf = (io: CommandIo) => io.progress ?? ((line: string) => process.stderr.write(`${line}\n`));

export async function findRealm(db: Db, nameOrHost: string): Promise<Realm> {
  const realm = await db.realm.findFirst({
    where: { OR: [{ string_id: nameOrHost }, { host: nameOrHost.toLowerCase() }] },
  });
  if (!realm) throw new UsageError(`no realm with subdomain or host '${nameOrHost}'`);
  return realm;
}

async function findUser(db: Db, realm: Realm, email: string) {
  const user = await db.userProfile.findFirst({ where: { realm_id: realm.id, delivery_email: email.toLowerCase() } });
  if (!user) throw new UsageError(`no user '${email}' in realm '${realm.string_id || realm.host}'`);
  return user;
}

/** The file python-zulip-api, zulip-js and zulip-terminal read. */
export function zuliprc(email: string, apiKey: string, site: string): string {
  return `[api]\nemail=${email}\nkey=${apiKey}\nsite=${site}\n`;
}

/** What long commands need besides `out`: progress lines (stderr) and the uploads storage. */
export interface CommandIo {
  progress?: (line: string) => void;
  /** Default: the storage the environment's UPLOADS_* settings name, as the uploads service's. */
  storage?: ObjectStorage;
  progressIntervalMs?: number;
}

export async function runCommand(
  deps: BaseDeps,
  argv: string[],
  out: (line: string) => void = console.log,
  io: CommandIo = {},
): Promise<void> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: command === 'import-realm' || command === 'import-slack',
    options: {
      'string-id': { type: 'string' },
      name: { type: 'string' },
      host: { type: 'string' },
      realm: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string', default: 'member' },
      password: { type: 'string' },
      bot: { type: 'boolean', default: false },
      owner: { type: 'string' },
      path: { type: 'string' },
      site: { type: 'string' },
      dir: { type: 'string' },
      permission: { type: 'string' },
      revoke: { type: 'boolean', default: false },
      hostname: { type: 'string' },
      'contact-email': { type: 'string' },
      'new-org-key': { type: 'string' },
      output: { type: 'string' },
      subdomain: { type: 'string' },
      users: { type: 'string' },
      emoji: { type: 'string' },
      'no-convert-slack-threads': { type: 'boolean', default: false },
    },
  });
  const { db } = deps;
  switch (command) {
    case 'create-realm': {
      const realm = await doCreateRealm(db, {
        stringId: values['string-id'] ?? '',
        name: need(values.name, 'name'),
        host: need(values.host, 'host'),
      });
      out(`created realm ${realm.id} '${realm.name}' at ${realmUrl(realm, deps.env.EXTERNAL_SCHEME)}`);
      return;
    }
    case 'create-user': {
      const realm = await findRealm(db, need(values.realm, 'realm'));
      const role = ROLE_BY_NAME[values.role!.toLowerCase()];
      if (!role) throw new UsageError(`unknown role '${values.role}'`);
      const owner = values.bot ? await findUser(db, realm, need(values.owner, 'owner')) : null;
      const { user, apiKey } = await doCreateUser(deps, realm, {
        email: need(values.email, 'email'),
        fullName: need(values.name, 'name'),
        role: values.bot ? Role.MEMBER : role,
        password: values.password,
        botType: values.bot ? BotType.DEFAULT : undefined,
        botOwnerId: owner?.id,
      });
      out(`created ${values.bot ? 'bot' : 'user'} ${user.id} <${user.delivery_email}>; API key: ${apiKey}`);
      return;
    }
    case 'reset-api-key': {
      const realm = await findRealm(db, need(values.realm, 'realm'));
      const user = await findUser(db, realm, need(values.email, 'email'));
      out(await doRegenerateApiKey(deps, user.id));
      return;
    }
    case 'write-zuliprc': {
      const realm = await findRealm(db, need(values.realm, 'realm'));
      const user = await findUser(db, realm, need(values.email, 'email'));
      const file = need(values.path, 'path');
      const apiKey = await doIssueApiKey(deps, user.id, 'manage write-zuliprc');
      fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
      fs.writeFileSync(
        file,
        zuliprc(user.delivery_email, apiKey, values.site ?? realmUrl(realm, deps.env.EXTERNAL_SCHEME)),
        { mode: 0o600 },
      );
      out(`wrote ${file}`);
      return;
    }
    case 'list-users': {
      const realm = await findRealm(db, need(values.realm, 'realm'));
      const users = await db.userProfile.findMany({ where: { realm_id: realm.id }, orderBy: { id: 'asc' } });
      for (const user of users) {
        out(
          `${user.id}\t${user.delivery_email}\t${user.full_name}\trole=${user.role}${user.is_bot ? '\tbot' : ''}${user.is_active ? '' : '\tdeactivated'}`,
        );
      }
      return;
    }
    case 'change-user-role': {
      const realm = await findRealm(db, need(values.realm, 'realm'));
      const user = await findUser(db, realm, need(values.email, 'email'));
      const permission = need(values.permission, 'permission');
      if (permission !== 'can_create_users') throw new UsageError(`unknown permission '${permission}'`);
      await doSetCanCreateUsers(deps, user.id, !values.revoke);
      out(
        `${values.revoke ? 'revoked' : 'granted'} ${permission} ${values.revoke ? 'from' : 'to'} ${user.delivery_email}`,
      );
      return;
    }
    case 'register-server': {
      const config = loadNotificationsConfig(process.env);
      if (!BouncerClient.configured(config)) {
        throw new UsageError('set PUSH_NOTIFICATION_BOUNCER_URL, ZULIP_ORG_ID and ZULIP_ORG_KEY first');
      }
      const bouncer = new BouncerClient(config);
      await bouncer.registerServer({
        hostname: need(values.hostname, 'hostname'),
        contactEmail: need(values['contact-email'], 'contact-email'),
        newOrgKey: values['new-org-key'],
      });
      out(`registered ${values.hostname} with ${bouncer.url} as ${config.ZULIP_ORG_ID}`);
      return;
    }
    case 'export-realm': {
      const realm = await findRealm(db, need(values.realm, 'realm'));
      const file = need(values.output, 'output');
      const progress = progressOf(io);
      await withStorage(io, async (storage) => {
        fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
        const partial = `${file}.partial`;
        try {
          const result = await exportRealm({
            db,
            realmId: realm.id,
            type: ExportType.COMPLETE,
            storage,
            write: writeTo(fs.createWriteStream(partial, { mode: 0o600 })),
            onProgress: (_snapshot, line) => progress(line),
            progressIntervalMs: io.progressIntervalMs,
          });
          fs.renameSync(partial, file);
          out(
            `exported realm ${realm.id} '${realm.name}' to ${file}: ${result.rows} rows, ${result.files} files ` +
              `(${result.fileBytes} bytes), archive ${result.bytes} bytes, sha256 ${result.sha256}`,
          );
        } catch (error) {
          fs.rmSync(partial, { force: true });
          throw error;
        }
      });
      return;
    }
    case 'import-realm': {
      const subdomain = need(values.subdomain, 'subdomain');
      const archive = inputFile(positionals, 'archive', 'archive to import');
      const progress = progressOf(io);
      const result = await withStorage(io, (storage) =>
        importRealm({
          source: archive,
          subdomain,
          host: values.host,
          db,
          storage,
          serverSecret: deps.env.INTERNAL_JWT_SECRET,
          onProgress: (_snapshot, line) => progress(line),
          progressIntervalMs: io.progressIntervalMs,
        }),
      ).catch((error: unknown) => {
        if (error instanceof RealmImportError) throw new CommandError(error.message);
        throw error;
      });
      // Reads after this see the new organisation (the read replica's rule, as after any write).
      await deps.reads.recordWrite(result.realmId);
      const realm = await db.realm.findUniqueOrThrow({ where: { id: result.realmId } });
      out(
        `imported realm ${result.realmId} '${realm.name}' at ${realmUrl(realm, deps.env.EXTERNAL_SCHEME)}: ` +
          `${result.userIds.size} users, ${result.stats.message ?? 0} messages, ${result.files} files; ` +
          'passwords and API keys are not carried over: users set a new password (or get a key with reset-api-key)',
      );
      return;
    }
    case 'import-slack': {
      const subdomain = need(values.realm, 'realm');
      const host = need(values.host, 'host');
      const exportPath = inputFile(positionals, 'Slack export', 'Slack export (.zip or directory)');
      const progress = progressOf(io);
      const { result, warnings, notFetched } = await withStorage(io, (storage) =>
        importSlack({
          exportPath,
          subdomain,
          host,
          usersFile: values.users,
          emojiFile: values.emoji,
          convertThreads: !values['no-convert-slack-threads'],
          db,
          storage,
          serverSecret: deps.env.INTERNAL_JWT_SECRET,
          onProgress: (_snapshot, line) => progress(line),
          progressIntervalMs: io.progressIntervalMs,
        }),
      ).catch((error: unknown) => {
        if (error instanceof RealmImportError || error instanceof SlackImportError)
          throw new CommandError(error.message);
        throw error;
      });
      await deps.reads.recordWrite(result.realmId);
      const realm = await db.realm.findUniqueOrThrow({ where: { id: result.realmId } });
      const stored = result.files - result.missingFiles.length;
      out(
        `imported Slack export as realm ${result.realmId} '${realm.name}' at ${realmUrl(realm, deps.env.EXTERNAL_SCHEME)}: ` +
          `${result.userIds.size} users, ${result.stats.stream ?? 0} channels, ${result.stats.message ?? 0} messages, ` +
          `${stored} upload${stored === 1 ? '' : 's'} stored; users have no password: they set one through the password reset`,
      );
      for (const warning of warnings) out(`warning: ${warning}`);
      const count = (kind: string) => notFetched.filter((file) => file.kind === kind).length;
      const uploads = count('upload');
      if (uploads)
        out(`${uploads} upload${uploads === 1 ? '' : 's'} not in the export (Slack keeps them): linked, but missing`);
      if (count('avatar'))
        out(`${count('avatar')} avatars not fetched from Slack: those users keep the default avatar`);
      if (count('emoji')) out(`${count('emoji')} custom emoji images not fetched from Slack`);
      return;
    }
    case 'seed-demo': {
      await seedDemo(deps, need(values.host, 'host'), need(values.dir, 'dir'), out);
      return;
    }
    default:
      throw new UsageError(command ? `unknown command '${command}'` : 'no command given');
  }
}

const DEMO_USERS = [
  { file: 'owner', email: 'owner@teamchat.example', name: 'Demo Owner', role: Role.OWNER, bot: false },
  { file: 'member', email: 'member@teamchat.example', name: 'Demo Member', role: Role.MEMBER, bot: false },
  { file: 'bot', email: 'demo-bot@teamchat.example', name: 'Demo Bot', role: Role.MEMBER, bot: true },
];

/**
 * The demo organisation of `npm start`: created on the first run only. Each demo user gets a
 * zuliprc in `dir` when theirs is missing (API keys are shown once, so a lost file means a new key).
 */
async function seedDemo(deps: BaseDeps, host: string, dir: string, out: (line: string) => void): Promise<void> {
  const { db } = deps;
  let realm = await db.realm.findFirst({ where: { string_id: '' } });
  if (!realm) {
    realm = await doCreateRealm(db, { stringId: '', name: 'Teamchat Demo', host, inviteRequired: false });
    out(`created the demo realm at ${realmUrl(realm, deps.env.EXTERNAL_SCHEME)}`);
  }
  const site = realmUrl(realm, deps.env.EXTERNAL_SCHEME);
  fs.mkdirSync(dir, { recursive: true });
  for (const demo of DEMO_USERS) {
    let user = await db.userProfile.findFirst({ where: { realm_id: realm.id, delivery_email: demo.email } });
    if (!user) {
      const owner = demo.bot
        ? await db.userProfile.findFirst({ where: { realm_id: realm.id, role: Role.OWNER } })
        : null;
      ({ user } = await doCreateUser(deps, realm, {
        email: demo.email,
        fullName: demo.name,
        role: demo.role,
        password: demo.bot ? undefined : `${demo.file}-demo-password`,
        botType: demo.bot ? BotType.DEFAULT : undefined,
        botOwnerId: owner?.id,
      }));
      out(`created ${demo.email}${demo.bot ? '' : ` (password: ${demo.file}-demo-password)`}`);
    }
    const file = path.join(dir, `${demo.file}.zuliprc`);
    if (!fs.existsSync(file)) {
      const apiKey = await doIssueApiKey(deps, user.id, 'demo zuliprc');
      fs.writeFileSync(file, zuliprc(user.delivery_email, apiKey, site), { mode: 0o600 });
    }
  }
}

async function main() {
  const config = loadEnv({ ...baseEnvSpec, INTERNAL_JWT_SECRET: env.string('unused by manage', 'unused') });
  const deps = createBaseDeps('manage', config);
  try {
    await runCommand(deps, process.argv.slice(2));
  } finally {
    await deps.close();
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(
      error instanceof UsageError ? `${error.message}\n\n${USAGE}` : error instanceof Error ? error.message : error,
    );
    process.exit(1);
  });
}
