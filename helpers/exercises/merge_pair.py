"""``merge_pair`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case


def _compare(case, expected, got):
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        return f"expected a list of str, got {'None: is a `return` missing?' if got is None else type(got).__name__}"
    if got == list(expected):
        return None
    return f"expected {list(expected)} ({len(expected)} tokens), got {got} ({len(got)} tokens)"


def _tokens(rng, shape, dims):
    return draw.tokens(rng)


def _pair(rng, shape, dims):
    return tuple(draw.tokens(rng, low=2, high=2))


CONTRACT = Contract(args={"tokens": Arg(list, items=str, values=_tokens),
                          "pair": Arg((str, str), lists=True, values=_pair)},
                    returns=Arg(list, items=str),
                    invariants=("joined, the result is the tokens joined",))

EXERCISE = Exercise(
    "merge_pair", tokenizer.merge_pair, contract=CONTRACT, compare=_compare,
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Walk the list from the left with an index `i`. Where `tokens[i]` and
`tokens[i + 1]` are the pair, write ONE token `a + b` and jump two places (both are used
up: in `["a", "a", "a"]` the middle `"a"` cannot be merged twice); elsewhere copy
`tokens[i]` and move one place.""",
        r"""A `while` loop, because the step is 1 or 2:

```python
a, b = pair
out, i = [], 0
while i < len(tokens):
    if i + 1 < len(tokens) and tokens[i] == a and tokens[i + 1] == b:
        ___
    else:
        ___
return out
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("aaa", "['a', 'a', 'a'] with the pair ('a', 'a') (overlapping occurrences)",
             (["a", "a", "a"], ("a", "a"))),
        case("the_then", "the byte-level tokens of ' the then' with ('Ġ', 't')",
             (["Ġ", "t", "h", "e", "Ġ", "t", "h", "e", "n"], ("Ġ", "t"))),
        case("twice", "['a', 'b', 'c', 'a', 'b'] with ('a', 'b') (two occurrences)",
             (["a", "b", "c", "a", "b"], ("a", "b"))),
        case("boundary", "['xa', 'b', 'a', 'b', 'a', 'by'] with ('a', 'b'): joined, the "
             "text holds 'ab' three times, but only tokens 3 and 4 are the pair",
             (["xa", "b", "a", "b", "a", "by"], ("a", "b"))),
        case("absent", "['b', 'a'] with ('a', 'b') (the pair reversed is not the pair)",
             (["b", "a"], ("a", "b")), group="edge"),
        case("empty", "no token, the pair ('a', 'b')", ([], ("a", "b")), group="edge"),
        case("aaaa", "['a', 'a', 'a', 'a'] with ('a', 'a')", (["a"] * 4, ("a", "a")),
             hidden=True),
        case("longer", "['Ġth', 'e', 'Ġth', 'e', 'n'] with ('Ġth', 'e')",
             (["Ġth", "e", "Ġth", "e", "n"], ("Ġth", "e")), hidden=True),
        case("boundary_bytes", "['Ġ', 'th', 'e', 'Ġ', 't'] with ('Ġ', 't'): 'Ġ' + 'th' "
             "starts with 'Ġt' but is not the pair", (["Ġ", "th", "e", "Ġ", "t"], ("Ġ", "t")),
             hidden=True),
        case("aaaaa", "five 'a' with ('a', 'a')", (["a"] * 5, ("a", "a")), hidden=True),
        case("list_pair", "the pair given as a list ['x', 'y']", (["x", "y", "x"], ["x", "y"]),
             group="edge", hidden=True),
    ]


@EXERCISE.mistake("overlap_twice",
                  "a token was used in two merges: after merging tokens i and i+1, continue at "
                  "i+2 (['a', 'a', 'a'] with ('a', 'a') gives ['aa', 'a'])")
def _overlap_twice(tokens, pair):
    a, b = pair
    at = lambda i: i + 1 < len(tokens) and tokens[i] == a and tokens[i + 1] == b  # noqa: E731
    out, i = [], 0
    while i < len(tokens):
        if at(i):
            out.append(a + b)
            i += 1 if at(i + 1) else 2               # the second token starts the next merge
        else:
            out.append(tokens[i])
            i += 1
    return out


@EXERCISE.mistake("right_to_left",
                  "the list was scanned from the right: ['a', 'a', 'a'] gives ['a', 'aa']; "
                  "merge from the left, as training and encoding do")
def _right_to_left(tokens, pair):
    a, b = pair
    out, i = [], len(tokens) - 1
    while i >= 0:
        if i >= 1 and tokens[i - 1] == a and tokens[i] == b:
            out.append(a + b)
            i -= 2
        else:
            out.append(tokens[i])
            i -= 1
    return out[::-1]


@EXERCISE.mistake("first_only",
                  "only the first occurrence was merged: merge the pair everywhere in the list")
def _first_only(tokens, pair):
    a, b = pair
    tokens = list(tokens)
    for i in range(len(tokens) - 1):
        if tokens[i] == a and tokens[i + 1] == b:
            return tokens[:i] + [a + b] + tokens[i + 2:]
    return tokens


@EXERCISE.mistake("no_skip",
                  "after a merge the second token was kept as well: both tokens are used up, "
                  "continue at i + 2")
def _no_skip(tokens, pair):
    a, b = pair
    out = []
    for i in range(len(tokens)):
        if i + 1 < len(tokens) and tokens[i] == a and tokens[i + 1] == b:
            out.append(a + b)
        else:
            out.append(tokens[i])
    return out


@EXERCISE.mistake("joined_text_replaced",
                  "the tokens were joined into one text and the pair replaced there "
                  "(' '.join(tokens).replace(...)): that also merges across token boundaries "
                  "(['xa', 'b'] has 'a b' in its text, yet no token is 'a'); compare whole "
                  "tokens, tokens[i] == a and tokens[i + 1] == b")
def _joined(tokens, pair):
    return " ".join(tokens).replace(" ".join(pair), "".join(pair)).split(" ")
