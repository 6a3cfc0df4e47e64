"""Shared pieces of the property suite: example budgets, hostile-text strategies, a tiny kb."""

from __future__ import annotations

import logging
import string
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder


def budget(examples: int) -> int:
    """``examples`` under the ``ci`` profile, scaled by the active profile's max_examples."""
    profile = settings.default
    assert profile is not None
    return max(1, examples * profile.max_examples // 100)


def open_kb(root: Path, embedder: FastEmbedEmbedder, **overrides: Any) -> KnowledgeBase:
    """A KnowledgeBase on ``root`` with the session's real embedding model."""
    s = build_settings(None, cwd=root, kb_path=root, **overrides)
    return KnowledgeBase(bootstrap(s, embedder=embedder))


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# -- hostile text ---------------------------------------------------------------------------
#: What FTS5, SQL, shells and path parsers treat as syntax.
SYNTAX = (
    "AND", "OR", "NOT", "NEAR", "NEAR(", "NEAR/2", "and", "or", "not", "near", "*", "^", ":",
    "(", ")", '"', '""', "'", "-", "+", "{", "}", "[", "]", ",", ".", "title:", "body:",
    "heading:", "{title body}:", "- title:", "\x00", "\\", "%", "_", ";", "--", "/*", "*/",
    "\u3000", "\ufeff", "\u200b", "\u202e", "\r\n", "\t", "\x1b[31m", "\x7f", "\x85",
    "\u2028", "e\u0301", "ﬁ", "İ", "ß",
)  # fmt: skip
CJK = "設定ファイルの更新手順について説明しますセッター関数状態한국어텍스트ｶﾀｶﾅ〇々"
EMOJI = "🙂🚀👩‍👩‍👧🇯🇵"

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
#: Any code point at all, lone surrogates included (valid in a Python str and in a JSON
#: ``\\ud800`` escape, never encodable as UTF-8).
any_char = st.one_of(st.characters(codec=None), surrogates)


def any_text(max_size: int) -> st.SearchStrategy[str]:
    """Text of ``any_char`` with surrogates as likely as any other character (``st.text``
    would merge the alphabets and draw a surrogate about once in 500 characters)."""
    return st.lists(any_char, max_size=max_size).map("".join)


def fragments(words: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    options: list[st.SearchStrategy[str]] = [
        st.sampled_from(SYNTAX),
        st.text(max_size=12),
        any_text(6),
        st.text(alphabet=CJK, min_size=1, max_size=8),
        st.text(alphabet=string.punctuation, min_size=1, max_size=8),
        st.text(alphabet=EMOJI, min_size=1, max_size=3),
        surrogates,
    ]
    if words:
        options.append(st.sampled_from(words))
    return st.one_of(options)


def hostile_text(words: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """Short queries built from syntax, scripts and junk, plus some very long ones."""
    seps = st.sampled_from(["", " ", "  ", "\t", "\n", '"', "*", ":", "-", "\u3000"])
    joined = st.lists(st.tuples(fragments(words), seps), max_size=12).map(
        lambda parts: "".join(f + s for f, s in parts)
    )
    long = st.builds(lambda f, n: (f + " ") * n, fragments(words), st.integers(50, 1500))
    return st.one_of(joined, joined, joined, long, any_text(40))


def sanitized(text: str) -> str:
    """``text`` without control characters and lone surrogates: what can carry meaning."""
    return "".join(
        c for c in text
        if not (ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF)
    )


class LogRecorder(logging.Handler):
    """Collects records of one logger (and its children) at WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[logging.LogRecord]:
        out, self.records = self.records, []
        return out


@contextmanager
def recording(logger_name: str) -> Iterator[LogRecorder]:
    logger = logging.getLogger(logger_name)
    handler = LogRecorder()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
