// Bitbucket Cloud (Zulip's zerver/webhooks/bitbucket2): the event is read from the payload's keys
// (push, fork, commit comment, commit status, issues); pull requests and repository updates need
// the X-Event-Key header ("pullrequest:approved", "repo:updated"). A push posts one message per
// change (branch or tag). Topics are "<repo>", "<repo> / <branch>", "<repo> / PR #n title".

import { JsonableError } from '@teamchat/core';
import { bool, dig, has, int, list, str, truthy, type WebhookIntegration, type WebhookRequest } from './integration';
import {
  commitCommentMessage,
  endsWithPunctuation,
  forcePushMessage,
  isBranchNotifiable,
  pullRequestOrIssueMessage,
  pushCommitsMessage,
  pushTagMessage,
  removeBranchMessage,
  shortSha,
  topicWithBranch,
  topicWithPrOrIssue,
} from './git';

type P = unknown;
type Body = (payload: P, includeTitle: boolean) => string;

/** The pull request actions of X-Event-Key "pullrequest:<action>" that are posted. */
const PULL_REQUEST_ACTIONS = [
  'approved',
  'unapproved',
  'created',
  'updated',
  'rejected',
  'fulfilled',
  'comment_created',
  'comment_updated',
  'comment_deleted',
];

/**
 * A person as Bitbucket names them: since GDPR there is no username, only a display name or a
 * nickname (https://developer.atlassian.com/cloud/bitbucket/bitbucket-api-changes-gdpr/).
 */
function userName(person: unknown): string {
  if (has(person, 'display_name')) return str(person, 'display_name');
  if (has(person, 'nickname')) return str(person, 'nickname');
  return 'Unknown user';
}

const actor = (payload: P) => userName(dig(payload, 'actor'));
const repoName = (payload: P) => str(payload, 'repository', 'name');
const htmlUrl = (value: unknown, ...path: string[]) => str(value, ...path, 'links', 'html', 'href');
const titleIf = (include: boolean, payload: P, ...path: string[]) => (include ? str(payload, ...path) : null);

/** The change's ref: the new one, or the old one when it was deleted. */
const changedRef = (change: unknown) => (truthy(dig(change, 'new')) ? dig(change, 'new') : dig(change, 'old'));
const isTagChange = (change: unknown) => str(changedRef(change), 'type') === 'tag';

function eventType(request: WebhookRequest, payload: P): string {
  if (has(payload, 'push')) return 'push';
  if (has(payload, 'fork')) return 'fork';
  if (has(payload, 'comment') && has(payload, 'commit')) return 'commit_comment';
  if (has(payload, 'commit_status')) return 'change_commit_status';
  if (has(payload, 'issue')) {
    if (has(payload, 'changes')) return 'issue_updated';
    if (has(payload, 'comment')) return 'issue_commented';
    return 'issue_created';
  }
  const eventKey = request.requireHeader('X-Event-Key', 'BitBucket');
  if (has(payload, 'pullrequest')) {
    const action = /^pullrequest:(.*)$/s.exec(eventKey)?.[1];
    if (action !== undefined && PULL_REQUEST_ACTIONS.includes(action)) return `pull_request_${action}`;
  } else if (eventKey === 'repo:updated') {
    return eventKey;
  }
  throw request.unsupported(eventKey);
}

function pushChangeMessage(payload: P, change: unknown): string {
  if (isTagChange(change)) {
    const pushed = truthy(dig(change, 'new'));
    const tag = pushed ? dig(change, 'new') : dig(change, 'old');
    return pushTagMessage(actor(payload), str(tag, 'name'), htmlUrl(tag), pushed ? 'pushed' : 'removed');
  }
  if (dig(change, 'new') === null) return removeBranchMessage(actor(payload), str(change, 'old', 'name'));
  if (bool(change, 'forced')) {
    return forcePushMessage(
      actor(payload),
      htmlUrl(change),
      str(change, 'new', 'name'),
      str(change, 'new', 'target', 'hash'),
    );
  }
  return pushCommitsMessage({
    userName: actor(payload),
    compareUrl: htmlUrl(change),
    branch: str(change, 'new', 'name'),
    commits: list(change, 'commits').map((commit) => ({
      // An author without a Bitbucket account is "Name <email>": the first word names them.
      name: has(commit, 'user', 'author')
        ? userName(dig(commit, 'author', 'user'))
        : (str(commit, 'author', 'raw').trim().split(/\s+/)[0] ?? ''),
      sha: str(commit, 'hash'),
      url: htmlUrl(commit),
      message: str(commit, 'message'),
    })),
    isTruncated: bool(change, 'truncated'),
  });
}

function pushChangeTopic(payload: P, change: unknown): string {
  if (isTagChange(change)) return repoName(payload);
  return topicWithBranch(repoName(payload), str(changedRef(change), 'name'));
}

const issueAction =
  (action: string): Body =>
  (payload, includeTitle) => {
    const created = action === 'created';
    return pullRequestOrIssueMessage({
      userName: actor(payload),
      action,
      url: htmlUrl(payload, 'issue'),
      number: int(payload, 'issue', 'id'),
      message: created ? str(payload, 'issue', 'content', 'raw') : null,
      assignee:
        created && truthy(dig(payload, 'issue', 'assignee')) ? userName(dig(payload, 'issue', 'assignee')) : null,
      type: 'issue',
      title: titleIf(includeTitle, payload, 'issue', 'title'),
    });
  };

const pullRequestAction =
  (action: string): Body =>
  (payload, includeTitle) => {
    const merged = action === 'merged';
    return pullRequestOrIssueMessage({
      userName: actor(payload),
      action,
      url: htmlUrl(payload, 'pullrequest'),
      number: int(payload, 'pullrequest', 'id'),
      targetBranch: merged ? str(payload, 'pullrequest', 'source', 'branch', 'name') : null,
      baseBranch: merged ? str(payload, 'pullrequest', 'destination', 'branch', 'name') : null,
      title: titleIf(includeTitle, payload, 'pullrequest', 'title'),
    });
  };

const pullRequestCreatedOrUpdated =
  (action: string): Body =>
  (payload, includeTitle) => {
    const created = action === 'created';
    // The first reviewer is named as the assignee.
    const reviewers = dig(payload, 'pullrequest', 'reviewers');
    return pullRequestOrIssueMessage({
      userName: actor(payload),
      action,
      url: htmlUrl(payload, 'pullrequest'),
      number: int(payload, 'pullrequest', 'id'),
      targetBranch: created ? str(payload, 'pullrequest', 'source', 'branch', 'name') : null,
      baseBranch: created ? str(payload, 'pullrequest', 'destination', 'branch', 'name') : null,
      message: str(payload, 'pullrequest', 'description'),
      assignee: truthy(reviewers) ? userName(list(payload, 'pullrequest', 'reviewers')[0]) : null,
      title: titleIf(includeTitle, payload, 'pullrequest', 'title'),
    });
  };

/** `action` names the comment's link: "[commented](url)" or "updated a [comment](url)". */
const pullRequestComment =
  (action: (commentUrl: string) => string): Body =>
  (payload, includeTitle) =>
    pullRequestOrIssueMessage({
      userName: actor(payload),
      action: `${action(htmlUrl(payload, 'comment'))} on`,
      url: htmlUrl(payload, 'pullrequest'),
      number: int(payload, 'pullrequest', 'id'),
      message: str(payload, 'comment', 'content', 'raw'),
      title: titleIf(includeTitle, payload, 'pullrequest', 'title'),
    });

/** Python's str() of a JSON value, as Zulip writes a changed setting's old and new values. */
function pythonStr(value: unknown): string {
  if (typeof value === 'string') return value;
  return pythonRepr(value);
}

function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pythonFloat(value);
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    const escaped = value
      .replaceAll('\\', '\\\\')
      .replaceAll('\n', '\\n')
      .replaceAll('\r', '\\r')
      .replaceAll('\t', '\\t');
    return quote + (quote === "'" ? escaped.replaceAll("'", "\\'") : escaped) + quote;
  }
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  return `{${entries.map(([key, each]) => `${pythonRepr(key)}: ${pythonRepr(each)}`).join(', ')}}`;
}

/** Python's repr of a float: always a decimal point or an exponent. */
function pythonFloat(value: number): string {
  const text = String(value);
  return /[.e]/.test(text) ? text.replace(/e([+-])(\d)$/, 'e$10$2') : `${text}.0`;
}

/** A setting's old or new value, of any type, which must be there (Zulip: "... is missing" otherwise). */
function settingValue(payload: P, setting: string, side: 'old' | 'new'): unknown {
  if (!has(payload, side, 'changes', setting)) throw new JsonableError(`payload.changes.${setting}.${side} is missing`);
  return dig(payload, 'changes', setting, side);
}

const REPO_SETTINGS = ['website', 'name', 'links', 'language', 'full_name', 'description'];

const repoUpdated: Body = (payload) => {
  const name = str(payload, 'repository', 'name');
  let body = '';
  for (const setting of REPO_SETTINGS) {
    const updated = settingValue(payload, setting, 'new');
    const old = settingValue(payload, setting, 'old');
    if (!truthy(updated)) continue;
    const label = setting === 'full_name' ? 'full name' : setting;
    const message = truthy(old)
      ? `${actor(payload)} changed the ${label} of the **${name}** repo from **${pythonStr(old)}** to **${pythonStr(updated)}**`
      : `${actor(payload)} changed the ${label} of the **${name}** repo to **${pythonStr(updated)}**`;
    body += `${endsWithPunctuation(pythonStr(updated)) ? message : `${message}.`}\n`;
  }
  return body;
};

const commitStatusChanged: Body = (payload) => {
  const commitId = str(payload, 'commit_status', 'links', 'commit', 'href').split('/').pop()!;
  const commit = `[${shortSha(commitId)}](${htmlUrl(payload, 'repository')}/commits/${commitId})`;
  return (
    `[System ${str(payload, 'commit_status', 'key')}](${str(payload, 'commit_status', 'url')}) ` +
    `changed status of ${commit} to ${str(payload, 'commit_status', 'state')}.`
  );
};

const BODIES: Record<string, Body> = {
  fork: (payload) =>
    `${actor(payload)} forked the repository into [${str(payload, 'fork', 'full_name')}](${htmlUrl(payload, 'fork')}).`,
  commit_comment: (payload) =>
    commitCommentMessage(
      actor(payload),
      `[commented](${htmlUrl(payload, 'comment')})`,
      htmlUrl(payload, 'comment', 'commit'),
      str(payload, 'comment', 'commit', 'hash'),
      str(payload, 'comment', 'content', 'raw'),
    ),
  change_commit_status: commitStatusChanged,
  issue_updated: issueAction('updated'),
  issue_created: issueAction('created'),
  issue_commented: (payload, includeTitle) =>
    issueAction(`[commented](${htmlUrl(payload, 'comment')}) on`)(payload, includeTitle),
  pull_request_created: pullRequestCreatedOrUpdated('created'),
  pull_request_updated: pullRequestCreatedOrUpdated('updated'),
  pull_request_approved: pullRequestAction('approved'),
  pull_request_unapproved: pullRequestAction('unapproved'),
  pull_request_fulfilled: pullRequestAction('merged'),
  pull_request_rejected: pullRequestAction('rejected'),
  pull_request_comment_created: pullRequestComment((url) => `[commented](${url})`),
  pull_request_comment_updated: pullRequestComment((url) => `updated a [comment](${url})`),
  pull_request_comment_deleted: pullRequestComment((url) => `deleted a [comment](${url})`),
  'repo:updated': repoUpdated,
};

function topicFor(type: string, payload: P): string {
  if (type.startsWith('pull_request')) {
    return topicWithPrOrIssue(
      repoName(payload),
      'PR',
      int(payload, 'pullrequest', 'id'),
      str(payload, 'pullrequest', 'title'),
    );
  }
  if (type.startsWith('issue')) {
    return topicWithPrOrIssue(repoName(payload), 'issue', int(payload, 'issue', 'id'), str(payload, 'issue', 'title'));
  }
  return repoName(payload);
}

export const bitbucket2: WebhookIntegration = {
  webhookName: 'Bitbucket2',
  unquoteUrlParameters: true,
  messages(request) {
    const payload = request.json();
    const type = eventType(request, payload);
    if (type !== 'push') {
      const content = BODIES[type]!(payload, request.option('topic') !== undefined);
      return [{ topic: topicFor(type, payload), content, eventType: type }];
    }
    const changes = dig(payload, 'push', 'changes');
    // A push without changes posts nothing.
    if (!truthy(changes)) return [];
    const all = list(payload, 'push', 'changes');
    // Only the last change's branch is checked against the URL's `branches`; a tag passes.
    const last = all[all.length - 1];
    const branch = isTagChange(last) ? null : str(changedRef(last), 'name');
    if (branch && !isBranchNotifiable(branch, request.option('branches'))) return [];
    return all.map((change) => ({
      topic: pushChangeTopic(payload, change),
      content: pushChangeMessage(payload, change),
      eventType: type,
    }));
  },
};
