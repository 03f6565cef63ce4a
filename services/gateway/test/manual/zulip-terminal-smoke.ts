// Manual check (not part of npm test: zulip-terminal and its Python libraries are not project
// dependencies and their package index is out of reach on CI machines): zulip-terminal, the
// real client, run unmodified in a pseudo-terminal against a stack. Its screen is rendered with
// pyte and read like a person would; what it did is checked through the API. Needs on
// PYTHONPATH zulip-terminal's `zulipterminal`, python-zulip-api's `zulip` and `urwid_readline`,
// and from Debian python3-urwid, -bs4, -lxml, -pygments, -dateutil, -tz, -tzlocal, -pyperclip,
// -requests, -typing-extensions, -pyte (recipe in tests/README.md, "Real clients"):
//   PYTHONPATH=/path/with/those node --import tsx services/gateway/test/manual/zulip-terminal-smoke.ts
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '@teamchat/stack';
import { metricsRegistry } from '@teamchat/telemetry';

const SCRIPT = String.raw`
import json, os, pty, select, signal, struct, sys, time, fcntl, termios
import pyte, zulip
workdir, other_email, other_key, site = sys.argv[1:5]
me = zulip.Client(config_file=os.path.join(workdir, "zuliprc"))
other = zulip.Client(email=other_email, api_key=other_key, site=site)
other_id = other.get_profile()["user_id"]
COLS, ROWS = 140, 45
screen = pyte.Screen(COLS, ROWS)
feed = pyte.ByteStream(screen)
# The other user's status, set through python-zulip-api before zulip-terminal starts (the library
# has no method for it: its generic call_endpoint).
status_set = other.call_endpoint("users/me/status", method="POST", request={"status_text": "on a train", "emoji_name": "station"})
watch = me.register(event_types=["user_status"], fetch_event_types=["user_status"])
pid, fd = pty.fork()
if pid == 0:
    os.chdir(workdir)  # zulip-terminal writes its traceback logs to the working directory
    os.environ["TERM"] = "xterm-256color"
    from zulipterminal.cli.run import main
    sys.argv = ["zulip-term", "-c", os.path.join(workdir, "zuliprc")]
    main()
    os._exit(0)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))

def text():
    return "\n".join(line.rstrip() for line in screen.display)

def pump(seconds, until=None):
    """Reads the terminal for up to 'seconds', or until 'until' is on screen."""
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            feed.feed(data)
        if until and until in text():
            pump(0.5)  # let the rest of that redraw arrive
            return

def keys(*presses):
    for press in presses:
        os.write(fd, press.encode())
        pump(1.5)

results = []
def check(name, good, detail=""):
    results.append(bool(good))
    print(("ok   " if good else "FAIL ") + name + ("" if good else " " + str(detail)[:400]), flush=True)

def newest(client, n=10, raw=False):
    return client.get_messages({"anchor": "newest", "num_before": n, "num_after": 0, "narrow": [], "apply_markdown": not raw})["messages"]

pump(30, until="a direct hello")
screen_now = text()
check("starts: header, channel list and the messages fetched at start",
      "Term Inal" in screen_now and "# terminal" in screen_now and "hello from other" in screen_now and "a direct hello" in screen_now, screen_now)

# zulip-terminal shows no user status anywhere (its HEAD neither asks register for user_status nor
# reads it; its user information popup holds name, email, joined date, time zone, role, last
# active): the people list and that popup must still work for a user who has one, and the status
# is checked as this session's user reads it through the API.
keys("w", "Other", "\r", "i")
pump(3, until="User Information")
check("w finds the other user in the people list, i shows their information",
      "User Information" in text() and "Other Person" in text() and other.email in text(), text())
keys("\x1b", "\x1b")  # close the popup, leave the people list
status_changed = other.call_endpoint("users/me/status", method="POST", request={"status_text": "off the train", "emoji_name": ""})
pump(2)
events = me.get_events(queue_id=watch["queue_id"], last_event_id=-1).get("events", [])
check("the other user's status: set and changed through python-zulip-api, in register and a user_status event",
      status_set["result"] == status_changed["result"] == "success"
      and watch["user_status"].get(str(other_id)) == {"status_text": "on a train", "emoji_name": "station", "emoji_code": "1f689", "reaction_type": "unicode_emoji"}
      and [(e["user_id"], e.get("status_text"), e.get("emoji_name")) for e in events if e["type"] == "user_status"] == [(other_id, "off the train", "")]
      and me.call_endpoint(f"users/{other_id}/status", method="GET").get("status") == {"status_text": "off the train"},
      (status_set, status_changed, watch.get("user_status"), events))

other.send_message({"type": "stream", "to": "terminal", "topic": "greetings", "content": "live from the API"})
pump(10, until="live from the API")
check("a message sent meanwhile arrives through the event queue", "live from the API" in text(), text())

keys("c", "terminal", "\t", "from zt", "\t", "typed in the terminal", "\x04")
pump(5)
mine = [m for m in newest(other) if m["sender_email"] == me.email]
check("composes and sends a channel message", len(mine) == 1 and mine[0]["subject"] == "from zt" and "typed in the terminal" in mine[0]["content"], mine)
message_id = mine[0]["id"] if mine else None

keys("\x1b", "G")  # leave the compose box, go to the newest message (ours)
keys("+")
pump(5, until=":thumbs_up:")
mine = {m["id"]: m for m in newest(me)}
check("+ adds a thumbs_up reaction", message_id in mine and [r["emoji_name"] for r in mine[message_id]["reactions"]] == ["thumbs_up"] and ":thumbs_up:" in text(), mine.get(message_id))

keys("*")
pump(3)
mine = {m["id"]: m for m in newest(me)}
check("* stars the message", message_id in mine and "starred" in mine[message_id]["flags"], mine.get(message_id))

keys("e", "\x05", " (edited)", "\x04")
pump(5, until="EDITED")
raw = {m["id"]: m for m in newest(me, raw=True)}
check("e edits the message, and the edit event redraws it",
      message_id in raw and raw[message_id]["content"] == "typed in the terminal (edited)" and "EDITED" in text(), (raw.get(message_id), text()))

keys("i")
pump(3, until="Message Information")
check("i shows the message's information, with its reactions", "Message Information" in text() and "thumbs_up" in text(), text())
keys("\x1b")

keys("k", "k")  # up over the two unread messages
pump(3)
flags = {m["id"]: m["flags"] for m in newest(me)}
check("the messages the focus passed are marked read", all("read" in f for f in flags.values()), flags)

keys("q", "term", "\r", "m", "\r")  # find the channel, mute it, confirm
pump(5)
muted = [sub["is_muted"] for sub in me.get_subscriptions()["subscriptions"] if sub["name"] == "terminal"]
check("m mutes the channel, and the update event marks it", muted == [True] and any((left := line.split("│")[0].strip()).startswith("# terminal") and left.endswith("M") for line in text().split("\n")), (muted, text()))

tracebacks = [name for name in os.listdir(workdir) if "traceback" in name]
check("zulip-terminal logged no traceback", not tracebacks, [open(os.path.join(workdir, name)).read() for name in tracebacks])
os.kill(pid, signal.SIGKILL)
print("SUMMARY %d/%d" % (sum(results), len(results)), flush=True)
sys.exit(0 if all(results) else 1)
`;

/** Requests the services answered with an error status, by service, method and route (from the in-process metrics). */
async function failedRequests(): Promise<string[]> {
  const metrics = await metricsRegistry().getMetricsAsJSON();
  const requests = metrics.find((metric) => metric.name === 'teamchat_http_requests_total');
  return (
    (requests?.values ?? [])
      // 499: the long-poll cut short when the client is stopped.
      .filter((value) => Number(value.labels.status) >= 400 && Number(value.labels.status) !== 499)
      .map(
        (value) =>
          `${value.labels.service} ${value.labels.method} ${value.labels.route} -> ${value.labels.status} (x${value.value})`,
      )
  );
}

async function main() {
  const stack = await startStack({ services: ['messages', 'channels', 'uploads', 'events', 'worker'] });
  const me = await stack.createUser({ fullName: 'Term Inal' });
  const other = await stack.createUser({ fullName: 'Other Person' });
  const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'zulip-terminal-'));
  // zulip-terminal refuses a zuliprc others can read.
  fs.writeFileSync(
    path.join(workdir, 'zuliprc'),
    `[api]\nemail=${me.deliveryEmail}\nkey=${me.apiKey}\nsite=${stack.gatewayUrl}\n`,
    { mode: 0o600 },
  );
  await me.client.post('/api/v1/users/me/subscriptions', {
    subscriptions: JSON.stringify([{ name: 'terminal' }]),
    principals: JSON.stringify([me.id, other.id]),
  });
  await other.client.post('/api/v1/messages', {
    type: 'stream',
    to: 'terminal',
    topic: 'greetings',
    content: 'hello from **other**',
  });
  await other.client.post('/api/v1/messages', {
    type: 'private',
    to: JSON.stringify([me.id]),
    content: 'a direct hello',
  });

  // Not spawnSync: the stack runs in this process and must keep answering.
  const child = spawn(
    '/usr/bin/python3',
    ['-c', SCRIPT, workdir, other.deliveryEmail, other.apiKey, stack.gatewayUrl],
    { stdio: 'inherit' },
  );
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const failed = await failedRequests();
  console.log(
    failed.length
      ? `requests answered with an error:\n  ${failed.join('\n  ')}`
      : 'no request was answered with an error',
  );
  await stack.close();
  fs.rmSync(workdir, { recursive: true, force: true });
  process.exit(code === 0 && !failed.length ? 0 : 1);
}
void main();
