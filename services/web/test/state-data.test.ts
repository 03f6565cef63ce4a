// Register's answer streamed into the page: the envelope dropped however the answer is cut into
// chunks, the attribute's unsafe characters escaped, the page's halves around it.
import { Readable } from 'node:stream';
import { StateDataIntoPage } from '@teamchat/core';

async function intoPage(answer: string, chunkSize: number): Promise<string> {
  const bytes = Buffer.from(answer);
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += chunkSize) chunks.push(bytes.subarray(at, at + chunkSize));
  const out: Buffer[] = [];
  const page = Readable.from(chunks).pipe(new StateDataIntoPage(Buffer.from("<div data-params='"), Buffer.from("'>")));
  for await (const piece of page) out.push(Buffer.from(piece as Buffer));
  return Buffer.concat(out).toString();
}

test.each([1, 7, 29, 30, 4096])('an answer in chunks of %i bytes', async (chunkSize) => {
  const answer = JSON.stringify({ result: 'success', msg: '', queue_id: "a'b", full_name: 'Ünïcode <b>&amp;</b>' });
  const page = await intoPage(answer, chunkSize);
  expect(page).toBe(
    `<div data-params='{"queue_id":"a\\u0027b","full_name":"Ünïcode \\u003cb\\u003e\\u0026amp;\\u003c/b\\u003e"}'>`,
  );
  const attribute = /data-params='([^']*)'/.exec(page)![1];
  expect(JSON.parse(attribute)).toEqual({ queue_id: "a'b", full_name: 'Ünïcode <b>&amp;</b>' });
});

test('an answer without the envelope, or shorter than it, is kept whole', async () => {
  expect(await intoPage('{"a":1}', 3)).toBe(`<div data-params='{"a":1}'>`);
  expect(await intoPage('{"result":"success","msg":"x","a":"<"}', 5)).toBe(
    `<div data-params='{"result":"success","msg":"x","a":"\\u003c"}'>`,
  );
});
