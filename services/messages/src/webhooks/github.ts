// GitHub (Zulip's zerver/webhooks/github): the event comes in the X-GitHub-Event header and is
// refined by the payload (a pull request's action, a push of commits or of a tag...). Topics are
// "<repo> / PR #n title", "<repo> / <branch>" and the like; with a `topic` in the URL, the
// messages name the PR or issue's title themselves.

import {
  bool,
  dig,
  has,
  int,
  list,
  str,
  strOrNull,
  truthy,
  type WebhookIntegration,
  type WebhookRequest,
} from './integration';
import {
  commitCommentMessage,
  isBranchNotifiable,
  issueLabeledMessage,
  issueMilestonedMessage,
  pullRequestOrIssueMessage,
  pushCommitsMessage,
  pushTagMessage,
  quoted,
  releaseMessage,
  setupMessage,
  shortSha,
  topicWithBranch,
  topicWithPrOrIssue,
} from './git';

type P = unknown;
interface Helper {
  payload: P;
  includeTitle: boolean;
}

const sender = (payload: P) => str(payload, 'sender', 'login');
const senderUrl = (payload: P) => str(payload, 'sender', 'html_url');
const repoName = (payload: P) => str(payload, 'repository', 'name');
const repoFullName = (payload: P) => str(payload, 'repository', 'full_name');
const repoUrl = (payload: P) => str(payload, 'repository', 'html_url');
const branchOf = (ref: string) => ref.replace(/^refs\/heads\//, '');
const tagOf = (ref: string) => ref.replace(/^refs\/tags\//, '');
const isPullRequestComment = (payload: P) => has(payload, 'pull_request', 'issue');
/** GitHub's sponsorship tiers and dates. */
const subscription = (payload: P) => str(payload, 'sponsorship', 'tier', 'name');
const priorSubscription = (payload: P) => str(payload, 'changes', 'tier', 'from', 'name');
function effectiveDate(payload: P): string {
  const date = new Date(`${str(payload, 'effective_date').slice(0, 10)}T00:00:00Z`);
  const month = date.toLocaleString('en-US', { month: 'long', timeZone: 'UTC' });
  return `${month} ${String(date.getUTCDate()).padStart(2, '0')}, ${date.getUTCFullYear()}`;
}

function commentAction(payload: P): string {
  const action = str(payload, 'action');
  const verb = action === 'created' ? '[commented]' : `${action} a [comment]`;
  return `${verb}(${str(payload, 'comment', 'html_url')}) on`;
}

const BODIES: Record<string, (helper: Helper) => string> = {
  commit_comment({ payload }) {
    const commentUrl = str(payload, 'comment', 'html_url');
    return commitCommentMessage(
      sender(payload),
      `[commented](${commentUrl})`,
      commentUrl.split('#')[0]!,
      str(payload, 'comment', 'commit_id'),
      str(payload, 'comment', 'body'),
    );
  },
  closed_pull_request({ payload, includeTitle }) {
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action: bool(payload, 'pull_request', 'merged') ? 'merged' : 'closed without merge',
      url: str(payload, 'pull_request', 'html_url'),
      number: int(payload, 'pull_request', 'number'),
      title: includeTitle ? str(payload, 'pull_request', 'title') : null,
    });
  },
  create: ({ payload }) => `${sender(payload)} created ${str(payload, 'ref_type')} ${str(payload, 'ref')}.`.trimEnd(),
  delete: ({ payload }) => `${sender(payload)} deleted ${str(payload, 'ref_type')} ${str(payload, 'ref')}.`.trimEnd(),
  check_run({ payload }) {
    const sha = str(payload, 'check_run', 'head_sha');
    return (
      `Check [${str(payload, 'check_run', 'name')}](${str(payload, 'check_run', 'html_url')}) ` +
      `${str(payload, 'check_run', 'status')} (${str(payload, 'check_run', 'conclusion')}). ` +
      `([${shortSha(sha)}](${repoUrl(payload)}/commit/${sha}))`
    );
  },
  deployment: ({ payload }) => `${sender(payload)} created new deployment.`,
  deployment_status: ({ payload }) => `Deployment changed status to ${str(payload, 'deployment_status', 'state')}.`,
  discussion({ payload }) {
    return (
      `${sender(payload)} created [discussion #${int(payload, 'discussion', 'number')}](${str(payload, 'discussion', 'html_url')}) ` +
      `in ${str(payload, 'discussion', 'category', 'name')}:\n\n~~~ quote\n### ${str(payload, 'discussion', 'title')}\n` +
      `${str(payload, 'discussion', 'body')}\n~~~`
    );
  },
  discussion_comment({ payload, includeTitle }) {
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action: commentAction(payload),
      url: str(payload, 'discussion', 'html_url'),
      number: int(payload, 'discussion', 'number'),
      message: str(payload, 'comment', 'body'),
      title: includeTitle ? str(payload, 'discussion', 'title') : null,
      type: 'discussion',
    });
  },
  fork: ({ payload }) =>
    `${sender(payload)} forked [${str(payload, 'forkee', 'name')}](${str(payload, 'forkee', 'html_url')}).`,
  gollum({ payload }) {
    const pages = list(payload, 'pages')
      .map((page) => `* ${str(page, 'action')} [${str(page, 'title')}](${str(page, 'html_url')})\n`)
      .join('');
    return `${sender(payload)}:\n${pages.trimEnd()}`;
  },
  issue_comment({ payload, includeTitle }) {
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action: commentAction(payload),
      url: str(payload, 'issue', 'html_url'),
      number: int(payload, 'issue', 'number'),
      message: str(payload, 'comment', 'body'),
      title: includeTitle ? str(payload, 'issue', 'title') : null,
      type: isPullRequestComment(payload) ? 'PR' : 'issue',
    });
  },
  issue_labeled_or_unlabeled({ payload, includeTitle }) {
    return issueLabeledMessage({
      userName: sender(payload),
      action: str(payload, 'action') === 'labeled' ? 'added' : 'removed',
      url: str(payload, 'issue', 'html_url'),
      number: int(payload, 'issue', 'number'),
      labelName: str(payload, 'label', 'name'),
      userUrl: senderUrl(payload),
      title: includeTitle ? str(payload, 'issue', 'title') : null,
    });
  },
  issue_milestoned_or_demilestoned({ payload, includeTitle }) {
    return issueMilestonedMessage({
      userName: sender(payload),
      action: str(payload, 'action') === 'milestoned' ? 'added' : 'removed',
      url: str(payload, 'issue', 'html_url'),
      number: int(payload, 'issue', 'number'),
      milestoneName: str(payload, 'milestone', 'title'),
      milestoneUrl: str(payload, 'milestone', 'html_url'),
      userUrl: senderUrl(payload),
      title: includeTitle ? str(payload, 'issue', 'title') : null,
    });
  },
  issues_opened_via_transfer({ payload }) {
    return (
      `[Issue #${int(payload, 'issue', 'number')} ${str(payload, 'issue', 'title')}](${str(payload, 'issue', 'html_url')}) ` +
      `was transferred from [${str(payload, 'changes', 'old_repository', 'full_name')}#${int(payload, 'changes', 'old_issue', 'number')}]` +
      `(${str(payload, 'changes', 'old_issue', 'html_url')}).`
    );
  },
  issues_transferred({ payload }) {
    return (
      `${sender(payload)} transferred [issue #${int(payload, 'issue', 'number')} ${str(payload, 'issue', 'title')}]` +
      `(${str(payload, 'issue', 'html_url')}) to [${str(payload, 'changes', 'new_repository', 'full_name')}/#` +
      `${int(payload, 'changes', 'new_issue', 'number')}](${str(payload, 'changes', 'new_issue', 'html_url')}).`
    );
  },
  issues({ payload, includeTitle }) {
    const action = str(payload, 'action');
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action,
      url: str(payload, 'issue', 'html_url'),
      number: int(payload, 'issue', 'number'),
      message: action === 'assigned' || action === 'unassigned' ? null : strOrNull(payload, 'issue', 'body'),
      title: includeTitle ? str(payload, 'issue', 'title') : null,
      assigneeUpdated: has(payload, 'assignee') ? str(payload, 'assignee', 'login') : null,
      type: 'issue',
    });
  },
  member: ({ payload }) =>
    `${sender(payload)} ${str(payload, 'action')} [${str(payload, 'member', 'login')}](${str(payload, 'member', 'html_url')}) ` +
    `to [${repoName(payload)}](${repoUrl(payload)}).`,
  membership({ payload }) {
    const action = str(payload, 'action');
    return (
      `${sender(payload)} ${action} [${str(payload, 'member', 'login')}](${str(payload, 'member', 'html_url')}) ` +
      `${action === 'removed' ? 'from' : 'to'} the ${str(payload, 'team', 'name')} team.`
    );
  },
  opened_pull_request: openedOrUpdatedPullRequest,
  updated_pull_request: openedOrUpdatedPullRequest,
  assigned_or_unassigned_pull_request({ payload, includeTitle }) {
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action: str(payload, 'action'),
      url: str(payload, 'pull_request', 'html_url'),
      number: int(payload, 'pull_request', 'number'),
      title: includeTitle ? str(payload, 'pull_request', 'title') : null,
      assigneeUpdated: str(payload, 'assignee', 'login'),
    });
  },
  page_build({ payload }) {
    const status = str(payload, 'build', 'status');
    const actions: Record<string, string> = {
      null: 'has yet to be built',
      building: 'is being built',
      errored: 'has failed: {}',
      built: 'has finished building',
    };
    let action = actions[status] ?? `is ${status}`;
    if (truthy(dig(payload, 'build', 'error', 'message'))) {
      action = action.replace('{}', quoted(str(payload, 'build', 'error', 'message')));
    }
    return `GitHub Pages build, triggered by ${str(payload, 'build', 'pusher', 'login')}, ${action}.`;
  },
  ping: ({ payload }) => setupMessage('GitHub', sender(payload)),
  public: ({ payload }) =>
    `${sender(payload)} made the repository [${repoFullName(payload)}](${repoUrl(payload)}) public.`,
  pull_request_ready_for_review: ({ payload }) =>
    `**${sender(payload)}** has marked [PR #${int(payload, 'pull_request', 'number')}](${str(payload, 'pull_request', 'html_url')}) as ready for review.`,
  pull_request_review({ payload, includeTitle }) {
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action: 'submitted',
      url: str(payload, 'review', 'html_url'),
      type: 'PR review',
      title: includeTitle
        ? `for #${int(payload, 'pull_request', 'number')} ${str(payload, 'pull_request', 'title')}`
        : null,
      message: strOrNull(payload, 'review', 'body'),
    });
  },
  pull_request_review_comment({ payload, includeTitle }) {
    const action = str(payload, 'action');
    return pullRequestOrIssueMessage({
      userName: sender(payload),
      action,
      url: str(payload, 'comment', 'html_url'),
      message: action === 'created' ? str(payload, 'comment', 'body') : null,
      type: 'PR review comment',
      title: includeTitle
        ? `on #${int(payload, 'pull_request', 'number')} ${str(payload, 'pull_request', 'title')}`
        : null,
    });
  },
  pull_request_review_requested({ payload, includeTitle }) {
    const reviewers = has(payload, 'requested_reviewer')
      ? `[${str(payload, 'requested_reviewer', 'login')}](${str(payload, 'requested_reviewer', 'html_url')})`
      : `[${str(payload, 'requested_team', 'name')}](${str(payload, 'requested_team', 'html_url')})`;
    const number = int(payload, 'pull_request', 'number');
    const pr = includeTitle ? `PR #${number} ${str(payload, 'pull_request', 'title')}` : `PR #${number}`;
    return `**${sender(payload)}** requested ${reviewers} for a review on [${pr}](${str(payload, 'pull_request', 'html_url')}).`;
  },
  pull_request_auto_merge({ payload }) {
    const verb = str(payload, 'action') === 'auto_merge_disabled' ? 'disabled' : 'enabled';
    return `${sender(payload)} has ${verb} auto merge for [PR #${int(payload, 'pull_request', 'number')}](${str(payload, 'pull_request', 'html_url')}).`;
  },
  locked_or_unlocked_pull_request({ payload }) {
    const pr = `[PR #${int(payload, 'pull_request', 'number')}](${str(payload, 'pull_request', 'html_url')})`;
    if (str(payload, 'action') === 'unlocked') return `${sender(payload)} has unlocked ${pr}.`;
    const reason = truthy(dig(payload, 'pull_request', 'active_lock_reason'))
      ? str(payload, 'pull_request', 'active_lock_reason')
      : 'None';
    return `${sender(payload)} has locked ${pr} as ${reason} and limited conversation to collaborators.`;
  },
  push_commits({ payload }) {
    const commits = list(payload, 'commits').map((commit) => ({
      name: truthy(dig(commit, 'author', 'username'))
        ? str(commit, 'author', 'username')
        : str(commit, 'author', 'name'),
      sha: str(commit, 'id'),
      url: str(commit, 'url'),
      message: str(commit, 'message'),
    }));
    return pushCommitsMessage({
      userName: sender(payload),
      compareUrl: str(payload, 'compare'),
      branch: branchOf(str(payload, 'ref')),
      commits,
      deleted: bool(payload, 'deleted'),
      forcePush: bool(payload, 'forced'),
    });
  },
  push_tags: ({ payload }) =>
    pushTagMessage(sender(payload), tagOf(str(payload, 'ref')), null, bool(payload, 'created') ? 'pushed' : 'removed'),
  release({ payload }) {
    const name = truthy(dig(payload, 'release', 'name'))
      ? str(payload, 'release', 'name')
      : str(payload, 'release', 'tag_name');
    return releaseMessage(
      sender(payload),
      str(payload, 'action'),
      str(payload, 'release', 'tag_name'),
      name,
      str(payload, 'release', 'html_url'),
    );
  },
  repository: ({ payload }) =>
    `${sender(payload)} ${str(payload, 'action')} the repository [${repoFullName(payload)}](${repoUrl(payload)}).`,
  star: ({ payload }) =>
    `[${sender(payload)}](${senderUrl(payload)}) ${str(payload, 'action') === 'created' ? 'starred' : 'unstarred'} ` +
    `the repository [${repoFullName(payload)}](${repoUrl(payload)}).`,
  status({ payload }) {
    const status = truthy(dig(payload, 'target_url'))
      ? `[${str(payload, 'state')}](${str(payload, 'target_url')})`
      : str(payload, 'state');
    return `[${shortSha(str(payload, 'sha'))}](${str(payload, 'commit', 'html_url')}) changed its status to ${status}.`;
  },
  team({ payload }) {
    const changes = dig(payload, 'changes');
    if (has(changes, 'description')) {
      return `**${sender(payload)}** changed the team description to:\n\n~~~ quote\n${str(payload, 'team', 'description')}\n~~~`;
    }
    if (has(changes, 'name')) {
      return `Team \`${str(changes, 'name', 'from')}\` was renamed to \`${str(payload, 'team', 'name')}\`.`;
    }
    if (has(changes, 'privacy')) return `Team visibility changed to \`${str(payload, 'team', 'privacy')}\``;
    const keys = Object.keys(changes && typeof changes === 'object' ? changes : {}).sort();
    return `Team has changes to \`${keys.join('/')}\` data.`;
  },
  team_add: ({ payload }) =>
    `The repository [${repoFullName(payload)}](${repoUrl(payload)}) was added to team ${str(payload, 'team', 'name')}.`,
  watch: ({ payload }) => `${sender(payload)} starred the repository [${repoFullName(payload)}](${repoUrl(payload)}).`,
  cancelled: ({ payload }) => `${sender(payload)} cancelled their ${subscription(payload)} subscription.`.trimEnd(),
  created: ({ payload }) => `${sender(payload)} subscribed for ${subscription(payload)}.`.trimEnd(),
  edited: ({ payload }) =>
    `${sender(payload)} changed who can see their sponsorship from ${str(payload, 'changes', 'privacy_level', 'from')} ` +
    `to ${str(payload, 'sponsorship', 'privacy_level')}.`,
  pending_cancellation: ({ payload }) =>
    `${sender(payload)}'s ${subscription(payload)} subscription will be cancelled on ${effectiveDate(payload)}.`,
  pending_tier_change: ({ payload }) =>
    `${sender(payload)}'s subscription will change from ${priorSubscription(payload)} to ${subscription(payload)} ` +
    `on ${effectiveDate(payload)}.`,
  tier_changed: ({ payload }) =>
    `${sender(payload)} changed their subscription from ${priorSubscription(payload)} to ${subscription(payload)}.`,
};

function openedOrUpdatedPullRequest({ payload, includeTitle }: Helper): string {
  let action = str(payload, 'action');
  if (action === 'synchronize') action = 'updated';
  const pullRequest = dig(payload, 'pull_request');
  const assignee = truthy(dig(pullRequest, 'assignee')) ? str(pullRequest, 'assignee', 'login') : null;
  const description = has(payload, 'body', 'changes') || action === 'opened' ? strOrNull(pullRequest, 'body') : null;
  const branches = action === 'opened' || action === 'merged';
  return pullRequestOrIssueMessage({
    userName: sender(payload),
    action,
    url: str(pullRequest, 'html_url'),
    targetBranch: branches ? str(pullRequest, 'head', 'label') : null,
    baseBranch: branches ? str(pullRequest, 'base', 'label') : null,
    message: description,
    assignee,
    number: int(pullRequest, 'number'),
    title: includeTitle ? str(pullRequest, 'title') : null,
  });
}

const SPONSORS_EVENTS = [
  'cancelled',
  'created',
  'edited',
  'pending_cancellation',
  'pending_tier_change',
  'tier_changed',
];
const IGNORED_EVENTS = [
  'check_suite',
  'label',
  'meta',
  'milestone',
  'organization',
  'project_card',
  'push__merge_queue',
  'repository_vulnerability_alert',
];
const IGNORED_PULL_REQUEST_ACTIONS = [
  'approved',
  'converted_to_draft',
  'labeled',
  'review_request_removed',
  'unlabeled',
];
const IGNORED_TEAM_ACTIONS = ['added_to_repository', 'created', 'deleted', 'removed_from_repository'];

function topicFor(payload: P, event: string): string {
  if (event.includes('pull_request')) {
    return topicWithPrOrIssue(
      repoName(payload),
      'PR',
      int(payload, 'pull_request', 'number'),
      str(payload, 'pull_request', 'title'),
    );
  }
  if (event.startsWith('issue')) {
    return topicWithPrOrIssue(
      repoName(payload),
      isPullRequestComment(payload) ? 'PR' : 'issue',
      int(payload, 'issue', 'number'),
      str(payload, 'issue', 'title'),
    );
  }
  if (event.startsWith('deployment')) {
    return `${repoName(payload)} / Deployment on ${str(payload, 'deployment', 'environment')}`;
  }
  if (event === 'membership') return `${str(payload, 'organization', 'login')} organization`;
  if (event === 'team') return `team ${str(payload, 'team', 'name')}`;
  if (event === 'push_commits') return topicWithBranch(repoName(payload), branchOf(str(payload, 'ref')));
  if (event === 'gollum') return topicWithBranch(repoName(payload), 'wiki pages');
  if (event === 'ping' && !truthy(dig(payload, 'repository'))) return str(payload, 'organization', 'login');
  if (event === 'check_run') return `${repoName(payload)} / checks`;
  if (event.startsWith('discussion')) {
    return `${repoName(payload)} discussion #${int(payload, 'discussion', 'number')}: ${str(payload, 'discussion', 'title')}`;
  }
  if (SPONSORS_EVENTS.includes(event)) return 'sponsors';
  return repoName(payload);
}

/** Our name for the event (a key of BODIES), or null for one GitHub sends that we post nothing for. */
function zulipEventName(request: WebhookRequest, headerEvent: string, payload: P): string | null {
  const action = () => str(payload, 'action');
  switch (headerEvent) {
    case 'pull_request': {
      const pullRequestAction = action();
      if (pullRequestAction === 'opened' || pullRequestAction === 'reopened') return 'opened_pull_request';
      if (pullRequestAction === 'synchronize' || pullRequestAction === 'edited') return 'updated_pull_request';
      if (pullRequestAction === 'assigned' || pullRequestAction === 'unassigned') {
        return 'assigned_or_unassigned_pull_request';
      }
      if (pullRequestAction === 'closed') return 'closed_pull_request';
      if (pullRequestAction === 'review_requested') return 'pull_request_review_requested';
      if (pullRequestAction === 'ready_for_review') return 'pull_request_ready_for_review';
      if (pullRequestAction === 'locked' || pullRequestAction === 'unlocked') return 'locked_or_unlocked_pull_request';
      if (pullRequestAction === 'auto_merge_enabled' || pullRequestAction === 'auto_merge_disabled') {
        return 'pull_request_auto_merge';
      }
      if (IGNORED_PULL_REQUEST_ACTIONS.includes(pullRequestAction)) return null;
      break;
    }
    case 'pull_request_review':
      // GitHub sends an empty "edited" twin of each review: posted once.
      if (action() === 'edited' && Object.keys((dig(payload, 'changes') as object | undefined) ?? {}).length === 0) {
        return null;
      }
      return 'pull_request_review';
    case 'push': {
      const ref = str(payload, 'ref');
      if (ref.startsWith('refs/heads/gh-readonly-queue/')) return null;
      if (!ref.startsWith('refs/heads/')) return 'push_tags';
      return isBranchNotifiable(branchOf(ref), request.option('branches')) ? 'push_commits' : null;
    }
    case 'check_run':
      return str(payload, 'check_run', 'status') === 'completed' ? 'check_run' : null;
    case 'team': {
      const teamAction = action();
      if (teamAction === 'edited') return 'team';
      if (IGNORED_TEAM_ACTIONS.includes(teamAction)) return null;
      throw request.unsupported(`unsupported team action ${teamAction}`);
    }
    case 'issues': {
      const issueAction = action();
      if (issueAction === 'labeled' || issueAction === 'unlabeled') return 'issue_labeled_or_unlabeled';
      if (issueAction === 'milestoned' || issueAction === 'demilestoned') return 'issue_milestoned_or_demilestoned';
      if (issueAction === 'transferred') return 'issues_transferred';
      if (issueAction === 'opened' && truthy(dig(payload, 'changes', 'old_issue'))) return 'issues_opened_via_transfer';
      return 'issues';
    }
    default:
      if (headerEvent in BODIES) return headerEvent;
      if (IGNORED_EVENTS.includes(headerEvent)) return null;
  }
  const payloadAction = dig(payload, 'action');
  throw request.unsupported(`${headerEvent}:${payloadAction === undefined ? '???' : str(payload, 'action')}`);
}

export const github: WebhookIntegration = {
  webhookName: 'GitHub',
  messages(request) {
    const payload = request.json();
    const headerEvent = request.requireHeader('X-GitHub-Event', 'GitHub');
    const ignorePrivate = request.option('ignore_private_repositories');
    if (has(payload, 'repository') && bool(payload, 'repository', 'private') && ignorePrivate === 'true') return [];
    // A comment edited without a change to its text (but for discussions') posts nothing.
    if (
      headerEvent.includes('comment') &&
      !headerEvent.includes('discussion') &&
      dig(payload, 'action') === 'edited' &&
      str(payload, 'changes', 'body', 'from') === str(payload, 'comment', 'body')
    ) {
      return [];
    }
    const event = zulipEventName(request, headerEvent, payload);
    if (event === null) return [];
    const content = BODIES[event]!({ payload, includeTitle: request.option('topic') !== undefined });
    return [{ topic: topicFor(payload, event), content, eventType: event }];
  },
};
