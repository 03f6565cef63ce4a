// A real SMTP server in a child process (the smtp-server package, nodemailer's own server
// library) that accepts every message and reports it on stdout as one JSON line: what an
// outgoing mail relay would receive from us.
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

export interface ReceivedEmail {
  from: string;
  to: string[];
  raw: string;
  subject: string;
  /** The raw message with quoted-printable soft breaks and escapes undone (for text checks). */
  text: string;
}

const SERVER = `
const { SMTPServer } = require('smtp-server');
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  onData(stream, session, callback) {
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => {
      process.stdout.write(JSON.stringify({
        from: session.envelope.mailFrom && session.envelope.mailFrom.address,
        to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
        raw: Buffer.concat(chunks).toString('utf8'),
      }) + '\\n');
      callback();
    });
  },
});
server.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + server.server.address().port + '\\n'));
`;

function decodeQuotedPrintable(raw: string): string {
  return raw
    .replace(/=\r?\n/g, '')
    .replace(/(=[0-9A-F]{2})+/g, (run) => Buffer.from(run.replace(/=/g, ''), 'hex').toString('utf8'));
}

export class SmtpSink {
  readonly received: ReceivedEmail[] = [];
  port = 0;
  private child!: ChildProcess;

  async start(): Promise<this> {
    this.child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'], cwd: __dirname });
    const lines = readline.createInterface({ input: this.child.stdout! });
    await new Promise<void>((resolve, reject) => {
      this.child.once('exit', (code) => reject(new Error(`smtp sink exited with ${code}`)));
      lines.on('line', (line) => {
        if (line.startsWith('PORT ')) {
          this.port = Number(line.slice(5));
          resolve();
          return;
        }
        const message = JSON.parse(line) as { from: string; to: string[]; raw: string };
        const subject = /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(message.raw)?.[1].replace(/\r?\n[ \t]/g, ' ') ?? '';
        this.received.push({ ...message, subject, text: decodeQuotedPrintable(message.raw) });
      });
    });
    return this;
  }

  to(address: string): ReceivedEmail[] {
    return this.received.filter((email) => email.to.includes(address));
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}
