"""The Porter stemmer (Martin Porter's reference algorithm, as SQLite's FTS5 ``porter``
tokenizer applies it), so core code can tell which words of a chunk the lexical leg
matched without asking the store.

``stem("running") == stem("runs") == "run"``. Words shorter than three characters or
longer than 64 are returned unchanged, as FTS5 does. The input is expected lower-case.
"""

from __future__ import annotations

#: FTS5 leaves tokens longer than this (in bytes) unstemmed.
MAX_STEMMED = 64

_VOWELS = frozenset("aeiou")


def stem(word: str) -> str:
    """The Porter stem of one lower-case word."""
    if len(word) < 3 or len(word.encode("utf-8")) > MAX_STEMMED:
        return word
    return _Stemmer(word).run()


class _Stemmer:
    """One word being stemmed: ``b[:k+1]`` is the current word, ``j`` a suffix boundary."""

    __slots__ = ("b", "j", "k")

    def __init__(self, word: str) -> None:
        self.b = list(word)
        self.k = len(word) - 1
        self.j = 0

    def run(self) -> str:
        self.step1ab()
        if self.k > 0:
            self.step1c()
            self.step2()
            self.step3()
            self.step4()
            self.step5()
        return "".join(self.b[: self.k + 1])

    # -- the predicates of the paper ------------------------------------------------------
    def cons(self, i: int) -> bool:
        ch = self.b[i]
        if ch in _VOWELS:
            return False
        if ch == "y":
            return True if i == 0 else not self.cons(i - 1)
        return True

    def m(self) -> int:
        """The number of vowel-consonant sequences in ``b[:j+1]``."""
        n, i, j = 0, 0, self.j
        while True:
            if i > j:
                return n
            if not self.cons(i):
                break
            i += 1
        i += 1
        while True:
            while True:
                if i > j:
                    return n
                if self.cons(i):
                    break
                i += 1
            i += 1
            n += 1
            while True:
                if i > j:
                    return n
                if not self.cons(i):
                    break
                i += 1
            i += 1

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def doublec(self, j: int) -> bool:
        return j >= 1 and self.b[j] == self.b[j - 1] and self.cons(j)

    def cvc(self, i: int) -> bool:
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in "wxy"

    def ends(self, suffix: str) -> bool:
        n = len(suffix)
        if n > self.k + 1 or "".join(self.b[self.k - n + 1 : self.k + 1]) != suffix:
            return False
        self.j = self.k - n
        return True

    def setto(self, text: str) -> None:
        self.b[self.j + 1 : self.k + 1] = list(text)
        self.k = self.j + len(text)

    def r(self, text: str) -> None:
        if self.m() > 0:
            self.setto(text)

    # -- the steps ------------------------------------------------------------------------
    def step1ab(self) -> None:
        if self.b[self.k] == "s":
            if self.ends("sses"):
                self.k -= 2
            elif self.ends("ies"):
                self.setto("i")
            elif self.k >= 1 and self.b[self.k - 1] != "s":
                self.k -= 1
        if self.ends("eed"):
            if self.m() > 0:
                self.k -= 1
        elif (self.ends("ed") or self.ends("ing")) and self.vowel_in_stem():
            self.k = self.j
            if self.ends("at"):
                self.setto("ate")
            elif self.ends("bl"):
                self.setto("ble")
            elif self.ends("iz"):
                self.setto("ize")
            elif self.doublec(self.k):
                self.k -= 1
                if self.b[self.k] in "lsz":
                    self.k += 1
            else:
                self.j = self.k
                if self.m() == 1 and self.cvc(self.k):
                    self.setto("e")

    def step1c(self) -> None:
        if self.ends("y") and self.vowel_in_stem():
            self.b[self.k] = "i"

    def _replace_first(self, rules: tuple[tuple[str, str], ...]) -> None:
        """The first suffix that ends the word decides; it is replaced when m() > 0."""
        for suffix, replacement in rules:
            if self.ends(suffix):
                self.r(replacement)
                return

    def step2(self) -> None:
        rules = _STEP2.get(self.b[self.k - 1]) if self.k >= 1 else None
        if rules:
            self._replace_first(rules)

    def step3(self) -> None:
        rules = _STEP3.get(self.b[self.k])
        if rules:
            self._replace_first(rules)

    def step4(self) -> None:
        if self.k < 1:
            return
        ch = self.b[self.k - 1]
        if ch == "o":
            if self.ends("ion") and self.j >= 0 and self.b[self.j] in "st":
                pass
            elif not self.ends("ou"):
                return
        else:
            if not any(self.ends(s) for s in _STEP4.get(ch, ())):
                return
        if self.m() > 1:
            self.k = self.j

    def step5(self) -> None:
        self.j = self.k
        if self.b[self.k] == "e":
            a = self.m()
            if a > 1 or (a == 1 and not self.cvc(self.k - 1)):
                self.k -= 1
        if self.b[self.k] == "l" and self.doublec(self.k) and self.m() > 1:
            self.k -= 1


_STEP2: dict[str, tuple[tuple[str, str], ...]] = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "g": (("logi", "log"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
}
_STEP3: dict[str, tuple[tuple[str, str], ...]] = {
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
    "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")),
    "s": (("ness", ""),),
}
_STEP4: dict[str, tuple[str, ...]] = {
    "a": ("al",),
    "c": ("ance", "ence"),
    "e": ("er",),
    "i": ("ic",),
    "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"),
    "s": ("ism",),
    "t": ("ate", "iti"),
    "u": ("ous",),
    "v": ("ive",),
    "z": ("ize",),
}
