"""PowerPoint charts and alt text as lines of text (python-pptx objects in, strings out).

* A chart (in a graphic frame) becomes ``Chart: <title>`` (``Chart`` when untitled),
  its axis titles, then a table: a ``category | <series name> ...`` header and one
  ``<category> | <value> ...`` line per category, values as the file caches them. A chart
  python-pptx cannot model (a chart type it does not know, a damaged part) falls back to
  the text of the chart's XML, so its words are still found; a missing chart part gives
  no lines.
* ``alt_text`` is a shape's description (``descr``), else its title, as PowerPoint's
  "Alt Text" pane writes them.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kbmcp_adapters.parsers.word import markdown_block

__all__ = ["alt_text", "chart_lines"]

_SPACE = re.compile(r"\s+")
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


def _clean(text: object) -> str:
    return _SPACE.sub(" ", str(text)).strip()


def alt_text(shape: Any) -> str:
    """The alt text PowerPoint shows for ``shape``, or ``""``."""
    try:
        props = shape._element._nvXxPr.cNvPr
    except AttributeError:  # a shape kind without non-visual properties
        return ""
    return _clean(props.get("descr") or props.get("title") or "")


def chart_lines(frame: Any) -> list[str]:
    """The title, axis titles, series names, categories and values of the chart in a
    graphic frame, as lines; none when its chart part is missing or unreadable."""
    try:
        chart = frame.chart
    except Exception:  # a dangling or damaged chart part: the rest of the slide stands
        return []
    try:
        return _modelled(chart)
    except Exception:  # a chart python-pptx cannot model: keep its words all the same
        return _raw(chart)


def _title(owner: Any) -> str:
    return _clean(owner.chart_title.text_frame.text) if owner.has_title else ""


def _modelled(chart: Any) -> list[str]:
    title = _title(chart)
    lines = [f"Chart: {title}" if title else "Chart"]
    for axis in ("category_axis", "value_axis"):
        try:
            owner = getattr(chart, axis)
        except (ValueError, AttributeError):  # pie charts have no axes
            continue
        if owner.has_title and _clean(owner.axis_title.text_frame.text):
            lines.append(f"{axis.split('_')[0]} axis: {_clean(owner.axis_title.text_frame.text)}")
    for plot in chart.plots:
        if type(plot).__name__ in ("XyPlot", "BubblePlot"):
            lines.extend(_xy_lines(plot))
            continue
        categories = [
            " / ".join(_number(_float(str(part))) for part in label if part is not None)
            if isinstance(label, tuple)
            else _number(_float(str(label)))
            for label in plot.categories.flattened_labels
        ]
        series = list(plot.series)
        names = [_clean(s.name or "") for s in series]
        values = [list(s.values) for s in series]
        lines.extend(markdown_block(" | ".join(["category", *names])))
        rows = max([len(categories), *(len(v) for v in values)], default=0)
        for at in range(rows):
            cells = [categories[at] if at < len(categories) else ""]
            cells += [_number(v[at]) if at < len(v) else "" for v in values]
            lines.extend(markdown_block(" | ".join(cells)))
    return lines


def _xy_lines(plot: Any) -> list[str]:
    """Scatter and bubble series: an ``x | <series name> [| size]`` table per series."""
    lines: list[str] = []
    for series in plot.series:
        element = series._element
        columns = [
            [_number(_float(v.text)) for part in element.iterchildren(_C + tag)
             for v in part.iter(_C + "v")]
            for tag in ("xVal", "yVal", "bubbleSize")
        ]  # fmt: skip
        columns = [column for column in columns if column]
        names = ["x", _clean(series.name or "") or "y", "size"][: len(columns)]
        lines.extend(markdown_block(" | ".join(names)))
        for at in range(max((len(c) for c in columns), default=0)):
            row = [column[at] if at < len(column) else "" for column in columns]
            lines.extend(markdown_block(" | ".join(row)))
    return lines


def _float(text: str | None) -> object:
    try:
        return float(text or "")
    except ValueError:
        return text or ""


def _number(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    return _clean(value)


def _raw(chart: Any) -> list[str]:
    element = chart._chartSpace
    words = [
        _clean(node.text)
        for node in element.iter(_C + "v", _A + "t")
        if node.text and _clean(node.text)
    ]
    return ["Chart", *markdown_block(" ".join(words))] if words else []
