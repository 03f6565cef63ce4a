// A tiny OTLP/HTTP trace receiver (JSON encoding) for tests: processes export to it with
// OTEL_EXPORTER_OTLP_ENDPOINT=<url> and OTEL_EXPORTER_OTLP_PROTOCOL=http/json.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  serviceName: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
}
interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}

function valueOf(value: OtlpAnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Bodies that were not OTLP JSON (a process exporting protobuf would land here). */
  readonly rejected: string[] = [];

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = http.createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => receiver.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        this.rejected.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(415).end();
        return;
      }
      try {
        this.collect(JSON.parse(body));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      } catch (error) {
        this.rejected.push((error as Error).message);
        res.writeHead(400).end();
      }
    });
  }

  private collect(request: {
    resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: any[] }[] }[];
  }): void {
    for (const resourceSpans of request.resourceSpans ?? []) {
      const serviceName = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            serviceName,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((link: { traceId: string; spanId: string }) => ({
              traceId: link.traceId,
              spanId: link.spanId,
            })),
          });
        }
      }
    }
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
