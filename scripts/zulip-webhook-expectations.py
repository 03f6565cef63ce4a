#!/usr/bin/env python3
# Writes services/messages/test/webhooks/expected/<name>.json: the facts each of Zulip's tests of an
# integration states (zerver/webhooks/<name>/tests.py): the fixture or body posted, the URL's query,
# the headers and content type sent, and the topic and message Zulip posts, that it posts nothing,
# or its answer. tests.py is read from a Zulip clone with `git show` and its test methods run against
# a recorder that stands in for Zulip's WebhookTestCase (zerver/lib/test_classes.py): posting
# records the request instead of sending it, and the assertions record what they assert. Tests the
# recorder cannot read (they use Zulip's internals) are listed under "unhandled" with the exception.
#
# Usage: python3 scripts/zulip-webhook-expectations.py [--fixtures] <name>...
#   --fixtures   also copy zerver/webhooks/<name>/fixtures/* unchanged into fixtures/<name>/
#   --stdout     print the table instead of writing it
#   ZULIP_REPO   the Zulip git directory (default /work/.mirror/Welets+zulip/repo); ZULIP_REF the tag (refs/tags/10.2)
import argparse
import ast
import builtins
import functools
import io
import json
import os
import subprocess
import sys
import types
import unittest.mock

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WEBHOOK_TESTS = os.path.join(ROOT, "services/messages/test/webhooks")
ZULIP_REPO = os.environ.get("ZULIP_REPO", "/work/.mirror/Welets+zulip/repo")
ZULIP_REF = os.environ.get("ZULIP_REF", "refs/tags/10.2")
# The key the recorder's bot has; the jest harness puts the real bot's key in its place.
API_KEY = "APIKEY"
# The order of a case's keys in the table (that of ZulipCase in test/webhooks/harness.ts).
CASE_KEYS = [
    "test",
    "fixture",
    "body",
    "query",
    "contentType",
    "headers",
    "directMessage",
    "noop",
    "topic",
    "content",
    "error",
    "basicAuth",
    "messages",
]


def zulip_bytes(path: str) -> bytes | None:
    """A file of Zulip's tree; a symbolic link (json's fixtures are) is followed."""
    entry = subprocess.run(
        ["git", "-C", ZULIP_REPO, "ls-tree", ZULIP_REF, "--", path], capture_output=True, text=True
    ).stdout.split()
    if not entry:
        return None
    data = subprocess.run(
        ["git", "-C", ZULIP_REPO, "cat-file", "blob", entry[2]], capture_output=True, check=True
    ).stdout
    if entry[0] == "120000":
        return zulip_bytes(os.path.normpath(os.path.join(os.path.dirname(path), data.decode())))
    return data


def zulip_file(path: str) -> str | None:
    data = zulip_bytes(path)
    return None if data is None else data.decode()


def zulip_open(file, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
    """open() for tests.py: a relative path is one in Zulip's tree, as tests run from its root."""
    if isinstance(file, str) and not os.path.isabs(file) and "r" in mode and "+" not in mode:
        data = zulip_bytes(os.path.normpath(file))
        if data is None:
            raise FileNotFoundError(2, "No such file or directory", file)
        return io.BytesIO(data) if "b" in mode else io.StringIO(data.decode())
    return open(file, mode, *args, **kwargs)


@functools.cache
def literal_constants(module: str) -> dict[str, object]:
    """A Zulip module's top-level constants (COMMITS_LIMIT), read from its source."""
    source = zulip_file(module.replace(".", "/") + ".py")
    constants: dict[str, object] = {}
    if source is None:
        return constants
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and node.value is not None:
            try:
                constants[target.id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return constants


class Stub:
    """Whatever a test reads from Zulip's internals: any attribute, call or item is another Stub."""

    def __init__(self, name: str = "stub") -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, name: str) -> "Stub":
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(f"{self._name}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> "Stub":
        return Stub(f"{self._name}()")

    def __getitem__(self, key: object) -> "Stub":
        return Stub(f"{self._name}[{key!r}]")

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())

    def __enter__(self) -> "Stub":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"<{self._name}>"


class NotCalled:
    """A patched function's `called`: asserting it false says the post sent no message."""

    def __init__(self, recorder: "WebhookTestCase") -> None:
        self.recorder = recorder

    def __bool__(self) -> bool:
        return False


class RecordingMock(Stub):
    """What patch() gives a test: nothing is called through it, every assertion on it passes."""

    def __init__(self, recorder: "WebhookTestCase") -> None:
        super().__init__("mock")
        object.__setattr__(self, "_recorder", recorder)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        if name == "called":
            return NotCalled(self._recorder)
        if name.startswith("assert_"):
            return lambda *args, **kwargs: None
        return super().__getattr__(name)


class Patcher:
    """unittest.mock.patch for the recorded test: a decorator, a context manager, or start()/stop()."""

    current: "WebhookTestCase | None" = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.replaces = "new" in kwargs or len(args) > 1

    def _mock(self) -> RecordingMock:
        assert Patcher.current is not None
        return RecordingMock(Patcher.current)

    def __call__(self, function):  # type: ignore[no-untyped-def]
        @functools.wraps(function)
        def patched(*args: object, **kwargs: object) -> object:
            return function(*args, **kwargs) if self.replaces else function(*args, self._mock(), **kwargs)

        return patched

    def __enter__(self) -> RecordingMock:
        return self._mock()

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self) -> RecordingMock:
        return self._mock()

    def stop(self) -> None:
        return None


def patch(*args: object, **kwargs: object) -> Patcher:
    return Patcher(*args, **kwargs)


patch.object = lambda *args, **kwargs: Patcher(*args[1:], **kwargs)  # type: ignore[attr-defined]
patch.dict = lambda *args, **kwargs: Patcher(None, None)  # type: ignore[attr-defined]
patch.multiple = lambda *args, **kwargs: Patcher(None, None)  # type: ignore[attr-defined]


class FixtureBody(str):
    """A fixture's text as get_body returns it, remembering the fixture's name."""

    fixture: str


class Fact:
    """A posted message's topic or content, as a test reads it to assert on it."""

    def __init__(self, message: "Message", field: str) -> None:
        self.message, self.field = message, field


class Message:
    """A message the recorded post made: `order` 0 for the post's own, -1 the newest, -2 the one before."""

    def __init__(self, case: dict, order: int) -> None:
        self.case, self.order = case, order

    @property
    def content(self) -> Fact:
        return Fact(self, "content")

    def topic_name(self) -> Fact:
        return Fact(self, "topic")

    def record(self, field: str, value: str) -> None:
        slots = self.case.setdefault("_messages", {})
        slots.setdefault(self.order, {})[field] = value


class TestUser(Stub):
    """The test's bot: URLs a test builds from its key carry the recorder's (APIKEY)."""

    api_key = API_KEY


class FailureText:
    """The text of the AssertionError a post inside assertRaises(AssertionError) fails with."""

    def __init__(self, expected: "ExpectedFailure") -> None:
        self.expected = expected


class ExpectedFailure:
    """assertRaises(AssertionError) around posts: Zulip's check fails on the answer, an error, and the
    test's assertIn on the failure's text names the answer's msg."""

    def __init__(self, recorder: "WebhookTestCase") -> None:
        self.recorder = recorder
        self.exception = types.SimpleNamespace(args=(FailureText(self),))

    def __enter__(self) -> "ExpectedFailure":
        self.first_case = len(self.recorder.cases)
        return self

    def __exit__(self, *exc: object) -> None:
        self.cases = self.recorder.cases[self.first_case :]

    def record_error(self, msg: str) -> None:
        for case in self.cases:
            for expectation in ("noop", "topic", "content", "messages"):
                case.pop(expectation, None)
            case["error"] = msg


class Response:
    """What client_post answers: the recorder has no server, so no answer to read."""

    def __init__(self, case: dict) -> None:
        self.case = case
        self.status_code = Stub("status_code")
        self.content = Stub("content")


def query_of(url: str) -> str:
    return url.split("?", 1)[1] if "?" in url else ""


class WebhookTestCase:
    """Zulip's WebhookTestCase, recording what each test posts and asserts."""

    CHANNEL_NAME: str | None = None
    TEST_USER_EMAIL = "webhook-bot@zulip.com"
    URL_TEMPLATE: str
    WEBHOOK_DIR_NAME: str | None = None
    VIEW_FUNCTION_NAME: str | None = None
    # What the recorder lets a test call without recording anything (setup, and checks of state
    # the recorder has no part in).
    IGNORED = frozenset(
        [
            "subscribe",
            "login",
            "login_user",
            "logout",
            "assert_length",
            "assert_message_stream_name",
            "assert_json_success",
            "assertIsNotNone",
            "assertIsInstance",
            "addCleanup",
        ]
    )

    def __init__(self) -> None:
        self.cases: list[dict] = []
        self.test_user = TestUser("test_user")
        self.example_user = lambda *args, **kwargs: Stub("user")
        self.maxDiff = None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        if name in WebhookTestCase.IGNORED:
            return lambda *args, **kwargs: None
        raise AttributeError(f"the recorder has no {name}")

    def setUp(self) -> None:
        self.url = self.build_webhook_url()

    def build_webhook_url(self, *args: str, **kwargs: str) -> str:
        # As Zulip's: the template, then each option with "&", the last "&" dropped if any were given.
        if "api_key" in self.URL_TEMPLATE:
            url = self.URL_TEMPLATE.format(api_key=API_KEY, stream=self.CHANNEL_NAME)
        else:
            url = self.URL_TEMPLATE.format(stream=self.CHANNEL_NAME)
        has_arguments = kwargs or args
        url = f"{url}?" if has_arguments and "?" not in url else f"{url}&"
        for key, value in kwargs.items():
            url = f"{url}{key}={value}&"
        for arg in args:
            url = f"{url}{arg}&"
        return url[:-1] if has_arguments else url

    def webhook_fixture_data(self, type: str, action: str, file_type: str = "json") -> FixtureBody:
        text = zulip_file(f"zerver/webhooks/{type}/fixtures/{action}.{file_type}")
        if text is None:
            raise FileNotFoundError(f"zerver/webhooks/{type}/fixtures/{action}.{file_type}")
        body = FixtureBody(text)
        body.fixture = action
        return body

    def get_body(self, fixture_name: str) -> str:
        assert self.WEBHOOK_DIR_NAME is not None
        body = self.webhook_fixture_data(self.WEBHOOK_DIR_NAME, fixture_name)
        json.loads(body)
        return body

    def get_payload(self, fixture_name: str) -> object:
        return self.get_body(fixture_name)

    # Posting: each post is one case.

    def _case(self, url: str, content_type: str | None, extra: dict) -> dict:
        case: dict = {"test": self.current_test, "query": query_of(url)}
        if content_type != "application/json":
            case["contentType"] = content_type
        for ignored in ("skip_user_agent", "follow", "secure", "headers", "intentionally_undocumented"):
            extra.pop(ignored, None)
        if extra.pop("HTTP_AUTHORIZATION", None) is not None:
            case["basicAuth"] = True
        if extra:
            case["headers"] = dict(extra)
        self.cases.append(case)
        return case

    def check_webhook(
        self,
        fixture_name: str,
        expected_topic_name: str | None = None,
        expected_message: str | None = None,
        content_type: str | None = "application/json",
        expect_noop: bool = False,
        **extra: str,
    ) -> None:
        self.get_payload(fixture_name)
        case = self._case(self.url, content_type, extra)
        case["fixture"] = fixture_name
        if expect_noop:
            case["noop"] = True
        else:
            case["topic"] = expected_topic_name
            case["content"] = expected_message

    def api_channel_message(
        self,
        user: object,
        fixture_name: str,
        expected_topic: str | None = None,
        expected_message: str | None = None,
        content_type: str | None = "application/json",
        expect_noop: bool = False,
        **extra: str,
    ) -> None:
        self.check_webhook(fixture_name, expected_topic, expected_message, content_type, expect_noop, **extra)
        self.cases[-1]["basicAuth"] = True

    def send_and_test_private_message(
        self,
        fixture_name: str,
        expected_message: str,
        content_type: str = "application/json",
        *,
        sender: object = None,
        **extra: str,
    ) -> Message:
        self.get_payload(fixture_name)
        case = self._case(self.url, content_type, extra)
        case["fixture"] = fixture_name
        case["directMessage"] = True
        case["content"] = expected_message
        return Message(case, 0)

    def send_webhook_payload(self, user: object, url: str, payload: object, **extra: str) -> Message:
        case = self._case(url, extra.pop("content_type", None), extra)
        if isinstance(payload, FixtureBody):
            case["fixture"] = payload.fixture
        else:
            case["body"] = payload
        return Message(case, 0)

    def client_post(self, url: str, info: object = {}, content_type: str | None = None, **extra: str) -> Response:
        case = self._case(url, content_type, extra)
        case["body"] = str(info) if isinstance(info, FixtureBody) else info
        return Response(case)

    def get_last_message(self) -> Message:
        return Message(self.cases[-1], -1)

    def get_second_to_last_message(self) -> Message:
        return Message(self.cases[-1], -2)

    # Assertions: those about a post record what they assert; the rest check what they can.

    def assert_channel_message(self, message: Message, channel_name: str, topic_name: str, content: str) -> None:
        message.record("topic", topic_name)
        message.record("content", content)

    def assert_json_error(self, result: Response, msg: str, status_code: int = 400) -> None:
        result.case["error"] = msg

    def assert_in_response(self, substring: str, response: Response) -> None:
        # Zulip's tests use it for the answer's msg (UNSUPPORTED_WEBHOOK_EVENT_TYPE's, a 200).
        response.case["error"] = substring

    def assertEqual(self, first: object, second: object, msg: object = None) -> None:
        for fact, value in ((first, second), (second, first)):
            if isinstance(fact, Fact):
                fact.message.record(fact.field, value)
                return
        if not any(isinstance(side, (Stub, Response, Message)) for side in (first, second)) and first != second:
            raise AssertionError(f"{first!r} != {second!r}")

    def assertFalse(self, value: object, msg: object = None) -> None:
        if isinstance(value, NotCalled):
            value.recorder.cases[-1]["noop"] = True
        elif not isinstance(value, Stub) and value:
            raise AssertionError(f"{value!r} is not false")

    def assertTrue(self, value: object, msg: object = None) -> None:
        if not isinstance(value, Stub) and not value:
            raise AssertionError(f"{value!r} is not true")

    def assertRaises(self, expected: type, *args: object, **kwargs: object) -> ExpectedFailure:
        if expected is not AssertionError or args:
            raise AttributeError(f"the recorder has no assertRaises({expected.__name__})")
        return ExpectedFailure(self)

    def assertIn(self, member: object, container: object, msg: object = None) -> None:
        if isinstance(container, FailureText):
            container.expected.record_error(str(member))
            return
        if not any(isinstance(side, Stub) for side in (member, container)) and member not in container:  # type: ignore[operator]
            raise AssertionError(f"{member!r} not in {container!r}")


def stub_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    if name == "zerver.lib.test_classes":
        module.WebhookTestCase = WebhookTestCase  # type: ignore[attr-defined]
        return module

    def attribute(attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        constants = literal_constants(name)
        return constants[attr] if attr in constants else Stub(f"{name}.{attr}")

    module.__getattr__ = attribute  # type: ignore[attr-defined]
    module.__path__ = []  # type: ignore[attr-defined]
    return module


def recording_import(name, globals=None, locals=None, fromlist=(), level=0):  # type: ignore[no-untyped-def]
    """tests.py's imports: Zulip's and Django's modules are stubs, unittest.mock's patch records."""
    if name.split(".")[0] in ("zerver", "django", "corporate", "analytics", "zilencer", "confirmation"):
        module = stub_module(name)
        return module if fromlist else stub_module(name.split(".")[0])
    if name == "unittest.mock" and fromlist:
        mock = types.ModuleType(name)
        mock.__dict__.update(vars(unittest.mock))
        mock.patch = patch  # type: ignore[attr-defined]
        return mock
    return builtins.__import__(name, globals, locals, fromlist, level)


def record(name: str) -> dict:
    source = zulip_file(f"zerver/webhooks/{name}/tests.py")
    if source is None:
        raise SystemExit(f"no zerver/webhooks/{name}/tests.py at {ZULIP_REF} in {ZULIP_REPO}")
    namespace: dict = {
        "__name__": f"zerver.webhooks.{name}.tests",
        "__builtins__": {**vars(builtins), "__import__": recording_import, "open": zulip_open},
    }
    exec(compile(source, f"zerver/webhooks/{name}/tests.py", "exec"), namespace)
    cases: list[dict] = []
    unhandled: list[list[str]] = []
    # Each test class in the file's order, its tests in unittest's (sorted by name).
    classes = [
        value
        for value in namespace.values()
        if isinstance(value, type) and issubclass(value, WebhookTestCase) and value is not WebhookTestCase
    ]
    for test_class in classes:
        for test in sorted(attr for attr in dir(test_class) if attr.startswith("test")):
            recorder = test_class()
            recorder.current_test = test
            Patcher.current = recorder
            try:
                recorder.setUp()
                getattr(recorder, test)()
            except Exception as error:
                unhandled.append([test, repr(error)])
                continue
            if not recorder.cases:
                # It calls Zulip's functions directly (a unit test of the view's helpers).
                unhandled.append([test, "posts nothing: it tests Zulip's own functions"])
                continue
            cases.extend(recorder.cases)
    return {
        "source": f"Expected topics and messages: facts read from Zulip 10.2's zerver/webhooks/{name}/tests.py (Apache 2.0)",
        "unhandled": unhandled,
        "cases": [finish(case) for case in cases],
    }


def finish(case: dict) -> dict:
    slots = case.pop("_messages", None)
    if slots:
        case["messages"] = [slots[order] for order in sorted(slots, key=lambda order: (order != 0, order))]
    return {key: case[key] for key in CASE_KEYS if key in case}


def copy_fixtures(name: str) -> None:
    listing = subprocess.run(
        ["git", "-C", ZULIP_REPO, "ls-tree", "--name-only", f"{ZULIP_REF}:zerver/webhooks/{name}/fixtures"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    target = os.path.join(WEBHOOK_TESTS, "fixtures", name)
    os.makedirs(target, exist_ok=True)
    for file in listing:
        data = zulip_bytes(f"zerver/webhooks/{name}/fixtures/{file}")
        assert data is not None
        with open(os.path.join(target, file), "wb") as out:
            out.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="+", help="integrations, as Zulip's zerver/webhooks/<name>")
    parser.add_argument("--fixtures", action="store_true", help="also copy the fixtures unchanged")
    parser.add_argument("--stdout", action="store_true", help="print instead of writing expected/<name>.json")
    options = parser.parse_args()
    for name in options.names:
        text = json.dumps(record(name), indent=1, ensure_ascii=False)
        if options.stdout:
            print(text)
            continue
        if options.fixtures:
            copy_fixtures(name)
        with open(os.path.join(WEBHOOK_TESTS, "expected", f"{name}.json"), "w") as out:
            out.write(text)
        print(f"expected/{name}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
