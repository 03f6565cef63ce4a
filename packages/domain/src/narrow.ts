// Narrows (Zulip's zerver/lib/narrow.py): parsing and validating the `narrow` parameter in its
// object ({operator, operand, negated}) and legacy array ([operator, operand]) forms, and
// turning a narrow into SQL. GET /messages and the flag updates over a narrow share
// compileNarrow + fetchMessageRange, so "the messages in this range" means one thing.
//
// Queries read `user_message um JOIN message m` (the messages the viewer received) or, when
// the narrow names one channel whose history the viewer may read, `message m` itself (Zulip's
// include_history), with the viewer's flags joined in when present.

import { JsonableError, LIST_LIMITS, v } from '@teamchat/core';
import { Prisma, type Stream, type TxClient } from '@teamchat/db';
import {
  MENTION_FLAGS_MASK,
  MessageFlag,
  dmKey,
  dmParticipants,
  normalizeTopicInput,
  HISTORICAL_FLAGS,
} from './messages';
import { RESOLVED_TOPIC_PREFIX } from './narrow-match';
import { isGuest } from './roles';
import { spectatorRefused } from './spectators';
import { hasMessageAccess, streamAccess, type Viewer } from './streams';

export interface NarrowTerm {
  operator: string;
  operand: string | number | number[];
  negated: boolean;
}

/** Zulip's BadNarrowOperatorError. */
export class BadNarrowError extends JsonableError {
  constructor(desc: string) {
    super(`Invalid narrow operator: ${desc}`, { code: 'BAD_NARROW', data: { desc } });
  }
}

/** Zulip's InvalidOperatorCombinationError. */
export class InvalidOperatorCombinationError extends JsonableError {
  constructor(desc: string) {
    super(`Invalid narrow operator combination: ${desc}`, { code: 'BAD_NARROW', data: { desc } });
  }
}

// ---------------------------------------------------------------- parsing

const CHANNEL_OPERATORS = ['channel', 'stream'];
const CHANNELS_OPERATORS = ['channels', 'streams'];
const OPERATORS_WITH_ID = [...CHANNEL_OPERATORS, 'id', 'sender', 'group-pm-with', 'dm-including', 'with'];
const OPERATORS_WITH_IDS = ['pm-with', 'dm'];

const invalid = (msg: string): never => {
  throw new JsonableError(msg);
};

/** What a spectator's narrow may use besides `is:resolved` (Zulip's is_spectator_compatible). */
const SPECTATOR_OPERATORS = [
  ...CHANNEL_OPERATORS,
  ...CHANNELS_OPERATORS,
  'topic',
  'sender',
  'has',
  'search',
  'near',
  'id',
  'with',
];

/**
 * A logged-out request's narrow (Zulip's get_messages_backend for an anonymous user): `in:home`
 * dropped; it must name the web-public channels (`channels:web-public`, which also keeps every
 * other channel out) and use only what spectators may, or it is refused as unauthenticated: a
 * client that lost its credentials gets the error, not a quietly narrower answer.
 */
export function webPublicNarrow(narrow: NarrowTerm[] | null): NarrowTerm[] {
  const cleaned = (narrow ?? []).filter(
    (term) => !(term.operator === 'in' && term.operand === 'home' && !term.negated),
  );
  const namesWebPublic = cleaned.some(
    (term) => CHANNELS_OPERATORS.includes(term.operator) && term.operand === 'web-public' && !term.negated,
  );
  const compatible = cleaned.every(
    (term) => (term.operator === 'is' && term.operand === 'resolved') || SPECTATOR_OPERATORS.includes(term.operator),
  );
  if (!namesWebPublic || !compatible) throw spectatorRefused();
  return cleaned;
}

/** Users a `dm` operand names, as ids or as comma-separated emails. */
const MAX_DM_OPERAND_USERS = LIST_LIMITS.directMessageRecipients;

function checkOperand(operator: string, operand: unknown): string | number | number[] {
  if (OPERATORS_WITH_IDS.includes(operator)) {
    const count = typeof operand === 'string' ? operand.split(',').length : Array.isArray(operand) ? operand.length : 0;
    if (count > MAX_DM_OPERAND_USERS) return invalid(`operand is too long (limit: ${MAX_DM_OPERAND_USERS} items)`);
  }
  if (OPERATORS_WITH_ID.includes(operator)) {
    if (typeof operand === 'string' || (typeof operand === 'number' && Number.isInteger(operand))) return operand;
    return invalid('operand is not a string or an integer');
  }
  if (OPERATORS_WITH_IDS.includes(operator)) {
    if (typeof operand === 'string') return operand;
    if (!Array.isArray(operand)) return invalid('operand is not a string or an integer list');
    return operand.map((id, index) =>
      typeof id === 'number' && Number.isInteger(id) ? id : invalid(`operand[${index}] is not an integer`),
    );
  }
  if (typeof operand !== 'string') return invalid('operand is not a string');
  if (operator === 'search' && operand.trim() === '') return invalid('operand cannot be blank');
  return operand;
}

/**
 * Validates a decoded `narrow` parameter (Zulip's NarrowParameter). Returns null for the
 * empty narrow, which means "all messages".
 */
export function parseNarrow(value: unknown, varName = 'narrow'): NarrowTerm[] | null {
  if (value === null) return null;
  if (!Array.isArray(value)) return invalid(`${varName} is not a list`);
  // Each term may cost a lookup; no client's narrow has more than a handful.
  const maxTerms = LIST_LIMITS.narrowTerms;
  if (value.length > maxTerms) return invalid(`${varName} is too long (limit: ${maxTerms} items)`);
  const terms = value.map((element, index): NarrowTerm => {
    const where = `${varName}[${index}]`;
    if (Array.isArray(element)) {
      // The legacy [operator, operand] pair.
      if (element.length !== 2 || element.some((part) => typeof part !== 'string'))
        return invalid(`Invalid ${where}: element is not a string pair`);
      return { operator: element[0], operand: checkOperand(element[0], element[1]), negated: false };
    }
    if (typeof element !== 'object' || element === null) return invalid(`Invalid ${where}: dict or list required`);
    const term = element as Record<string, unknown>;
    if (term.operand === undefined || term.operand === null) return invalid(`Invalid ${where}: operand is missing`);
    if (term.operator === undefined || term.operator === null) return invalid(`Invalid ${where}: operator is missing`);
    for (const key of Object.keys(term)) {
      if (!['operator', 'operand', 'negated'].includes(key))
        return invalid(`Argument "${key}" at ${where} is unexpected`);
    }
    const operator = typeof term.operator === 'string' ? term.operator : invalid('operator is not a string');
    const operand = checkOperand(operator, term.operand);
    const negated =
      term.negated === undefined
        ? false
        : typeof term.negated === 'boolean'
          ? term.negated
          : invalid('negated is not a boolean');
    return { operator, operand, negated };
  });
  return terms.length === 0 ? null : terms;
}

/** The realm's empty-topic display names in topic terms mean the empty topic. */
export function normalizeNarrowTopics(narrow: NarrowTerm[] | null): NarrowTerm[] | null {
  return (
    narrow?.map((term) =>
      term.operator === 'topic' && typeof term.operand === 'string'
        ? { ...term, operand: normalizeTopicInput(term.operand) }
        : term,
    ) ?? null
  );
}

// ---------------------------------------------------------------- compiling

type NarrowReader = Pick<
  TxClient,
  | '$queryRaw'
  | 'message'
  | 'stream'
  | 'userProfile'
  | 'subscription'
  | 'groupSetting'
  | 'userMessage'
  | 'userGroup'
  | 'userGroupMembership'
  | 'groupGroupMembership'
>;

export interface NarrowViewer extends Viewer {
  role: number;
}

/** A narrow turned into SQL for one viewer. */
export interface CompiledNarrow {
  viewerId: number;
  realmId: number;
  /** Read `message` directly (history the viewer never received is visible). */
  includeHistory: boolean;
  /** Whether the conditions need `message m` (otherwise `user_message um` alone suffices). */
  needsMessage: boolean;
  /** Conditions over `m` and `um`, joined with AND. */
  conditions: Prisma.Sql[];
  /** The combined search text, when the narrow has search terms. */
  search: string | null;
  /** The narrow's channel, if it names one (muting rules only apply across channels). */
  channelId: number | null;
}

function pyRepr(operand: NarrowTerm['operand']): string {
  return Array.isArray(operand) ? `[${operand.join(', ')}]` : String(operand);
}

// An id past the id columns' range names nothing: "unknown", as Zulip answers, without asking
// PostgreSQL (which refuses such a parameter for an integer column).

async function findChannel(db: NarrowReader, realmId: number, operand: string | number): Promise<Stream | null> {
  if (typeof operand === 'number') {
    return v.isDatabaseId(operand) ? db.stream.findFirst({ where: { id: operand, realm_id: realmId } }) : null;
  }
  return db.stream.findFirst({ where: { realm_id: realmId, name: { equals: operand, mode: 'insensitive' } } });
}

async function findUser(db: NarrowReader, realmId: number, operand: string | number) {
  if (typeof operand === 'number') {
    if (!v.isDatabaseId(operand)) return null;
    return db.userProfile.findFirst({ where: { id: operand, realm_id: realmId }, select: { id: true } });
  }
  return db.userProfile.findFirst({
    where: { realm_id: realmId, email: { equals: operand.trim(), mode: 'insensitive' } },
    select: { id: true },
  });
}

/** Each of `ids` if it is a user of the realm, else null: one query, whatever the count. */
async function findUsersById(db: NarrowReader, realmId: number, ids: number[]): Promise<(number | null)[]> {
  const found = await db.userProfile.findMany({
    where: { realm_id: realmId, id: { in: ids.filter(v.isDatabaseId) } },
    select: { id: true },
  });
  const known = new Set(found.map((user) => user.id));
  return ids.map((id) => (known.has(id) ? id : null));
}

/** Each of `emails` (case-insensitively, trimmed) if it is a user of the realm, else null: one query. */
async function findUsersByEmail(db: NarrowReader, realmId: number, emails: string[]): Promise<(number | null)[]> {
  const wanted = emails.map((email) => email.trim());
  const found = await db.userProfile.findMany({
    where: {
      realm_id: realmId,
      OR: wanted.map((email) => ({ email: { equals: email, mode: 'insensitive' as const } })),
    },
    select: { id: true, email: true },
  });
  const byEmail = new Map(found.map((user) => [user.email.toLowerCase(), user.id]));
  return wanted.map((email) => byEmail.get(email.toLowerCase()) ?? null);
}

/** Zulip's can_access_stream_history: may the viewer read messages sent before they joined? */
async function canAccessChannelHistory(db: NarrowReader, viewer: NarrowViewer, stream: Stream): Promise<boolean> {
  if (stream.is_web_public) return true;
  if (!stream.invite_only && stream.history_public_to_subscribers && !isGuest(viewer.role)) return true;
  if (stream.history_public_to_subscribers && !stream.is_archived) {
    const access = await streamAccess(db, viewer, stream);
    return access.content;
  }
  return false;
}

/** Zulip's ok_to_include_history; `channels` holds the channel each channel term named. */
async function includesHistory(
  db: NarrowReader,
  viewer: NarrowViewer,
  narrow: NarrowTerm[] | null,
  channels: Map<NarrowTerm, Stream>,
): Promise<boolean> {
  if (!narrow) return false;
  let include = false;
  for (const term of narrow) {
    if (CHANNEL_OPERATORS.includes(term.operator) && !term.negated) {
      const stream = channels.get(term);
      include = stream !== undefined && (await canAccessChannelHistory(db, viewer, stream));
    } else if (
      CHANNELS_OPERATORS.includes(term.operator) &&
      term.operand === 'public' &&
      !term.negated &&
      !isGuest(viewer.role)
    ) {
      include = true;
    }
  }
  if (narrow.some((term) => term.operator === 'is')) include = false;
  return include;
}

/** Conditions that hide muted channels and topics (Zulip's exclude_muting_conditions). */
export function mutingConditions(viewerId: number, channelId: number | null): Prisma.Sql[] {
  const conditions: Prisma.Sql[] = [];
  if (channelId === null) {
    // Muted channels, except their unmuted or followed topics.
    conditions.push(Prisma.sql`NOT (
      m.stream_id IN (SELECT s.stream_id FROM subscription s WHERE s.user_profile_id = ${viewerId} AND s.active AND s.is_muted)
      AND NOT EXISTS (
        SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = ${viewerId} AND ut.stream_id = m.stream_id
          AND lower(ut.topic_name) = lower(m.topic) AND ut.visibility_policy IN (2, 3)))`);
  }
  conditions.push(Prisma.sql`NOT EXISTS (
    SELECT 1 FROM user_topic ut WHERE ut.user_profile_id = ${viewerId} AND ut.stream_id = m.stream_id
      AND lower(ut.topic_name) = lower(m.topic) AND ut.visibility_policy = 1)`);
  return conditions;
}

/** Terms that name a conversation, which a `with` term replaces. */
const CONVERSATION_OPERATORS = [...CHANNEL_OPERATORS, 'topic', 'dm', 'pm-with'];

/** Zulip's can_narrow_define_conversation: a DM term, or a channel and a topic. */
function definesConversation(narrow: NarrowTerm[]): boolean {
  const has = (operators: string[]) => narrow.some((term) => operators.includes(term.operator));
  return has(['dm', 'pm-with']) || (has(CHANNEL_OPERATORS) && has(['topic']));
}

/**
 * The `with` operator (Zulip's update_narrow_terms_containing_with_operator): "the
 * conversation this message is in now", so a link to a message keeps working after the message
 * moved. It replaces the narrow's conversation terms with the message's channel and topic, or
 * its direct-message participants. A message the viewer cannot read leaves the other terms,
 * if they name a conversation on their own.
 */
async function resolveWithOperator(
  db: NarrowReader,
  viewer: NarrowViewer,
  narrow: NarrowTerm[] | null,
  webPublic: boolean,
): Promise<NarrowTerm[] | null> {
  const withTerms = narrow?.filter((term) => term.operator === 'with') ?? [];
  if (!narrow || withTerms.length === 0) return narrow;
  if (withTerms.length > 1) throw new InvalidOperatorCombinationError("Duplicate 'with' operators.");
  const others = narrow.filter((term) => term !== withTerms[0]);
  const operand = String(withTerms[0].operand);
  if (!/^[0-9]+$/.test(operand) || Number(operand) > 2 ** 31 - 1) throw new BadNarrowError("Invalid 'with' operator");
  const message = await db.message.findFirst({
    where: { id: Number(operand), realm_id: viewer.realm_id },
    select: { id: true, realm_id: true, stream_id: true, topic: true, dm_key: true },
  });
  const readable =
    message !== null &&
    (webPublic ? await inWebPublicChannel(db, message.stream_id) : await hasMessageAccess(db, viewer, message));
  if (!message || !readable) {
    if (definesConversation(others)) return others;
    throw new BadNarrowError("Invalid 'with' operator");
  }
  const rest = others.filter((term) => !CONVERSATION_OPERATORS.includes(term.operator));
  const conversation: NarrowTerm[] =
    message.stream_id !== null
      ? [
          { operator: 'channel', operand: message.stream_id, negated: false },
          { operator: 'topic', operand: message.topic, negated: false },
        ]
      : [{ operator: 'dm', operand: dmParticipants(message.dm_key!), negated: false }];
  return [...conversation, ...rest];
}

/** Zulip's access_web_public_message: a spectator reads messages of web-public channels only. */
async function inWebPublicChannel(db: NarrowReader, streamId: number | null): Promise<boolean> {
  if (streamId === null) return false;
  const stream = await db.stream.findFirst({ where: { id: streamId, is_web_public: true }, select: { id: true } });
  return stream !== null;
}

/**
 * Compiles a validated narrow for `viewer`. Unknown operators and operands give Zulip's
 * BAD_NARROW errors, in the order of the terms. `webPublic`: a spectator's narrow (webPublicNarrow),
 * which reads history (every message of the web-public channels) and names only web-public channels.
 */
export async function compileNarrow(
  db: NarrowReader,
  viewer: NarrowViewer,
  narrowInput: NarrowTerm[] | null,
  { webPublic = false }: { webPublic?: boolean } = {},
): Promise<CompiledNarrow> {
  const narrow = await resolveWithOperator(db, viewer, normalizeNarrowTopics(narrowInput), webPublic);
  const realmId = viewer.realm_id;
  const conditions: Prisma.Sql[] = [];
  const searches: string[] = [];
  let needsMessage = false;
  let channelId: number | null = null;
  let isChannelNarrow = false;
  let isDmNarrow = false;
  const channels = new Map<NarrowTerm, Stream>();
  const kind = (dm: boolean) => {
    if (dm) isDmNarrow = true;
    else isChannelNarrow = true;
    if (isDmNarrow && isChannelNarrow)
      throw new BadNarrowError('No message can be both a channel message and direct message');
  };

  for (const term of narrow ?? []) {
    const { operator, operand } = term;
    let condition: Prisma.Sql | null;
    switch (operator) {
      case 'channel':
      case 'stream': {
        kind(false);
        const stream = await findChannel(db, realmId, operand as string | number);
        if (!stream) throw new BadNarrowError(`unknown channel ${pyRepr(operand)}`);
        if (webPublic && !stream.is_web_public)
          throw new BadNarrowError(`unknown web-public channel ${pyRepr(operand)}`);
        channels.set(term, stream);
        channelId ??= stream.id;
        condition = Prisma.sql`m.stream_id = ${stream.id}`;
        break;
      }
      case 'channels':
      case 'streams': {
        kind(false);
        if (operand === 'public') {
          condition = Prisma.sql`m.stream_id IN (SELECT id FROM stream WHERE realm_id = ${realmId} AND NOT invite_only AND history_public_to_subscribers)`;
        } else if (operand === 'web-public') {
          // Zulip's get_web_public_streams_queryset: archived web-public channels included.
          condition = Prisma.sql`m.stream_id IN (SELECT id FROM stream WHERE realm_id = ${realmId} AND is_web_public AND NOT invite_only AND history_public_to_subscribers)`;
        } else {
          throw new BadNarrowError(`unknown channels operand ${pyRepr(operand)}`);
        }
        break;
      }
      case 'topic':
        kind(false);
        condition = Prisma.sql`(m.stream_id IS NOT NULL AND lower(m.topic) = lower(${operand as string}))`;
        break;
      case 'sender': {
        const sender = await findUser(db, realmId, operand as string | number);
        if (!sender) throw new BadNarrowError(`unknown user ${pyRepr(operand)}`);
        condition = Prisma.sql`m.sender_id = ${sender.id}`;
        break;
      }
      case 'near':
        condition = null;
        break;
      case 'id':
        if (!/^[0-9]+$/.test(String(operand))) throw new BadNarrowError('Invalid message ID');
        condition = Number(operand) > 2 ** 31 - 1 ? Prisma.sql`FALSE` : Prisma.sql`m.id = ${Number(operand)}`;
        break;
      case 'dm':
      case 'pm-with':
      case 'pm_with': {
        kind(true);
        const ids =
          typeof operand === 'string'
            ? await findUsersByEmail(db, realmId, operand.split(','))
            : await findUsersById(db, realmId, operand as number[]);
        if (ids.length === 0 || ids.some((id) => id === null))
          throw new BadNarrowError(`unknown user in ${pyRepr(operand)}`);
        condition = Prisma.sql`m.dm_key = ${dmKey([...(ids as number[]), viewer.id])}`;
        break;
      }
      case 'dm-including': {
        kind(true);
        const user = await findUser(db, realmId, operand as string | number);
        if (!user) throw new BadNarrowError(`unknown user ${pyRepr(operand)}`);
        condition =
          user.id === viewer.id
            ? Prisma.sql`m.dm_key IS NOT NULL`
            : Prisma.sql`(m.dm_key IS NOT NULL AND ${user.id}::int = ANY (string_to_array(m.dm_key, ',')::int[]))`;
        break;
      }
      case 'group-pm-with':
      case 'group_pm_with': {
        kind(true);
        const user = await findUser(db, realmId, operand as string | number);
        if (!user) throw new BadNarrowError(`unknown user ${pyRepr(operand)}`);
        condition = Prisma.sql`(m.dm_key IS NOT NULL AND cardinality(string_to_array(m.dm_key, ',')) >= 3
          AND ${user.id}::int = ANY (string_to_array(m.dm_key, ',')::int[]))`;
        break;
      }
      case 'is':
        switch (operand) {
          case 'dm':
          case 'private':
            kind(true);
            condition = Prisma.sql`(um.flags & ${MessageFlag.is_private}) <> 0`;
            break;
          case 'starred':
            condition = Prisma.sql`(um.flags & ${MessageFlag.starred}) <> 0`;
            break;
          case 'unread':
            condition = Prisma.sql`(um.flags & ${MessageFlag.read}) = 0`;
            break;
          case 'mentioned':
            condition = Prisma.sql`(um.flags & ${MENTION_FLAGS_MASK}) <> 0`;
            break;
          case 'alerted':
            condition = Prisma.sql`(um.flags & ${MessageFlag.has_alert_word}) <> 0`;
            break;
          case 'resolved':
            condition = Prisma.sql`(m.stream_id IS NOT NULL AND m.topic LIKE ${`${RESOLVED_TOPIC_PREFIX}%`})`;
            break;
          default:
            throw new BadNarrowError(`unknown 'is' operand ${pyRepr(operand)}`);
        }
        break;
      case 'has':
        switch (operand) {
          case 'attachment':
            condition = Prisma.sql`m.has_attachment`;
            break;
          case 'image':
            condition = Prisma.sql`m.has_image`;
            break;
          case 'link':
            condition = Prisma.sql`m.has_link`;
            break;
          case 'reaction':
            condition = Prisma.sql`EXISTS (SELECT 1 FROM reaction r WHERE r.message_id = m.id)`;
            break;
          default:
            throw new BadNarrowError(`unknown 'has' operand ${pyRepr(operand)}`);
        }
        break;
      case 'in':
        if (operand === 'home') condition = Prisma.sql`(${Prisma.join(mutingConditions(viewer.id, null), ' AND ')})`;
        else if (operand === 'all') condition = null;
        else throw new BadNarrowError(`unknown 'in' operand ${pyRepr(operand)}`);
        break;
      case 'search':
        searches.push(operand as string);
        condition = null;
        break;
      default:
        throw new BadNarrowError(`unknown operator ${operator}`);
    }
    if (condition) {
      needsMessage ||= !(operator === 'is' && operand !== 'resolved');
      // NULL columns (stream_id of direct messages) must not make a negated term drop rows.
      conditions.push(term.negated ? Prisma.sql`NOT COALESCE(${condition}, FALSE)` : condition);
    }
  }

  const search = searches.length ? searches.join(' ') : null;
  if (search !== null) {
    needsMessage = true;
    // Quoted phrases must appear as written; every word must match the full-text index.
    for (const phrase of search.match(/"[^"]+"/g) ?? []) {
      const pattern = `%${phrase.slice(1, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      conditions.push(Prisma.sql`(m.content ILIKE ${pattern} OR m.topic ILIKE ${pattern})`);
    }
    conditions.push(
      Prisma.sql`(to_tsvector('english', m.content) @@ plainto_tsquery('english', ${search})
        OR to_tsvector('english', m.topic) @@ plainto_tsquery('english', ${search}))`,
    );
  }

  const includeHistory = webPublic || (await includesHistory(db, viewer, narrow, channels));
  return {
    viewerId: viewer.id,
    realmId,
    includeHistory,
    needsMessage: needsMessage || includeHistory,
    conditions,
    search,
    channelId,
  };
}

// ---------------------------------------------------------------- ranges

/** Zulip's LARGER_THAN_MAX_MESSAGE_ID: the "newest" anchor. */
export const LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000;
const MAX_SQL_ID = 2 ** 31 - 1;

/**
 * Zulip's parse_anchor_value: null means "first unread". `oldest` → 0, `newest` → past every
 * id, negative ids → 0.
 */
export function parseAnchor(anchor: string | undefined, useFirstUnreadAnchor: boolean): number | null {
  if (useFirstUnreadAnchor) return null;
  if (anchor === undefined) throw new JsonableError("Missing 'anchor' argument.");
  if (anchor === 'oldest') return 0;
  if (anchor === 'newest') return LARGER_THAN_MAX_MESSAGE_ID;
  if (anchor === 'first_unread') return null;
  const trimmed = anchor.trim();
  if (!/^[-+]?[0-9]+$/.test(trimmed)) throw new JsonableError('Invalid anchor');
  const value = Number(trimmed);
  if (value < 0) return 0;
  return Math.min(value, LARGER_THAN_MAX_MESSAGE_ID);
}

export interface RangeRequest {
  anchor: number | null;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
}

export interface MessageRange {
  /**
   * Ascending by id, with the viewer's flags (historical rows: read + historical) and whether
   * the viewer has a user_message row for it.
   */
  rows: { id: number; flags: number; received: boolean }[];
  anchor: number;
  foundAnchor: boolean;
  foundOldest: boolean;
  foundNewest: boolean;
  historyLimited: boolean;
}

type RangeReader = Pick<TxClient, '$queryRaw'>;

function fromClause(narrow: CompiledNarrow): {
  from: Prisma.Sql;
  idColumn: Prisma.Sql;
  flagsColumn: Prisma.Sql;
  receivedColumn?: Prisma.Sql;
} {
  if (narrow.includeHistory) {
    return {
      from: Prisma.sql`message m LEFT JOIN user_message um ON um.message_id = m.id AND um.user_profile_id = ${narrow.viewerId}
        WHERE m.realm_id = ${narrow.realmId}`,
      idColumn: Prisma.sql`m.id`,
      flagsColumn: Prisma.sql`COALESCE(um.flags, ${HISTORICAL_FLAGS})`,
      receivedColumn: Prisma.sql`(um.id IS NOT NULL)`,
    };
  }
  if (narrow.needsMessage) {
    return {
      from: Prisma.sql`user_message um JOIN message m ON m.id = um.message_id WHERE um.user_profile_id = ${narrow.viewerId}`,
      idColumn: Prisma.sql`um.message_id`,
      flagsColumn: Prisma.sql`um.flags`,
    };
  }
  return {
    from: Prisma.sql`user_message um WHERE um.user_profile_id = ${narrow.viewerId}`,
    idColumn: Prisma.sql`um.message_id`,
    flagsColumn: Prisma.sql`um.flags`,
  };
}

function whereOf(conditions: Prisma.Sql[]): Prisma.Sql {
  return conditions.length ? Prisma.sql` AND ${Prisma.join(conditions, ' AND ')}` : Prisma.empty;
}

/** The oldest unread message of the narrow outside muted conversations, else past the newest. */
async function firstUnreadAnchor(db: RangeReader, narrow: CompiledNarrow): Promise<number> {
  const base = { ...narrow, includeHistory: false, needsMessage: true };
  const { from, idColumn } = fromClause(base);
  const conditions = [
    ...narrow.conditions,
    Prisma.sql`(um.flags & ${MessageFlag.read}) = 0`,
    ...mutingConditions(narrow.viewerId, narrow.channelId),
  ];
  const rows = await db.$queryRaw<
    { id: number }[]
  >`SELECT ${idColumn} AS id FROM ${from}${whereOf(conditions)} ORDER BY ${idColumn} ASC LIMIT 1`;
  return rows[0]?.id ?? LARGER_THAN_MAX_MESSAGE_ID;
}

/** A range of a narrow as one SQL query, for reading it or for changing it in one statement. */
export interface RangeQuery {
  /** Selects the range's rows: id, flags, received, side ('before' | 'anchor' | 'after'). */
  sql: Prisma.Sql;
  anchor: number;
  anchoredToLeft: boolean;
  anchoredToRight: boolean;
  numBefore: number;
  numAfter: number;
}

/**
 * Zulip's fetch_messages as SQL: up to numBefore messages before the anchor, the anchor itself
 * if it matches (and includeAnchor), up to numAfter after it. The before/after queries fetch a
 * row of headroom in some cases, and the outer query trims it as post_process_limited_query does.
 */
export async function messageRangeQuery(
  db: RangeReader,
  narrow: CompiledNarrow,
  request: RangeRequest,
): Promise<RangeQuery> {
  const anchor = request.anchor ?? (await firstUnreadAnchor(db, narrow));
  const anchoredToLeft = anchor === 0;
  const anchoredToRight = anchor >= LARGER_THAN_MAX_MESSAGE_ID;
  const numBefore = request.numBefore;
  const numAfter = anchoredToRight ? 0 : request.numAfter;
  const { includeAnchor } = request;
  const sqlAnchor = Math.min(anchor, MAX_SQL_ID);
  const { from, idColumn, flagsColumn, receivedColumn } = fromClause(narrow);
  const where = whereOf(narrow.conditions);
  const select = Prisma.sql`SELECT ${idColumn} AS id, ${flagsColumn} AS flags, ${receivedColumn ?? Prisma.sql`TRUE`} AS received FROM ${from}${where}`;

  const needBefore = !anchoredToLeft && numBefore > 0;
  const needAfter = !anchoredToRight && numAfter > 0;
  let query: Prisma.Sql;
  const beforeQuery = (upTo: number, limit: number) =>
    anchoredToRight
      ? Prisma.sql`(${select} ORDER BY ${idColumn} DESC LIMIT ${limit})`
      : Prisma.sql`(${select} AND ${idColumn} <= ${upTo} ORDER BY ${idColumn} DESC LIMIT ${limit})`;
  const afterQuery = (from_: number, limit: number) =>
    anchoredToLeft
      ? Prisma.sql`(${select} ORDER BY ${idColumn} ASC LIMIT ${limit})`
      : Prisma.sql`(${select} AND ${idColumn} >= ${from_} ORDER BY ${idColumn} ASC LIMIT ${limit})`;
  if (needBefore && needAfter) {
    query = Prisma.sql`${beforeQuery(sqlAnchor - 1, numBefore)} UNION ALL ${afterQuery(sqlAnchor, numAfter + 1)}`;
  } else if (needBefore) {
    const limit = numBefore + (anchoredToRight ? 0 : Number(includeAnchor));
    query = beforeQuery(includeAnchor ? sqlAnchor : sqlAnchor - 1, limit);
  } else if (needAfter) {
    query = afterQuery(includeAnchor ? sqlAnchor : sqlAnchor + 1, numAfter + Number(includeAnchor));
  } else {
    query = Prisma.sql`(${select} AND ${idColumn} = ${sqlAnchor})`;
  }
  const side = anchoredToRight
    ? Prisma.sql`'before'`
    : Prisma.sql`CASE WHEN id < ${sqlAnchor} THEN 'before' WHEN id = ${sqlAnchor} THEN 'anchor' ELSE 'after' END`;
  // Zulip's post_process_limited_query: keep the numBefore rows nearest the anchor before it
  // and the numAfter nearest after it.
  const sql = Prisma.sql`
    SELECT id, flags, received, side FROM (
      SELECT id, flags, received, side,
        row_number() OVER (PARTITION BY side ORDER BY id DESC) AS nearest_before,
        row_number() OVER (PARTITION BY side ORDER BY id ASC) AS nearest_after
      FROM (SELECT id, flags, received, ${side} AS side FROM (${query}) AS fetched) AS classified
    ) AS ranked
    WHERE (side <> 'before' OR ${numBefore}::int = 0 OR nearest_before <= ${numBefore}::int)
      AND (side <> 'after' OR ${numAfter}::int = 0 OR nearest_after <= ${numAfter}::int)`;
  return { sql, anchor, anchoredToLeft, anchoredToRight, numBefore, numAfter };
}

/** found_oldest / found_newest from how many rows of the range lie on each side of the anchor. */
export function rangeEnds(
  range: RangeQuery,
  beforeCount: number,
  afterCount: number,
): { foundOldest: boolean; foundNewest: boolean } {
  return {
    foundOldest: range.anchoredToLeft || beforeCount < range.numBefore,
    foundNewest: range.anchoredToRight || afterCount < range.numAfter,
  };
}

/** Reads a range of the narrow (GET /messages). */
export async function fetchMessageRange(
  db: RangeReader,
  narrow: CompiledNarrow,
  request: RangeRequest,
): Promise<MessageRange> {
  const range = await messageRangeQuery(db, narrow, request);
  const fetched = await db.$queryRaw<
    { id: number; flags: number; received: boolean; side: string }[]
  >`SELECT * FROM (${range.sql}) AS range ORDER BY id`;
  const count = (side: string) => fetched.filter((row) => row.side === side).length;
  return {
    rows: fetched.map((row) => ({ id: row.id, flags: Number(row.flags), received: row.received })),
    anchor: range.anchor,
    foundAnchor: count('anchor') === 1,
    ...rangeEnds(range, count('before'), count('after')),
    historyLimited: false,
  };
}
