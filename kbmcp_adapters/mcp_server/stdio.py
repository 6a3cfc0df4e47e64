"""The stdio transport: one JSON-RPC message per line, and an answer for every line.

The SDK's own stdio transport drops a line it cannot parse without a word, so a client
that sent one waits forever. Here every line gets what JSON-RPC 2.0 prescribes: text that
is not UTF-8 or not JSON gets a parse error (-32700, id null); JSON that is not a message
gets an invalid request (-32600, with the request's id when it has a usable one); a
string holding a lone surrogate escape (``"\\ud800"``, which is no Unicode character and
can be neither stored nor answered back) gets invalid params (-32602) with the id; a
request whose id is neither a string nor an integer (an object, ``1e400``, ``true``,
``null``) gets an invalid request (-32600, id null), never silence.

stdin is read by a daemon thread with plain ``read(2)`` calls: a read blocked on a client
that says nothing never holds up the process's exit (a signal stops the server at once).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import tracemalloc  # noqa: F401 - imported now: a warning at exit must not import
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger(__name__)

Incoming = SessionMessage | Exception
#: Ends the reading of stdin as if the client had closed it (a signal asks for this).
EndInput = Callable[[], None]
#: Bytes asked of the stdin pipe per read.
_READ_SIZE = 1 << 16
#: A ``\uD800``-``\uDFFF`` escape somewhere in the text: only then is the slow check run.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def claim_stdout() -> BinaryIO:
    """Keep stdout for JSON-RPC only: return the real stdout, point fd 1 and sys.stdout at stderr.

    Anything a library prints afterwards (Python or C level) lands on stderr.
    """
    sys.stdout.flush()
    wire = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


def claim_stdin() -> BinaryIO:
    """The real stdin for JSON-RPC, unbuffered (its reader thread holds no buffer lock that
    the interpreter's exit would wait for); fd 0 then reads the null device, so nothing
    else in the process (or a child) can consume the client's messages."""
    wire = os.fdopen(os.dup(0), "rb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return wire


def error_reply(id_: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)
    )


def parse_line(line: bytes) -> SessionMessage | types.JSONRPCError | None:
    """One line from the client: a message for the server, an error to send back, or None
    for a blank line."""
    text = line.strip()
    if not text:
        return None
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        return error_reply(None, types.PARSE_ERROR,
                           f"Parse error: the line is not valid UTF-8 (byte {exc.start})")
    try:
        parsed = json.loads(decoded)
    except json.JSONDecodeError as exc:
        return error_reply(None, types.PARSE_ERROR,
                           f"Parse error: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return error_reply(None, types.PARSE_ERROR, "Parse error: nested too deeply")
    id_ = _usable_id(parsed)
    if _SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(parsed)
        if where is not None:
            in_params = where == "params" or where.startswith("params.")
            return error_reply(
                id_,
                types.INVALID_PARAMS if in_params else types.INVALID_REQUEST,
                f"Invalid {'params' if in_params else 'request'}: {where} holds a lone "
                "surrogate escape (\\ud800-\\udfff), which is not a Unicode character",
            )
    if _bad_request_id(parsed):
        # the SDK would take it for a notification (no reply at all): say what is wrong
        return error_reply(None, types.INVALID_REQUEST,
                           "Invalid Request: the id must be a string or an integer")
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError:
        return error_reply(id_, types.INVALID_REQUEST,
                           "Invalid Request: not a JSON-RPC 2.0 request, notification or "
                           "response")
    return SessionMessage(message)


def _usable_id(parsed: Any) -> str | int | None:
    if not isinstance(parsed, dict):
        return None
    id_ = parsed.get("id")
    if isinstance(id_, bool) or not isinstance(id_, int | str):
        return None
    if isinstance(id_, str) and _has_surrogate(id_):
        return None
    return id_


def _bad_request_id(parsed: Any) -> bool:
    """A request (it has a method) with an id that is neither a string nor an integer:
    an object, an array, a fraction, ``1e400`` (infinity once parsed), a boolean or null.
    (A response's null id is allowed: JSON-RPC gives it to errors about unreadable input.)"""
    if not isinstance(parsed, dict) or "method" not in parsed or "id" not in parsed:
        return False
    id_ = parsed["id"]
    return isinstance(id_, bool) or not isinstance(id_, int | str)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _lone_surrogate(parsed: Any) -> str | None:
    """Where the first string (key or value) holding a lone surrogate is, or None."""
    stack: list[tuple[str, Any]] = [("", parsed)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if _has_surrogate(value):
                return where or "the message"
        elif isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{key}" if where else str(key)
                if _has_surrogate(key):
                    return where or "the message"
                stack.append((path, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
    return None


def encode(message: SessionMessage) -> bytes:
    """One line of JSON for the wire. A message that cannot be encoded (it should not
    happen) becomes an internal error for its request, so the client is not left waiting."""
    try:
        body = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        return (body + "\n").encode("utf-8")
    except (ValueError, UnicodeError) as exc:
        id_ = getattr(message.message, "id", None)
        log.error("could not encode a reply (%s); answering with an internal error",
                  type(exc).__name__)
        if id_ is None:
            return b""
        reply = error_reply(id_, types.INTERNAL_ERROR, "Internal error: see the kb-mcp log")
        return (reply.model_dump_json(by_alias=True) + "\n").encode("utf-8")


@asynccontextmanager
async def stdio_transport(
    wire_in: BinaryIO, wire_out: BinaryIO, on_end_of_input: Callable[[], None]
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[Incoming], MemoryObjectSendStream[SessionMessage],
          EndInput]
]:
    """Streams for ``Server.run`` over a pair of byte pipes, and a function that ends the
    input as if the client had closed stdin (quick; a no-op once the transport is gone).

    ``on_end_of_input`` is called as soon as the input ends (the client closed stdin, or
    ``end_input`` was called), before the server loop winds down, so long work in progress
    can start stopping at once.
    """
    read_send, read_receive = anyio.create_memory_object_stream[Incoming](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_send.clone()  # the reader's own answers to lines it refused
    reading = anyio.CancelScope()
    finished = False

    def end_input() -> None:
        if not finished:
            reading.cancel()

    async def read_lines() -> None:
        lines_send, lines_receive = anyio.create_memory_object_stream[bytes](0)
        pump = threading.Thread(
            target=_pump, args=(wire_in, lines_send, anyio.lowlevel.current_token()),
            name="kb-mcp-stdin", daemon=True,
        )
        pump.start()
        at_end = False
        try:
            with reading, lines_receive:
                async with read_send, replies:
                    async for line in lines_receive:
                        if not line:
                            at_end = True
                            break
                        outcome = parse_line(line)
                        if isinstance(outcome, SessionMessage):
                            await read_send.send(outcome)
                        elif outcome is not None:
                            log.warning("answered a malformed line with JSON-RPC error %d (%s)",
                                        outcome.error.code, outcome.error.message)
                            await replies.send(SessionMessage(outcome))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            if at_end:
                # The thread has handed over end of input and is returning: let it finish
                # now. A daemon thread frozen by the interpreter's exit while it still runs
                # Python code can hold an import lock that the exit then waits for forever.
                # Waited for off the loop: the thread's last hand-over returns only once
                # the loop runs again (a join here held every stdin close up 2 s).
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(partial(pump.join, timeout=2.0))
            lines_send.close()  # a pump still blocked in read(2) finds it closed and ends
            on_end_of_input()

    async def write_lines() -> None:
        closed = False
        async with write_receive:
            async for message in write_receive:
                data = encode(message)
                if not data or closed:
                    continue  # still drained, so no sender waits on a gone client
                try:
                    await anyio.to_thread.run_sync(partial(_write, wire_out, data))
                except OSError as exc:  # the client closed its end of stdout
                    closed = True
                    log.warning("cannot answer the client any more (%s); finishing quietly",
                                exc.strerror or type(exc).__name__)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            yield read_receive, write_send, end_input
    finally:
        finished = True


def _pump(wire_in: BinaryIO, lines: MemoryObjectSendStream[bytes],
          token: anyio.lowlevel.EventLoopToken) -> None:
    """The stdin thread: each line from the client into the event loop, then ``b""`` at
    end of input. It ends quietly once the transport is gone; being a daemon thread, a
    read still blocked then never delays the process's exit."""
    try:
        for line in _lines(wire_in.fileno()):
            anyio.from_thread.run(lines.send, line, token=token)
        anyio.from_thread.run(lines.send, b"", token=token)
    except BaseException as exc:  # noqa: BLE001 - the thread's edge: nothing may escape it
        # the transport or the whole event loop is gone (closed stream, finished run,
        # cancelled at shutdown): nobody waits for lines any more
        log.debug("stdin reader finished: %s", type(exc).__name__)


def _lines(fd: int) -> Iterator[bytes]:
    """The lines read from ``fd`` (each with its newline; the last may lack it), in time
    linear in their length however long a line is."""
    partial = bytearray()
    while True:
        try:
            chunk = os.read(fd, _READ_SIZE)
        except OSError as exc:  # e.g. the terminal went away: the same as end of input
            log.warning("cannot read stdin any more (%s)", exc.strerror or exc)
            chunk = b""
        if not chunk:
            break
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            partial += chunk[start:end + 1]
            yield bytes(partial)
            partial.clear()
            start = end + 1
        partial += chunk[start:]
    if partial:
        yield bytes(partial)


def _write(wire: BinaryIO, data: bytes) -> None:
    wire.write(data)
    wire.flush()


__all__ = ["EndInput", "claim_stdin", "claim_stdout", "encode", "parse_line",
           "stdio_transport"]
