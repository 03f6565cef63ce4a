// What both bare long-poll servers (baseline-server.mjs, baseline-redis-server.mjs) need of HTTP.

/** Answers with a JSON text. */
export function sendJsonText(res, status, text) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** The request's JSON body ({} when it has none). */
export function readJsonBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {}));
  });
}
