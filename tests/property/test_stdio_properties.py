"""Properties of the stdio wire: any JSON a client can write gets exactly one JSON-RPC reply.

One long-lived ``kb-mcp serve`` per module, fed raw lines. JSON text may carry what a Python
client object cannot: ``\\ud800`` escapes (a lone surrogate once decoded), in argument
values, argument names and URIs. Each request gets a reply with its id within a deadline
(never silence), a tool failure is an ``isError`` result with a stable code, a refused read
is -32002, and nothing is an internal error (-32603). A line that is not JSON at all gets a
parse error (-32700), a request whose id is neither a string nor an integer gets an invalid
request (-32600, id null), and the server keeps answering afterwards.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from tests.property.support import budget, open_kb, write_tree
from tests.property.test_path_properties import uris
from tests.property.test_tool_properties import STABLE_CODES, arguments, json_values

SECRET = "SECRET-LAUNCH-CODES-4242"
#: Per reply, once the model is loaded (the fixture loads it before the first example).
DEADLINE_S = 15.0
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
RESOURCE_NOT_FOUND, INTERNAL_ERROR = -32002, -32603


class Wire:
    """A ``kb-mcp serve`` subprocess and a thread collecting its stdout lines."""

    def __init__(self, kb: Path, env: dict[str, str]) -> None:
        self.kb, self.env = kb, env
        self.next_id = 0
        self.start()

    def start(self) -> None:
        """Start the server, say hello, and load the model (so replies come fast)."""
        command = str(Path(sys.executable).with_name("kb-mcp"))
        self.proc = subprocess.Popen(
            [command, "serve", "--kb-path", str(self.kb), "--no-watch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=self.env,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        reply = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                            "clientInfo": {"name": "property", "version": "1"}},
                             deadline=120.0)
        assert "result" in reply, reply
        self.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        reply = self.request("tools/call", {"name": "search", "arguments": {"query": "keys"}},
                             deadline=120.0)
        assert not reply["result"].get("isError"), reply

    def _pump(self, stream: IO[bytes]) -> None:
        try:
            for line in stream:
                self.lines.put(line)
        finally:
            stream.close()
            self.lines.put(None)

    def write(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply_to(self, request_id: object, deadline: float = DEADLINE_S) -> dict[str, Any]:
        """The reply carrying ``request_id``; every stdout line on the way must be JSON-RPC.

        No reply in time: the server is restarted (so the next example starts clean) and
        the example fails.
        """
        end = time.monotonic() + deadline
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                self.stop()
                self.start()
                raise AssertionError(f"no reply to request {request_id!r} within "
                                     f"{deadline:.0f}s") from None
            assert line is not None, "the server closed stdout"
            message = json.loads(line.decode("utf-8"))  # strict UTF-8: no lone surrogates
            assert message.get("jsonrpc") == "2.0", line
            if "method" in message:  # a notification from the server
                continue
            if message.get("id") == request_id:
                return dict(message)

    def request(self, method: str, params: Any, deadline: float = DEADLINE_S) -> dict[str, Any]:
        self.next_id += 1
        request_id = self.next_id
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.write(json.dumps(body).encode("ascii"))  # ensure_ascii: \ud800 stays an escape
        return self.reply_to(request_id, deadline)

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=30)


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory, embedder: Any, model_cache: Path
         ) -> Iterator[Wire]:
    base = tmp_path_factory.mktemp("stdio")
    root = base / "kb"
    write_tree(root, {"guides/keys.md": "# Keys\n\nRotate the signing keys every 90 days.\n",
                      "readme.md": "# About\n\nThe team handbook.\n"})
    write_tree(base, {"secret.md": f"# Secret\n\n{SECRET}\n"})
    (root / "link.md").symlink_to("../secret.md")
    kb = open_kb(root, embedder)
    kb.index()
    kb.close()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
           "XDG_CACHE_HOME": str(model_cache.parent / "xdg")}
    w = Wire(root, env)
    yield w
    w.stop()


def check_reply(reply: dict[str, Any], allowed_errors: set[int]) -> None:
    assert SECRET not in json.dumps(reply, ensure_ascii=False)
    if "error" in reply:
        assert reply["error"]["code"] in allowed_errors, reply["error"]
        assert reply["error"]["code"] != INTERNAL_ERROR
        return
    result = reply["result"]
    if result.get("isError"):
        code = json.loads(result["content"][0]["text"])["error"]["code"]
        assert code in STABLE_CODES, result


surrogate_text = st.lists(st.one_of(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
                                    st.characters()), max_size=8).map("".join)
#: A request the server never answers costs a whole deadline, so no shrinking here: a
#: failure reports the first failing example (they are small already).
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
tools = st.sampled_from(["search", "search", "get_document", "get_document", "list_topics"])


@settings(max_examples=budget(150), phases=NO_SHRINK)
@given(data=st.data())
def test_any_tool_call_over_stdio_gets_one_reply(wire: Wire, data: st.DataObject) -> None:
    name = data.draw(tools, label="tool")
    args = data.draw(arguments(name), label="arguments")
    if data.draw(st.booleans(), label="surrogate key"):
        args[data.draw(surrogate_text, label="key")] = data.draw(json_values, label="value")
    reply = wire.request("tools/call", {"name": name, "arguments": args})
    check_reply(reply, {INVALID_PARAMS})


@settings(max_examples=budget(150), phases=NO_SHRINK)
@given(uri=uris(("/etc", "../secret.md")))
def test_any_resource_read_over_stdio_gets_one_reply(wire: Wire, uri: str) -> None:
    reply = wire.request("resources/read", {"uri": uri})
    check_reply(reply, {RESOURCE_NOT_FOUND, INVALID_PARAMS})


not_json = st.one_of(
    st.text(max_size=40),
    st.sampled_from(['{"jsonrpc": "2.0", "id": 1, "method": ', "{", "[", '"\\ud800', "nul\x00l",
                     "{'single': 'quotes'}", '{"a": NaN}', "\ufeff{}"]),
).filter(lambda t: "\n" not in t and "\r" not in t and t.strip() != "")


def answered_with_null_id(parsed: Any) -> bool:
    """Anything but a notification (a method, no id) or a request with a usable id."""
    if not isinstance(parsed, dict) or "method" not in parsed:
        return True
    if "id" not in parsed:
        return False
    return isinstance(parsed["id"], bool) or not isinstance(parsed["id"], int | str)


@settings(max_examples=budget(100), phases=NO_SHRINK)
@given(garbage=not_json)
def test_a_line_that_is_not_a_request_gets_an_error_and_the_server_goes_on(
    wire: Wire, garbage: str
) -> None:
    try:
        parsed = json.loads(garbage)
    except ValueError:
        parsed = None
    wire.write(garbage.encode("utf-8", "surrogatepass"))
    if answered_with_null_id(parsed):
        reply = wire.reply_to(None)
        assert reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), reply
    reply = wire.request("tools/call", {"name": "list_topics", "arguments": {}})
    assert "result" in reply and not reply["result"].get("isError"), reply


#: JSON text for an id that is neither a string nor an integer: ``1e400`` is infinity once
#: parsed, ``1.0`` a fraction however round.
bad_ids = st.one_of(
    st.sampled_from(["1e400", "-1e400", "1.0", "0.5", "true", "false", "null", "{}", "[]",
                     '{"id": 1}', "[1]"]),
    json_values.filter(lambda v: not isinstance(v, int | str) or isinstance(v, bool))
    .map(json.dumps),
)


@settings(max_examples=budget(60), phases=NO_SHRINK)
@given(raw_id=bad_ids, method=st.sampled_from(["ping", "tools/list", "tools/call"]))
def test_a_request_whose_id_is_not_a_string_or_integer_gets_invalid_request(
    wire: Wire, raw_id: str, method: str
) -> None:
    wire.write(f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "{method}"}}'.encode())
    reply = wire.reply_to(None)
    assert reply["error"]["code"] == INVALID_REQUEST, reply
    reply = wire.request("tools/call", {"name": "list_topics", "arguments": {}})
    assert "result" in reply and not reply["result"].get("isError"), reply
