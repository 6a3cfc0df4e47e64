"""Each adapter's translator turns its library's failures into a kb-mcp error.

A translator is the one place an adapter catches its library's exceptions (STYLE.md,
"Errors"): the store's ``translated`` (SQLAlchemy, sqlite3, psycopg) and its PostgreSQL
writer lock, the vector store's ``translate`` (LanceDB, Arrow, I/O), the embedders' and the
reranker's ``translated`` (onnxruntime, tokenizers), and the parsers' openers (python-docx,
openpyxl, pymupdf). Each test makes the real library fail inside one and checks the kb-mcp
error that comes out; a ``KbError`` raised inside passes through unchanged.
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

from kbmcp_core.errors import (
    EmbeddingUnavailable,
    IndexReadOnly,
    ParseError,
    RerankerUnavailable,
    StoreCorrupt,
    StoreError,
    StoreFailed,
    StoreUnreachable,
    VectorsUnreachable,
    VectorsUnreadable,
)

#: a TCP port nothing listens on: connecting is refused at once
CLOSED_PG = "postgresql://kb@127.0.0.1:1/kb"


# -- store: SQLAlchemy / sqlite3 / psycopg ------------------------------------------------------
def store_translated():
    from kbmcp_adapters.store.engine import translated

    return translated


def test_a_file_that_is_no_database_is_a_damaged_store(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    db.write_bytes(b"this is not a database file" * 200)
    with pytest.raises(StoreCorrupt) as caught, store_translated()(db):
        sqlite3.connect(db).execute("SELECT * FROM sqlite_master").fetchall()
    assert "kb-mcp index" in str(caught.value)


def test_a_write_to_a_read_only_sqlite_file_is_index_read_only(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    with pytest.raises(IndexReadOnly), store_translated()(db):
        ro.execute("INSERT INTO t VALUES (1)")


def test_any_other_sqlalchemy_failure_is_a_store_error(tmp_path: Path) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{tmp_path / 'index.db'}")
    with pytest.raises(StoreError) as caught, store_translated()(tmp_path / "index.db"), \
            engine.connect() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    assert type(caught.value) is StoreError and "no_such_table" in str(caught.value)
    engine.dispose()


def test_a_postgresql_server_that_does_not_answer_is_unreachable() -> None:
    from sqlalchemy import create_engine

    engine = create_engine(CLOSED_PG.replace("postgresql://", "postgresql+psycopg://"),
                           connect_args={"connect_timeout": 5})
    with pytest.raises(StoreUnreachable) as caught, \
            store_translated()(location="postgresql://kb@127.0.0.1:1/kb"):
        engine.connect()
    assert "127.0.0.1:1" in str(caught.value)
    assert "127.0.0.1" not in caught.value.public_message
    engine.dispose()


def test_a_statement_the_postgresql_server_refuses_is_store_failed() -> None:
    import psycopg.errors
    from sqlalchemy.exc import ProgrammingError

    refused = psycopg.errors.UndefinedTable('relation "chunks" does not exist')
    with pytest.raises(StoreFailed) as caught, store_translated()(location="postgresql://db"):
        raise ProgrammingError("SELECT * FROM chunks", {}, refused)
    assert 'relation "chunks" does not exist' in str(caught.value)


def test_the_postgresql_writer_lock_without_a_server_is_unreachable() -> None:
    from kbmcp_adapters.store.advisory_lock import advisory_lock

    with pytest.raises(StoreUnreachable, match="cannot connect to the PostgreSQL index store"), \
            advisory_lock(CLOSED_PG, 0.0):
        pass


# -- vectors: LanceDB / Arrow / I/O ---------------------------------------------------------
def test_a_vector_write_failure_is_a_store_error_and_a_read_failure_unreadable() -> None:
    import pyarrow as pa

    from kbmcp_adapters.vectors.translate import translate

    with pytest.raises(StoreError) as caught, translate("add vectors"):
        raise OSError("No space left on device")
    assert type(caught.value) is StoreError and "add vectors" in str(caught.value)
    with pytest.raises(VectorsUnreadable), translate("search", reading=True):
        raise pa.ArrowInvalid("Not a Lance file")
    with pytest.raises(VectorsUnreadable), translate("search", reading=True):
        raise pa.lib.ArrowException("a bare Arrow error")


def test_an_object_store_that_refuses_is_unreachable_and_hides_the_secret() -> None:
    from kbmcp_adapters.vectors.translate import translate

    with pytest.raises(VectorsUnreachable) as caught, translate(
            "search", reading=True, remote="s3://bucket/kb", secrets=["hunter2"]):
        raise OSError("Generic S3 error: error sending request key=hunter2: connection refused")
    assert "does not answer" in str(caught.value) and "hunter2" not in str(caught.value)
    assert caught.value.__cause__ is None  # the library's text may echo the request



def test_an_object_store_found_down_is_not_waited_on_again_until_its_hold_ends() -> None:
    """LanceDB spends seconds retrying a store that does not answer; once one call has
    found it down, the next calls fail at once with the same reason (a search answers by
    keywords without a second wait), and after the hold the store is tried again."""
    from kbmcp_adapters.vectors.translate import Outage, translate

    now = [100.0]
    outage = Outage(hold_s=10, clock=lambda: now[0])
    reached: list[str] = []

    def call(action: str, *, reading: bool, fail: bool) -> None:
        with translate(action, reading=reading, remote="s3://bucket/kb", outage=outage):
            reached.append(action)
            if fail:
                raise OSError("tcp connect error: Connection refused (os error 111)")

    with pytest.raises(VectorsUnreachable, match="count vectors: s3://bucket/kb does not"):
        call("count vectors", reading=True, fail=True)
    with pytest.raises(VectorsUnreachable, match=r"search vectors: .*connection refused"):
        call("search vectors", reading=True, fail=False)
    with pytest.raises(StoreError, match="add vectors: s3://bucket/kb does not answer"):
        call("add vectors", reading=False, fail=False)
    assert reached == ["count vectors"]  # neither later call reached the store
    now[0] += 10.5
    call("search vectors", reading=True, fail=False)  # the hold is over: tried, and it answers
    call("count vectors", reading=True, fail=False)
    assert reached == ["count vectors", "search vectors", "count vectors"]
    with pytest.raises(VectorsUnreadable), translate("search", reading=True, outage=outage):
        raise OSError("corrupt file")  # not an outage: nothing held
    call("count vectors", reading=True, fail=False)

# -- embedding and rerank: onnxruntime / tokenizers ---------------------------------------------
def test_a_model_onnxruntime_cannot_load_is_embedding_unavailable() -> None:
    from kbmcp_adapters.embedding.common import onnx_session, translated

    with pytest.raises(EmbeddingUnavailable) as caught, translated("tiny-model", "load"):
        onnx_session(b"not an onnx model", threads=1)
    assert "'tiny-model' could not load" in str(caught.value)


def test_a_reranker_its_libraries_refuse_is_reranker_unavailable() -> None:
    from tokenizers import Tokenizer

    from kbmcp_adapters.rerank.cross_encoder import _translated

    with pytest.raises(RerankerUnavailable, match="reranker 'tiny-reranker'"), \
            _translated("tiny-reranker", "load its tokenizer"):
        Tokenizer.from_str("{not a tokenizer")


def test_a_kb_error_inside_a_translator_passes_unchanged() -> None:
    from kbmcp_adapters.embedding.common import translated

    with pytest.raises(ParseError, match="as it was"), translated("m", "load"):
        raise ParseError("as it was")


# -- parsers: python-docx / openpyxl / pymupdf ------------------------------------------------
def test_a_word_package_python_docx_refuses_is_a_parse_error() -> None:
    import docx

    from kbmcp_adapters.parsers.word import translated

    with pytest.raises(ParseError, match="not a readable Word document"), \
            translated("Word document"):
        docx.Document(io.BytesIO(b"PK\x03\x04 broken zip"))


def test_a_workbook_openpyxl_fails_on_while_streaming_is_a_parse_error() -> None:
    from openpyxl import Workbook
    from openpyxl.utils.exceptions import InvalidFileException

    from kbmcp_adapters.parsers.sheets import _open

    out = io.BytesIO()
    Workbook().save(out)
    with pytest.raises(ParseError, match="damaged XLSX workbook"), _open(out.getvalue()):
        raise InvalidFileException("a broken sheet part")


def test_pymupdf_failures_opening_and_reading_are_parse_errors() -> None:
    import pymupdf

    from kbmcp_adapters.parsers.pdf import open_mupdf

    with pytest.raises(ParseError, match="not a readable PDF"), \
            open_mupdf(b"%PDF-1.7 nothing follows", "pdf", "PDF", "locked"):
        pass
    blank = pymupdf.open()
    blank.new_page()
    data = blank.tobytes()
    with pytest.raises(ParseError, match="damaged PDF"), \
            open_mupdf(data, "pdf", "PDF", "locked") as doc:
        doc.load_page(5)  # pymupdf refuses a page the document does not have
