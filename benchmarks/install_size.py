"""The runtime install (issue 24): what `pip install .` without extras puts on disk, and how long.

The full run builds that install in a fresh venv (``pip install -c constraints.txt .``, as
the README's "Use it" does) and measures its wall time and its size on disk (``du``). The
quick run builds nothing: it adds up the files of the distributions the runtime install
would hold (kb-mcp's requirements without extras, followed through the installed metadata
of this venv), which is the same size less the venv's own pip. Both report the size of the
venv running the benchmark (the dev install) beside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.measure import REPO
from benchmarks.report import Row, verdict

#: The runtime install should stay under this (it was 2.1 GB when it was the dev one).
TARGET_MIB = 1024


def runtime_closure(root: str = "kb-mcp") -> dict[str, metadata.Distribution]:
    """Normalised name -> installed distribution, for ``root`` and everything its
    requirements without extras pull in (extras a requirement names, such as
    ``psycopg[binary]``, are followed)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        dist = found.get(key)
        if dist is None:
            try:
                dist = metadata.distribution(name)
            except metadata.PackageNotFoundError:
                continue  # a requirement for another platform or Python
            found[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            wanted = req.marker is None or any(
                req.marker.evaluate({"extra": extra}) for extra in {"", *extras})
            if wanted:
                todo.append((req.name, frozenset(req.extras)))
    return found


def files_mib(dists: dict[str, metadata.Distribution]) -> float:
    """The size of the files the distributions' RECORDs list, in MiB."""
    total = 0
    for dist in dists.values():
        for file in dist.files or []:
            try:
                total += os.stat(str(file.locate())).st_size
            except OSError:
                continue
    return total / 2**20


def du_mib(path: Path) -> float:
    """Disk usage of a folder in MiB, as ``du -sh`` shows it (the issue's measure)."""
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


def build_runtime_venv(work: Path) -> dict[str, Any]:
    """A fresh venv with ``pip install -c constraints.txt REPO``: wall time and size."""
    venv = work / "runtime-venv"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "-c", str(REPO / "constraints.txt"),
                    str(REPO)], check=True, capture_output=True, timeout=1800)
    seconds = time.perf_counter() - started
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list",
                             "--format", "freeze"], capture_output=True, text=True, check=True)
    out = {"install_s": seconds, "venv_mib": du_mib(venv),
           "venv_distributions": len(listed.stdout.split())}
    shutil.rmtree(venv, ignore_errors=True)  # not left in a kept --work folder
    return out


def measure(work: Path, *, build: bool) -> dict[str, Any]:
    closure = runtime_closure()
    out: dict[str, Any] = {"closure_mib": files_mib(closure), "distributions": len(closure),
                           "dev_venv_mib": du_mib(Path(sys.prefix)), "built": build}
    if build:
        out.update(build_runtime_venv(work))
    return out


def rows(result: Any) -> list[Row]:
    """The runtime install's size (a built venv, or the files of its distributions) and
    its install time, beside the dev venv."""
    if not isinstance(result, dict) or "closure_mib" not in result:
        return []
    dev = f"dev venv (make test) {result['dev_venv_mib']:.0f} MiB"
    if "venv_mib" in result:
        size = result["venv_mib"]
        out = [Row("runtime install (pip install ., no extras): venv size",
                   f"{size:.0f} MiB", f"{result['venv_distributions']} distributions; {dev}",
                   f"<= {TARGET_MIB} MiB", verdict(size <= TARGET_MIB)),
               Row("  runtime install: time (fresh venv, pip's cache as it is)",
                   f"{result['install_s']:.1f} s")]
    else:
        size = result["closure_mib"]
        out = [Row("runtime install: files of its distributions (not built in a quick run)",
                   f"{size:.0f} MiB", f"{result['distributions']} distributions; {dev}",
                   f"<= {TARGET_MIB} MiB", verdict(size <= TARGET_MIB))]
    return out
