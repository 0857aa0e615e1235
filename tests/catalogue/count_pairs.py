"""Answers to ``count_pairs(tokens)`` (notebook 11)."""

WRONG = {
    "no_overlap": ("""def count_pairs(tokens):
    counts = {}
    for i in range(0, len(tokens) - 1, 2):
        pair = (tokens[i], tokens[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts
""", "overlapping pairs"),
    "range_off_by_one": ("""def count_pairs(tokens):
    counts = {}
    for i in range(len(tokens) - 2):
        counts[(tokens[i], tokens[i + 1])] = counts.get((tokens[i], tokens[i + 1]), 0) + 1
    return counts
""", "Likely mistake: the last pair is missing"),
    "set_of_pairs": ("""def count_pairs(tokens):
    return {p: 1 for p in zip(tokens, tokens[1:])}
""", "Likely mistake: each pair counts 1"),
    "unknown_string_keys": ("""def count_pairs(tokens):
    counts = {}
    for a, b in zip(tokens, tokens[1:]):
        counts[a + b] = counts.get(a + b, 0) + 1
    return counts
""", "pairs that should not be there"),
}

CORRECT = {
    "counter": """from collections import Counter

def count_pairs(tokens):
    return dict(Counter(zip(tokens, tokens[1:])))
""",
    "indices_defaultdict": """from collections import defaultdict

def count_pairs(tokens):
    counts = defaultdict(int)
    for i in range(len(tokens) - 1):
        counts[tokens[i], tokens[i + 1]] += 1
    return counts
""",
}
