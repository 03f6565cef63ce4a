// CircleCI (Zulip's zerver/webhooks/circleci): webhook pings, and completed jobs and workflows of
// projects on GitHub, Bitbucket or GitLab, with the commit that triggered them; the topic is the
// project's name.
import { JsonableError } from '@teamchat/core';
import { shortSha } from './git';
import type { WebhookIntegration } from './integration';
import { dig, has, int, str, strOrNull } from './integration';

const FORMATTED_OUTCOME: Record<string, string> = {
  success: 'has succeeded',
  failed: 'has failed',
  canceled: 'was canceled',
  unauthorized: 'was unauthorized',
  error: 'had an error',
};

/** Python's str.format of dict.get(status): "None" for an outcome it does not name. */
const outcome = (status: string) => (Object.hasOwn(FORMATTED_OUTCOME, status) ? FORMATTED_OUTCOME[status]! : 'None');

/** The line saying what triggered the pipeline: a commit (with its author), a branch's HEAD, or a tag. */
function commitDetails(payload: unknown): string {
  let details: string;
  let link: string;
  let author: string;
  let branch: string | null;
  if (has(payload, 'vcs', 'pipeline')) {
    // GitHub and Bitbucket projects.
    const vcs = dig(payload, 'pipeline', 'vcs');
    const revision = str(vcs, 'revision');
    const repositoryUrl = str(vcs, 'target_repository_url');
    link =
      dig(vcs, 'provider_name') === 'github'
        ? `${repositoryUrl}/commit/${revision}`
        : `${repositoryUrl}/commits/${revision}`;
    branch = strOrNull(vcs, 'branch');
    const subject = strOrNull(vcs, 'commit', 'subject');
    if (!subject) {
      // Pipelines run by hand (GitHub and Bitbucket only).
      if (!branch) return `Triggered on the latest tag on [${shortSha(revision)}](${link}).`;
      return `Triggered on \`${branch}\`'s HEAD on [${shortSha(revision)}](${link}).`;
    }
    details = `${shortSha(revision)}: ${subject}`;
    author = str(vcs, 'commit', 'author', 'name');
  } else {
    // GitLab projects.
    const gitlab = dig(payload, 'pipeline', 'trigger_parameters', 'gitlab');
    const sha = str(gitlab, 'checkout_sha');
    details = `${shortSha(sha)}: ${str(gitlab, 'commit_title')}`;
    author = str(gitlab, 'commit_author_name');
    link = `${str(gitlab, 'web_url')}/-/commit/${sha}`;
    branch = str(gitlab, 'branch');
  }
  return `Triggered on [\`${details}\`](${link}) on branch \`${branch}\` by ${author}.`;
}

function completedBody(payload: unknown): string {
  const pipeline = int(payload, 'pipeline', 'number');
  const trigger = commitDetails(payload);
  const type = str(payload, 'type');
  if (type === 'job-completed') {
    return (
      `Job \`${str(payload, 'job', 'name')}\` within Pipeline #${pipeline} ` +
      `${outcome(str(payload, 'job', 'status'))}.\n\n${trigger}`
    );
  }
  if (type === 'workflow-completed') {
    return (
      `Workflow [\`${str(payload, 'workflow', 'name')}\`](${str(payload, 'workflow', 'url')}) within Pipeline #${pipeline} ` +
      `${outcome(str(payload, 'workflow', 'status'))}.\n\n${trigger}`
    );
  }
  throw new JsonableError("Invalid payload['type']");
}

export const circleci: WebhookIntegration = {
  webhookName: 'CircleCI',
  messages(request) {
    const payload = request.json();
    const type = str(payload, 'type');
    if (type === 'ping') {
      return [
        {
          topic: 'Test event',
          content: `Webhook '${str(payload, 'webhook', 'name')}' test event successful.`,
          eventType: type,
        },
      ];
    }
    const topic = str(payload, 'project', 'name');
    const content = completedBody(payload);
    if (has(payload, 'trigger_parameters', 'pipeline') && dig(payload, 'pipeline', 'trigger', 'type') !== 'gitlab') {
      throw new JsonableError("Projects using this version control system provider aren't supported");
    }
    return [{ topic, content, eventType: type }];
  },
};
