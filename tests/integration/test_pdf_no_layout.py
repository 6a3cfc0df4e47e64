"""Reading a PDF does not load PyMuPDF's layout analyser (decision 0039): ``import pymupdf``
would load it (two ONNX models: CPU time and ~55 MB in every parser worker) although
kb-mcp's PDF parser never asks for a layout. A fresh interpreter loads what a parser
worker preloads for PDF, then parses a PDF: the text is all there, the analyser is not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

_CHILD = """
import importlib, json, math, sys
from kbmcp_adapters.parsers.isolation import _PRELOAD
for module in _PRELOAD["pdf"]:  # what a parser worker imports before its first PDF
    importlib.import_module(module)
from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_core.ports import ChunkBudget
budget = ChunkBudget(max_tokens=256, min_tokens=0,
                     counter=lambda t: math.ceil(len(t.split()) * 1.3) + 2)
doc = PdfParser().parse("plain.pdf", open(sys.argv[1], "rb").read(), budget)
pymupdf = sys.modules["pymupdf"]
print(json.dumps({"text": " ".join(c.content for c in doc.chunks),
                  "layout_loaded": sys.modules.get("pymupdf.layout") is not None,
                  "layout_function": callable(pymupdf._get_layout)}))
"""


def _pdf(path: Path) -> None:
    import pymupdf

    pdf: Any = pymupdf
    doc = pdf.open()
    for n in range(2):
        page = doc.new_page()
        page.insert_textbox(pdf.Rect(50, 50, 550, 800), f"Words on page {n} of the manual.",
                            fontsize=9)
    path.write_bytes(doc.tobytes())
    doc.close()


def test_a_pdf_is_read_without_the_layout_analyser(tmp_path: Path) -> None:
    _pdf(tmp_path / "plain.pdf")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "plain.pdf")],
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "page 0" in got["text"] and "page 1" in got["text"]
    assert got == {**got, "layout_loaded": False, "layout_function": False}
