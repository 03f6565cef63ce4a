// Register's answer into the home page as it arrives: the page's first half, then the answer's
// bytes (its success envelope dropped, made safe for the single-quoted attribute), then the
// page's second half. Never collected, never decoded: at 8,000 users the answer is 2.4 MB, and
// holding it (and copies of it) cost the web service a major garbage collection per page.
import { Transform, type TransformCallback } from 'node:stream';
import { htmlSafeJsonPieces } from './templates';

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
