// The message shapes every Git host's integration shares (Zulip's zerver/lib/webhooks/git.py):
// pushes, pull requests and issues, comments on commits, tags, releases.

export const COMMITS_LIMIT = 20;
const PUSH_COMMITTERS_LIMIT = 3;
const PUNCTUATION = `!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`;

export const topicWithBranch = (repo: string, branch: string) => `${repo} / ${branch}`;
export const topicWithPrOrIssue = (repo: string, type: string, id: number, title: string) =>
  `${repo} / ${type} #${id} ${title}`;

export const quoted = (message: string) => `\n~~~ quote\n${message}\n~~~`;

export const shortSha = (sha: string) => sha.slice(0, 11);

export interface CommitData {
  name: string;
  sha: string;
  url: string | null | undefined;
  message: string;
}

/** Committers by number of commits, ties by name; past three, the rest as "others". */
function committers(commits: CommitData[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const commit of commits) counts.set(commit.name, (counts.get(commit.name) ?? 0) + 1);
  const sorted = [...counts].sort(([nameA, a], [nameB, b]) => b - a || (nameA < nameB ? -1 : nameA > nameB ? 1 : 0));
  if (sorted.length <= PUSH_COMMITTERS_LIMIT) return sorted;
  const others = sorted.slice(PUSH_COMMITTERS_LIMIT).reduce((sum, [, count]) => sum + count, 0);
  return [...sorted.slice(0, PUSH_COMMITTERS_LIMIT), ['others', others]];
}

export function commitsContent(commits: CommitData[], isTruncated = false): string {
  let content = '';
  for (const commit of commits.slice(0, COMMITS_LIMIT)) {
    const firstLine = commit.message.split('\n')[0]!;
    content += `* ${firstLine} ([${shortSha(commit.sha)}](${pythonFormat(commit.url)}))\n`;
  }
  if (commits.length > COMMITS_LIMIT) content += `[and ${commits.length - COMMITS_LIMIT} more commit(s)]`;
  else if (isTruncated) content += '[and more commit(s)]';
  return content.trimEnd();
}

/** How Python's str.format writes a value that may be None. */
export function pythonFormat(value: string | number | null | undefined): string {
  return value === null || value === undefined ? 'None' : String(value);
}

export function pushCommitsMessage(input: {
  userName: string;
  compareUrl: string | null | undefined;
  branch: string;
  commits: CommitData[];
  isTruncated?: boolean;
  deleted?: boolean;
  forcePush?: boolean;
}): string {
  const { userName, compareUrl, branch, commits } = input;
  if (commits.length === 0 && input.deleted) {
    return `${userName} [deleted](${pythonFormat(compareUrl)}) the branch ${branch}.`;
  }
  const pushType = input.forcePush ? 'force pushed' : 'pushed';
  if (commits.length === 0) {
    return compareUrl
      ? `${userName} [${pushType}](${compareUrl}) the branch ${branch}.`
      : `${userName} ${pushType} the branch ${branch}.`;
  }
  const count = `${commits.length} commit${commits.length > 1 ? 's' : ''}`;
  const pushedText = compareUrl ? `[${pushType}](${compareUrl}) ${count}` : `${pushType} ${count}`;
  const base = `${userName} ${pushedText} to branch ${branch}.`;
  const content = commitsContent(commits, input.isTruncated);
  const byCommitter = committers(commits);
  if (byCommitter.length === 1 && userName === byCommitter[0]![0]) return `${base}\n\n${content}\n`.trimEnd();
  let details = `${byCommitter[0]![0]} (${byCommitter[0]![1]})`;
  for (const [name, number] of byCommitter.slice(1, -1)) details = `${details}, ${name} (${number})`;
  if (byCommitter.length > 1) {
    const [name, number] = byCommitter[byCommitter.length - 1]!;
    details = `${details} and ${name} (${number})`;
  }
  return `${base} Commits by ${details}.\n\n${content}\n`.trimEnd();
}

export const forcePushMessage = (userName: string, url: string, branch: string, head: string) =>
  `${userName} [force pushed](${url}) to branch ${branch}. Head is now ${head}.`;

export const removeBranchMessage = (userName: string, branch: string) => `${userName} deleted branch ${branch}.`;

/** Whether the text ends with one of Python's string.punctuation (messages add no period then). */
export const endsWithPunctuation = (text: string) => PUNCTUATION.includes(text[text.length - 1]!);

/** Zulip's get_pull_request_event_message (issues too, with type "issue"). */
export function pullRequestOrIssueMessage(input: {
  userName: string;
  action: string;
  url: string;
  number?: number | null;
  targetBranch?: string | null;
  baseBranch?: string | null;
  message?: string | null;
  assignee?: string | null;
  assignees?: { username: string }[] | null;
  assigneeUpdated?: string | null;
  reviewer?: string | null;
  type?: string;
  title?: string | null;
}): string {
  const { action, title, assignees, assignee, reviewer } = input;
  const id = input.number !== undefined && input.number !== null ? ` #${input.number}` : '';
  const titlePart = title !== undefined && title !== null ? ` ${title}` : '';
  const assigneePart =
    action === 'assigned'
      ? ` ${pythonFormat(input.assigneeUpdated)} to`
      : action === 'unassigned'
        ? ` ${pythonFormat(input.assigneeUpdated)} from`
        : '';
  let main = `${input.userName} ${action}${assigneePart} [${input.type ?? 'PR'}${id}${titlePart}](${input.url})`;
  const branches = input.targetBranch && input.baseBranch;
  if (branches) main = `${main} from \`${input.targetBranch}\` to \`${input.baseBranch}\``;
  if (assignees?.length) main = `${main} (assigned to ${assigneeList(assignees)})`;
  else if (assignee) main = `${main} (assigned to ${assignee})`;
  else if (reviewer) main = `${main} (assigned reviewers: ${reviewer})`;
  const punctuation = input.message ? ':' : '.';
  if (
    assignees?.length ||
    assignee ||
    branches ||
    title === undefined ||
    title === null ||
    !PUNCTUATION.includes(title[title.length - 1]!)
  ) {
    main = `${main}${punctuation}`;
  }
  if (input.message) main += '\n' + quoted(input.message);
  return main.trimEnd();
}

function assigneeList(assignees: { username: string }[]): string {
  if (assignees.length === 1) return assignees[0]!.username;
  const names = assignees.map((each) => each.username);
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/** An issue as a label or milestone message names it: "Issue #4 Title", or without a title. */
function issueName(word: string, number: number, title: string | null | undefined): string {
  return title !== undefined && title !== null ? `${word} #${number} ${title}` : `${word} #${number}`;
}

export function issueLabeledMessage(input: {
  userName: string;
  action: 'added' | 'removed';
  url: string;
  number: number;
  labelName: string;
  userUrl: string;
  title?: string | null;
}): string {
  const preposition = input.action === 'added' ? 'to' : 'from';
  const issue = issueName('Issue', input.number, input.title);
  return `[${input.userName}](${input.userUrl}) ${input.action} the ${input.labelName} label ${preposition} [${issue}](${input.url}).`;
}

export function issueMilestonedMessage(input: {
  userName: string;
  action: 'added' | 'removed';
  url: string;
  number: number;
  milestoneName: string;
  milestoneUrl: string;
  userUrl: string;
  title?: string | null;
}): string {
  const preposition = input.action === 'added' ? 'to' : 'from';
  const issue = issueName('issue', input.number, input.title);
  return (
    `[${input.userName}](${input.userUrl}) ${input.action} milestone [${input.milestoneName}](${input.milestoneUrl}) ` +
    `${preposition} [${issue}](${input.url}).`
  );
}

export function pushTagMessage(userName: string, tagName: string, tagUrl?: string | null, action = 'pushed'): string {
  const tag = tagUrl ? `[${tagName}](${tagUrl})` : tagName;
  const message = `${userName} ${action} tag ${tag}`;
  return PUNCTUATION.includes(tagName[tagName.length - 1]!) ? message : `${message}.`;
}

export function commitCommentMessage(
  userName: string,
  action: string,
  commitUrl: string,
  sha: string,
  message?: string | null,
): string {
  let content = `${userName} ${action} on [${shortSha(sha)}](${commitUrl})${message ? ':' : '.'}`;
  if (message) content += quoted(message);
  return content;
}

export function releaseMessage(userName: string, action: string, tagName: string, releaseName: string, url: string) {
  return `${userName} ${action} release [${releaseName}](${url}) for tag ${tagName}.`;
}

/** Zulip's is_branch_name_notifiable: the URL's `branches` (comma-separated) names the branch, or is absent. */
export function isBranchNotifiable(branch: string, branches: string | undefined): boolean {
  return branches === undefined || branches.split(',').some((name) => name.trim() === branch);
}

export const setupMessage = (integration: string, userName?: string | null) =>
  `${integration} webhook has been successfully configured${userName ? ` by ${userName}` : ''}.`;
