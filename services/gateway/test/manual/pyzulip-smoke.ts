// Manual check (not part of npm test: python-zulip-api is not a project dependency and its
// package index is out of reach on CI machines): the everyday calls of python-zulip-api's
// Client against a stack, each answer printed; endpoints it has no method for go through its
// generic call_endpoint, as its users call them. Needs the library on PYTHONPATH:
//   PYTHONPATH=/path/to/python-zulip-api/zulip node --import tsx services/gateway/test/manual/pyzulip-smoke.ts
import { spawn } from 'node:child_process';
import { startStack } from '@teamchat/stack';

const SCRIPT = String.raw`
import base64, json, sys, tempfile, time, zulip
email, key, site = sys.argv[1:4]
c = zulip.Client(email=email, api_key=key, site=site)
results = []
def check(name, answer, ok=lambda a: True):
    good = answer.get("result") == "success" and ok(answer)
    results.append(good)
    print(("ok   " if good else "FAIL ") + name + ("" if good else " " + json.dumps(answer)[:300]), flush=True)
    return answer
check("get_profile", c.get_profile(), lambda a: a["email"] == email)
check("get_members", c.get_members(), lambda a: len(a["members"]) >= 2)
check("add_subscriptions", c.add_subscriptions([{"name": "python"}]))
check("get_subscriptions", c.get_subscriptions(), lambda a: any(s["name"] == "python" for s in a["subscriptions"]))
stream_id = check("get_stream_id", c.get_stream_id("python"))["stream_id"]
sent = check("send_message (channel)", c.send_message({"type": "stream", "to": "python", "topic": "hello", "content": "hi **there**"}))
check("send_message (direct)", c.send_message({"type": "private", "to": [sys.argv[4]], "content": "psst"}))
check("get_messages", c.get_messages({"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": [{"operator": "channel", "operand": "python"}]}),
      lambda a: any(m["id"] == sent["id"] for m in a["messages"]))
check("get_raw_message", c.get_raw_message(sent["id"]), lambda a: a["raw_content"] == "hi **there**")
check("update_message_flags", c.update_message_flags({"messages": [sent["id"]], "op": "add", "flag": "starred"}), lambda a: a["messages"] == [sent["id"]])
check("mark_all_as_read", c.mark_all_as_read())
check("get_stream_topics", c.get_stream_topics(stream_id), lambda a: a["topics"][0]["name"] == "hello")
check("set_typing_status", c.set_typing_status({"op": "start", "stream_id": stream_id, "type": "stream", "topic": "hello"}))
check("get_user_groups", c.get_user_groups())
check("create_user_group", c.create_user_group({"name": "pythonistas", "description": "py", "members": [c.get_profile()["user_id"]]}))
with tempfile.NamedTemporaryFile("w+", suffix=".txt") as f:
    f.write("uploaded by python"); f.flush(); f.seek(0)
    up = check("upload_file", c.upload_file(f), lambda a: a["url"].startswith("/user_uploads/"))
check("get_attachments", c.call_endpoint("attachments", method="GET"))
reg = check("register", c.register(event_types=["message"]))
c.send_message({"type": "stream", "to": "python", "topic": "hello", "content": "for the queue"})
check("get_events", c.get_events(queue_id=reg["queue_id"], last_event_id=-1), lambda a: any(e["type"] == "message" for e in a["events"]))
check("deregister", c.deregister(reg["queue_id"]))
check("update_presence", c.update_presence({"status": "active"}))
check("get_user_presence", c.get_user_presence(email), lambda a: a["presence"]["aggregated"]["status"] == "active")
check("get_realm_presence", c.get_realm_presence(), lambda a: email in a["presences"])
check("get_realm_emoji", c.get_realm_emoji(), lambda a: a["emoji"] == {})
check("get_stream_email_address", c.get_stream_email_address(stream_id), lambda a: a["email"] == "")
# Custom emoji: the library's own methods (the image's bytes decide its type; it sends no Content-Type).
png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
with tempfile.NamedTemporaryFile("w+b", suffix=".png") as f:
    f.write(png); f.flush(); f.seek(0)
    check("upload_custom_emoji", c.upload_custom_emoji("snake_case", f))
emoji = check("get_realm_emoji (the uploaded one)", c.get_realm_emoji(),
              lambda a: [(e["name"], e["deactivated"]) for e in a["emoji"].values()] == [("snake_case", False)])["emoji"]
check("add_reaction (custom emoji)", c.add_reaction({"message_id": sent["id"], "emoji_name": "snake_case"}))
check("delete_custom_emoji", c.delete_custom_emoji("snake_case"))
check("get_realm_emoji (deactivated)", c.get_realm_emoji(), lambda a: [e["deactivated"] for e in a["emoji"].values()] == [True])
# Endpoints the library has no method for, through its generic call_endpoint (which JSON-encodes non-string values).
other_id = [m["user_id"] for m in c.get_members()["members"] if m["email"] == sys.argv[4]][0]
check("users/me/status (text and emoji by name)",
      c.call_endpoint("users/me/status", method="POST", request={"status_text": "busy", "emoji_name": "coffee", "away": False}))
check("users/{id}/status", c.call_endpoint(f"users/{c.get_profile()['user_id']}/status", method="GET"),
      lambda a: a["status"] == {"status_text": "busy", "emoji_name": "coffee", "emoji_code": "2615", "reaction_type": "unicode_emoji"})
check("register user_status", c.register(event_types=["user_status"], fetch_event_types=["user_status"]),
      lambda a: a["user_status"][str(c.get_profile()["user_id"])]["status_text"] == "busy")
check("users/me/muted_users (mute)", c.call_endpoint(f"users/me/muted_users/{other_id}", method="POST"))
check("users/me/muted_users (unmute)", c.call_endpoint(f"users/me/muted_users/{other_id}", method="DELETE"))
scheduled = check("scheduled_messages (create)", c.call_endpoint("scheduled_messages", method="POST", request={
    "type": "stream", "to": stream_id, "topic": "later", "content": "from the future", "scheduled_delivery_timestamp": int(time.time()) + 3600}))
check("scheduled_messages (list)", c.call_endpoint("scheduled_messages", method="GET"),
      lambda a: [m["scheduled_message_id"] for m in a["scheduled_messages"]] == [scheduled.get("scheduled_message_id")])
check("scheduled_messages (delete)", c.call_endpoint(f"scheduled_messages/{scheduled.get('scheduled_message_id')}", method="DELETE"))
snippet = check("saved_snippets (create)", c.call_endpoint("saved_snippets", method="POST", request={"title": "sig", "content": "-- py"}))
check("saved_snippets (list)", c.call_endpoint("saved_snippets", method="GET"),
      lambda a: [(s["id"], s["title"]) for s in a["saved_snippets"]] == [(snippet.get("saved_snippet_id"), "sig")])
check("saved_snippets (delete)", c.call_endpoint(f"saved_snippets/{snippet.get('saved_snippet_id')}", method="DELETE"))
check("messages/{id}/read_receipts", c.call_endpoint(f"messages/{sent['id']}/read_receipts", method="GET"),
      lambda a: a["user_ids"] == [])  # never the sender, and the other user has not read it
check("remove_subscriptions", c.remove_subscriptions(["python"]))
print("SUMMARY %d/%d" % (sum(results), len(results)))
`;

async function main() {
  const stack = await startStack({ services: ['messages', 'channels', 'uploads', 'events', 'worker'] });
  const me = await stack.createUser({ fullName: 'Py Thon' });
  const other = await stack.createUser({ fullName: 'Other' });
  // Read receipts are off in the stack's realm; turned on as a fixture (PATCH /realm is not served).
  const realm = await stack.db.realm.findUniqueOrThrow({ where: { id: stack.realm.id } });
  await stack.db.realm.update({
    where: { id: realm.id },
    data: { settings: { ...(realm.settings as object), realm_enable_read_receipts: true } },
  });
  await stack.fixtureWritten();
  // Not spawnSync: the stack runs in this process and must keep answering.
  const child = spawn(
    '/usr/bin/python3',
    ['-c', SCRIPT, me.deliveryEmail, me.apiKey, stack.gatewayUrl, other.deliveryEmail],
    { stdio: 'inherit' },
  );
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  await stack.close();
  process.exit(code ?? 1);
}
void main();
