// HTTP from a bench driver: one request on a given agent, the answer's JSON parsed (or its text).
import http from 'node:http';

export interface Reply {
  status: number;
  body: any;
}

export function call(
  agent: http.Agent,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, agent, headers: body ? { ...headers, 'content-length': String(Buffer.byteLength(body)) } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
          } catch {
            resolve({ status: res.statusCode ?? 0, body: text });
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
