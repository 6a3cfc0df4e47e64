"""Deterministic generator of realistic Markdown knowledge bases for the benchmarks.

The words come from ``vocabulary.txt`` next to this module."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

VOCABULARY = Path(__file__).with_name("vocabulary.txt")


def load_vocabulary(path: Path = VOCABULARY) -> dict[str, tuple[str, ...]]:
    """``[section]`` -> its lines, in file order (``#`` comments and blank lines skipped)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif current is None:
            raise ValueError(f"{path}:{number}: a word before the first [section]")
        else:
            current.append(line)
    return {name: tuple(words) for name, words in sections.items()}


_VOCABULARY = load_vocabulary()
#: Folders two levels deep (the topic groups of the read path) and their vocabulary.
AREAS: dict[str, tuple[str, ...]] = {
    name.removeprefix("area "): words
    for name, words in _VOCABULARY.items()
    if name.startswith("area ")
}
COMMON = _VOCABULARY["common"]
VERBS = _VOCABULARY["verbs"]
ADJECTIVES = _VOCABULARY["adjectives"]
CONNECTORS = _VOCABULARY["connectors"]
SENTENCES = _VOCABULARY["sentences"]
NAMES = _VOCABULARY["names"]
PERIODS = _VOCABULARY["periods"]
HEADINGS = _VOCABULARY["headings"]
CODE_LANGS = _VOCABULARY["code_langs"]


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    root: Path
    files: int
    bytes: int
    seed: int


class _Writer:
    """Builds one note's text from a seeded random source and its area's vocabulary."""

    def __init__(self, rng: random.Random, area: str) -> None:
        self.rng = rng
        self.nouns = AREAS[area] + COMMON
        self.area_nouns = AREAS[area]

    def sentence(self) -> str:
        r = self.rng
        return r.choice(SENTENCES).format(
            verb=r.choice(VERBS),
            verb2=r.choice(VERBS),
            adj=r.choice(ADJECTIVES),
            adj2=r.choice(ADJECTIVES),
            noun=r.choice(self.area_nouns),
            noun2=r.choice(self.nouns),
            conn=r.choice(CONNECTORS),
            period=r.choice(PERIODS),
            num=r.randint(2, 90),
            Name=r.choice(NAMES),
        )

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 7)))

    def bullets(self) -> str:
        r = self.rng
        marker = "1." if r.random() < 0.3 else "-"
        items = []
        for _ in range(r.randint(3, 7)):
            words = (
                f"{r.choice(VERBS).capitalize()} the {r.choice(ADJECTIVES)} {r.choice(self.nouns)}"
            )
            if r.random() < 0.4:
                words += f" ({r.choice(NAMES)}, {r.choice(PERIODS)} {r.randint(1, 52)})"
            items.append(f"{marker} {words}")
        return "\n".join(items)

    def code(self) -> str:
        r = self.rng
        lang = r.choice(CODE_LANGS)
        noun = r.choice(self.area_nouns).replace(" ", "_")
        if lang == "python":
            body = (
                f"def {r.choice(VERBS)}_{noun}(limit: int = {r.randint(1, 99)}) -> bool:\n"
                f'    """{r.choice(VERBS).capitalize()} the {noun}."""\n'
                f"    return check_{noun}(limit) and limit > {r.randint(0, 9)}"
            )
        elif lang == "bash":
            body = (
                f"kubectl get {noun}s -n {r.choice(self.nouns).replace(' ', '-')}\n"
                f"./scripts/{r.choice(VERBS)}.sh --{noun} --retries {r.randint(1, 5)}"
            )
        elif lang == "yaml":
            body = (
                f"{noun}:\n  enabled: {str(r.random() < 0.5).lower()}\n"
                f"  timeout_seconds: {r.randint(5, 300)}\n  owner: {r.choice(NAMES)}"
            )
        elif lang == "sql":
            body = (
                f"SELECT id, {noun}_at FROM {noun}s\nWHERE status = '{r.choice(ADJECTIVES)}'"
                f"\nORDER BY {noun}_at DESC LIMIT {r.randint(5, 100)};"
            )
        else:
            body = f'{{"{noun}": "{r.choice(ADJECTIVES)}", "count": {r.randint(1, 999)}}}'
        return f"```{lang}\n{body}\n```"

    def table(self) -> str:
        r = self.rng
        rows = ["| Item | Owner | Status |", "| --- | --- | --- |"]
        for _ in range(r.randint(2, 5)):
            rows.append(f"| {r.choice(self.nouns)} | {r.choice(NAMES)} | {r.choice(ADJECTIVES)} |")
        return "\n".join(rows)

    def block(self) -> str:
        roll = self.rng.random()
        if roll < 0.62:
            return self.paragraph()
        if roll < 0.82:
            return self.bullets()
        if roll < 0.94:
            return self.code()
        return self.table()


def note(rng: random.Random, area: str, index: int, target_bytes: int) -> tuple[str, str]:
    """One note of about ``target_bytes``: (file name, text)."""
    w = _Writer(rng, area)
    subject = f"{rng.choice(ADJECTIVES)} {rng.choice(w.area_nouns)}"
    title = f"{rng.choice(VERBS).capitalize()} the {subject} ({index})"
    tags = sorted(set(rng.sample(w.area_nouns, k=rng.randint(1, 3))))
    year, month, day = rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28)
    parts = [
        "---",
        f'title: "{title}"',
        f"date: {year}-{month:02d}-{day:02d}",
        f"tags: [{', '.join(t.replace(' ', '-') for t in tags)}]",
        f"author: {rng.choice(NAMES)}",
        "---",
        "",
        f"# {title}",
        "",
        w.paragraph(),
    ]
    size = sum(len(p) + 1 for p in parts)
    while size < target_bytes:
        level = "##" if rng.random() < 0.7 else "###"
        section = [f"{level} {rng.choice(HEADINGS)}", ""]
        for _ in range(rng.randint(1, 4)):
            section += [w.block(), ""]
        parts += ["", *section]
        size += sum(len(p) + 1 for p in section) + 1
    name = f"{subject.replace(' ', '-')}-{index:05d}.md"
    return name, "\n".join(parts).rstrip() + "\n"


def small_note(rng: random.Random, area: str, index: int) -> tuple[str, str]:
    """A short note (0.3-1 KB, one chunk) for listing benchmarks with many documents."""
    w = _Writer(rng, area)
    title = f"{rng.choice(ADJECTIVES).capitalize()} {rng.choice(w.area_nouns)} {index}"
    text = (
        f'---\ntitle: "{title}"\ntags: [{rng.choice(w.area_nouns).replace(" ", "-")}]\n'
        f"---\n# {title}\n\n{w.paragraph()}\n"
    )
    return f"note-{index:05d}.md", text


def generate(
    root: Path,
    files: int,
    seed: int = 7,
    *,
    small: bool = False,
    min_kb: float = 1.0,
    max_kb: float = 8.0,
) -> CorpusInfo:
    """Write ``files`` notes under ``root`` spread over the areas (and per-area sub-folders
    when the corpus is large). Same arguments, same bytes."""
    rng = random.Random(seed)
    areas = sorted(AREAS)
    total = 0
    for i in range(files):
        area = areas[i % len(areas)]
        folder = root / area
        if files > 2000:  # keep directories a realistic size
            folder = folder / f"batch-{(i // len(areas)) // 100:03d}"
        if small:
            name, text = small_note(rng, area, i)
        else:
            # Skewed towards short notes, like real ones: most 1-4 KB, a few up to max_kb.
            kb = min_kb + (max_kb - min_kb) * rng.betavariate(1.3, 2.6)
            name, text = note(rng, area, i, int(kb * 1024))
        folder.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        (folder / name).write_bytes(data)
        total += len(data)
    return CorpusInfo(root=root, files=files, bytes=total, seed=seed)


def edit_one(root: Path, nth: int) -> Path:
    """Append a new paragraph to the ``nth`` Markdown file (sorted order): a real edit that
    changes one chunk (or adds one)."""
    paths = sorted(root.rglob("*.md"))
    target = paths[nth % len(paths)]
    rng = random.Random(nth)
    w = _Writer(rng, sorted(AREAS)[nth % len(AREAS)])
    with target.open("a", encoding="utf-8") as handle:
        handle.write(f"\n## Edit {nth}\n\n{w.paragraph()}\n")
    return target


def queries(count: int, seed: int = 11) -> list[str]:
    """Natural-language questions in the corpus vocabulary (deterministic)."""
    rng = random.Random(seed)
    forms = (
        "how do we {verb} the {noun}",
        "why is the {noun} {adj}",
        "what did {Name} decide about the {noun}",
        "{noun} {noun2} {verb}",
        "steps to {verb} a {adj} {noun}",
        "when should I {verb} the {noun} and the {noun2}",
    )
    out = []
    for _ in range(count):
        area = rng.choice(sorted(AREAS))
        out.append(
            rng.choice(forms).format(
                verb=rng.choice(VERBS),
                noun=rng.choice(AREAS[area]),
                noun2=rng.choice(COMMON),
                adj=rng.choice(ADJECTIVES),
                Name=rng.choice(NAMES),
            )
        )
    return out
