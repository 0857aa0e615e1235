"""Answers to ``encode(text, merges, vocab)`` (notebook 11)."""

WRONG = {
    "controls_as_words": ("""def encode(text, merges, vocab):
    ids = []
    for piece in pretokenize(text):
        ids += [vocab[t] for t in encode_word(byte_symbols(piece), merges)]
    return ids
""", "control token was encoded as text"),
    "no_pretokenize": ("""def encode(text, merges, vocab):
    return [vocab[t] for t in encode_word(byte_symbols(text), merges)]
""", "merged as one word"),
    "unknown_skips_spaces": ("""def encode(text, merges, vocab):
    from helpers.tokenizer import CONTROL_TOKENS
    ids = []
    for piece in pretokenize(text):
        if piece in CONTROL_TOKENS:
            ids.append(vocab[piece])
        elif piece.strip():
            ids += [vocab[t] for t in encode_word(byte_symbols(piece), merges)]
    return ids
""", "wrong"),
}

CORRECT = {
    "vocab_get_first": """def encode(text, merges, vocab):
    from helpers.tokenizer import CONTROL_TOKENS
    out = []
    for piece in pretokenize(text):
        if piece in CONTROL_TOKENS and piece in vocab:
            out.append(vocab[piece])
            continue
        for token in encode_word(byte_symbols(piece), merges):
            out.append(vocab[token])
    return np.array(out, dtype=np.int64)
""",
    "comprehension": """def encode(text, merges, vocab):
    import helpers.tokenizer as tk
    return [i for p in pretokenize(text) for i in (
        [vocab[p]] if p in tk.CONTROL_TOKENS else
        [vocab[t] for t in encode_word(byte_symbols(p), merges)])]
""",
}
