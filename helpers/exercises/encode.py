"""``encode`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._bpe_inputs import small_bpe

def _text(rng, shape, dims):
    return draw.text(rng)


def _merges(rng, shape, dims):
    from helpers.exercises._bpe_inputs import small_merges
    return small_merges()


def _vocab(rng, shape, dims):
    from helpers.exercises._bpe_inputs import small_vocab
    return small_vocab()


CONTRACT = Contract(args={"text": Arg(str, values=_text),
                          "merges": Arg(list, items=(str, str), lists=True, values=_merges),
                          "vocab": Arg(dict, keys=str, items=int, values=_vocab)},
                    returns=Arg(list, items=int),
                    invariants=("vocab holds the control tokens, the 256 byte characters and "
                                "the token of every merge",))

EXERCISE = Exercise(
    "encode", tokenizer.encode, contract=CONTRACT, output="ids",
    uses=("byte_symbols", "encode_word", "pretokenize"),
    refuse=("helpers.tokenizer:_FastBPE",),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Your three functions in a row: `pretokenize` the text; a piece that is a control
token is looked up in `vocab` as it is; any other piece becomes byte-level characters
(`byte_symbols`), then tokens (`encode_word` with `merges`), then ids (`vocab[token]`).""",
        r"""```python
ids = []
for piece in pretokenize(text):
    if piece in CONTROL_TOKENS:
        ___
    else:
        ids.extend(vocab[t] for t in ___)
return ids
```""",
    ),
)


@EXERCISE.cases
def cases():
    merges, vocab = small_bpe()
    return [
        case("thanks", "'Thanks for all the', 80 merges learned from Hamlet",
             ("Thanks for all the", merges, vocab)),
        case("chat", "a chat turn with <|im_start|> and <|im_end|>",
             ("<|im_start|>user\nWhere is the king?<|im_end|>\n", merges, vocab),
             group="control"),
        case("bytes", "'café 😀 42' (characters of several bytes, digits)",
             ("café 😀 42", merges, vocab)),
        case("empty", "the empty text", ("", merges, vocab), group="edge"),
        case("hamlet", "two lines of Hamlet", ("Who's there?\nNay, answer me: stand, and "
                                               "unfold yourself.", merges, vocab), hidden=True),
        case("spaces", "'  the   king\\n\\n' (runs of spaces)", ("  the   king\n\n", merges, vocab),
             hidden=True),
        case("glued", "'end<|endoftext|>start 2024'", ("end<|endoftext|>start 2024", merges,
                                                         vocab), group="control", hidden=True),
    ]


@EXERCISE.mistake("controls_as_text",
                  "a control token was encoded as text (its characters merged like a word): "
                  "look it up in vocab whole, as pretokenize keeps it")
def _controls_as_text(text, merges, vocab):
    ids = []
    for piece in tokenizer.pretokenize(text):
        for part in tokenizer.GPT2_PATTERN.findall(piece):
            ids.extend(vocab[t] for t in tokenizer.encode_word(tokenizer.byte_symbols(part),
                                                                merges))
    return ids


@EXERCISE.mistake("whole_text",
                  "the whole text was merged as one word: pretokenize first, and merge inside "
                  "each piece only")
def _whole_text(text, merges, vocab):
    return [vocab[t] for t in tokenizer.encode_word(tokenizer.byte_symbols(text), merges)]
