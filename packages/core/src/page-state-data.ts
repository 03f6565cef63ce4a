// Register's answer into Zulip's home page as it arrives: the page's first half, then the answer's
// bytes (its success envelope dropped, made safe for the single-quoted attribute), then the
// page's second half. Never collected, never decoded: at 8,000 users the answer is 2.4 MB, and
// holding it (and copies of it) costs a major garbage collection per page.
//
// Who streams it: the gateway, when the web service answers a page with EMBED_REGISTER_HEADER
// (the page without its state, and register's arguments): the answer then crosses one hop, as
// the API's own POST /register does. Relayed through the web service it crossed two, and the
// page cost the stack 1.4-1.5x the register's CPU.
import { Transform, type TransformCallback } from 'node:stream';

/** Where register's answer goes in a page that is to embed it. */
export const STATE_DATA_MARK = '@@state_data@@';

/** Sent by the gateway to the web service: it splices register's answer into a page (the value: "register"). */
export const EMBEDS_HEADER = 'x-teamchat-embeds';

/** Answered by the web service: this page embeds register's answer under these arguments (JSON). */
export const EMBED_REGISTER_HEADER = 'x-teamchat-embed-register';

/** The bytes Jinja's tojson escapes (so JSON can sit in a single-quoted attribute), and their escapes. */
const UNSAFE_JSON_BYTES = new Map(
  Object.entries({ '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', "'": '\\u0027' }).map(([character, escape]) => [
    character.charCodeAt(0),
    Buffer.from(escape),
  ]),
);

/** Jinja's tojson escaping on JSON already encoded as UTF-8 (ASCII bytes: never inside a sequence), as pieces to write. */
export function htmlSafeJsonPieces(json: Buffer): Buffer[] {
  const positions: number[] = [];
  for (const byte of UNSAFE_JSON_BYTES.keys())
    for (let at = json.indexOf(byte); at !== -1; at = json.indexOf(byte, at + 1)) positions.push(at);
  if (!positions.length) return [json];
  positions.sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const at of positions) {
    if (at > from) pieces.push(json.subarray(from, at));
    pieces.push(UNSAFE_JSON_BYTES.get(json[at])!);
    from = at + 1;
  }
  if (from < json.length) pieces.push(json.subarray(from));
  return pieces;
}

const SUCCESS_ENVELOPE = Buffer.from('{"result":"success","msg":"",');

export class StateDataIntoPage extends Transform {
  /** The answer's first bytes, held until the envelope can be told (null once it has). */
  private opening: Buffer | null = Buffer.alloc(0);

  constructor(
    private readonly head: Buffer,
    private readonly tail: Buffer,
  ) {
    super();
  }

  /** A rendered page with STATE_DATA_MARK in it, as the halves around the answer. */
  static around(page: Buffer): StateDataIntoPage {
    const at = page.indexOf(STATE_DATA_MARK);
    if (at === -1) throw new Error('the page has no place for its state data');
    return new StateDataIntoPage(page.subarray(0, at), page.subarray(at + STATE_DATA_MARK.length));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.opening) {
      const opening = Buffer.concat([this.opening, chunk]);
      if (opening.length < SUCCESS_ENVELOPE.length) {
        this.opening = opening;
        return done();
      }
      this.opening = null;
      this.push(this.head);
      // Zulip's state_data has no envelope: its comma becomes the object's opening brace.
      if (opening.subarray(0, SUCCESS_ENVELOPE.length).equals(SUCCESS_ENVELOPE)) {
        this.push('{');
        chunk = opening.subarray(SUCCESS_ENVELOPE.length);
      } else chunk = opening;
    }
    this.pushEscaped(chunk);
    done();
  }

  /** One write per chunk however many escapes it holds (a write per piece cost more than the copy). */
  private pushEscaped(chunk: Buffer): void {
    const pieces = htmlSafeJsonPieces(chunk);
    this.push(pieces.length === 1 ? pieces[0] : Buffer.concat(pieces));
  }

  override _flush(done: TransformCallback): void {
    if (this.opening) {
      this.push(this.head);
      this.pushEscaped(this.opening);
    }
    this.push(this.tail);
    done();
  }
}
