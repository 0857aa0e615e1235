"""Inputs of the tokenizer exercises (notebook 11): words of the Shakespeare excerpt and
a small byte-level BPE trained on it (built once, from fixed slices of the text)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from helpers import tokenizer as T
from helpers.course import draw

_TEXT = Path(T.__file__).parent / "data" / "shakespeare_hamlet_act1.txt"


@lru_cache(maxsize=None)
def shakespeare(start: int = 0, n_chars: int = 25_000) -> str:
    """``n_chars`` characters of the excerpt from ``start``."""
    return _TEXT.read_text(encoding="utf-8")[start:start + n_chars]


def words(start: int, n_chars: int) -> list[str]:
    """The pre-tokenised words (byte-level characters) of a slice of the excerpt."""
    return T.words_of(shakespeare(start, n_chars))


@lru_cache(maxsize=None)
def small_bpe(n_merges: int = 80) -> tuple[list, dict]:
    """``(merges, vocab)``: ``n_merges`` merges trained on the first 6,000 characters;
    the vocabulary numbers the control tokens first (0-16, as SmolLM2 does), then the
    256 byte characters in byte order, then one token per merge."""
    merges = T.train_bpe(words(0, 6000), n_merges)
    tokens = list(T.CONTROL_TOKENS) + [T._byte_table()[b] for b in range(256)]
    tokens += [a + b for a, b in merges]
    return [tuple(m) for m in merges], {t: i for i, t in enumerate(tokens)}


# Drawn for the contracts' cases (helpers.course.draw.draw_cases). The exercise modules
# import these inside their drawing functions: a student bundle keeps those functions but
# not this module, and never draws.


def drawn_merges(rng) -> list[tuple[str, str]]:
    """The merges BPE learns from drawn words (``draw.words``): 1 to 6 of them."""
    return [tuple(m) for m in T.train_bpe(draw.words(rng), int(rng.integers(1, 7)))]


def small_vocab() -> dict[str, int]:
    """A copy of :func:`small_bpe`'s vocabulary (drawn cases of decode and encode)."""
    return dict(small_bpe()[1])


def small_merges() -> list[tuple[str, str]]:
    """A copy of :func:`small_bpe`'s merges (drawn cases of encode)."""
    return list(small_bpe()[0])
