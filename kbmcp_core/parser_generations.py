"""Which generation of each parser made an index's rows, and which rows are stale.

A parser's generation (``ParserRegistry.conversion_versions``) moves when it changes what
it makes of a file (its chunks, titles or text). The index records the generations that
made its rows (``META_PARSED_WITH``); a run reads again the unchanged documents of every
enabled extension whose generation moved since. Their chunks keep their vectors wherever
the text is the same (vectors are reused by chunk text).
"""

from __future__ import annotations

import json
import logging

from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.meta_keys import META_PARSED_WITH

log = logging.getLogger(__name__)


def stale_extensions(deps: IndexDeps, *, has_rows: bool, force: bool) -> frozenset[str]:
    """The enabled extensions whose parser changed what it makes of a file since the rows
    were written (all of them in an index from before the mark). A new index (no rows) is
    recorded as made by today's parsers; a forced run reads everything anyway."""
    if not has_rows:  # whatever this run (or its resumption) writes is made by today's
        record_parsers(deps)
        return frozenset()
    if force:
        return frozenset()
    stored = parsed_with(deps.store.get_meta(META_PARSED_WITH))
    stale = frozenset(ext for ext, generation in deps.registry.conversion_versions().items()
                      if stored.get(ext) != generation)
    if stale:
        log.info("the conversion of %s changed since this index was built: those "
                 "documents are read again (unchanged text keeps its vectors)",
                 ", ".join(f".{ext}" for ext in sorted(stale)))
    return stale


def record_parsers(deps: IndexDeps) -> None:
    """After a whole-folder text phase: which parser generation made the rows (kept for
    extensions not enabled now, whose rows stay as an older parser made them)."""
    merged = {**parsed_with(deps.store.get_meta(META_PARSED_WITH)),
              **deps.registry.conversion_versions()}
    deps.store.set_meta(META_PARSED_WITH, json.dumps(merged, sort_keys=True))


def parsed_with(raw: str | None) -> dict[str, int]:
    """``META_PARSED_WITH`` as a mapping; absent or unreadable = nothing known."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int)}


__all__ = ["parsed_with", "record_parsers", "stale_extensions"]
