import type { ApiResponse } from './client';

/** Asserts a Zulip error envelope: status, code and (exact) message. */
export function expectError(response: ApiResponse, status: number, code: string, msg?: string | RegExp): void {
  const problems: string[] = [];
  if (response.status !== status) problems.push(`status ${response.status} != ${status}`);
  const body = response.body as Record<string, unknown>;
  if (body?.result !== 'error') problems.push(`result ${String(body?.result)} != error`);
  if (body?.code !== code) problems.push(`code ${String(body?.code)} != ${code}`);
  if (typeof msg === 'string' && body?.msg !== msg)
    problems.push(`msg ${JSON.stringify(body?.msg)} != ${JSON.stringify(msg)}`);
  if (msg instanceof RegExp && !msg.test(String(body?.msg)))
    problems.push(`msg ${JSON.stringify(body?.msg)} !~ ${msg}`);
  if (problems.length)
    throw new Error(`Unexpected error response: ${problems.join(', ')}\n${JSON.stringify(response.body)}`);
}
