"""Load an eval golden file (YAML) into core ``GoldenQuery`` values, with clear errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbmcp_core.errors import ConfigError
from kbmcp_core.evaluation import EvalReport, Expected, GoldenQuery, Ranked, Retrieved, evaluate

_QUERY_KEYS = {"id", "query", "expected", "kind"}
_EXPECTED_KEYS = {"path", "heading", "lines"}


def load_golden(path: Path) -> list[GoldenQuery]:
    return load_golden_with_digest(path)[0]


def load_golden_with_digest(path: Path) -> tuple[list[GoldenQuery], str]:
    """The queries and the sha256 of the very bytes they were parsed from (one read)."""
    import hashlib

    import yaml

    if not path.is_file():
        raise ConfigError(f"golden file not found: {path}")
    try:
        data = path.read_bytes()
        raw = yaml.safe_load(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read golden file {path}: {exc}") from None
    return _parse(path, raw), hashlib.sha256(data).hexdigest()


def _parse(path: Path, raw: object) -> list[GoldenQuery]:
    if not isinstance(raw, dict) or not isinstance(raw.get("queries"), list):
        raise ConfigError(f"{path}: expected a mapping with a 'queries' list")
    out: list[GoldenQuery] = []
    for i, q in enumerate(raw["queries"]):
        where = f"{path}: queries[{i}]"
        if not isinstance(q, dict):
            raise ConfigError(f"{where} must be a mapping")
        unknown = set(q) - _QUERY_KEYS
        if unknown:
            raise ConfigError(f"{where} has unknown keys: {', '.join(sorted(unknown))}")
        if not isinstance(q.get("query"), str) or not q["query"].strip():
            raise ConfigError(f"{where} needs a non-empty 'query'")
        exp = q.get("expected")
        if not isinstance(exp, list):
            raise ConfigError(f"{where} needs an 'expected' list ([] for a question the "
                              "knowledge base has no answer to)")
        expected: list[Expected] = []
        for e in exp:
            if not isinstance(e, dict) or not isinstance(e.get("path"), str) or (
                set(e) - _EXPECTED_KEYS
            ):
                raise ConfigError(
                    f"{where}: each expected entry is {{path, heading?, lines?: [first, last]}}")
            heading = e.get("heading")
            expected.append(Expected(e["path"], str(heading) if heading is not None else None,
                                     _lines(e.get("lines"), where)))
        out.append(GoldenQuery(str(q.get("id", i)), q["query"], tuple(expected),
                               str(q["kind"]) if q.get("kind") is not None else None))
    return out


def _lines(value: object, where: str) -> tuple[int, int] | None:
    """``lines: [first, last]``: 1-based, inclusive, first <= last."""
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or not 1 <= value[0] <= value[1]):
        raise ConfigError(f"{where}: 'lines' must be [first, last], whole numbers with "
                          f"1 <= first <= last (got {value!r})")
    return value[0], value[1]


def evaluate_modes(queries: list[GoldenQuery], modes: list[str],
                   retrieve: Callable[[str, str], list[Ranked] | Retrieved]
                   ) -> list[EvalReport]:
    """One report per retriever mode; ``retrieve(query, mode)`` returns ranked sections.
    Headings are compared after the same clean-up the parsers apply when indexing."""
    from kbmcp_adapters.parsers.headings import clean_heading

    def for_mode(mode: str) -> Callable[[str], list[Ranked] | Retrieved]:
        return lambda query: retrieve(query, mode)

    return [evaluate(m, queries, for_mode(m), clean_heading) for m in modes]
