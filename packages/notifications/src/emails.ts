// The emails' content: Zulip's templates/zerver/emails/invitation and missed_message, in plain
// text and simple HTML. Every email links back to the organisation.

import type { OutgoingEmail } from './mailer';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function invitationEmail(input: {
  to: string;
  inviterName: string;
  inviterEmail: string;
  realmName: string;
  realmUrl: string;
  /** The link that accepts the invitation. */
  activateUrl: string;
  messageId: string;
  /** Zulip: "a reminder" for the email sent again by POST /invites/{id}/resend. */
  resend?: boolean;
}): OutgoingEmail {
  const subject = `${input.inviterName} invited you to join ${input.realmName}`;
  const text = [
    `Hi there,`,
    '',
    `${input.inviterName} (${input.inviterEmail}) wants you to join them on Zulip, in the ${input.realmName} organization (${input.realmUrl}).`,
    '',
    `To get started, visit the link below:`,
    input.activateUrl,
    '',
    input.resend ? 'This is a reminder of an earlier invitation.' : '',
  ]
    .join('\n')
    .trimEnd();
  const html =
    `<p>Hi there,</p><p>${escapeHtml(input.inviterName)} (${escapeHtml(input.inviterEmail)}) wants you to join them on Zulip, ` +
    `in the <a href="${escapeHtml(input.realmUrl)}">${escapeHtml(input.realmName)}</a> organization.</p>` +
    `<p><a href="${escapeHtml(input.activateUrl)}">Join ${escapeHtml(input.realmName)}</a></p>`;
  return {
    to: input.to,
    subject,
    text,
    html,
    messageId: input.messageId,
    fromName: `${input.inviterName} (via Zulip)`,
  };
}

export interface MissedMessage {
  id: number;
  senderName: string;
  /** "#channel > topic" or the conversation's participants. */
  conversation: string;
  /** The message as plain text, or null when the user does not want content in emails. */
  content: string | null;
  /** A link to the message in the web app. */
  url: string;
}

/** Zulip's missed-message email: the unread direct messages and mentions of one batch, grouped by conversation. */
export function missedMessageEmail(input: {
  to: string;
  realmName: string;
  realmUrl: string;
  messages: MissedMessage[];
  messageId: string;
}): OutgoingEmail {
  const conversations = new Map<string, MissedMessage[]>();
  for (const message of input.messages) {
    const list = conversations.get(message.conversation) ?? [];
    list.push(message);
    conversations.set(message.conversation, list);
  }
  const names = [...conversations.keys()];
  const subject = names.length === 1 ? names[0] : `New messages in ${names.length} conversations (${input.realmName})`;
  const lines: string[] = [];
  const html: string[] = [];
  for (const [conversation, messages] of conversations) {
    lines.push(conversation, '');
    html.push(`<h3>${escapeHtml(conversation)}</h3>`);
    for (const message of messages) {
      lines.push(`${message.senderName}: ${message.content ?? '(content hidden)'}`, message.url, '');
      html.push(
        `<p><b>${escapeHtml(message.senderName)}</b>: ${escapeHtml(message.content ?? '(content hidden)')}<br>` +
          `<a href="${escapeHtml(message.url)}">View or reply in Zulip</a></p>`,
      );
    }
  }
  lines.push(
    `You are receiving this because you have email notifications enabled in ${input.realmName} (${input.realmUrl}).`,
  );
  html.push(
    `<p>Manage email preferences: <a href="${escapeHtml(input.realmUrl)}/#settings/notifications">${escapeHtml(input.realmUrl)}</a></p>`,
  );
  return { to: input.to, subject, text: lines.join('\n'), html: html.join('\n'), messageId: input.messageId };
}

/**
 * Zulip's password_reset email: the link for an active account, else what the address should
 * know (a deactivated account, or none here), so the form answers every address the same way.
 */
export function passwordResetEmail(input: {
  to: string;
  realmName: string;
  realmUrl: string;
  account: { resetUrl: string } | 'deactivated' | 'none';
  messageId: string;
}): OutgoingEmail {
  const { account } = input;
  const body =
    typeof account === 'object'
      ? ['Click the link below to reset your password.', account.resetUrl]
      : account === 'deactivated'
        ? [
            `You previously had an account on ${input.realmUrl}, but it has been deactivated. You can contact an organization administrator to reactivate your account.`,
            `${input.realmUrl}/help/deactivate-or-reactivate-a-user`,
          ]
        : ['You do not have an account in that Zulip organization.'];
  const text = [
    `Somebody (possibly you) requested a new password for the Zulip account ${input.to} on ${input.realmUrl}.`,
    '',
    ...body,
    '',
    'If you do not recognize this activity, you can safely ignore this email.',
  ].join('\n');
  const link = typeof account === 'object' ? `<p><a href="${escapeHtml(account.resetUrl)}">Reset password</a></p>` : '';
  const html =
    `<p>Somebody (possibly you) requested a new password for the Zulip account ${escapeHtml(input.to)} on ` +
    `<a href="${escapeHtml(input.realmUrl)}">${escapeHtml(input.realmUrl)}</a>.</p>` +
    (link || `<p>${escapeHtml(body[0])}</p>`) +
    '<p>If you do not recognize this activity, you can safely ignore this email.</p>';
  return {
    to: input.to,
    subject: `Password reset request for ${input.realmName}`,
    text,
    html,
    messageId: input.messageId,
    fromName: 'Zulip Account Security',
  };
}
