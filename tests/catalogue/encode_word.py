"""Answers to ``encode_word(word, merges)`` (notebook 11)."""

WRONG = {
    "leftmost": ("""def encode_word(word, merges):
    merges = [tuple(m) for m in merges]
    tokens = list(word)
    while True:
        for pair in zip(tokens, tokens[1:]):
            if pair in merges:
                tokens = merge_pair(tokens, pair)
                break
        else:
            return tokens
""", "the leftmost pair"),
    "one_pass": ("""def encode_word(word, merges):
    tokens = list(word)
    for pair in merges:
        tokens = merge_pair(tokens, tuple(pair))
    return tokens
""", "one pass through merges"),
    "most_frequent": ("""def encode_word(word, merges):
    merges = [tuple(m) for m in merges]
    tokens = list(word)
    while True:
        pairs = [p for p in zip(tokens, tokens[1:]) if p in merges]
        if not pairs:
            return tokens
        best = max(pairs, key=lambda p: (pairs.count(p), -merges.index(p)))
        tokens = merge_pair(tokens, best)
""", "Likely mistake: the pair occurring most often went first"),
    "unknown_reversed_word": ("""def encode_word(word, merges):
    rank = {tuple(p): r for r, p in enumerate(merges)}
    tokens = list(word)[::-1]
    while len(tokens) > 1:
        c = [p for p in zip(tokens, tokens[1:]) if p in rank]
        if not c:
            break
        tokens = merge_pair(tokens, min(c, key=rank.get))
    return tokens[::-1]
""", "expected the tokens"),
    "lists_as_keys": ("""def encode_word(word, merges):
    rank = {pair: r for r, pair in enumerate(merges)}
    tokens = list(word)
    while len(tokens) > 1:
        present = [p for p in zip(tokens, tokens[1:]) if p in rank]
        if not present:
            break
        tokens = merge_pair(tokens, min(present, key=rank.get))
    return tokens
""", "make each one a tuple first"),
}

CORRECT = {
    "index_lookup": """def encode_word(word, merges):
    merges = [tuple(m) for m in merges]
    tokens = list(word)
    while len(tokens) >= 2:
        ranks = [merges.index(p) if p in merges else len(merges) for p in zip(tokens, tokens[1:])]
        if min(ranks) == len(merges):
            break
        r = min(ranks)
        tokens = merge_pair(tokens, merges[r])
    return tokens
""",
    "inline_merge": """def encode_word(word, merges):
    rank = {(a, b): r for r, (a, b) in enumerate(merges)}
    tokens = [c for c in word]
    while True:
        best = None
        for i in range(len(tokens) - 1):
            r = rank.get((tokens[i], tokens[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return tokens
        a, b = merges[best[0]]
        new, i = [], 0
        while i < len(tokens):
            if i + 1 < len(tokens) and tokens[i] == a and tokens[i + 1] == b:
                new.append(a + b); i += 2
            else:
                new.append(tokens[i]); i += 1
        tokens = new
""",
}
