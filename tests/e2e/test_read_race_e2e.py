"""A folder swapped for a link while a client reads through the real server: 0 escapes.

Run with ``-s`` to see the numbers (reads, served, refusals, outside bytes).
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import Env, error_of, run_index, stdio_session, text_of, write
from tests.e2e.test_mcp_stdio import run
from tests.integration.test_root_bound_reads import INSIDE, SECRET, Swapper, Tally

READS = 4000  # half through get_document, half through resources/read
#: requests in flight at once: the server reads on several threads, as with a busy client
IN_FLIGHT = 4
RESOURCE_NOT_FOUND = -32002


def test_a_folder_swap_during_reads_never_escapes_the_root(
    tmp_path: Path, server_env: Env
) -> None:
    kb, outside = tmp_path / "kb", tmp_path / "outside"
    write(kb, "sub/race.md", INSIDE)
    write(kb, "notes/plain.md", "# Plain\n\nbread\n")
    write(outside, "race.md", f"# Race\n\n{SECRET} launch codes\n")
    run_index(kb, server_env)
    swapper = Swapper(kb, outside, link_calls=400, real_calls=1000)
    tally = Tally()
    uri = "kb://doc/sub/race.md"

    async def read_once(client: Client, i: int) -> None:
        tally.reads += 1
        if i % 2:
            try:
                got = (await client.read_resource(uri)).contents[0]
            except MCPError as exc:
                if exc.code == RESOURCE_NOT_FOUND:
                    tally.refused += 1
                    assert SECRET not in str(exc)
                else:
                    tally.other.append(f"resources/read {exc.code}: {exc}")
                return
            assert isinstance(got, types.TextResourceContents)
            tally.body(got.text)
            return
        result = await client.call_tool("get_document", {"path": "sub/race.md"})
        if result.is_error:
            error = error_of(result)
            if error["code"] == "path_refused":
                tally.refused += 1
                assert SECRET not in error["message"]
            else:
                tally.other.append(f"get_document {error}")
            return
        tally.body(text_of(result)["content"])

    async def body() -> None:
        async with stdio_session(kb, tmp_path / "err.log", server_env) as client:
            first = text_of(await client.call_tool("get_document", {"path": "sub/race.md"}))
            assert first["content"] == INSIDE  # served before the swapping starts
            thread = threading.Thread(target=swapper.run, daemon=True)
            thread.start()

            async def worker(offset: int) -> None:
                for i in range(offset, READS, IN_FLIGHT):
                    await read_once(client, i)

            try:
                async with anyio.create_task_group() as tg:
                    for offset in range(IN_FLIGHT):
                        tg.start_soon(worker, offset)
            finally:
                swapper.stop.set()
                thread.join(timeout=30)

    run(body)
    print(f"\nread race through the server: {tally.reads} reads "
          f"({READS // 2} get_document, {READS // 2} resources/read), {tally.served} served, "
          f"{tally.refused} refused, {tally.leaks} with outside bytes, "
          f"{len(tally.other)} other errors, {swapper.swaps} folder swaps")
    log = (tmp_path / "err.log").read_text(encoding="utf-8")
    assert swapper.error is None, swapper.error
    assert tally.leaks == 0, f"{tally.leaks} of {tally.reads} reads returned the outside file"
    assert tally.other == [], tally.other[:5]
    assert "Traceback" not in log, log[-3000:]
    assert swapper.swaps > 0 and tally.served > 0 and tally.refused > 0
