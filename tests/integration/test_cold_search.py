"""A cold search by meaning (a fresh process, no server; decision 0057) answers as before and
pays only for what it uses: no fastembed, no PostgreSQL dialect on a SQLite store, one model
session, and the vectors opened while the model loads."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding import checksums, minilm_files
from kbmcp_adapters.embedding.fastembed_embedder import PACKAGED_MODEL_ID, FastEmbedEmbedder
from tests.conftest import write_files
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore

FILES = {
    "keys.md": "# Rotating keys\n\nRotate the signing keys every 90 days with the vault CLI.\n",
    "backup.md": "# Backups\n\nThe database backups are dumped at 02:00 to cold storage.\n",
    "garden.md": "# Garden\n\nTomatoes need staking in June; basil likes the south bed.\n",
}
SEARCH = """
import json, sys
from pathlib import Path
from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_cli.search_cmd import local_search
found = local_search(settings_for(Path(sys.argv[1]), None), sys.argv[2], {"limit": 3})
print(json.dumps({"paths": [h["path"] for h in found["results"]],
                  "scores": [h["score"] for h in found["results"]],
                  "modules": sorted(m for m in sys.modules if m.startswith(("fastembed",
                                    "sqlalchemy.dialects.postgresql")))}))
"""


def test_a_fresh_process_finds_what_a_warm_one_finds_without_fastembed_or_postgresql(
        tmp_path: Path, kb_env: dict[str, str]) -> None:
    root = tmp_path / "kb"
    write_files(root, FILES)
    # the default model, in the cache the subprocess's environment names
    models = Path(kb_env["XDG_CACHE_HOME"]) / "kb-mcp" / "models"
    settings = build_settings(None, cwd=root, kb_path=root)
    warm = KnowledgeBase(bootstrap(settings, embedder=FastEmbedEmbedder(cache_dir=models)))
    try:
        warm.index()
        warm.warm_up()  # the model loaded and the vectors opened before the search
        expected = warm.search("how often are signing keys rotated", limit=3).results
    finally:
        warm.close()
    done = subprocess.run([sys.executable, "-c", SEARCH, str(root),
                           "how often are signing keys rotated"], env=kb_env,
                          capture_output=True, text=True, timeout=300, check=True)
    cold = json.loads(done.stdout)
    assert cold["paths"] == [h.path for h in expected]
    assert cold["paths"][0] == "keys.md"
    assert cold["scores"] == [round(h.score, 6) for h in expected]
    assert cold["modules"] == []


def test_an_intact_integer_copy_runs_without_hashing_the_packaged_file(
        model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy's stamp names the packaged file's sha256 and its own bytes are checked:
    the packaged file (23 MB) is hashed only when it is run or copied."""
    FastEmbedEmbedder(cache_dir=model_cache)._resolve_minilm()  # the copy made, if need be
    hashed: list[str] = []
    real = checksums.verify

    def spy(path: Path, *args: object, **kwargs: object) -> None:
        hashed.append(path.name)
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(minilm_files, "verify", spy)
    chosen = FastEmbedEmbedder(cache_dir=model_cache)._resolve_minilm()
    assert chosen.name == "model.int8-dynamic.onnx"
    assert hashed == ["tokenizer.json"]
    hashed.clear()
    FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=model_cache)._resolve_minilm()
    assert "model.onnx" in hashed  # the packaged file, run itself, is checked as before


class CountingVectors(FakeVectorStore):
    """Records the thread of every ``count``: the opening read."""

    def __init__(self) -> None:
        super().__init__()
        self.counted_in: list[str] = []

    def count(self) -> int:
        self.counted_in.append(threading.current_thread().name)
        return super().count()


def test_the_first_search_by_meaning_opens_the_vectors_in_a_thread_a_lexical_one_does_not(
        tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    settings = build_settings(None, cwd=tmp_path, kb_path=tmp_path)
    vectors = CountingVectors()
    kb = KnowledgeBase(bootstrap(settings, store=FakeIndexStore(), vectors=vectors,
                                 embedder=FakeEmbedder()))
    try:
        kb.index()
        vectors.counted_in.clear()
        lexical = kb.search("signing keys", mode="lexical")
        assert vectors.counted_in == []
        hybrid = kb.search("signing keys")
        kb.search("basil")  # the vectors are opened once per knowledge base
    finally:
        kb.close()
    assert vectors.counted_in == ["kb-mcp-open-vectors"]
    assert hybrid.results[0].path == lexical.results[0].path == "keys.md"


COMMAND = """
import json, sys
from kbmcp_cli.commands import cli
try:
    cli.main(["search", "--no-server", "--kb-path", sys.argv[1], "keys"], prog_name="kb-mcp")
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "commands": sorted(
    m for m in sys.modules if m.startswith("kbmcp_cli.") and m.endswith("_cmd"))}))
"""


def test_kb_mcp_search_imports_no_other_command(tmp_path: Path, kb_env: dict[str, str]
                                                ) -> None:
    """`kb-mcp search` runs with its own command's module alone: not the seventeen others
    and what they import (a folder never indexed: it says so, exit 2)."""
    done = subprocess.run([sys.executable, "-c", COMMAND, str(tmp_path)], env=kb_env,
                          capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"code": 2, "commands": ["kbmcp_cli.search_cmd"]}
    assert "no index" in done.stderr.lower() or "kb-mcp index" in done.stderr


REGISTRY = """
import json, sys
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_core.ports import ChunkBudget
registry = build_registry(["md", "txt"])
before = "yaml" in sys.modules
parser = registry.parser_for("md")
text = b"---\\ntitle: Keys\\ndate: 2024-01-02\\n---\\n# Keys\\n\\nRotate them.\\n"
parsed = parser.parse("a.md", text, ChunkBudget(max_tokens=100, min_tokens=1,
                                                counter=lambda t: len(t.split())))
print(json.dumps({"before": before, "after": "yaml" in sys.modules, "title": parsed.title,
                  "date": parsed.date}))
"""


def test_the_parser_registry_is_built_without_yaml_until_frontmatter_is_read() -> None:
    """A search builds the registry only to ask which extensions are enabled: PyYAML is
    imported when a file's frontmatter is read, and reads it as before."""
    done = subprocess.run([sys.executable, "-c", REGISTRY], capture_output=True, text=True,
                          timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"before": False, "after": True, "title": "Keys", "date": "2024-01-02"}


PARSERS = """
import json, sys
from pathlib import Path
from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_cli.search_cmd import local_search
found = local_search(settings_for(Path(sys.argv[1]), None), sys.argv[2], {"limit": 3})
print(json.dumps({"paths": [h["path"] for h in found["results"]],
                  "uris": {h["path"]: h.get("uri") for h in found["results"]},
                  "parsers": sorted(m for m in sys.modules
                                    if m.startswith("kbmcp_adapters.parsers.")
                                    and not m.endswith((".formats", ".codelangs")))}))
"""


def test_a_search_asks_which_formats_are_enabled_without_importing_a_parser(
        tmp_path: Path, kb_env: dict[str, str]) -> None:
    """The offer rules of a search need only the enabled extensions: read from the formats'
    table, not from a registry of parsers and their worker pool (~0.1 s of imports); a
    document of a format no longer enabled is still found but not offered (no URI)."""
    root = tmp_path / "kb"
    write_files(root, {**FILES, "notes.txt": "Rotate the signing keys, says the text.\n"})
    (root / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md", "txt"]\n', encoding="utf-8")
    models = Path(kb_env["XDG_CACHE_HOME"]) / "kb-mcp" / "models"
    settings = build_settings(None, cwd=root, kb_path=root)
    kb = KnowledgeBase(bootstrap(settings, embedder=FastEmbedEmbedder(cache_dir=models)))
    try:
        kb.index()
    finally:
        kb.close()
    (root / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md"]\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PARSERS, str(root), "signing keys rotated"],
                          env=kb_env, capture_output=True, text=True, timeout=300, check=False,
                          cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["paths"][0] == "keys.md"
    assert got["uris"]["keys.md"] == "kb://doc/keys.md"
    assert got["uris"]["notes.txt"] is None  # indexed, but its format is no longer enabled
    assert got["parsers"] == []


AHEAD = """
import json, sys
from kbmcp_adapters.app.vectors_ahead import VectorsOpenedAhead

class Vectors:
    seen = None

    def count(self):
        Vectors.seen = "numpy" in sys.modules  # what the thread finds when it starts
        return 0

ahead = VectorsOpenedAhead(Vectors())
print(json.dumps({"count": ahead.count(), "numpy_before_the_thread": Vectors.seen}))
"""


def test_the_vectors_thread_starts_after_numpy_is_imported() -> None:
    """LanceDB's import (pyarrow's numpy) in the vectors' thread and the model's
    (onnxruntime's numpy) on the search's thread must not import numpy at once: a fresh
    `kb-mcp search` failed with "import numpy failed" (a module half initialised) when
    they did. numpy is imported before the thread starts."""
    done = subprocess.run([sys.executable, "-c", AHEAD], capture_output=True, text=True,
                          timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"count": 0, "numpy_before_the_thread": True}
