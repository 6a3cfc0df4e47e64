"""PostgreSQL's postings written once a statement: statement-level triggers over transition
tables instead of 0006's row trigger.

0006's trigger ran ``lexical_grams_write`` for each lexical row: one PL/pgSQL call, one
``lexical_grams_of`` query and two inserts (the row's postings, its new words) per chunk.
The store now writes a batch's lexical rows in one statement (``COPY``), and the same
function, fired once a statement over the rows it wrote, posts them all in one insert of
postings and one of the new words, each row's postings still made by
``lexical_grams_of`` (so they are the same for every text: Latin, CJK, mixed, a row with a
token too long to post). An update of a row
posts it again as before (delete, then insert), now once a statement too. A statement
that writes one row (an older kb-mcp, a hand edit) gets its postings as before: the
trigger fires for it. Deleting a row still deletes its postings through 0006's foreign
key. Measured on 1,000 chunks of the million bench's notes: the backend's CPU 1.19 s with
the row trigger and a statement a row, 0.86 s now (decision 0058's addendum
"PostgreSQL's first index"). Nothing stored is rewritten. SQLite has nothing to do.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from alembic import op

from kbmcp_migrations import frozen_revision

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: 0006's trigger function, now run once a statement over the rows it wrote (its transition
#: table ``written``): an update deletes their postings first, as 0006's did a row's.
_WRITE = """
CREATE OR REPLACE FUNCTION lexical_grams_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    DELETE FROM lexical_grams AS g USING written AS w WHERE g.id = w.id;
  END IF;
  WITH posted AS (SELECT w.id, w.dl, g.gram, g.tf, g.word
                  FROM written AS w, lexical_grams_of(w.title, w.heading, w.body) AS g),
  words AS (INSERT INTO lexical_words (word) SELECT DISTINCT gram FROM posted WHERE word
            ON CONFLICT DO NOTHING)
  INSERT INTO lexical_grams (gram, id, tf, dl) SELECT gram, id, tf, dl FROM posted;
  RETURN NULL;
END
$$
"""

#: A statement-level trigger with a transition table takes no column list, so the update
#: trigger fires on any update of ``lexical`` and posts every updated row again; the
#: store's only update sets a title, on which 0006's trigger fired too.
_TRIGGERS = (
    "CREATE TRIGGER lexical_grams_added AFTER INSERT ON lexical REFERENCING NEW TABLE AS "
    "written FOR EACH STATEMENT EXECUTE FUNCTION lexical_grams_write()",
    "CREATE TRIGGER lexical_grams_changed AFTER UPDATE ON lexical REFERENCING NEW TABLE AS "
    "written FOR EACH STATEMENT EXECUTE FUNCTION lexical_grams_write()",
)

#: 0006's row trigger, as 0006 made it.
_ROW_TRIGGER = ("CREATE TRIGGER lexical_grams_write AFTER INSERT OR UPDATE OF title, heading, "
                "body ON lexical FOR EACH ROW EXECUTE FUNCTION lexical_grams_write()")


def _revision_0006() -> ModuleType:
    """Migration 0006 (its frozen SQL texts), loaded from beside this file."""
    return frozen_revision("0006_lexical_grams.py")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER lexical_grams_write ON lexical")
    op.execute(_WRITE)
    for trigger in _TRIGGERS:
        op.execute(trigger)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER lexical_grams_added ON lexical")
    op.execute("DROP TRIGGER lexical_grams_changed ON lexical")
    op.execute(str(_revision_0006()._WRITE).replace("CREATE FUNCTION", "CREATE OR REPLACE "
                                                    "FUNCTION", 1))
    op.execute(_ROW_TRIGGER)
