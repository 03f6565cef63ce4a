// Bounds on the work one request can ask for, in one place (docs/operations.md "## Limits"
// lists them). A request past a bound is refused with a 4xx before its work starts, so no one
// request can hold a service's event loop or a transaction long enough to stall others.
// Zulip's own numbers are used where Zulip has one.

const KiB = 1024;
const MiB = 1024 * KiB;

/** Largest request body a service parses as form fields, by the class of endpoint. */
export const BODY_LIMITS = {
  /**
   * Services that set none (users, events, the form endpoints of uploads): their largest bodies
   * are settings and profile data, far below a megabyte. At 10 MiB, decoding and refusing a list
   * of a million ids held the users service for 1.6 s.
   */
  default: 1 * MiB,
  /**
   * The messages and channels services. Their largest legitimate body is a message of 10,000
   * characters (Zulip's MAX_MESSAGE_LENGTH; 4-byte characters percent-encoded are 120 KB) or a
   * batch of drafts or channels; a megabyte leaves room for clients that send more and let the
   * server truncate, as Zulip does.
   */
  messagesAndChannels: 1 * MiB,
  /** Endpoints whose body is a list of ids (POST /messages/flags): 5,000 ids take under 70 KB. */
  idList: 256 * KiB,
} as const;

/** Most items a list parameter may hold, by what it lists. */
export const LIST_LIMITS = {
  /** POST /messages/flags `messages`: Zulip's MAX_MESSAGES_PER_UPDATE (its narrow form's bound). */
  messagesPerFlagUpdate: 5000,
  /** GET /messages `message_ids`: Zulip's MAX_MESSAGES_PER_FETCH, in its words. */
  messagesPerFetch: 5000,
  /** Terms of a `narrow`: each may cost a lookup; a client's narrows have a handful. */
  narrowTerms: 100,
  /** Users of a direct message, a `dm` narrow operand or a typing notification. */
  directMessageRecipients: 1000,
  /** Drafts created by one POST /drafts (each is a row written in one transaction). */
  draftsPerRequest: 1000,
  /** Channels named by one subscribe or unsubscribe request, or one properties update. */
  channelsPerSubscriptionRequest: 500,
  /**
   * Channels one subscribe request may create: each creation writes its group settings and
   * sends its events in the request's transaction (a few dozen statements).
   */
  channelsCreatedPerRequest: 20,
  /** Users one subscribe or unsubscribe request names in `principals`. */
  principalsPerRequest: 1000,
  /** Subscriptions (channels × users) one request may add or remove. */
  subscriptionChangesPerRequest: 5000,
  /**
   * Users or groups one user-group request names (members, subgroups, a group setting's
   * direct members and subgroups): unbounded, 100,000 ids answered 500 after 2.7 s.
   */
  groupMembersPerRequest: 10000,
  /**
   * Alert words one request adds or removes (Zulip has no bound): 100,000 took 3.4 s to add;
   * the words are kept and matched one by one.
   */
  alertWordsPerRequest: 1000,
} as const;
