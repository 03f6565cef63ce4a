// Sending email with nodemailer, under Zulip's settings: EMAIL_HOST (and PORT, HOST_USER,
// HOST_PASSWORD, USE_TLS) name the SMTP server; without EMAIL_HOST every email is written to
// EMAIL_LOG_DIR as an .eml file instead (Zulip's development "email log"), and the first one
// says so in the log.

import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from '@teamchat/core';
import type { NotificationsConfig } from './config';

export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** Our own Message-ID (an idempotency key: a retried send reuses it). */
  messageId: string;
  fromName?: string;
  replyTo?: string;
}

export interface Mailer {
  send(email: OutgoingEmail): Promise<void>;
  close(): void;
}

/**
 * Text of people's (names, organisation names) made safe for a header: control characters
 * (CR/LF among them) become spaces, and RFC 2047's encoded-word opener "=?" gets a zero-width
 * space inside it. That breaks the syntax, so no mail program decodes text a person typed as if
 * the server had encoded it, and makes the value non-ASCII, so the mail library itself
 * RFC 2047-encodes the whole of it rather than passing it raw.
 */
export function headerText(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is replaced
  return text.replace(/[\x00-\x1f\x7f]/g, ' ').replaceAll('=?', '=\u200b?');
}

export function createMailer(
  config: Pick<
    NotificationsConfig,
    | 'EMAIL_HOST'
    | 'EMAIL_PORT'
    | 'EMAIL_HOST_USER'
    | 'EMAIL_HOST_PASSWORD'
    | 'EMAIL_USE_TLS'
    | 'NOREPLY_EMAIL_ADDRESS'
    | 'EMAIL_LOG_DIR'
  >,
  logger: Pick<Logger, 'info' | 'warn'>,
): Mailer {
  const from = (name?: string) =>
    name ? { name: headerText(name), address: config.NOREPLY_EMAIL_ADDRESS } : config.NOREPLY_EMAIL_ADDRESS;
  // The same message whether it is sent or written to a file; header text from people is
  // neutralised here, for every email.
  const message = (email: OutgoingEmail) => ({
    from: from(email.fromName),
    to: email.to,
    subject: headerText(email.subject),
    text: email.text,
    html: email.html,
    messageId: email.messageId,
    replyTo: email.replyTo,
  });
  if (!config.EMAIL_HOST) {
    const writer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
    let announced = false;
    return {
      async send(email) {
        const info = await writer.sendMail(message(email));
        const dir = path.resolve(config.EMAIL_LOG_DIR);
        await fs.mkdir(dir, { recursive: true });
        const file = path.join(dir, `${Date.now()}-${email.messageId.replace(/[^A-Za-z0-9.-]/g, '_')}.eml`);
        await fs.writeFile(file, info.message as Buffer);
        if (!announced) {
          announced = true;
          logger.warn({ dir }, 'EMAIL_HOST is not set: emails are written to this directory as .eml files, not sent');
        }
        logger.info({ to: email.to, subject: email.subject, file }, 'email written');
      },
      close() {
        writer.close();
      },
    };
  }
  const implicitTls = config.EMAIL_PORT === 465;
  const transport = nodemailer.createTransport({
    host: config.EMAIL_HOST,
    port: config.EMAIL_PORT,
    secure: implicitTls,
    requireTLS: config.EMAIL_USE_TLS && !implicitTls,
    ignoreTLS: !config.EMAIL_USE_TLS && !implicitTls,
    auth: config.EMAIL_HOST_USER ? { user: config.EMAIL_HOST_USER, pass: config.EMAIL_HOST_PASSWORD } : undefined,
  });
  return {
    async send(email) {
      await transport.sendMail(message(email));
      logger.info({ to: email.to, subject: email.subject }, 'email sent');
    },
    close() {
      transport.close();
    },
  };
}
