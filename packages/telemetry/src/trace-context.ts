// The active trace, for log lines: every line written while a request (or job) is being
// handled carries its trace id, so logs and traces of one request can be joined.

import { isSpanContextValid, trace } from '@opentelemetry/api';

export interface TraceIds {
  trace_id: string;
  span_id: string;
}

/** Ids of the active span, or undefined outside a trace (or when telemetry is not loaded). */
export function activeTraceIds(): TraceIds | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return undefined;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
