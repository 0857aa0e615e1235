"""``decode`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, case
from helpers.exercises._bpe_inputs import small_bpe


def _compare(case, expected, got):
    if not isinstance(got, str):
        return f"expected a str, got {'None: is a `return` missing?' if got is None else type(got).__name__}"
    if got == expected:
        return None
    return f"expected the text {expected!r}, got {got!r}"


def _table():
    keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
    back, k = {}, 0
    for b in range(256):
        if b in keep:
            back[chr(b)] = b
        else:
            back[chr(256 + k)] = b
            k += 1
    return back


def _tokens(ids, vocab):
    token_of = {i: t for t, i in vocab.items()}
    return [token_of[int(i)] for i in ids]


def _ids(rng, shape, dims):
    from helpers.exercises._bpe_inputs import small_vocab
    n = len(small_vocab())
    return [int(i) for i in rng.integers(0, n, size=int(rng.integers(1, 12)))]


def _vocab(rng, shape, dims):
    from helpers.exercises._bpe_inputs import small_vocab
    return small_vocab()


CONTRACT = Contract(args={"ids": Arg(list, items=int, values=_ids),
                          "vocab": Arg(dict, keys=str, items=int, values=_vocab)},
                    returns=Arg(str), invariants=("every id is a value of vocab",))

EXERCISE = Exercise(
    "decode", tokenizer.decode, contract=CONTRACT, compare=_compare,
    refuse=("helpers.tokenizer:_byte_table",),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Ids to tokens (invert `vocab`), tokens to their byte-level characters, characters
to bytes (the inverse of the byte table of exercise 1), and only then bytes to text: ONE
`.decode("utf-8", errors="replace")` on all the bytes. A character may be split across
tokens (an emoji is four bytes); decoding token by token would break it.""",
        r"""```python
token_of = {i: t for t, i in vocab.items()}
byte_of = ___                    # character -> byte, the inverse of byte_symbols' table
chars = "".join(token_of[i] for i in ids)
data = bytes(___ for c in chars)
return data.decode("utf-8", errors=___)
```""",
    ),
)


@EXERCISE.cases
def cases():
    merges, vocab = small_bpe()
    enc = lambda t: tokenizer.encode(t, merges, vocab)            # noqa: E731
    return [
        case("hamlet", "the ids of ' Thanks for all the' under 80 merges learned from Hamlet",
             (enc(" Thanks for all the"), vocab)),
        case("emoji", "the ids of 'ok 😀!': the emoji is four byte tokens", (enc("ok 😀!"), vocab)),
        case("partial", "the ids of 'café' without the last one (half of é): the incomplete "
             "character becomes '\\ufffd'", (enc("café")[:-1], vocab), group="partial"),
        case("control", "a chat turn with the control tokens <|im_start|> and <|im_end|>",
             (enc("<|im_start|>user\nHi!<|im_end|>"), vocab), group="control"),
        case("empty", "no id at all", ([], vocab), group="edge"),
        case("cjk", "the ids of '日本語 text\\n'", (enc("日本語 text\n"), vocab), hidden=True),
        case("partial_emoji", "'x👍' without its last byte", (enc("x👍")[:-1], vocab),
             group="partial", hidden=True),
        case("mixed", "'  The king, my lord 12 <|endoftext|>é'",
             (enc("  The king, my lord 12 <|endoftext|>é"), vocab), hidden=True),
    ]


@EXERCISE.mistake("per_token",
                  "each token was decoded on its own: a character split across tokens (an "
                  "emoji, é) came out as '\\ufffd'; join all the bytes, then decode once")
def _per_token(ids, vocab):
    back = _table()
    return "".join(bytes(back[c] for c in t).decode("utf-8", errors="replace")
                   for t in _tokens(ids, vocab))


@EXERCISE.mistake("byte_characters",
                  "the byte-level characters were returned ('Ġthe'): map each character back "
                  "to its byte (the inverse of the byte table), then decode UTF-8")
def _byte_chars(ids, vocab):
    return "".join(_tokens(ids, vocab))


@EXERCISE.mistake("strict",
                  "decoding raised on an incomplete character: decode with errors='replace' "
                  "(a cut-off character becomes '\\ufffd')")
def _strict(ids, vocab):
    back = _table()
    return bytes(back[c] for c in "".join(_tokens(ids, vocab))).decode("utf-8")


@EXERCISE.mistake("latin1",
                  "the bytes were decoded as Latin-1: decode them as UTF-8")
def _latin1(ids, vocab):
    back = _table()
    return bytes(back[c] for c in "".join(_tokens(ids, vocab))).decode("latin-1")


@EXERCISE.mistake("controls_dropped",
                  "the control tokens were left out: write them as they are (<|im_start|>)")
def _controls_dropped(ids, vocab):
    back = _table()
    kept = [t for t in _tokens(ids, vocab) if t not in tokenizer.CONTROL_TOKENS]
    return bytes(back[c] for c in "".join(kept)).decode("utf-8", errors="replace")


@EXERCISE.mistake("errors_ignore",
                  "decoded with errors='ignore': an incomplete character vanished; decode "
                  "with errors='replace', which writes it as '\\ufffd'")
def _ignore(ids, vocab):
    back = _table()
    return bytes(back[c] for c in "".join(_tokens(ids, vocab))).decode("utf-8", errors="ignore")
