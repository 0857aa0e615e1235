"""``train_bpe`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._bpe_inputs import words


def _compare(case, expected, got):
    if not isinstance(got, (list, tuple)):
        return f"expected a list of pairs, got {'None: is a `return` missing?' if got is None else type(got).__name__}"
    try:
        got = [tuple(p) for p in got]
    except TypeError:
        return f"expected a list of pairs (a, b), got {got!r:.200}"
    expected = [tuple(p) for p in expected]
    if got == expected:
        return None
    if len(got) != len(expected):
        return f"expected {len(expected)} merges, got {len(got)}: expected {expected[:8]}..., got {got[:8]}..."
    k = next(i for i, (e, g) in enumerate(zip(expected, got)) if e != g)
    return (f"merge {k} (counting from 0) should be {expected[k]}, got {got[k]} "
            f"(the merges before it agree: {expected[:k][-4:]})")


def _count(words_list):
    counts = {}
    for w in words_list:
        counts[w] = counts.get(w, 0) + 1
    return counts


def _pairs(split, counts):
    pairs = {}
    for w, tokens in split.items():
        for pair in zip(tokens, tokens[1:]):
            pairs[pair] = pairs.get(pair, 0) + counts[w]
    return pairs


def _train(words_list, n_merges, choose, weight=True):
    counts = _count(words_list)
    if not weight:
        counts = dict.fromkeys(counts, 1)
    split = {w: list(w) for w in counts}
    merges = []
    for _ in range(n_merges):
        pairs = _pairs(split, counts)
        if not pairs:
            break
        best = choose(pairs)
        merges.append(best)
        split = {w: tokenizer.merge_pair(t, best) for w, t in split.items()}
    return merges


def _words(rng, shape, dims):
    return draw.words(rng)


CONTRACT = Contract(
    args={"words": Arg(list, items=str, values=_words),
          "n_merges": Arg(int, low=0, values=lambda rng, shape, dims: int(rng.integers(1, 7)))},
    returns=Arg(list, items=(str, str)),
    invariants=("at most n_merges merges: fewer when no pair is left",))

EXERCISE = Exercise(
    "train_bpe", tokenizer.train_bpe, contract=CONTRACT, compare=_compare, uses=("count_pairs", "merge_pair"),
    difficulty=3, importance=3, minutes=25,
    hints=(
        r"""Keep every distinct word as its list of tokens (its characters at first) and how
many times it occurs. Then repeat `n_merges` times: count the adjacent pairs inside each
word, times that word's number of occurrences (never across two words); take the most
frequent pair, ties going to the smallest pair (`min` over `(-count, pair)`); record it
and merge it in every word. Stop early when no pair is left.""",
        r"""```python
freq = {}                                   # word -> occurrences
for w in words:
    freq[w] = freq.get(w, 0) + 1
split = {w: list(w) for w in freq}          # word -> its tokens
merges = []
for _ in range(n_merges):
    pairs = {}
    for w, tokens in split.items():
        for pair, n in count_pairs(tokens).items():
            pairs[pair] = ___
    if not pairs:
        break
    best = min(pairs, key=lambda p: ___)
    merges.append(best)
    split = {w: ___ for w, tokens in split.items()}
return merges
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("by_hand", "['ab', 'abc', 'bc', 'ab', 'ab', 'bc'], 2 merges: (a, b) is there 4 "
             "times, (b, c) 3 times", (["ab", "abc", "bc", "ab", "ab", "bc"], 2),
             expected=[("a", "b"), ("b", "c")]),
        case("tie_xyz", "['xyz'], 5 merges: a tie at each step, and no pair left after 2",
             (["xyz"], 5), group="ties", expected=[("x", "y"), ("xy", "z")]),
        case("tie_order", "['zy', 'yx'], 1 merge: (z, y) and (y, x) once each; ('y', 'x') is "
             "the smaller tuple", (["zy", "yx"], 1), group="ties", expected=[("y", "x")]),
        case("boundaries", "['xa', 'xa', 'ax'], 1 merge: pairs are counted inside words only",
             (["xa", "xa", "ax"], 1), expected=[("x", "a")]),
        case("none", "n_merges = 0: nothing to learn", (["ab", "ba", "ab"], 0), group="edge",
             expected=[]),
        case("shakespeare", "the 3,268 words of the first 12,000 characters of Hamlet's "
             "first act, 15 merges", (words(0, 12_000), 15), group="corpus"),
        case("shakespeare_b", "the words of 8,000 characters of Hamlet from character 12,000, "
             "25 merges", (words(12_000, 8000), 25), group="corpus", hidden=True),
        case("repeat", "['aaaa'] * 3, 3 merges", (["aaaa"] * 3, 3), hidden=True),
        case("bytes", "byte-level words of ' the cat sat on the mat', 6 merges",
             (tokenizer.words_of(" the cat sat on the mat"), 6), hidden=True),
        case("zero", "n_merges = 0", (["ab", "cd"], 0), group="edge", hidden=True),
    ]


@EXERCISE.mistake("ties_largest",
                  "ties went to the largest pair: among pairs with the same count, take the "
                  "smallest (min over (-count, pair))")
def _ties_largest(words, n_merges):
    return _train(words, n_merges, lambda p: max(p, key=lambda q: (p[q], q)))


@EXERCISE.mistake("ties_first_seen",
                  "ties went to the pair seen first (max(pairs, key=pairs.get)): the rule "
                  "stated is the smallest pair, min over (-count, pair)")
def _ties_first(words, n_merges):
    return _train(words, n_merges, lambda p: max(p, key=p.get))


@EXERCISE.mistake("across_words",
                  "pairs were counted across word boundaries (the words joined into one "
                  "sequence): count inside each word only")
def _across(words, n_merges):
    return _train(["".join(words)], n_merges, lambda p: min(p, key=lambda q: (-p[q], q)))


@EXERCISE.mistake("unique_words",
                  "each distinct word counted once: a word that occurs n times adds its pairs "
                  "n times")
def _unique(words, n_merges):
    return _train(words, n_merges, lambda p: min(p, key=lambda q: (-p[q], q)), weight=False)


@EXERCISE.mistake("counted_once",
                  "the pairs were counted once, before the first merge: count them again after "
                  "each merge (merged tokens form new pairs)")
def _counted_once(words, n_merges):
    counts = _count(words)
    pairs = _pairs({w: list(w) for w in counts}, counts)
    return sorted(pairs, key=lambda q: (-pairs[q], q))[:n_merges]
