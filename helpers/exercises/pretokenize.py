"""``pretokenize`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

import re

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.tokenizer import CONTROL_TOKENS, GPT2_PATTERN


def _compare(case, expected, got):
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        return f"expected a list of str, got {'None: is a `return` missing?' if got is None else type(got).__name__}"
    if got == list(expected):
        return None
    k = next((i for i, (e, g) in enumerate(zip(expected, got)) if e != g),
             min(len(expected), len(got)))
    return (f"expected {len(expected)} pieces {list(expected)}, got {len(got)} {got}; "
            f"first difference at piece {k}")


_CONTROL = re.compile("(" + "|".join(re.escape(t) for t in CONTROL_TOKENS) + ")")
_DIGIT = re.compile(r"(\d)")


def _pieces(text, controls=True, digits=True, digits_after=False, split=None):
    split = split or GPT2_PATTERN.findall
    out = []
    for part in (_CONTROL.split(text) if controls else [text]):
        if controls and part in CONTROL_TOKENS:
            out.append(part)
            continue
        if digits and not digits_after:
            for chunk in _DIGIT.split(part):
                if chunk:
                    out.extend(split(chunk))
        else:
            for piece in split(part):
                out.extend(c for c in (_DIGIT.split(piece) if digits_after else [piece]) if c)
    return out


def _text(rng, shape, dims):
    return draw.text(rng)


CONTRACT = Contract(args={"text": Arg(str, values=_text)}, returns=Arg(list, items=str),
                    invariants=("joined, the pieces give text",))

EXERCISE = Exercise(
    "pretokenize", tokenizer.pretokenize, contract=CONTRACT, compare=_compare,
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Three rules, in this order. (1) A control token written in the text
(`CONTROL_TOKENS`) is one piece, never split. (2) Between them, every digit is a piece of
its own (SmolLM2's rule; GPT-2 keeps `2024` whole). (3) What lies between the digits is
split by `GPT2_PATTERN.findall`. Joined, the pieces give the text back.""",
        r"""`re.split` with a group in the pattern keeps the separators:
`re.split(r"(\d)", "ab12c")` is `["ab", "1", "", "2", "c"]`.

```python
controls = re.compile("(" + "|".join(re.escape(t) for t in CONTROL_TOKENS) + ")")
pieces = []
for part in controls.split(text):
    if part in CONTROL_TOKENS:
        ___
        continue
    for chunk in re.split(r"(\d)", part):
        if chunk:
            pieces.extend(___)
return pieces
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("hello", "'Hello world, it's me' (a word keeps the space before it)",
             ("Hello world, it's me",)),
        case("digits", "'In 2024 I ate 12 apples.' (every digit a piece)",
             ("In 2024 I ate 12 apples.",), group="digits"),
        case("spaces_digit", "'wait  42' (two spaces before a number)", ("wait  42",),
             group="digits"),
        case("chat", "'<|im_start|>user\\nHi!<|im_end|>\\n' (control tokens whole)",
             ("<|im_start|>user\nHi!<|im_end|>\n",), group="control"),
        case("runs", "'a  b\\t\\tc\\n\\n' (runs of spaces, tabs and newlines)",
             ("a  b\t\tc\n\n",), group="spaces"),
        case("unicode", "'café 😀 日本語!'", ("café 😀 日本語!",)),
        case("code", "'def f(x):\\n    return x**2  # 3.14'",
             ("def f(x):\n    return x**2  # 3.14",), hidden=True),
        case("glued", "'the<|endoftext|>end 7'", ("the<|endoftext|>end 7",), group="control",
             hidden=True),
        case("french", "'L'été, 3 fois : très bien !'", ("L'été, 3 fois : très bien !",),
             hidden=True),
        case("numbers_spaces", "'x   1\\n 2'", ("x   1\n 2",), group="digits", hidden=True),
    ]


@EXERCISE.mistake("digits_grouped",
                  "the digits of a number stayed together (GPT-2's rule): SmolLM2 makes every "
                  "digit a piece of its own")
def _digits_grouped(text):
    return _pieces(text, digits=False)


@EXERCISE.mistake("digits_after_pattern",
                  "the digits were split out after GPT2_PATTERN: SmolLM2 splits them out first "
                  "and applies the pattern to the text between them ('wait  42' gives 'wait', "
                  "'  ', '4', '2')")
def _digits_after(text):
    return _pieces(text, digits_after=True)


@EXERCISE.mistake("controls_split",
                  "a control token was split ('<|', 'im', '_start', '|>'): find the control "
                  "tokens first and keep each one whole")
def _controls_split(text):
    return _pieces(text, controls=False)


@EXERCISE.mistake("space_after_word",
                  "the space was folded into the previous word ('Hello ', 'world'): in GPT-2's "
                  "split a word takes the space BEFORE it (' world')")
def _space_after(text):
    return _pieces(text, split=lambda s: re.findall(r"\S+\s*|\s+", s))


@EXERCISE.mistake("whitespace_split",
                  "the spaces were dropped (str.split): every character of the text belongs to "
                  "exactly one piece; use GPT2_PATTERN.findall")
def _whitespace_split(text):
    return _pieces(text, split=lambda s: s.split())
