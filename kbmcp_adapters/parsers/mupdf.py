"""PyMuPDF as kb-mcp imports it: without its layout analyser (decision 0039).

``pymupdf`` imports ``pymupdf.layout`` whenever that package is installed (``pymupdf``
2.0 requires it), and that import loads two ONNX models: about 0.5 s of CPU and 55 MB of
memory in every parser worker that reads PDFs. The analyser only serves
``Page.get_layout`` (pymupdf4llm's Markdown), which kb-mcp never calls: its PDF parser
reads text blocks. Marking the sub-module absent before ``pymupdf`` is imported leaves it
out; ``pymupdf`` catches the ``ImportError`` and works as without the package. Import this
module only where PyMuPDF is needed (inside a function, or a parser worker's preload).
"""

from __future__ import annotations

import sys
from typing import Any

#: The sub-module left out (``None`` in ``sys.modules`` makes its import fail).
LAYOUT_MODULE = "pymupdf.layout"

if LAYOUT_MODULE not in sys.modules:
    sys.modules[LAYOUT_MODULE] = None  # type: ignore[assignment]

import pymupdf as _pymupdf  # noqa: E402  (after the layout analyser is marked absent)

__all__ = ["LAYOUT_MODULE", "pymupdf"]

#: The ``pymupdf`` module (untyped).
pymupdf: Any = _pymupdf
