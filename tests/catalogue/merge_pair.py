"""Answers to ``merge_pair(tokens, pair)`` (notebook 11)."""

WRONG = {
    "overlap_twice": ("""def merge_pair(tokens, pair):
    a, b = pair
    out = []
    for i in range(len(tokens)):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == (a, b):
            out.append(a + b)
        elif i > 0 and (tokens[i - 1], tokens[i]) == (a, b):
            continue
        else:
            out.append(tokens[i])
    return out
""", "used in two merges"),
    "first_only": ("""def merge_pair(tokens, pair):
    tokens = list(tokens)
    for i in range(len(tokens) - 1):
        if tokens[i] == pair[0] and tokens[i + 1] == pair[1]:
            return tokens[:i] + [pair[0] + pair[1]] + tokens[i + 2:]
    return tokens
""", "only the first occurrence"),
    "from_the_right": ("""def merge_pair(tokens, pair):
    out, i = [], len(tokens) - 1
    while i >= 0:
        if i > 0 and tokens[i - 1] == pair[0] and tokens[i] == pair[1]:
            out.insert(0, pair[0] + pair[1])
            i -= 2
        else:
            out.insert(0, tokens[i])
            i -= 1
    return out
""", "scanned from the right"),
    "unknown_swapped": ("""def merge_pair(tokens, pair):
    out, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == tuple(pair):
            out.append(tokens[i + 1] + tokens[i])
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out
""", "expected"),
    "joined_text_replaced": ("""def merge_pair(tokens, pair):
    if not tokens:
        return []
    return " ".join(tokens).replace(" ".join(pair), "".join(pair)).split(" ")
""", "merges across token boundaries"),
}

CORRECT = {
    "while_loop": """def merge_pair(tokens, pair):
    a, b = pair
    out, i = [], 0
    while i < len(tokens):
        if tokens[i] == a and i < len(tokens) - 1 and tokens[i + 1] == b:
            out += [a + b]
            i += 2
        else:
            out += [tokens[i]]
            i += 1
    return out
""",
    "skip_flag": """def merge_pair(tokens, pair):
    out, skip = [], False
    for i, t in enumerate(tokens):
        if skip:
            skip = False
            continue
        if i + 1 < len(tokens) and (t, tokens[i + 1]) == tuple(pair):
            out.append(t + tokens[i + 1])
            skip = True
        else:
            out.append(t)
    return out
""",
}
