"""``count_pairs`` (notebook 11_tokenizer): cases and known mistakes.

A dictionary with tuple keys cannot cross the grader's wire, so each case runs
:func:`scenario_rows`, which lists the learner's dictionary as sorted rows
``[a, b, count]`` where the learner's code runs."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.text import shorten

_ROWS = "helpers.exercises.count_pairs:scenario_rows"


def scenario_rows(count_pairs, tokens):
    """``count_pairs(tokens)`` as sorted rows ``[a, b, count]`` (a key that is not a pair
    of two strings: ``[repr(key), count]``); a result that is not a dict: its type."""
    got = count_pairs(tokens)
    if not isinstance(got, dict):
        return f"not a dict: {type(got).__name__}"
    rows = [[k[0], k[1], int(n)] if isinstance(k, tuple) and len(k) == 2 and all(
        isinstance(s, str) for s in k) else [repr(k), int(n)] for k, n in got.items()]
    return sorted(rows, key=repr)


def _compare(case, expected, got):
    if isinstance(got, str):
        return f"expected a dict {{(a, b): count}}, got {got[8:] if got.startswith('not a dict') else got}"
    got = [list(r) for r in got] if isinstance(got, (list, tuple)) else got
    if got == expected:
        return None
    key = lambda r: tuple(r[:-1]) if len(r) == 3 else r[0]      # noqa: E731
    want = {key(r): r[-1] for r in expected}
    have = {key(r): r[-1] for r in got}
    missing = [k for k in want if k not in have]
    extra = [k for k in have if k not in want]
    wrong = [k for k in want if k in have and have[k] != want[k]]
    parts = []
    if wrong:
        parts.append(f"wrong counts: {', '.join(f'{k}: expected {want[k]}, got {have[k]}' for k in wrong[:4])}")
    if missing:
        parts.append(f"missing pairs: {missing[:4]}")
    if extra:
        parts.append(f"pairs that should not be there: {extra[:4]}")
    shown = f"expected {want}, got {have}"
    shown = shorten(shown, 400)
    return "; ".join(parts + [shown])


def _tokens(rng, shape, dims):
    return draw.tokens(rng)


CONTRACT = Contract(args={"tokens": Arg(list, items=str, values=_tokens)},
                    returns=Arg(dict, keys=(str, str), items=int), scenario=_ROWS,
                    invariants=("the counts add up to len(tokens) - 1",))

EXERCISE = Exercise(
    "count_pairs", tokenizer.count_pairs, contract=CONTRACT, compare=_compare,
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""A list of $N$ tokens has $N - 1$ adjacent pairs: `(tokens[0], tokens[1])`,
`(tokens[1], tokens[2])`, ... Each position starts one pair, so pairs overlap: in
`["a", "a", "a"]` the pair `("a", "a")` is there twice.""",
        r"""`zip(tokens, tokens[1:])` walks the pairs; a dictionary counts them:

```python
counts = {}
for pair in zip(tokens, tokens[1:]):
    counts[pair] = ___
return counts
```""",
    ),
)


@EXERCISE.cases
def cases():
    c = lambda *a, **k: case(*a, scenario=_ROWS, **k)            # noqa: E731
    return [
        c("aaa", "['a', 'a', 'a'] (the two pairs overlap)", (["a", "a", "a"],)),
        c("the_then", "the byte-level tokens of ' the then'",
          (["Ġ", "t", "h", "e", "Ġ", "t", "h", "e", "n"],)),
        c("hello", "the characters of 'hello'", (list("hello"),)),
        c("one", "a single token (no pair)", (["x"],), group="edge"),
        c("empty", "no token at all", ([],), group="edge"),
        c("aaaa_b", "['a', 'a', 'a', 'a', 'b']", (["a", "a", "a", "a", "b"],), hidden=True),
        c("merged", "tokens after some merges: ['Ġth', 'e', 'Ġth', 'e', 'n', 'Ġth', 'e']",
          (["Ġth", "e", "Ġth", "e", "n", "Ġth", "e"],), hidden=True),
        c("two", "['a', 'b']", (["a", "b"],), group="edge", hidden=True),
    ]


@EXERCISE.mistake("no_overlap",
                  "overlapping pairs were counted once: in ['a', 'a', 'a'] the pair ('a', 'a') "
                  "starts at positions 0 and 1, so it counts 2; step by one token, not two")
def _no_overlap(tokens):
    counts, i = {}, 0
    while i + 1 < len(tokens):
        pair = (tokens[i], tokens[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
        i += 2 if tokens[i] == tokens[i + 1] else 1
    return counts


@EXERCISE.mistake("last_pair_missed",
                  "the last pair is missing: a list of N tokens has N - 1 pairs, the last one "
                  "(tokens[N-2], tokens[N-1])")
def _last_missed(tokens):
    counts = {}
    for i in range(len(tokens) - 2):
        pair = (tokens[i], tokens[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@EXERCISE.mistake("wraps_around",
                  "a pair (last token, first token) was counted: the list does not wrap around")
def _wraps(tokens):
    counts = {}
    for pair in zip(tokens, tokens[1:] + tokens[:1]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@EXERCISE.mistake("once_each",
                  "each pair counts 1 however often it occurs: add 1 to its count every time")
def _once_each(tokens):
    return {pair: 1 for pair in zip(tokens, tokens[1:])}
