"""Byte-level BPE, the tokenizer of GPT-2 and SmolLM2, in plain Python (notebook 11).

Text becomes ids in four steps:

    pre-tokenise     "Hi  there 42<|im_end|>" -> ["Hi", " ", " there", " ", "4", "2",
                     "<|im_end|>"]   (control tokens whole; SmolLM2: digits one by one;
                     then the GPT-2 pattern: a word keeps the space before it)
    bytes            " there" -> b" there" -> "Ġthere"   (each UTF-8 byte one printable
                     character of the byte alphabet: a space shows as "Ġ")
    merges by rank   ["Ġ","t","h","e","r","e"] -> ... -> ["Ġthere"]   (repeatedly the
                     adjacent pair with the lowest rank in the list of merges)
    vocabulary       "Ġthere" -> 612

Decoding joins the tokens' characters, maps them back to bytes and decodes the whole
byte sequence as UTF-8 (one token may hold half a character).

The first group of functions are the references of the exercises (readable, slow:
:func:`train_bpe` recounts every pair after each merge). :func:`encode_smollm2` is the
fast reference (a cache per word, the merge ranks in a dict) that the tests compare id
for id with the ``tokenizers`` library; :func:`smollm2_vocab_and_merges` reads the
vocabulary and the merges from the GGUF file of notebook 10.

References: Sennrich et al. (2016), "Neural machine translation of rare words with
subword units"; Radford et al. (2019), GPT-2 (the byte alphabet and the split pattern);
the SmolLM2 tokenizer (Hugging Face, 2024).
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache

__all__ = ["byte_symbols", "count_pairs", "merge_pair", "train_bpe",
           "encode_word", "pretokenize", "encode", "decode", "GPT2_PATTERN",
           "CONTROL_TOKENS", "smollm2_vocab_and_merges", "encode_smollm2",
           "decode_smollm2", "words_of", "hamlet_excerpt"]

#: SmolLM2's control tokens (token type 3 in the GGUF file): ids 0 to 16, never split.
CONTROL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>",
                  "<reponame>", "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>",
                  "<issue_comment>", "<issue_closed>", "<jupyter_start>", "<jupyter_text>",
                  "<jupyter_code>", "<jupyter_output>", "<jupyter_script>",
                  "<empty_output>")

# ---------------------------------------------------------------------------------------
# The byte alphabet
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _byte_table() -> dict[int, str]:
    """GPT-2's table ``{byte: printable character}`` (256 entries, all different).

    The 188 bytes that already print as themselves in Latin-1 (``!`` to ``~``, ``¡`` to
    ``¬``, ``®`` to ``ÿ``) keep their character; the 68 others (controls, the space, ...)
    get ``chr(256 + k)``, ``k`` counting them in byte order: the space (byte 32, the 33rd
    of them) becomes ``chr(256 + 32) = "Ġ"``, a newline (byte 10) ``"Ċ"``.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    table, k = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + k)
            k += 1
    return table


def byte_symbols(text: str) -> str:
    """``text`` as byte-level characters: its UTF-8 bytes, each one character of
    :func:`_byte_table` (``" café"`` -> ``"ĠcafÃ©"``: ``é`` is two bytes)."""
    table = _byte_table()
    return "".join(table[b] for b in text.encode("utf-8"))


def decode(ids, vocab: dict[str, int]) -> str:
    """The text of token ids: every token's characters, joined, back to bytes, decoded
    once as UTF-8 (an incomplete character at the end becomes ``"\\ufffd"``).

    ids: a list of ints; vocab: ``{token: id}``. Control tokens come out as written."""
    token_of = {i: tok for tok, i in vocab.items()}              # id -> token
    symbols = "".join(token_of[int(i)] for i in ids)              # byte-level characters
    back = {c: b for b, c in _byte_table().items()}               # character -> byte
    return bytes(back[c] for c in symbols).decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------
# Pairs, merges, training
# ---------------------------------------------------------------------------------------


def count_pairs(tokens) -> dict[tuple[str, str], int]:
    """``{(a, b): how many times b follows a}`` over the adjacent pairs of ``tokens``.
    Pairs overlap: ``["a", "a", "a"]`` holds ``("a", "a")`` twice."""
    counts: dict[tuple[str, str], int] = {}
    for pair in zip(tokens, tokens[1:]):                           # N - 1 pairs
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge_pair(tokens, pair) -> list[str]:
    """``tokens`` with every occurrence of ``pair`` replaced by one token, ``a + b``,
    scanning left to right: ``["a", "a", "a"]`` with ``("a", "a")`` gives ``["aa", "a"]``."""
    a, b = pair
    out, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and tokens[i] == a and tokens[i + 1] == b:
            out.append(a + b)                                      # the pair, merged
            i += 2                                                 # both are used up
        else:
            out.append(tokens[i])
            i += 1
    return out


def train_bpe(words, n_merges: int) -> list[tuple[str, str]]:
    """The first ``n_merges`` merges BPE learns from ``words`` (byte-level strings, one
    per occurrence in the corpus: ``["ĠThe", "Ġcat", "Ġthe", ...]``).

    Each word starts as its characters. Each step counts the adjacent pairs inside every
    word (never across two words), merges the most frequent pair everywhere and records
    it; ties go to the smallest pair in Python's order (``min`` of the tuples). Stops
    early when no word has two tokens left."""
    counts: dict[str, int] = {}
    for w in words:                                                # unique words, counted
        counts[w] = counts.get(w, 0) + 1
    split = {w: list(w) for w in counts}                           # word -> its tokens
    merges = []
    for _ in range(n_merges):
        pairs: dict[tuple[str, str], int] = {}
        for w, tokens in split.items():
            for pair, n in count_pairs(tokens).items():
                pairs[pair] = pairs.get(pair, 0) + n * counts[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))            # most frequent, then smallest
        merges.append(best)
        split = {w: merge_pair(tokens, best) for w, tokens in split.items()}
    return merges


def encode_word(word: str, merges) -> list[str]:
    """The tokens of one pre-tokenised word (byte-level characters) under ``merges``
    (a list of pairs; its index is the rank): start from the characters, then as long as
    some adjacent pair is a merge, merge the pair of LOWEST RANK (everywhere)."""
    rank = {tuple(p): r for r, p in enumerate(merges)}            # (a, b) -> rank
    tokens = list(word)
    while len(tokens) > 1:
        ranked = [(rank[p], p) for p in zip(tokens, tokens[1:]) if p in rank]
        if not ranked:
            break
        tokens = merge_pair(tokens, min(ranked)[1])
    return tokens


# ---------------------------------------------------------------------------------------
# Pre-tokenisation
# ---------------------------------------------------------------------------------------


def _ranges(flags) -> str:
    """A regular-expression character class body of the code points ``c`` with
    ``flags[c]`` true (a boolean array over every code point): each run of them as
    ``first-last`` (or one character alone)."""
    import numpy as np

    edges = np.flatnonzero(np.diff(np.concatenate(([False], flags, [False]))))  # [2 runs]
    return "".join(re.escape(chr(a)) if b - a == 1
                   else f"{re.escape(chr(a))}-{re.escape(chr(b - 1))}"
                   for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()))


def _letters_and_numbers() -> tuple[str, str]:
    """The class bodies of ``\\p{L}`` and ``\\p{N}`` for this Python's Unicode database
    (built once, about 20 ms): ``str.isalpha`` is exactly the letter categories (Lu, Ll,
    Lt, Lm, Lo); every number (Nd, Nl, No) is ``str.isnumeric``, and so are a few
    letters (CJK numerals such as 三), which ``unicodedata.category`` weeds out. NumPy's
    ``strings.isalpha`` and ``strings.isnumeric`` ask the interpreter's own Unicode
    database for every code point at once (``tests/helpers/test_tokenizer.py`` holds them
    to ``str``'s, one code point at a time)."""
    import numpy as np

    every = np.arange(0x110000, dtype="<u4").view("<U1")         # [0x110000] every code point
    letter = np.strings.isalpha(every)                             # [0x110000] bool
    numeric = np.strings.isnumeric(every)                          # [0x110000] bool
    for c in np.flatnonzero(numeric).tolist():                     # about 1,900 of them
        if unicodedata.category(chr(c))[0] != "N":
            numeric[c] = False
    return _ranges(letter), _ranges(numeric)


#: Whitespace as the ``tokenizers`` library's regular expressions see it (``\s``: the
#: Unicode White_Space property; Python's own ``\s`` also counts ``\x1c``-``\x1f``).
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_CONTROL = re.compile("(" + "|".join(re.escape(t) for t in
                                     sorted(CONTROL_TOKENS, key=len, reverse=True)) + ")")


@lru_cache(maxsize=None)
def _patterns() -> dict:
    """The patterns of the pre-tokenisation, built on first use (about 30 ms: most
    programs that import this module never split a text):

    * ``_LETTER``, ``_NUMBER``: the class bodies of ``\\p{L}`` and ``\\p{N}``;
    * ``GPT2_PATTERN``: GPT-2's split into words, ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+|
      ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``, written for Python's ``re``
      (which has no ``\\p``): an English contraction; letters, numbers or other symbols,
      each with at most one space before them; a run of spaces that leaves its last
      space to the next word; the spaces at the end. ``GPT2_PATTERN.findall(text)``
      gives the words;
    * ``_DIGIT``: one digit, kept by ``split``."""
    letter, number = _letters_and_numbers()                        # \p{L}, \p{N}
    return {"_LETTER": letter, "_NUMBER": number,
            "GPT2_PATTERN": re.compile(
                rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letter}]+| ?[{number}]+"
                rf"| ?[^{_SPACE}{letter}{number}]+|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]+"),
            "_DIGIT": re.compile(f"([{number}])")}


def __getattr__(name: str):
    """``GPT2_PATTERN`` (and the private patterns of :func:`_patterns`), built on first use."""
    if name in ("GPT2_PATTERN", "_LETTER", "_NUMBER", "_DIGIT"):
        return _patterns()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pretokenize(text: str) -> list[str]:
    """SmolLM2's pre-tokenisation: control tokens kept whole, every digit a piece of its
    own, the rest split by :data:`GPT2_PATTERN`. ``"".join(pretokenize(t)) == t``."""
    patterns = _patterns()
    digit, words = patterns["_DIGIT"], patterns["GPT2_PATTERN"]
    pieces = []
    for part in _CONTROL.split(text):                              # odd parts: control tokens
        if part in CONTROL_TOKENS:
            pieces.append(part)
            continue
        for chunk in digit.split(part):                            # odd chunks: single digits
            if chunk:
                pieces.extend(words.findall(chunk))
    return pieces


def hamlet_excerpt() -> str:
    """The training text of notebook 11: *Hamlet*, act I, scenes 1-3 (about 25 KB, public
    domain; source in helpers/data/README.md)."""
    from pathlib import Path

    return (Path(__file__).parent / "data" / "shakespeare_hamlet_act1.txt").read_text(
        encoding="utf-8")


def words_of(text: str) -> list[str]:
    """The pre-tokenised words of ``text`` in byte-level characters (training input):
    :func:`byte_symbols` of each piece of :func:`pretokenize`. Written with the two
    exercises' functions only, so that a student's copy, where they are left out, runs it
    with the learner's own."""
    return [byte_symbols(piece) for piece in pretokenize(text)]


def encode(text: str, merges, vocab: dict[str, int]) -> list[int]:
    """Token ids of ``text``: :func:`pretokenize`, then a control token is its id, any
    other piece goes to byte-level characters, :func:`encode_word`, and the vocabulary."""
    ids = []
    for piece in pretokenize(text):
        if piece in CONTROL_TOKENS and piece in vocab:
            ids.append(vocab[piece])
        else:
            ids.extend(vocab[tok] for tok in encode_word(byte_symbols(piece), merges))
    return ids


# ---------------------------------------------------------------------------------------
# SmolLM2: its vocabulary and merges, and a fast encoder
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def smollm2_vocab_and_merges(path=None) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """SmolLM2's ``({token: id}, [merge pairs in rank order])`` read from its GGUF file
    (49,152 tokens, 48,900 merges), through the reader of :mod:`helpers.llama.weights`.

    Opening the GGUF file takes seconds, so the two lists are also saved beside the
    model's other caches (``<cache>/...-bpe.json``) and read from there next time."""
    import json
    from pathlib import Path

    from helpers.llama.weights import cache_file, gguf_field, gguf_reader, smollm2_path

    path = Path(smollm2_path() if path is None else path)
    saved = cache_file(path, "bpe.json")
    data = None
    if saved.is_file():                                            # an earlier session's
        try:
            data = json.loads(saved.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
    if not data or len(data.get("tokens", ())) == 0:
        reader = gguf_reader(path)
        data = {"tokens": list(gguf_field(reader, "tokenizer.ggml.tokens")),   # id -> token
                "merges": list(gguf_field(reader, "tokenizer.ggml.merges"))}   # "a b", by rank
        try:
            saved.parent.mkdir(parents=True, exist_ok=True)
            tmp = saved.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, saved)
        except OSError:                                            # read-only: only speed
            pass
    merges = [tuple(m.split(" ", 1)) for m in data["merges"]]
    return {tok: i for i, tok in enumerate(data["tokens"])}, merges


def prepare_cache() -> None:
    """Save SmolLM2's vocabulary and merges for notebook 11 when the model is installed
    (the grader calls it, trusted, before any learner code; nothing otherwise)."""
    from helpers.llama.weights import missing_requirements

    if not missing_requirements():
        smollm2_vocab_and_merges()


class _FastBPE:
    """:func:`encode` with the ranks built once and a cache of encoded words: the fast
    path of exercises ``encode_word`` and ``encode``, which refuse it (a student's copy
    has a stub in its place). Pre-tokenisation and the byte alphabet are the exercises'
    own functions (:func:`pretokenize`, :func:`byte_symbols`)."""

    def __init__(self, vocab: dict[str, int], merges):
        self.vocab = vocab
        self.rank = {tuple(p): r for r, p in enumerate(merges)}   # (a, b) -> rank
        self.cache: dict[str, list[int]] = {c: [vocab[c]] for c in CONTROL_TOKENS
                                             if c in vocab}

    def word(self, piece: str) -> list[int]:
        """The ids of one pre-tokenised piece (cached)."""
        ids = self.cache.get(piece)
        if ids is None:
            tokens = list(byte_symbols(piece))
            rank = self.rank
            while len(tokens) > 1:                                 # lowest rank first
                best, at = None, -1
                for i in range(len(tokens) - 1):
                    r = rank.get((tokens[i], tokens[i + 1]))
                    if r is not None and (best is None or r < best):
                        best, at = r, i
                if best is None:
                    break
                a, b = tokens[at], tokens[at + 1]
                merged, i = [], 0                                  # every (a, b), left to right
                while i < len(tokens):
                    if i + 1 < len(tokens) and tokens[i] == a and tokens[i + 1] == b:
                        merged.append(a + b)
                        i += 2
                    else:
                        merged.append(tokens[i])
                        i += 1
                tokens = merged
            ids = [self.vocab[t] for t in tokens if t in self.vocab]   # as tokenizers: a byte
            # that is not in the vocabulary (SmolLM2 lacks 21, e.g. 0x04, 0xFF) is left out
            if len(self.cache) < 500_000:
                self.cache[piece] = ids
        return ids

    def ids_of(self, text: str) -> list[int]:
        """The ids of ``text``: each piece of :func:`pretokenize`, through :meth:`word`
        (a control token is in the cache from the start: its id)."""
        return [i for piece in pretokenize(text) for i in self.word(piece)]


@lru_cache(maxsize=None)
def _smollm2_bpe() -> _FastBPE:
    return _FastBPE(*smollm2_vocab_and_merges())


def encode_smollm2(text: str) -> list[int]:
    """SmolLM2's token ids of ``text``, the same as its ``tokenizers`` tokenizer gives
    (control tokens such as ``<|im_start|>`` written in the text are one id each)."""
    return _smollm2_bpe().ids_of(text)


def decode_smollm2(ids) -> str:
    """The text of SmolLM2 token ids (control tokens written out, as in the text):
    :func:`decode` with SmolLM2's vocabulary."""
    return decode(ids, smollm2_vocab_and_merges()[0])
