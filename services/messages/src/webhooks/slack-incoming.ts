// Slack's incoming webhooks (Zulip's zerver/webhooks/slack_incoming): tools written for Slack post
// here unchanged. The payload comes as a JSON body or a form's `payload` field; blocks and
// attachments become Markdown (Zulip's render_block/render_attachment), Slack's *bold* and _italic_
// become Zulip's, and `channel` names the topic.

import { JsonableError, MissingArgumentError } from '@teamchat/core';
import { dig, has, int, list, str, truthy, type WebhookIntegration } from './integration';

type P = unknown;

const joinPieces = (pieces: string[]) =>
  pieces
    .map((piece) => piece.trim())
    .filter((piece) => piece !== '')
    .join('\n\n');

function textBlock(value: unknown, plainTextOnly = false): string {
  const type = dig(value, 'type');
  if (type !== 'plain_text' && (plainTextOnly || type !== 'mrkdwn')) throw new JsonableError('Invalid text block');
  return str(value, 'text');
}

function renderElement(element: P): string {
  if (str(element, 'type') !== 'image') return '';
  return `[${str(element, 'alt_text')}](${str(element, 'image_url')})`;
}

function renderBlock(block: P): string {
  const type = str(block, 'type');
  if (type === 'context' && truthy(dig(block, 'elements'))) {
    const pieces = list(block, 'elements').map((element) => {
      const elementType = str(element, 'type');
      if (elementType === 'image') return renderElement(element);
      return textBlock(element);
    });
    return joinPieces(pieces);
  }
  if (type === 'divider') return '----';
  if (type === 'header') return '## ' + textBlock(dig(block, 'text'), true);
  if (type === 'image') {
    const alt = has(block, 'title') ? textBlock(dig(block, 'title'), true) : str(block, 'alt_text');
    return `[${alt}](${str(block, 'image_url')})`;
  }
  if (type === 'section') {
    const pieces: string[] = [];
    if (has(block, 'text')) pieces.push(textBlock(dig(block, 'text')));
    if (has(block, 'accessory')) pieces.push(renderElement(dig(block, 'accessory')));
    if (has(block, 'fields')) {
      const fields = list(block, 'fields').map((field) => textBlock(field));
      if (fields.length === 1) pieces.push(fields[0]!);
      else {
        // A table cannot hold newlines or pipes: they become spaces.
        const cells = fields.map((text) => text.replaceAll('\n', ' ').replaceAll('|', ' '));
        let table = '| | |\n|-|-|\n';
        for (let i = 0; i < cells.length; i += 2) table += `| ${cells[i]} | ${cells[i + 1] ?? ''} |\n`;
        pieces.push(table);
      }
    }
    return joinPieces(pieces);
  }
  if (!['actions', 'context', 'input'].includes(type)) throw new JsonableError('Invalid block type');
  return '';
}

function renderAttachment(attachment: P): string {
  const pieces: string[] = [];
  if (truthy(dig(attachment, 'title'))) {
    const title = str(attachment, 'title');
    pieces.push(
      truthy(dig(attachment, 'title_link')) ? `## [${title}](${str(attachment, 'title_link')})` : `## ${title}`,
    );
  }
  if (truthy(dig(attachment, 'pretext'))) pieces.push(str(attachment, 'pretext'));
  if (truthy(dig(attachment, 'text'))) pieces.push(str(attachment, 'text'));
  if (has(attachment, 'fields')) {
    const fields: string[] = [];
    for (const field of list(attachment, 'fields')) {
      const title = dig(field, 'title');
      const value = dig(field, 'value');
      if (truthy(title) && truthy(value)) fields.push(`*${str(field, 'title')}*: ${str(field, 'value')}`);
      else if (truthy(title)) fields.push(`*${str(field, 'title')}*`);
      else if (truthy(value)) fields.push(str(field, 'value'));
    }
    pieces.push(fields.join('\n'));
  }
  if (truthy(dig(attachment, 'blocks'))) pieces.push(...list(attachment, 'blocks').map(renderBlock));
  if (truthy(dig(attachment, 'image_url'))) pieces.push(`[](${str(attachment, 'image_url')})`);
  if (truthy(dig(attachment, 'footer'))) pieces.push(str(attachment, 'footer'));
  if (truthy(dig(attachment, 'ts'))) pieces.push(`<time:${int(attachment, 'ts')}>`);
  return joinPieces(pieces);
}

const replaceLinks = (text: string) => text.replace(/<(\w+?:\/\/.*?)\|(.*?)>/g, '[$2]($1)');

/** Slack's *bold* is Zulip's **bold**, Slack's _emphasis_ Zulip's *emphasis*. */
function replaceFormatting(text: string): string {
  const bold = /([^\p{L}\p{N}_]|^)\*(?!\s+)([^*\n]+)(?<!\s)\*((?=[^\p{L}\p{N}_])|$)/gmu;
  const emphasis = /([^\p{L}\p{N}_]|^)_(?!\s+)([^_\n]+)(?<!\s)_((?=[^\p{L}\p{N}_])|$)/gmu;
  return text.replace(bold, '$1**$2**$3').replace(emphasis, '$1*$2*$3');
}

export const slackIncoming: WebhookIntegration = {
  webhookName: 'SlackIncoming',
  successData: { ok: true },
  messages(request) {
    let payload: P;
    if (request.contentType === 'application/json') payload = request.json();
    else {
      const field = request.form().get('payload') ?? request.option('payload');
      if (field === undefined || field === null) throw new MissingArgumentError('payload');
      try {
        payload = JSON.parse(field);
      } catch {
        throw new JsonableError('payload is not valid JSON');
      }
    }
    let topic = request.option('topic');
    if (topic === undefined && has(payload, 'channel')) topic = str(payload, 'channel').replace(/^[@#]/, '');
    const pieces: string[] = [];
    if (truthy(dig(payload, 'blocks'))) pieces.push(...list(payload, 'blocks').map(renderBlock));
    if (truthy(dig(payload, 'attachments'))) pieces.push(...list(payload, 'attachments').map(renderAttachment));
    let body = pieces
      .filter((piece) => piece.trim() !== '')
      .map((piece) => piece.trim())
      .join('\n\n');
    if (body === '' && truthy(dig(payload, 'text'))) {
      if (truthy(dig(payload, 'icon_emoji'))) body = str(payload, 'icon_emoji') + ' ';
      body = (body + str(payload, 'text')).trim();
    }
    if (body === '') return [];
    return [{ topic: topic ?? '(no topic)', content: replaceFormatting(replaceLinks(body).trim()) }];
  },
};
