"""``encode_word`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._bpe_inputs import small_bpe


def _compare(case, expected, got):
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        return f"expected a list of str, got {'None: is a `return` missing?' if got is None else type(got).__name__}"
    if got == list(expected):
        return None
    return f"expected the tokens {list(expected)}, got {got}"


def _merge_until_done(word, merges, choose):
    rank = {tuple(p): r for r, p in enumerate(merges)}
    tokens = list(word)
    while len(tokens) > 1:
        present = [p for p in zip(tokens, tokens[1:]) if p in rank]
        if not present:
            break
        tokens = tokenizer.merge_pair(tokens, choose(present, rank, tokens))
    return tokens


def _word(rng, shape, dims):
    return "".join(draw.tokens(rng, ("a", "b", "c", "d"), 1, 8))


def _merges(rng, shape, dims):
    from helpers.exercises._bpe_inputs import drawn_merges
    return drawn_merges(rng)


CONTRACT = Contract(args={"word": Arg(str, values=_word),
                          "merges": Arg(list, items=(str, str), lists=True, values=_merges)},
                    returns=Arg(list, items=str),
                    invariants=("joined, the result is word",
                                "each merge is a pair (a, b): a tuple or a list of two"))

EXERCISE = Exercise(
    "encode_word", tokenizer.encode_word, contract=CONTRACT, compare=_compare, uses=("merge_pair",),
    refuse=("helpers.tokenizer:_FastBPE",),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""The position of a merge in `merges` is its rank: 0 was learned first. Start from
the characters of the word; while some adjacent pair is in `merges`, merge the one of
LOWEST rank (not the most frequent one, not the leftmost one), everywhere. A merge can
create a pair of lower rank than one still waiting, so look again after each merge.""",
        r"""A dictionary from pair to rank makes each look-up fast:

```python
rank = {tuple(p): r for r, p in enumerate(merges)}
tokens = list(word)
while len(tokens) > 1:
    candidates = [p for p in zip(tokens, tokens[1:]) if p in rank]
    if not candidates:
        ___
    best = min(candidates, key=___)
    tokens = merge_pair(tokens, best)
return tokens
```""",
    ),
)


@EXERCISE.cases
def cases():
    rules = [("c", "d"), ("a", "b"), ("b", "c")]
    merges, _ = small_bpe()
    return [
        case("rank_not_left", "'bcd' with merges [(c, d), (a, b), (b, c)]: (b, c) comes "
             "first from the left, (c, d) has the lower rank", ("bcd", rules),
             expected=["b", "cd"]),
        case("rank_not_frequency", "'ababc' with merges [(b, c), (a, b)]: (a, b) occurs "
             "twice, (b, c) has the lower rank", ("ababc", [("b", "c"), ("a", "b")]),
             expected=["ab", "a", "bc"]),
        case("new_pair", "'abc' with merges [(ab, c), (a, b)]: merging (a, b) creates the "
             "pair (ab, c), of lower rank", ("abc", [("ab", "c"), ("a", "b")]),
             expected=["abc"]),
        case("aaa", "'aaa' with the merge (a, a)", ("aaa", [("a", "a")]), expected=["aa", "a"]),
        case("hamlet_there", "'Ġthere' with 80 merges learned from Hamlet",
             ("Ġthere", merges), group="corpus"),
        case("no_merge", "'x' and no merge", ("x", []), group="edge", expected=["x"]),
        case("lists", "'abc' with the merges given as lists [[b, c], [a, bc]] (the text "
             "promises tuples or lists)", ("abc", [["b", "c"], ["a", "bc"]]),
             group="edge", expected=["abc"]),
        case("hamlet_words", "'Ġfather' with the same 80 merges", ("Ġfather", merges),
             group="corpus", hidden=True),
        case("abcd", "'abcd' with merges [(c, d), (a, b), (b, c)]", ("abcd", rules),
             hidden=True),
        case("aaaa", "'aaaa' with merges [(a, a), (aa, aa)]", ("aaaa", [("a", "a"), ("aa", "aa")]),
             hidden=True),
        case("lists_longer", "'abcab' with merges as lists [[a, b], [ab, c]]",
             ("abcab", [["a", "b"], ["ab", "c"]]), group="edge", hidden=True),
        case("long", "'Ġunfortunately' with the 80 merges", ("Ġunfortunately", merges),
             group="corpus", hidden=True),
    ]


@EXERCISE.mistake("leftmost_first",
                  "the leftmost pair that is a merge went first: take the pair of lowest rank "
                  "(its index in merges), wherever it is")
def _leftmost(word, merges):
    return _merge_until_done(word, merges, lambda present, rank, tokens: present[0])


@EXERCISE.mistake("by_frequency",
                  "the pair occurring most often went first (as in training): encoding "
                  "applies merges by rank, the order in which they were learned")
def _by_frequency(word, merges):
    def choose(present, rank, tokens):
        return min(present, key=lambda p: (-present.count(p), rank[p]))
    return _merge_until_done(word, merges, choose)


@EXERCISE.mistake("highest_rank",
                  "the pair of HIGHEST rank went first: the lowest rank (the earliest merge "
                  "learned) goes first")
def _highest(word, merges):
    return _merge_until_done(word, merges, lambda present, rank, tokens: max(present, key=rank.get))


@EXERCISE.mistake("one_pass",
                  "one pass through merges in list order: a merge can create a pair of lower "
                  "rank (merging (a, b) creates (ab, c)); keep taking the lowest-rank pair "
                  "present until none is left")
def _one_pass(word, merges):
    tokens = list(word)
    for pair in merges:
        tokens = tokenizer.merge_pair(tokens, tuple(pair))
    return tokens


@EXERCISE.mistake("lists_as_keys",
                  "the merges were used as they came: a merge given as a list [a, b] cannot be "
                  "a dict key or equal a tuple; make each one a tuple first "
                  "(rank = {tuple(p): r for r, p in enumerate(merges)})")
def _lists_as_keys(word, merges):
    rank = {p: r for r, p in enumerate(merges)}
    return _merge_until_done(word, list(rank), lambda present, rank, tokens: min(present, key=rank.get))
