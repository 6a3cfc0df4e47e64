"""What kb-mcp says about itself is true today: the package description and `kb-mcp --help`
name every format it reads, and docs/clients.md says how HTTP is authenticated."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from click.testing import CliRunner

from kbmcp_adapters.parsers.registry import (
    FORMAT_EXTENSIONS,
    KNOWN_FORMATS,
    READABLE_EXTENSIONS,
    build_registry,
)
from kbmcp_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
#: Each ``[parsers].enabled`` name as a user knows the format.
FORMAT_NAMES = {"md": "Markdown", "txt": "text", "pdf": "PDF", "html": "HTML", "docx": "Word",
                "pptx": "PowerPoint", "xlsx": "Excel", "epub": "EPUB",
                "rst": "reStructuredText", "adoc": "AsciiDoc", "ipynb": "Jupyter",
                "code": "source code", "ocr": "OCR"}


def test_readable_extensions_are_every_parser_s() -> None:
    everything = build_registry(KNOWN_FORMATS)
    try:
        assert everything.extensions() == READABLE_EXTENSIONS
    finally:
        everything.close()
    for name in KNOWN_FORMATS:  # and each format's own (what `kb-mcp init` counts by)
        one = build_registry([name])
        try:
            assert one.extensions() == set(FORMAT_EXTENSIONS[name]), name
        finally:
            one.close()


def test_the_description_and_help_name_every_format_and_http_auth() -> None:
    assert set(KNOWN_FORMATS) <= set(FORMAT_NAMES), "name the new format here"
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    helped = CliRunner().invoke(cli, ["--help"], prog_name="kb-mcp")
    assert helped.exit_code == 0
    text = " ".join(helped.output.split())
    for said in (description, text):
        for name in (FORMAT_NAMES[f] for f in KNOWN_FORMATS):
            assert re.search(rf"\b{name}\b", said), (name, said)
        assert "HTTP" in said and "bearer token" in said, said


def test_clients_md_does_not_claim_http_has_no_authentication() -> None:
    page = " ".join((ROOT / "docs" / "clients.md").read_text(encoding="utf-8").split())
    assert "no authentication" not in page.lower()
    assert "kb-mcp token create" in page and "Authorization: Bearer" in page
