"""The HTTP server's log cannot be flooded: repeats of one line are rate-limited."""

from __future__ import annotations

import logging

from kbmcp_adapters.mcp_server.http_connections import RepeatFilter


def record(msg: str, *args: object, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("kbmcp", level, __file__, 1, msg, args, None)


def test_repeats_pass_up_to_a_burst_per_window_then_say_how_many_were_left_out() -> None:
    now = [0.0]
    flt = RepeatFilter(burst=3, window_s=60.0, clock=lambda: now[0])
    passed = [flt.filter(record("refused a connection from %s", f"10.0.0.{i}"))
              for i in range(1000)]
    assert passed.count(True) == 3  # the address differs, the line is the same kind
    assert flt.filter(record("another line"))  # other lines are not held back
    assert flt.filter(record("refused", level=logging.ERROR))
    now[0] = 61.0
    first = record("refused a connection from %s", "10.0.0.1")
    assert flt.filter(first)
    assert first.getMessage() == ("refused a connection from 10.0.0.1 (997 more like this in "
                                  "60s were not logged)")
