"""Token counts without the tokenizer (``wordpiece_count``): the same numbers as the
default model's own tokenizer, so the chunks of a document are exactly what they were."""

from __future__ import annotations

import random

from tokenizers import Tokenizer

from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.embedding.minilm_files import MODEL_FILES
from kbmcp_adapters.embedding.wordpiece_count import WordPieceCounter
from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_core.ports import ChunkBudget


def real_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(MODEL_FILES / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


HOSTILE = [
    "", " ", "\n\n", "plain words", "Don't stop: e-mail C++ (v2.0) [draft] {x} $5 50% #tag",
    "[CLS] [SEP] [MASK] [PAD] [UNK] inside text", "[cls] lowercase is no added token",
    "x" * 150 + " after a word too long to split", "tab\tand\rreturn\x0bvt\x0cff",
    "nul\x00in\x01the\x1fmiddle\x7fdel", "UPPER lower MiXeD 12ab34 a1b2",
    "caf\u00e9 na\u00efve \u00fcber", "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0",
    "emoji \U0001f600 end",
    "```python\ndef f(x):\n    return x ** 2  # square\n```", "| a | b |\n|---|---|\n| 1 | 2 |",
]


def random_ascii(rng: random.Random, n: int) -> list[str]:
    alphabet = [chr(i) for i in range(128)] + ["[SEP]", "supercalifragilistic", "##ing", " "] * 3
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120))) for _ in range(n)]


#: What non-ASCII text holds that a tokenizer treats apart: accents (composed and combining),
#: CJK, Unicode spaces, punctuation and controls (zero-width, separators, NEL, BOM), symbols,
#: emoji, a replacement character, letters that lower-case to two, and ASCII to mix them with.
UNICODE = [*"caf\u00e9 na\u00efve \u00fcber \u0130stanbul \u1e9e\u00df e\u0301 \u0301x",
           *"\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3002\u3001\u300c\u300d\uff01\uff1f",
           "\u3000", "\u00a0", "\u2003", "\u2028", "\u2029", "\u202f", "\u200b", "\u200d",
           "\u0085", "\ufeff", "\x0b", "\x0c", "\x1c", "\x00", "\ufffd", "\u2014", "\u2026",
           "\u00ab", "\u00bb", "\u20ac", "\u00b5", "\U0001f600", "\U0001f44d\U0001f3fd",
           "\u0645\u0631\u062d\u0628\u0627", "\u043f\u0440\u0438\u0432\u0435\u0442",
           " ", " ", "\n", "\t", "\r", "word", "C++", "e-mail", "x" * 70, "\u00e9" * 70]


def random_unicode(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(UNICODE) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def test_counts_equal_the_tokenizer_on_hostile_and_random_text() -> None:
    tokenizer = real_tokenizer()
    counter = WordPieceCounter.for_tokenizer(tokenizer)
    assert counter is not None  # the default model's tokenizer is a BERT WordPiece one
    texts = HOSTILE + random_ascii(random.Random(11), 3000) + random_unicode(
        random.Random(12), 3000)
    answered = 0
    for text in texts:
        got = counter.count(text)
        if got is not None:
            answered += 1
            assert got == len(tokenizer.encode(text).ids), repr(text)
    assert answered > 4000  # every text without an added token, ASCII or not
    assert counter.count("caf\u00e9 \u65e5\u672c") == len(tokenizer.encode(
        "caf\u00e9 \u65e5\u672c").ids)
    assert counter.count("a [SEP] b") is None


def note(i: int) -> str:
    rng = random.Random(i)
    words = ["deploy", "rollback", "cluster", "latency", "queue", "the", "a", "of", "to",
             "in", "config", "YAML", "don't", "e-mail", "v2.1", "(beta)",
             "[link](http://x.y/z)", "`code`", "**bold**"]

    def para(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    sections = [f"## Part {k}\n\n{para(rng.randint(3, 400))}\n\n- {para(8)}\n- {para(5)}"
                for k in range(rng.randint(1, 6))]
    return f"---\ntitle: Note {i}\ntags: [a, b]\n---\n# Note {i}\n\n{para(30)}\n\n" + \
        "\n\n".join(sections) + f"\n\n```sh\n{para(60)}\n```\n\n## Caf\u00e9 {i}\n\n{para(40)}\n"


def test_chunks_are_the_same_as_with_the_tokenizer_counting_every_text() -> None:
    tokenizer = real_tokenizer()
    embedder = FastEmbedEmbedder()
    fast = ChunkBudget(256, 24, lambda text: embedder.count_tokens([text])[0])
    exact = ChunkBudget(256, 24, lambda text: len(tokenizer.encode(text).ids))
    parser = MarkdownParser()
    for i in range(40):
        data = note(i).encode()
        assert parser.parse(f"n{i}.md", data, fast).chunks == \
            parser.parse(f"n{i}.md", data, exact).chunks, f"note {i}"
