"""Answers to ``train_bpe(words, n_merges)`` (notebook 11)."""

_BODY = """def train_bpe(words, n_merges):
    freq = {}
    for w in words:
        freq[w] = freq.get(w, 0) + 1
    split = {w: list(w) for w in freq}
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, tokens in split.items():
            for pair, n in count_pairs(tokens).items():
                pairs[pair] = pairs.get(pair, 0) + n * freq[w]
        if not pairs:
            break
        best = CHOOSE
        merges.append(best)
        split = {w: merge_pair(t, best) for w, t in split.items()}
    return merges
"""

WRONG = {
    "ties_first_seen": (_BODY.replace("CHOOSE", "max(pairs, key=pairs.get)"),
                        "Likely mistake: ties went to the pair seen first"),
    "ties_first_seen_no_break": (_BODY.replace("        if not pairs:\n            break\n", "")
                                 .replace("CHOOSE", "max(pairs, key=pairs.get)"),
                                 "ties went to the pair seen first"),   # the crash in
    "ties_largest": (_BODY.replace("CHOOSE", "max(pairs, key=lambda p: (pairs[p], p))"),
                     "ties went to the largest pair"),
    "joined_corpus": ("""def train_bpe(words, n_merges):
    tokens = list("".join(words))
    merges = []
    for _ in range(n_merges):
        pairs = count_pairs(tokens)
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        tokens = merge_pair(tokens, best)
    return merges
""", "across word boundaries"),
    "set_of_words": (_BODY.replace("n * freq[w]", "n").replace("CHOOSE",
                     "min(pairs, key=lambda p: (-pairs[p], p))"), "each distinct word counted once"),
}

CORRECT = {
    "sorted_counter": """from collections import Counter

def train_bpe(words, n_merges):
    corpus = [[list(w), n] for w, n in Counter(words).items()]
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for tokens, n in corpus:
            for p in zip(tokens, tokens[1:]):
                pairs[p] += n
        if not pairs:
            return merges
        best = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        merges.append(best)
        for item in corpus:
            item[0] = merge_pair(item[0], best)
    return merges
""",
    "every_occurrence": _BODY.replace("for w in words:\n        freq[w] = freq.get(w, 0) + 1",
                                      "for w in words:\n        freq[w] = words.count(w)").replace(
        "CHOOSE", "min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]"),
}
