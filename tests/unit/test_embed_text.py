"""What the model is given for a chunk (decision 0020): its prose, without code blocks and
command-only lines; an index whose vectors were made from other text is re-embedded whole
by its next run, and only that run."""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_EMBED_TEXT, META_IN_PROGRESS
from kbmcp_core.models import EMBED_TEXT, Vector, prose_of, vector_text_of, whole_text_of
from tests.fakes import (
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeVectorStore,
    fake_deps,
)

TLDR = """# tar

> Archiving utility.
> Often combined with a compression method, such as `gzip` or `bzip2`.

- Create an archive from files:

`tar cf {{path/to/target.tar}} {{path/to/file1 path/to/file2 ...}}`

- Extract an archive in the current directory:

`tar xf {{path/to/source.tar}}`
"""

GUIDE = """Install the package first.

```sh
pip install kb-mcp
kb-mcp index --kb-path ~/notes
```

Then point your client at `kb-mcp serve`, as below.
"""


def test_commands_and_code_blocks_are_left_out_and_the_prose_kept() -> None:
    tldr = prose_of(TLDR)
    assert "Archiving utility." in tldr and "- Extract an archive in the current" in tldr
    assert "{{path/to" not in tldr and "tar cf" not in tldr
    # inline code inside a sentence is prose
    assert "such as `gzip` or `bzip2`" in tldr
    guide = prose_of(GUIDE)
    assert "pip install" not in guide and "--kb-path" not in guide
    assert guide.startswith("Install the package first.")
    assert "Then point your client at `kb-mcp serve`, as below." in guide


def test_a_chunk_that_is_all_code_is_embedded_whole() -> None:
    code = "```python\ndef handler(event):\n    return event\n```"
    assert prose_of(code) == code
    assert prose_of("`make test`") == "`make test`"
    # an unclosed fence runs to the end of the chunk (a block split across chunks)
    assert prose_of("Run this to start the server:\n\n```sh\nmake run\nmake test") \
        == "Run this to start the server:"


def test_the_model_gets_the_trail_and_the_prose_while_size_and_hash_keep_the_code() -> None:
    assert vector_text_of(("tar",), TLDR) == "tar\n" + prose_of(TLDR)
    assert whole_text_of(("tar",), TLDR) == "tar\n" + TLDR


def test_an_edit_to_the_code_alone_updates_the_stored_chunk() -> None:
    """The prose is unchanged, but the chunk's text (searched by keywords, shown) must be."""
    deps, _ = world()
    run_index(deps)
    assert isinstance(deps.fs, FakeFileSystem) and isinstance(deps.store, FakeIndexStore)
    deps.fs.files["tar.md"] = TLDR.replace("tar xf", "tar xzf").encode()
    summary = run_index(deps)
    assert summary.updated == 1 and summary.metadata_only == 0
    contents = [c.content for c in deps.store.get_chunks(deps.store.chunk_ids()).values()]
    assert any("tar xzf" in c for c in contents) and not any("tar xf " in c for c in contents)


class TextsEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.texts.extend(texts)
        return super().embed_documents(texts)


def world() -> tuple[IndexDeps, TextsEmbedder]:
    fs = FakeFileSystem({"tar.md": TLDR.encode(), "guide.md": ("# Setup\n" + GUIDE).encode(),
                         "plain.md": b"# Plain\nNo code in this note at all.\n"})
    emb = TextsEmbedder()
    deps = fake_deps(fs, embedder=emb, max_tokens=512, batch_size=8)
    return deps, emb


def test_the_model_reads_no_commands() -> None:
    deps, emb = world()
    run_index(deps)
    joined = "\n".join(emb.texts)
    assert "Archiving utility." in joined and "Install the package first." in joined
    assert "tar cf" not in joined and "pip install" not in joined
    assert deps.store.get_meta(META_EMBED_TEXT) == EMBED_TEXT


def test_an_index_from_before_is_embedded_again_once() -> None:
    deps, emb = world()
    run_index(deps)
    store, vectors = deps.store, deps.vectors
    assert isinstance(store, FakeIndexStore) and isinstance(vectors, FakeVectorStore)
    chunks = store.chunk_ids()
    # what an older kb-mcp left: no mark, and vectors made from the whole text
    store.set_meta(META_EMBED_TEXT, "")
    stale = {cid: [0.5] * emb.dimension for cid in chunks}
    vectors.delete(chunks)
    vectors.add(list(stale), list(stale.values()))
    emb.texts.clear()
    summary = run_index(deps)
    assert summary.chunks_embedded == len(chunks)  # every chunk, though no file changed
    assert summary.unchanged == 3 and summary.added == summary.updated == 0
    fresh = vectors.get(chunks)
    assert set(fresh) == chunks and all(fresh[c] != stale[c] for c in chunks)
    assert store.get_meta(META_EMBED_TEXT) == EMBED_TEXT
    assert not store.get_meta(META_IN_PROGRESS)
    # and only once
    emb.texts.clear()
    again = run_index(deps)
    assert again.chunks_embedded == 0 and emb.texts == []
