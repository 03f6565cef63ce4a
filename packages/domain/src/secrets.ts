// API keys and passwords. Neither is ever stored: API keys as a sha256 hash (they are 32
// random characters, so a fast hash is enough and keeps the gateway's lookup cheap),
// passwords with scrypt. Bots' keys are also kept sealed (below).

import {
  createCipheriv,
  createDecipheriv,
  createHash,
  hkdfSync,
  randomBytes,
  randomInt,
  scrypt as scryptCallback,
  timingSafeEqual,
} from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;

const API_KEY_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export const API_KEY_LENGTH = 32;

export function generateApiKey(): string {
  let key = '';
  for (let i = 0; i < API_KEY_LENGTH; i++) key += API_KEY_ALPHABET[randomInt(API_KEY_ALPHABET.length)];
  return key;
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

/** Zulip's has_api_key_format: exactly 32 alphanumeric characters. */
export function hasApiKeyFormat(candidate: string): boolean {
  return /^[0-9a-zA-Z]{32}$/.test(candidate);
}

/** Zulip's default PASSWORD_MIN_LENGTH (counted in code points). */
export const PASSWORD_MIN_LENGTH = 6;

/** Zulip's check_password_strength, with its length rule the only one: each caller words the refusal. */
export function isPasswordTooWeak(password: string): boolean {
  return [...password].length < PASSWORD_MIN_LENGTH;
}

const SCRYPT_PARAMS = { N: 16384, r: 8, p: 1 };

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, SCRYPT_PARAMS);
  return `scrypt$${SCRYPT_PARAMS.N}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (!stored) return false;
  const [scheme, n, saltText, hashText] = stored.split('$');
  if (scheme !== 'scrypt' || !saltText || !hashText) return false;
  const expected = Buffer.from(hashText, 'base64');
  const actual = await scrypt(password, Buffer.from(saltText, 'base64'), expected.length, {
    ...SCRYPT_PARAMS,
    N: Number(n),
  });
  return timingSafeEqual(actual, expected);
}

/** A random token for links and paths (invites, upload paths). */
export function randomToken(bytes = 18): string {
  return randomBytes(bytes).toString('base64url');
}

// Bots' API keys and outgoing webhook tokens are the exception (docs/adr/0007): their owners
// must be shown them again, so they are kept sealed with AES-256-GCM under a key derived from
// the server secret, bound to the bot they belong to.

const SEAL_VERSION = 'v1';

function sealingKey(serverSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', serverSecret, '', 'teamchat bot secrets v1', 32));
}

/** Seals a bot's secret (API key, webhook token) for storage: "v1.<iv>.<tag>.<ciphertext>". */
export function sealBotSecret(secret: string, botId: number, serverSecret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(serverSecret), iv);
  cipher.setAAD(Buffer.from(`bot:${botId}`));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return [SEAL_VERSION, iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/**
 * The secret `sealBotSecret` sealed for this bot, or null when it cannot be opened (sealed
 * under another server secret, or for another bot).
 */
export function openBotSecret(sealed: string, botId: number, serverSecret: string): string | null {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== SEAL_VERSION || !iv || !tag || ciphertext === undefined) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(serverSecret), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(`bot:${botId}`));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
