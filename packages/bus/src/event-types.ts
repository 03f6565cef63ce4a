// The events producers send, each declared to its last field (docs/adr/0008): the types are
// inferred from the schemas of event-schema.ts, which the test kit checks every captured and
// polled event against. A producer passing a wrong, missing or undeclared field, or an event
// typed only `{ type: string }`, does not compile.

import type { Prisma } from '@teamchat/db';
import type { z } from 'zod';
import { EVENT_SCHEMAS, type EventSchemas } from './event-schema';

/** Every event, by type (each a union of its ops' shapes). */
export type ZulipEventByType = { [T in keyof EventSchemas]: z.infer<EventSchemas[T]> };

export type ZulipEvent = ZulipEventByType[keyof ZulipEventByType];

export type ZulipEventType = ZulipEvent['type'];

/** Every declared event type, at run time. */
export const ZULIP_EVENT_TYPES = Object.keys(EVENT_SCHEMAS) as ZulipEventType[];

/** The member of ZulipEvent with type T (and op Op, when given). */
export type ZulipEventOf<T extends ZulipEventType, Op extends OpsOf<T> = never> = [Op] extends [never]
  ? ZulipEventByType[T]
  : Extract<ZulipEventByType[T], { op: Op }>;

/** The events of type T without their `type`: what a helper that adds the type takes. */
export type EventFieldsOf<T extends ZulipEventType> = ZulipEventByType[T] extends infer E
  ? E extends unknown
    ? Omit<E, 'type'>
    : never
  : never;

/** The ops of one event type (undefined for a type without ops). */
export type OpsOf<T extends ZulipEventType> = ZulipEventByType[T] extends infer E
  ? E extends { op: infer Op }
    ? Op
    : undefined
  : never;

/**
 * An event of an outbox row written by a statement (outboxWrite): a top-level field may be a
 * SQL expression of the statement instead of its value (the ids it changed, say).
 */
export type ZulipEventWithSql = ZulipEvent extends infer E
  ? E extends ZulipEvent
    ? { [K in keyof E]: E[K] | Prisma.Sql }
    : never
  : never;
