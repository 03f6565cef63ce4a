// Validates responses against Zulip's published schema (zulip.yaml, API v10.2).
// Fields the interface spec adds after 10.2 are declared in NEWER_FIELDS, per operation:
// they are removed from a copy of the body before validation, and nothing else is excused.

import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import YAML from 'yaml';

/**
 * Where zulip.yaml is: ZULIP_OPENAPI_PATH, else the project's shared folder beside the checkout
 * (../shared), else the workplace's /work/shared (a clone made elsewhere, as CI's may be).
 */
export function zulipOpenApiPath(): string {
  if (process.env.ZULIP_OPENAPI_PATH) return process.env.ZULIP_OPENAPI_PATH;
  const candidates = [path.resolve(__dirname, '../../../../shared/zulip-openapi/zulip.yaml'), '/work/shared/zulip-openapi/zulip.yaml'];
  const found = candidates.find((candidate) => fs.existsSync(candidate));
  if (!found) throw new Error(`zulip.yaml not found (looked at ${candidates.join(', ')}); set ZULIP_OPENAPI_PATH`);
  return found;
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

export function declareNewerOperation(method: string, path: RegExp, check: (body: Record<string, unknown>) => string | null): void {
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
    if (problem) throw new SchemaMismatchError(`GET /events: ${String(event.type)} event: ${problem}\n${JSON.stringify(event).slice(0, 1000)}`);
  }
  return { ...(body as object), events: (events as Record<string, unknown>[]).filter((event) => !NEWER_EVENT_TYPES.has(String(event?.type))) };
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

/** The zulip.yaml operation a request maps to, e.g. "GET /users/{user_id}". */
export function findOperation(method: string, apiPath: string): string | undefined {
  load();
  const relative = apiPath.replace(/^\/api\/v1/, '');
  const candidates = operations!.filter((op) => op.method === method && op.regex.test(relative));
  if (candidates.length === 0) return undefined;
  // Between /users/{email} and /users/{user_id}: a number is an id.
  const numeric = candidates.find((op) => op.params === candidates[0].params && /_id\}/.test(op.template) && op.regex.exec(relative)!.slice(1).every((s) => /^\d+$/.test(s)));
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
  const relative = apiPath.replace(/^\/api\/v1/, '');
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
      .map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params && 'additionalProperty' in e.params ? `: ${e.params.additionalProperty}` : ''}`)
      .join('; ');
    throw new SchemaMismatchError(`${operation} response does not match zulip.yaml: ${errors}\n${JSON.stringify(body).slice(0, 2000)}`);
  }
}
