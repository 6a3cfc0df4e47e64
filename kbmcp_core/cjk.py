"""What counts as Chinese, Japanese or Korean text: one table for every reader of it.

The lexical leg's query compiler (``kbmcp_adapters.store.lexical``), the match spans
(``spans``), the word similarity of MMR (``diversity``) and the share of a text an
English-only model can read (``readable_share``, the fusion's coverage and the reranker's
trust) all classify characters with ``is_cjk``. The stored rows never depend on it: the
FTS tables hold the raw text and their own tokenizers split it.
"""

from __future__ import annotations

import re

#: Hangul Jamo, CJK symbols 々〆〇, Hiragana and Katakana, Hangul compatibility Jamo,
#: Katakana phonetic extensions, CJK Extension A, the unified ideographs, Hangul Jamo
#: extended A, Hangul syllables and Jamo extended B, compatibility ideographs, halfwidth
#: and fullwidth forms, and the supplementary ideograph planes (Extension B onwards).
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF), (0x3005, 0x3007), (0x3040, 0x30FF), (0x3130, 0x318F),
    (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA960, 0xA97F),
    (0xAC00, 0xD7AF), (0xD7B0, 0xD7FF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF),
    (0x20000, 0x3134F),
)  # fmt: skip

#: The ranges as the inside of a regular-expression character class.
CJK_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES)
_ONE_CJK = re.compile(f"[{CJK_CLASS}]")


def is_cjk(char: str) -> bool:
    """True for Han, Hiragana, Katakana, Hangul and fullwidth characters."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in CJK_RANGES)


def readable_share(text: str) -> float:
    """Share of the letters and digits of ``text`` that are not Chinese, Japanese or
    Korean: what an English-only embedding model can make sense of."""
    chars = [c for c in text if c.isalnum()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if _ONE_CJK.match(c) is None) / len(chars)
