"""The OCR engine: RapidOCR on ONNX Runtime, with the models its wheel carries (0053).

``RapidEngine`` loads the detection, direction and recognition models from the
``rapidocr`` package's own ``models`` folder by path, so RapidOCR never reaches its
download code: nothing is fetched at run time, and a wheel without its models is a
clear ``OcrUnavailable``, not a download attempt. One recognition model (PP-OCR "ch")
reads Chinese, Japanese kana and kanji and Latin script; other scripts have no model
here and come out as nothing or as look-alike Latin letters.

``read_lines`` turns the engine's text boxes into lines in reading order: boxes whose
vertical centres lie within half a box height of each other are one line, read left to
right. Imported only where OCR runs (a parser worker, or ``kb-mcp init``'s check).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from kbmcp_core.errors import ParseError

__all__ = ["INSTALL_HINT", "MODEL_FILES", "OcrUnavailable", "RapidEngine", "missing_engine"]

#: How to install the engine.
INSTALL_HINT = "pip install 'kb-mcp[ocr]'"
#: The models the ``rapidocr`` wheel carries, by RapidOCR's config section.
MODEL_FILES: dict[str, str] = {
    "Det": "PP-OCRv6_det_small.onnx",
    "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
    "Rec": "PP-OCRv6_rec_small.onnx",
}


class OcrUnavailable(ParseError):
    """The OCR engine or its models are not installed."""


def _model_dir() -> Path | None:
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "models"


def missing_engine() -> str | None:
    """Why OCR cannot run here (one line naming the install), or None when it can."""
    try:
        folder = _model_dir()
    except (ImportError, ValueError):
        folder = None
    if folder is None:
        return f"the ocr format needs RapidOCR, which is not installed: {INSTALL_HINT}"
    absent = [name for name in MODEL_FILES.values() if not (folder / name).is_file()]
    if absent:
        return (f"the installed RapidOCR lacks its model {absent[0]} (kb-mcp never downloads "
                f"one): {INSTALL_HINT}")
    return None


class RapidEngine:
    """RapidOCR with the packaged models (no direction classifier), ``threads`` ONNX
    Runtime threads per model."""

    def __init__(self, threads: int = 1) -> None:
        reason = missing_engine()
        if reason is not None:
            raise OcrUnavailable(reason)
        from rapidocr import RapidOCR

        _without_memory_patterns()
        folder = _model_dir()
        assert folder is not None
        params: dict[str, Any] = {
            f"{section}.model_path": str(folder / name) for section, name in MODEL_FILES.items()
        }
        params["Global.log_level"] = "error"
        # The direction classifier turns whole upright lines upside down on clean pages
        # (CER 0.10-0.29 with it, 0.00 without, docs/benchmarks.md): pages are upright.
        params["Global.use_cls"] = False
        params["EngineConfig.onnxruntime.intra_op_num_threads"] = threads
        params["EngineConfig.onnxruntime.inter_op_num_threads"] = 1
        # Detection on the page scaled to 1,280 pixels on its longer side: half the memory
        # of RapidOCR's default (about 480 MB for an A4 page, not 900) and the same CER.
        params["Det.limit_type"] = "max"
        params["Det.limit_side_len"] = 1280
        self._ocr = RapidOCR(params=params)

    def read_lines(self, image: Any) -> list[str]:
        """The text of ``image`` (an RGB ``numpy`` array) as lines in reading order."""
        result: Any = self._ocr(image)
        if result.boxes is None or result.txts is None:
            return []
        boxes: list[tuple[float, float, float, str]] = []
        for box, text in zip(result.boxes, result.txts, strict=True):
            ys = [float(point[1]) for point in box]
            top, bottom = min(ys), max(ys)
            if str(text).strip():
                boxes.append(((top + bottom) / 2, bottom - top,
                              min(float(point[0]) for point in box), str(text).strip()))
        return _lines(boxes)

    def read(self, image: Any) -> str:
        return "\n".join(self.read_lines(image))


def _without_memory_patterns() -> None:
    """ONNX Runtime sessions without memory patterns: a pattern is kept per input shape,
    and every page and text line has its own, so a worker's memory grew page after page
    (about 10 MB a page; an A4 scan ran out of the 1 GiB cap after ~15 pages) and stays
    flat without them. RapidOCR builds its session options in one static method (pinned
    to 3.10 by the extra), which is wrapped here, once."""
    from rapidocr.inference_engine.onnxruntime import main as ort_main

    session = ort_main.OrtInferSession
    made = session.__dict__["_init_sess_opts"].__func__
    if getattr(made, "kbmcp_wrapped", False):
        return

    def options(cfg: Any) -> Any:
        opts = made(cfg)
        opts.enable_mem_pattern = False
        return opts

    options.kbmcp_wrapped = True  # type: ignore[attr-defined]
    session._init_sess_opts = staticmethod(options)  # type: ignore[method-assign]


def _lines(boxes: list[tuple[float, float, float, str]]) -> list[str]:
    """Boxes (centre y, height, left x, text) grouped into lines, top to bottom."""
    rows: list[list[tuple[float, float, float, str]]] = []
    for box in sorted(boxes):
        row = rows[-1] if rows else None
        if row is not None and abs(box[0] - row[0][0]) <= max(box[1], row[0][1]) / 2:
            row.append(box)
        else:
            rows.append([box])
    return [" ".join(text for _, _, _, text in sorted(row, key=lambda b: b[2])) for row in rows]
