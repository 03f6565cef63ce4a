// Which client sent a request (Zulip's parse_client and Client.default_read_by_sender).
import type { Request } from 'express';

/** The `client` parameter if given, else the User-Agent's product name, else "Unspecified". */
export function sendingClientName(req: Request, clientParam: string | undefined): string {
  if (clientParam !== undefined) return clientParam;
  const userAgent = req.get('user-agent');
  if (!userAgent) return 'Unspecified';
  const match = /^([^/ ]*[^0-9/(]*)/.exec(userAgent);
  return match?.[1]?.trim() || 'Unspecified';
}

const HUMAN_CLIENTS = [
  'zulipandroid',
  'zulipios',
  'zulipdesktop',
  'zulipmobile',
  'zulipelectron',
  'zulipterminal',
  'snipe',
  'website',
  'ios',
  'android',
];

/**
 * Whether a message sent from this client starts out read for its sender: yes from Zulip's own
 * user interfaces, no from integrations using someone's API key.
 */
export function defaultReadBySender(clientName: string): boolean {
  const name = clientName.toLowerCase();
  return HUMAN_CLIENTS.includes(name) || name.includes('desktop app');
}
