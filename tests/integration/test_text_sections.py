"""A plain-text FAQ searched through the real SQLite index: the hit is the question's own
section, titled by it, and an index built before text headings is read again (decision
0056, sixth addendum)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.meta_keys import META_PARSED_WITH
from tests.fakes import FakeEmbedder, FakeVectorStore

FAQ = """\
1. Running ps

1.1. Why does ps get signal 17?

\tNo ps release has ever had this problem. Most likely your system has been broken
\tinto: install a recent release of the operating system from trusted media.

1.2. Why do ps and top show threads individually?

\tOld kernels cannot group threads by process, and the hacks that try are slow and
\twrong under races: upgrade the kernel and use a threading library that groups them.

1.3. Why are user names printed as numbers?

\tThe standards print a name as a number when the column is too narrow for it;
\trename the column, or give it a width, and the whole name is printed again.
"""


def open_kb(root: Path) -> KnowledgeBase:
    settings = build_settings(None, cwd=root, kb_path=root, enabled_formats=("txt",))
    return KnowledgeBase(bootstrap(settings, embedder=FakeEmbedder(), vectors=FakeVectorStore()))


def test_a_text_faq_answers_with_the_question_s_own_section(tmp_path: Path) -> None:
    (tmp_path / "FAQ.txt").write_text(FAQ, encoding="utf-8")
    kb = open_kb(tmp_path)
    try:
        kb.index()
        hit = kb.search("why do top and ps list every thread", mode="lexical").results[0]
        assert hit.heading == "Why do ps and top show threads individually?"
        assert (hit.start_line, hit.end_line) == (8, 11)  # that question and its answer only
        assert hit.answer_lines is not None and 8 <= hit.answer_lines[0] <= 11
        assert "signal 17" not in hit.content and "narrow" not in hit.content
        got = kb.get_document("FAQ.txt", section=hit.heading).as_dict()  # its own lines
        assert (got["start_line"], got["end_line"]) == (8, 11)
    finally:
        kb.close()


def test_an_index_of_an_older_text_parser_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "FAQ.txt").write_text(FAQ, encoding="utf-8")
    kb = open_kb(tmp_path)
    try:
        kb.index()
        db = sqlite3.connect(kb.settings.index_dir / "index.db")
        with db:  # as kb-mcp before text headings left it: its text parser's first generation
            db.execute("UPDATE index_meta SET value = ? WHERE key = ?",
                       (json.dumps({"txt": 1}), META_PARSED_WITH))
        db.close()
        again = kb.index()
        assert (again.updated, again.unchanged) == (1, 0)
        assert kb.index().updated == 0  # recorded: read again once
    finally:
        kb.close()
