// An HTTP client for tests that speaks the Zulip wire format, as real clients do, and checks
// every success answer against zulip.yaml.

import http from 'node:http';
import { validateSuccessResponse } from './openapi';

export type ParamValue = string | number | boolean | null | object;
export type Params = Record<string, ParamValue | undefined>;

export interface RequestOptions {
  /** Where the parameters go: query string (GET default), urlencoded body (default otherwise), multipart, or JSON body. */
  encoding?: 'query' | 'form' | 'multipart' | 'json';
  headers?: Record<string, string>;
  /** Skip the zulip.yaml check (for non-API answers such as file downloads). */
  validate?: boolean;
  /** Raw body (overrides params). */
  body?: Buffer | string;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: T;
  /** The raw bytes (for non-JSON answers). */
  raw: Buffer;
}

/** python-zulip-api's rule: strings as they are, anything else JSON-encoded. */
export function encodeValue(value: ParamValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function toPairs(params: Params): [string, string][] {
  return Object.entries(params)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => [name, encodeValue(value as ParamValue)]);
}

export interface Credentials {
  email: string;
  apiKey: string;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly credentials: Credentials | null = null,
    private readonly defaultHeaders: Record<string, string> = {},
  ) {}

  /** The same client, sending another Host header (to address another realm). */
  withHost(host: string): ApiClient {
    return new ApiClient(this.baseUrl, this.credentials, { ...this.defaultHeaders, host });
  }

  get<T = any>(path: string, params: Params = {}, options: RequestOptions = {}) {
    return this.request<T>('GET', path, params, { encoding: 'query', ...options });
  }
  post<T = any>(path: string, params: Params = {}, options: RequestOptions = {}) {
    return this.request<T>('POST', path, params, options);
  }
  patch<T = any>(path: string, params: Params = {}, options: RequestOptions = {}) {
    return this.request<T>('PATCH', path, params, options);
  }
  delete<T = any>(path: string, params: Params = {}, options: RequestOptions = {}) {
    return this.request<T>('DELETE', path, params, options);
  }

  async request<T = any>(
    method: string,
    path: string,
    params: Params = {},
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const encoding = options.encoding ?? (method === 'GET' ? 'query' : 'form');
    const url = new URL(path, this.baseUrl);
    const headers: Record<string, string> = { ...this.defaultHeaders, ...options.headers };
    if (this.credentials) {
      headers.authorization = `Basic ${Buffer.from(`${this.credentials.email}:${this.credentials.apiKey}`).toString('base64')}`;
    }
    let body: Buffer | undefined;
    const pairs = toPairs(params);
    if (options.body !== undefined) {
      body = Buffer.from(options.body);
    } else if (encoding === 'query') {
      for (const [name, value] of pairs) url.searchParams.append(name, value);
    } else if (encoding === 'form') {
      body = Buffer.from(new URLSearchParams(pairs).toString());
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    } else if (encoding === 'json') {
      body = Buffer.from(JSON.stringify(Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined))));
      headers['content-type'] ??= 'application/json';
    } else {
      const form = new FormData();
      for (const [name, value] of pairs) form.append(name, value);
      const encoded = new Request('http://multipart.invalid', { method: 'POST', body: form });
      body = Buffer.from(await encoded.arrayBuffer());
      headers['content-type'] = encoded.headers.get('content-type')!;
    }
    if (body) headers['content-length'] = String(body.length);

    const response = await send(method, url, headers, body);
    const contentType = String(response.headers['content-type'] ?? '');
    const parsed = contentType.includes('application/json')
      ? JSON.parse(response.raw.toString('utf8') || 'null')
      : response.raw.toString('utf8');
    if ((options.validate ?? true) && response.status === 200 && parsed?.result === 'success') {
      validateSuccessResponse(method, url.pathname, response.status, parsed);
    }
    return { status: response.status, headers: response.headers, body: parsed as T, raw: response.raw };
  }
}

function send(method: string, url: URL, headers: Record<string, string>, body?: Buffer) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; raw: Buffer }>((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
