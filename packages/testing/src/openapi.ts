// Validates responses against Zulip's published schema (zulip.yaml, API v10.2).
// Fields the interface spec adds after 10.2 are declared in NEWER_FIELDS, per operation:
// they are removed from a copy of the body before validation, and nothing else is excused.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import YAML from 'yaml';

/** The Zulip release whose published schema responses are checked against. */
export const ZULIP_OPENAPI_RELEASE = '10.2';
/** zerver/openapi/zulip.yaml at Zulip's 10.2 tag (API feature level 372). */
export const ZULIP_OPENAPI_URL = `https://raw.githubusercontent.com/zulip/zulip/${ZULIP_OPENAPI_RELEASE}/zerver/openapi/zulip.yaml`;
export const ZULIP_OPENAPI_SHA256 = '35bf1502c46fa36fbeceb887dd956cdfbd95878180e876c46c325a5f6e2896e6';

/** The checkout this file belongs to (packages/testing/src → the repository root). */
const CHECKOUT_DIR = path.resolve(__dirname, '../../..');

export interface ZulipOpenApiSources {
  env: NodeJS.ProcessEnv;
  /** The repository root; a sibling `shared/zulip-openapi/zulip.yaml` is used when present. */
  checkoutDir: string;
  /** Where a downloaded copy is kept (git-ignored). */
  varDir: string;
  url: string;
  sha256: string;
}

function defaultSources(): ZulipOpenApiSources {
  return {
    env: process.env,
    checkoutDir: CHECKOUT_DIR,
    varDir: process.env.TEAMCHAT_VAR_DIR ?? path.join(CHECKOUT_DIR, 'var'),
    url: ZULIP_OPENAPI_URL,
    sha256: ZULIP_OPENAPI_SHA256,
  };
}

const sha256Of = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/**
 * Where zulip.yaml is, in this order: ZULIP_OPENAPI_PATH; the repository's own copy (checked
 * against the pinned sha256); a `shared/zulip-openapi/zulip.yaml`
 * beside the checkout; a copy downloaded earlier into var/; else it is downloaded now from
 * Zulip's repository (the release tag) and kept only if its sha256 is the pinned one.
 */
export function resolveZulipOpenApiPath(sources: ZulipOpenApiSources = defaultSources()): string {
  const configured = sources.env.ZULIP_OPENAPI_PATH;
  if (configured) {
    if (!fs.existsSync(configured)) throw new Error(`ZULIP_OPENAPI_PATH is ${configured}, which does not exist`);
    return configured;
  }
  // The copy the repository carries (packages/testing/zulip-openapi/SOURCE.md), when unmodified.
  const vendored = path.join(sources.checkoutDir, 'packages', 'testing', 'zulip-openapi', 'zulip.yaml');
  if (fs.existsSync(vendored) && sha256Of(vendored) === sources.sha256) return vendored;
  const besideCheckout = path.resolve(sources.checkoutDir, '..', 'shared', 'zulip-openapi', 'zulip.yaml');
  if (fs.existsSync(besideCheckout)) return besideCheckout;
  const downloaded = path.join(sources.varDir, 'zulip-openapi', `zulip-${sources.sha256.slice(0, 12)}.yaml`);
  if (fs.existsSync(downloaded) && sha256Of(downloaded) === sources.sha256) return downloaded;
  download(sources, downloaded);
  return downloaded;
}

/**
 * Fetches the schema into `target` (through a temporary file, so concurrent test workers never
 * see half a file). Synchronous, as the validators that need it are: a child process fetches.
 */
function download(sources: ZulipOpenApiSources, target: string): void {
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const partial = `${target}.${process.pid}.partial`;
  const fetchToFile = `fetch(process.argv[1], { signal: AbortSignal.timeout(60000) })
    .then((r) => { if (!r.ok) throw new Error('HTTP ' + r.status); return r.arrayBuffer(); })
    .then((body) => require('node:fs').writeFileSync(process.argv[2], Buffer.from(body)))
    .catch((e) => { console.error(e.cause?.message ?? e.message); process.exit(1); });`;
  const result = spawnSync(process.execPath, ['-e', fetchToFile, sources.url, partial], {
    encoding: 'utf8',
    timeout: 90_000,
  });
  const howToFix =
    `Copy zerver/openapi/zulip.yaml of Zulip ${ZULIP_OPENAPI_RELEASE} to ${target}, ` +
    'or set ZULIP_OPENAPI_PATH to a copy.';
  if (result.status !== 0) {
    fs.rmSync(partial, { force: true });
    const reason = (result.stderr || result.error?.message || 'no answer').trim();
    throw new Error(
      `zulip.yaml (Zulip ${ZULIP_OPENAPI_RELEASE}'s API schema, which tests validate responses against) ` +
        `was not found (ZULIP_OPENAPI_PATH unset, no shared/zulip-openapi/zulip.yaml beside the checkout, no copy ` +
        `in ${path.dirname(target)}) and could not be downloaded from ${sources.url}: ${reason}. ${howToFix}`,
    );
  }
  const actual = sha256Of(partial);
  if (actual !== sources.sha256) {
    fs.rmSync(partial, { force: true });
    throw new Error(
      `zulip.yaml downloaded from ${sources.url} has sha256 ${actual}, not the pinned ${sources.sha256}. ${howToFix}`,
    );
  }
  fs.renameSync(partial, target);
}

let resolvedPath: string | undefined;

/** zulip.yaml for this process (see resolveZulipOpenApiPath). */
export function zulipOpenApiPath(): string {
  resolvedPath ??= resolveZulipOpenApiPath();
  return resolvedPath;
}

/**
 * Fields newer than Zulip 10.2 that the interface spec defines, by "METHOD /path" of zulip.yaml.
 * Each entry is a dotted path into the body; "*" walks every element of an array or value of an object.
 */
export const NEWER_FIELDS: Record<string, string[]> = {};

/** Operations the spec adds that zulip.yaml 10.2 does not have at all, with a check of their body. */
interface NewerOperation {
  method: string;
  /** Matched against the path without /api/v1. */
  path: RegExp;
  /** Returns a description of what is wrong, or null. */
  check: (body: Record<string, unknown>) => string | null;
}
const NEWER_OPERATIONS: NewerOperation[] = [];

export function declareNewerFields(operation: string, fields: string[]): void {
  NEWER_FIELDS[operation] = [...new Set([...(NEWER_FIELDS[operation] ?? []), ...fields])];
}

export function declareNewerOperation(
  method: string,
  path: RegExp,
  check: (body: Record<string, unknown>) => string | null,
): void {
  NEWER_OPERATIONS.push({ method, path, check });
}

/** Event types the spec adds after 10.2 (e.g. navigation_view), each with a check of one event. */
const NEWER_EVENT_TYPES = new Map<string, (event: Record<string, unknown>) => string | null>();

export function declareNewerEventType(type: string, check: (event: Record<string, unknown>) => string | null): void {
  NEWER_EVENT_TYPES.set(type, check);
}

/** Checks events of declared newer types on their own and leaves the rest to zulip.yaml. */
function checkNewerEvents(operation: string, body: unknown): unknown {
  const events = (body as { events?: unknown })?.events;
  if (operation !== 'GET /events' || !Array.isArray(events)) return body;
  for (const event of events as Record<string, unknown>[]) {
    const check = NEWER_EVENT_TYPES.get(String(event?.type));
    const problem = check?.(event);
    if (problem)
      throw new SchemaMismatchError(
        `GET /events: ${String(event.type)} event: ${problem}\n${JSON.stringify(event).slice(0, 1000)}`,
      );
  }
  return {
    ...(body as object),
    events: (events as Record<string, unknown>[]).filter((event) => !NEWER_EVENT_TYPES.has(String(event?.type))),
  };
}

interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  params: number;
}

let document: Record<string, any> | undefined;
let operations: Operation[] | undefined;
let ajv: Ajv | undefined;
const validators = new Map<string, ValidateFunction>();

function load() {
  if (document) return;
  document = YAML.parse(fs.readFileSync(zulipOpenApiPath(), 'utf8'), { maxAliasCount: -1 }) as Record<string, any>;
  dropTypelessNullable(document);
  ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, discriminator: false });
  ajv.addSchema(document, 'zulip');
  operations = [];
  for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(item)) {
      if (!['get', 'post', 'patch', 'put', 'delete'].includes(method)) continue;
      const params = (template.match(/\{[^}]+\}/g) ?? []).length;
      // A trailing {filename} is a file's path (zulip.yaml's example: "4e/m2A3MSqFnWRLUf9SaPzQ0Up_/zulip.txt").
      const regex = new RegExp(`^${template.replace(/\{filename\}$/, '(.+)').replace(/\{[^}]+\}/g, '([^/]+)')}$`);
      operations.push({ method: method.toUpperCase(), template, regex, params });
    }
  }
  // Literal paths before templated ones; fewer parameters first.
  operations.sort((a, b) => a.params - b.params);
}

/**
 * zulip.yaml overlays nullability in allOf halves as a bare `{nullable: true}` (e.g.
 * MessagesEvent.avatar_url), which Ajv refuses to compile ("nullable" cannot be used without
 * "type"). The base half already says the value may be null, so the bare overlay is dropped.
 */
function dropTypelessNullable(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (!Array.isArray(node)) {
    const schema = node as Record<string, unknown>;
    if ('nullable' in schema && !('type' in schema)) delete schema.nullable;
  }
  for (const child of Object.values(node as object)) dropTypelessNullable(child);
}

/** The path zulip.yaml names: without /api/v1, or /json (the web app's alias of it). */
function relativeApiPath(apiPath: string): string {
  return apiPath.replace(/^\/(api\/v1|json)(?=\/)/, '');
}

/** The zulip.yaml operation a request maps to, e.g. "GET /users/{user_id}". */
export function findOperation(method: string, apiPath: string): string | undefined {
  load();
  const relative = relativeApiPath(apiPath);
  const candidates = operations!.filter((op) => op.method === method && op.regex.test(relative));
  if (candidates.length === 0) return undefined;
  // Between /users/{email} and /users/{user_id}: a number is an id.
  const numeric = candidates.find(
    (op) =>
      op.params === candidates[0].params &&
      /_id\}/.test(op.template) &&
      op.regex
        .exec(relative)!
        .slice(1)
        .every((s) => /^\d+$/.test(s)),
  );
  const chosen = numeric ?? candidates[0];
  return `${chosen.method} ${chosen.template}`;
}

function validatorFor(operation: string, status: number): ValidateFunction | undefined {
  const key = `${operation} ${status}`;
  if (validators.has(key)) return validators.get(key);
  const [method, template] = operation.split(' ');
  const responses = document!.paths[template]?.[method.toLowerCase()]?.responses ?? {};
  let response = responses[String(status)];
  let responsePointer = `#/paths/${escape(template)}/${method.toLowerCase()}/responses/${status}`;
  // Shared responses (e.g. SimpleSuccess) are references to components/responses.
  if (typeof response?.$ref === 'string' && response.$ref.startsWith('#/components/responses/')) {
    responsePointer = response.$ref;
    response = document!.components.responses[response.$ref.slice('#/components/responses/'.length)];
  }
  if (!response?.content?.['application/json']?.schema) return undefined;
  const pointer = `${responsePointer}/content/application~1json/schema`;
  const validate = ajv!.compile({ $ref: `zulip${pointer}` });
  validators.set(key, validate);
  return validate;
}

function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function removePath(target: unknown, parts: string[]): void {
  if (target === null || typeof target !== 'object' || parts.length === 0) return;
  const [head, ...rest] = parts;
  const children = head === '*' ? Object.keys(target as object) : [head];
  for (const child of children) {
    if (rest.length === 0 && head !== '*') delete (target as Record<string, unknown>)[child];
    else if (rest.length === 0) continue;
    else removePath((target as Record<string, unknown>)[child], rest);
  }
}

export class SchemaMismatchError extends Error {}

/**
 * Throws SchemaMismatchError when `body` (a success answer to METHOD apiPath) does not match
 * zulip.yaml. An operation zulip.yaml does not know must be declared in NEWER_OPERATIONS.
 */
export function validateSuccessResponse(method: string, apiPath: string, status: number, body: unknown): void {
  load();
  const operation = findOperation(method, apiPath);
  const relative = relativeApiPath(apiPath);
  const declared = NEWER_OPERATIONS.find((op) => op.method === method && op.path.test(relative));
  if (!operation) {
    if (declared) {
      const problem = declared.check(body as Record<string, unknown>);
      if (problem) throw new SchemaMismatchError(`${method} ${apiPath}: ${problem}`);
      return;
    }
    throw new SchemaMismatchError(`${method} ${apiPath} is not in zulip.yaml and not declared as a newer operation`);
  }
  const validate = validatorFor(operation, status);
  if (!validate) throw new SchemaMismatchError(`${operation} has no JSON schema for status ${status}`);
  const copy = structuredClone(checkNewerEvents(operation, body));
  for (const field of NEWER_FIELDS[operation] ?? []) removePath(copy, field.split('.'));
  if (!validate(copy)) {
    const errors = (validate.errors ?? [])
      .slice(0, 8)
      .map(
        (e) =>
          `${e.instancePath || '(body)'} ${e.message}${e.params && 'additionalProperty' in e.params ? `: ${e.params.additionalProperty}` : ''}`,
      )
      .join('; ');
    throw new SchemaMismatchError(
      `${operation} response does not match zulip.yaml: ${errors}\n${JSON.stringify(body).slice(0, 2000)}`,
    );
  }
}
