// GitLab (Zulip's zerver/webhooks/gitlab): the X-GitLab-Event header ("Push Hook", "Merge Request
// Hook"...) refined by the payload's action or noteable type; System Hooks name the event in the
// payload. With a `topic` in the URL, each message starts with a link to the project.

import { dig, has, int, list, str, strOrNull, truthy, type WebhookIntegration } from './integration';
import {
  commitCommentMessage,
  isBranchNotifiable,
  pullRequestOrIssueMessage,
  pushCommitsMessage,
  pushTagMessage,
  quoted,
  topicWithPrOrIssue,
} from './git';

type P = unknown;
type Body = (payload: P, includeTitle: boolean) => string;

const EMPTY_SHA = '0000000000000000000000000000000000000000';

/** Python's str.title(). */
const titleCase = (text: string) =>
  text.replace(/[A-Za-z]+/g, (word) => word[0]!.toUpperCase() + word.slice(1).toLowerCase());

const userName = (payload: P) => str(payload, 'user_name');
const issueUserName = (payload: P) => str(payload, 'user', 'name');
const objectUrl = (payload: P) => str(payload, 'object_attributes', 'url');
const branchName = (payload: P) => str(payload, 'ref').replaceAll('refs/heads/', '');
const tagName = (payload: P) => str(payload, 'ref').replaceAll('refs/tags/', '');
const repoName = (payload: P) =>
  has(payload, 'project') ? str(payload, 'project', 'name') : str(payload, 'repository', 'name');
const projectHomepage = (payload: P) =>
  has(payload, 'project') ? str(payload, 'project', 'web_url') : str(payload, 'repository', 'homepage');
const titleIf = (include: boolean, payload: P, ...path: string[]) => (include ? str(payload, ...path) : null);

/** Assignees by their full names (Zulip's replace_assignees_username_with_name). */
function assignees(payload: P): { username: string }[] {
  const many = dig(payload, 'assignees');
  const found = truthy(many)
    ? list(payload, 'assignees')
    : truthy(dig(payload, 'assignee'))
      ? [dig(payload, 'assignee')]
      : [];
  return found.map((assignee) => ({ username: str(assignee, 'name') }));
}

const push: Body = (payload) => {
  if (truthy(dig(payload, 'after')) && str(payload, 'after') === EMPTY_SHA) {
    return `${userName(payload)} deleted branch ${branchName(payload)}.`;
  }
  return pushCommitsMessage({
    userName: userName(payload),
    compareUrl: `${projectHomepage(payload)}/-/compare/${str(payload, 'before')}...${str(payload, 'after')}`,
    branch: branchName(payload),
    commits: list(payload, 'commits').map((commit) => ({
      name: str(commit, 'author', 'name'),
      sha: str(commit, 'id'),
      message: str(commit, 'message'),
      url: str(commit, 'url'),
    })),
  });
};

const issueCreated: Body = (payload, includeTitle) => {
  const raw = dig(payload, 'object_attributes', 'description');
  // Hidden (HTML comment) parts of the description are not posted.
  const description = truthy(raw)
    ? str(payload, 'object_attributes', 'description')
        .replace(/<!--[\s\S]*?-->/g, '')
        .trimEnd()
    : null;
  return pullRequestOrIssueMessage({
    userName: issueUserName(payload),
    action: 'created',
    url: objectUrl(payload),
    number: int(payload, 'object_attributes', 'iid'),
    message: description,
    assignees: assignees(payload),
    type: 'issue',
    title: titleIf(includeTitle, payload, 'object_attributes', 'title'),
  });
};

const issueEvent =
  (action: string): Body =>
  (payload, includeTitle) =>
    pullRequestOrIssueMessage({
      userName: issueUserName(payload),
      action,
      url: objectUrl(payload),
      number: int(payload, 'object_attributes', 'iid'),
      type: 'issue',
      title: titleIf(includeTitle, payload, 'object_attributes', 'title'),
    });

const mergeRequestEvent =
  (action: string): Body =>
  (payload, includeTitle) => {
    const merged = action === 'merged';
    return pullRequestOrIssueMessage({
      userName: issueUserName(payload),
      action,
      url: str(payload, 'object_attributes', 'url'),
      number: int(payload, 'object_attributes', 'iid'),
      targetBranch: merged ? str(payload, 'object_attributes', 'source_branch') : null,
      baseBranch: merged ? str(payload, 'object_attributes', 'target_branch') : null,
      type: 'MR',
      title: titleIf(includeTitle, payload, 'object_attributes', 'title'),
    });
  };

const mergeRequestOpenedOrUpdated =
  (action: string): Body =>
  (payload, includeTitle) => {
    const created = action === 'created';
    return pullRequestOrIssueMessage({
      userName: issueUserName(payload),
      action,
      url: str(payload, 'object_attributes', 'url'),
      number: int(payload, 'object_attributes', 'iid'),
      targetBranch: created ? str(payload, 'object_attributes', 'source_branch') : null,
      baseBranch: created ? str(payload, 'object_attributes', 'target_branch') : null,
      message: strOrNull(payload, 'object_attributes', 'description'),
      assignees: assignees(payload),
      type: 'MR',
      title: titleIf(includeTitle, payload, 'object_attributes', 'title'),
    });
  };

const mergeRequestUpdated: Body = (payload, includeTitle) =>
  truthy(dig(payload, 'object_attributes', 'oldrev'))
    ? mergeRequestEvent('added commit(s) to')(payload, includeTitle)
    : mergeRequestOpenedOrUpdated('updated')(payload, includeTitle);

const commentOn = (payload: P) => `[commented](${str(payload, 'object_attributes', 'url')}) on`;

const noteOnCommit: Body = (payload) =>
  commitCommentMessage(
    issueUserName(payload),
    `[commented](${str(payload, 'object_attributes', 'url')})`,
    str(payload, 'commit', 'url'),
    str(payload, 'commit', 'id'),
    str(payload, 'object_attributes', 'note'),
  );

const noteOn =
  (noteable: 'merge_request' | 'issue', type: string): Body =>
  (payload, includeTitle) =>
    pullRequestOrIssueMessage({
      userName: issueUserName(payload),
      action: commentOn(payload),
      url: str(payload, noteable, 'url'),
      number: int(payload, noteable, 'iid'),
      message: str(payload, 'object_attributes', 'note'),
      type,
      title: titleIf(includeTitle, payload, noteable, 'title'),
    });

const noteOnSnippet: Body = (payload, includeTitle) => {
  // The snippet's URL is in payloads of GitLab 16.1 and later only.
  const url = has(payload, 'url', 'snippet')
    ? str(payload, 'snippet', 'url')
    : `${str(payload, 'project', 'web_url')}/-/snippets/${int(payload, 'snippet', 'id')}`;
  return pullRequestOrIssueMessage({
    userName: issueUserName(payload),
    action: commentOn(payload),
    url,
    number: int(payload, 'snippet', 'id'),
    message: str(payload, 'object_attributes', 'note'),
    type: 'snippet',
    title: titleIf(includeTitle, payload, 'snippet', 'title'),
  });
};

const wikiPage =
  (action: string): Body =>
  (payload) =>
    `${issueUserName(payload)} ${action} [wiki page "${str(payload, 'object_attributes', 'title')}"](${objectUrl(payload)}).`;

const build: Body = (payload) => {
  const status = str(payload, 'build_status');
  const action =
    status === 'created' ? 'was created' : status === 'running' ? 'started' : `changed status to ${status}`;
  return `Build ${str(payload, 'build_name')} from ${str(payload, 'build_stage')} stage ${action}.`;
};

const pipeline: Body = (payload) => {
  const status = str(payload, 'object_attributes', 'status');
  const action =
    status === 'pending' ? 'was created' : status === 'running' ? 'started' : `changed status to ${status}`;
  const homepage = projectHomepage(payload);
  const id = int(payload, 'object_attributes', 'id');
  let builds = '';
  for (const job of list(payload, 'builds')) {
    const jobUrl = `${homepage}/-/jobs/${int(job, 'id')}`;
    const artifact = dig(job, 'artifacts_file', 'filename');
    const artifactLine = truthy(artifact)
      ? `  * built artifact: *${str(job, 'artifacts_file', 'filename')}* [[Browse](${jobUrl}/artifacts/browse)|[Download](${jobUrl}/artifacts/download)]\n`
      : '';
    builds += `* [${str(job, 'name')}](${jobUrl}) - ${str(job, 'status')}\n${artifactLine}`;
  }
  return `[Pipeline (${id})](${homepage}/-/pipelines/${id}) ${action} with build(s):\n${builds.slice(0, -1)}.`;
};

const release: Body = (payload) => {
  const action = `${str(payload, 'action')}d`;
  const name = str(payload, 'name');
  const tag = str(payload, 'tag');
  if (action === 'deleted') return `Release ${name} for tag ${tag} was ${action}.`;
  let body = `Release [${name}](${str(payload, 'url')}) for tag ${tag} was ${action}.`;
  if (has(payload, 'description')) body += quoted(str(payload, 'description'));
  return body;
};

const BODIES: Record<string, Body> = {
  'Push Hook': push,
  'Tag Push Hook': (payload) =>
    pushTagMessage(
      userName(payload),
      tagName(payload),
      null,
      truthy(dig(payload, 'checkout_sha')) ? 'pushed' : 'removed',
    ),
  'Test Hook': (payload) => `Webhook for **${repoName(payload)}** has been configured successfully! :tada:`,
  'Issue Hook open': issueCreated,
  'Issue Hook close': issueEvent('closed'),
  'Issue Hook reopen': issueEvent('reopened'),
  'Issue Hook update': issueEvent('updated'),
  'Confidential Issue Hook open': issueCreated,
  'Confidential Issue Hook close': issueEvent('closed'),
  'Confidential Issue Hook reopen': issueEvent('reopened'),
  'Confidential Issue Hook update': issueEvent('updated'),
  'Note Hook Commit': noteOnCommit,
  'Note Hook MergeRequest': noteOn('merge_request', 'MR'),
  'Note Hook Issue': noteOn('issue', 'issue'),
  'Confidential Note Hook Issue': noteOn('issue', 'issue'),
  'Note Hook Snippet': noteOnSnippet,
  'Merge Request Hook approved': mergeRequestEvent('approved'),
  'Merge Request Hook unapproved': mergeRequestEvent('unapproved'),
  'Merge Request Hook open': mergeRequestOpenedOrUpdated('created'),
  'Merge Request Hook update': mergeRequestUpdated,
  'Merge Request Hook merge': mergeRequestEvent('merged'),
  'Merge Request Hook close': mergeRequestEvent('closed'),
  'Merge Request Hook reopen': mergeRequestEvent('reopened'),
  'Wiki Page Hook create': wikiPage('created'),
  'Wiki Page Hook update': wikiPage('updated'),
  'Job Hook': build,
  'Build Hook': build,
  'Pipeline Hook': pipeline,
  'Release Hook': release,
};

function topicFor(event: string, payload: P, useMergeRequestTitle: boolean): string {
  if (event === 'Push Hook') return `${repoName(payload)} / ${branchName(payload)}`;
  if (event === 'Job Hook' || event === 'Build Hook')
    return `${str(payload, 'repository', 'name')} / ${branchName(payload)}`;
  if (event === 'Pipeline Hook') {
    return `${repoName(payload)} / ${str(payload, 'object_attributes', 'ref').replaceAll('refs/heads/', '')}`;
  }
  if (event.startsWith('Merge Request Hook')) {
    const title = useMergeRequestTitle ? str(payload, 'object_attributes', 'title') : '';
    return topicWithPrOrIssue(repoName(payload), 'MR', int(payload, 'object_attributes', 'iid'), title);
  }
  if (event.startsWith('Issue Hook') || event.startsWith('Confidential Issue Hook')) {
    return topicWithPrOrIssue(
      repoName(payload),
      'issue',
      int(payload, 'object_attributes', 'iid'),
      str(payload, 'object_attributes', 'title'),
    );
  }
  if (event === 'Note Hook Issue' || event === 'Confidential Note Hook Issue') {
    return topicWithPrOrIssue(repoName(payload), 'issue', int(payload, 'issue', 'iid'), str(payload, 'issue', 'title'));
  }
  if (event === 'Note Hook MergeRequest') {
    const title = useMergeRequestTitle ? str(payload, 'merge_request', 'title') : '';
    return topicWithPrOrIssue(repoName(payload), 'MR', int(payload, 'merge_request', 'iid'), title);
  }
  if (event === 'Note Hook Snippet') {
    return topicWithPrOrIssue(
      repoName(payload),
      'snippet',
      int(payload, 'snippet', 'id'),
      str(payload, 'snippet', 'title'),
    );
  }
  return repoName(payload);
}

export const gitlab: WebhookIntegration = {
  webhookName: 'GitLab',
  messages(request) {
    const payload = request.json();
    let event = request.requireHeader('X-GitLab-Event', 'GitLab');
    if (event === 'System Hook') {
      const name = has(payload, 'event_name') ? str(payload, 'event_name') : str(payload, 'object_kind');
      event = `${titleCase(name.split('__')[0]!.replaceAll('_', ' '))} Hook`;
    }
    if (['Confidential Issue Hook', 'Issue Hook', 'Merge Request Hook', 'Wiki Page Hook'].includes(event)) {
      const action = dig(payload, 'object_attributes', 'action');
      event = `${event} ${action === undefined ? 'open' : str(payload, 'object_attributes', 'action')}`;
    } else if (event === 'Confidential Note Hook' || event === 'Note Hook') {
      event = `${event} ${str(payload, 'object_attributes', 'noteable_type')}`;
    } else if (event === 'Push Hook' && !isBranchNotifiable(branchName(payload), request.option('branches'))) {
      return [];
    }
    const body = BODIES[event];
    if (!body) throw request.unsupported(event);
    const customTopic = request.option('topic');
    let content = body(payload, customTopic !== undefined);
    if (customTopic) content = `[[${repoName(payload)}](${projectHomepage(payload)})] ${content}`;
    const useMergeRequestTitle = request.option('use_merge_request_title') !== 'false';
    return [{ topic: topicFor(event, payload, useMergeRequestTitle), content, eventType: event }];
  },
};
