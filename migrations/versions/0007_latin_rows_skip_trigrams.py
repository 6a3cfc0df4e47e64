"""PostgreSQL's postings of a row: a column without a CJK character skips the trigram pass.

Migration 0006's ``lexical_grams_of`` cut every column of every lexical row into its
characters and paired each with the two after it (a window over the characters) to find
the CJK trigrams, then dropped every trigram that is not three CJK characters. A column
without a CJK character can hold none, so that pass is now skipped for it: on Latin text
it was about two thirds of writing a lexical row (the row trigger of 0006 runs it for each
chunk; decision 0058's addendum "PostgreSQL's keyword leg"). The postings are the same for
every text, so nothing stored is rewritten. SQLite has nothing to do.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from alembic import op

from kbmcp_migrations import frozen_revision

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: 0006's pass over a column's characters, and the same pass kept to columns holding a CJK
#: character (0006's frozen class of them).
_EVERY_COLUMN = "FROM cols AS c, unnest(string_to_array(c.s, NULL)) WITH ORDINALITY AS u(ch, k)"
_CJK_COLUMNS = _EVERY_COLUMN + " WHERE c.s ~ '[{cjk}]'"


def _revision_0006() -> ModuleType:
    """Migration 0006 (its frozen SQL texts), loaded from beside this file."""
    return frozen_revision("0006_lexical_grams.py")


def _function(skip_latin: bool) -> str:
    m0006 = _revision_0006()
    source = str(m0006._GRAMS_OF).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    assert source.count(_EVERY_COLUMN) == 1, "0006's function is not the one this replaces"
    if skip_latin:
        source = source.replace(_EVERY_COLUMN, _CJK_COLUMNS.format(cjk=m0006._CJK))
    return source


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_function(skip_latin=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_function(skip_latin=False))
