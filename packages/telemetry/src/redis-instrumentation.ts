// The ioredis instrumentation, with spans that ignore what comes after their end. It ends a
// command's span on the command's rejection and again on its resolution, and ioredis does both
// to a command it gave up on (a timeout, a connection lost mid-failover) whose reply then comes
// (open-telemetry-js-contrib #2254, #2874): every late reply logged two OpenTelemetry warnings,
// a thousand or more per Redis failover, hiding the warnings that matter.

import type {
  Exception,
  Link,
  Span,
  SpanAttributes,
  SpanAttributeValue,
  SpanStatus,
  TimeInput,
  Tracer,
} from '@opentelemetry/api';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';

/** A span whose first end() is its last word: later calls change nothing and log nothing. */
class SpanEndedOnce implements Span {
  private ended = false;

  constructor(private readonly span: Span) {}

  spanContext() {
    return this.span.spanContext();
  }

  isRecording(): boolean {
    return !this.ended && this.span.isRecording();
  }

  setAttribute(key: string, value: SpanAttributeValue): this {
    if (!this.ended) this.span.setAttribute(key, value);
    return this;
  }

  setAttributes(attributes: SpanAttributes): this {
    if (!this.ended) this.span.setAttributes(attributes);
    return this;
  }

  addEvent(name: string, attributesOrStartTime?: SpanAttributes | TimeInput, startTime?: TimeInput): this {
    if (!this.ended) this.span.addEvent(name, attributesOrStartTime, startTime);
    return this;
  }

  addLink(link: Link): this {
    if (!this.ended) this.span.addLink(link);
    return this;
  }

  addLinks(links: Link[]): this {
    if (!this.ended) this.span.addLinks(links);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (!this.ended) this.span.setStatus(status);
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.span.updateName(name);
    return this;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    if (!this.ended) this.span.recordException(exception, time);
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end(endTime);
  }
}

export class RedisInstrumentation extends IORedisInstrumentation {
  private wrapped: { of: Tracer; tracer: Tracer } | undefined;

  protected override get tracer(): Tracer {
    const tracer = super.tracer;
    if (this.wrapped?.of !== tracer) {
      this.wrapped = {
        of: tracer,
        tracer: {
          startSpan: (name, options, context) => new SpanEndedOnce(tracer.startSpan(name, options, context)),
          // Not used by the ioredis instrumentation: the tracer's own.
          startActiveSpan: tracer.startActiveSpan.bind(tracer) as Tracer['startActiveSpan'],
        },
      };
    }
    return this.wrapped.tracer;
  }
}
