"""A model-free embedding service for the tests of `kb-mcp` processes whose runs are cut short.

A test that sends a signal in the middle of phase two needs phase two to last: with the
packaged model that meant embedding a few hundred full-length chunks (35-39 CPU seconds a
test, most of it in the run that resumes afterwards). Here the `kb-mcp` process takes its
vectors from an OpenAI-compatible service on loopback (the documented
``provider = "openai-compatible"`` setting, decision 0037) that answers every request after
``delay_s`` with feature-hashed vectors: the run stays in phase two for as long as the test
needs, whatever the machine's load, and costs almost no CPU. What the tests assert (the
signal's exit code, the log, the index state doctor and the next run find) does not depend
on where the vectors come from; the packaged model under a signal is still exercised by
``test_cli_interrupt.py`` (Ctrl-C during ``kb-mcp index``) and by
``test_server_faults.py::test_closing_stdin_during_a_sync_exits_cleanly_every_time``.
With ``delay_s=0`` it is simply a cheap model for the runs around a killed one
(``tests/integration/test_two_phase.py``), and it stands in wherever what a test looks at
is not the vectors (the progress bar of ``tests/e2e/test_cli_progress_tty.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.embedding_server import EmbeddingServer
from tests.hashing_embedder import HashingEmbedder

#: The vectors' length (any length the config names works; small keeps the answers short).
DIMENSION = 32


@contextmanager
def slow_embedding_config(config: Path, delay_s: float = 0.15,
                          batch_size: int = 4) -> Iterator[EmbeddingServer]:
    """Start the service and write ``config`` (a kb-mcp.toml) that points at it, with
    ``batch_size`` texts a request and a run's phase two of 32 chunks a step, so a step
    takes ``32 / batch_size * delay_s`` seconds. The caller passes ``--config`` to every
    `kb-mcp` it runs: ``base_url`` is a key a found config may not set until trusted."""
    with EmbeddingServer(HashingEmbedder(dimension=DIMENSION)) as server:
        server.delay_s = delay_s
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "[embedding]\n"
            'provider = "openai-compatible"\n'
            f'base_url = "{server.base_url}"\n'
            'model = "hashing-stand-in"\n'
            f"dimension = {DIMENSION}\n"
            f"batch_size = {batch_size}\n",
            encoding="utf-8")
        yield server
