"""Answers to ``decode(ids, vocab)`` (notebook 11)."""

_TABLE = """    keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
    byte_of, k = {}, 0
    for b in range(256):
        if b in keep:
            byte_of[chr(b)] = b
        else:
            byte_of[chr(256 + k)] = b
            k += 1
    token_of = {i: t for t, i in vocab.items()}
"""

WRONG = {
    "per_token": ("def decode(ids, vocab):\n" + _TABLE + """    return "".join(bytes(byte_of[c] for c in token_of[i]).decode("utf-8", errors="replace")
                   for i in ids)
""", "decoded on its own"),
    "strict": ("def decode(ids, vocab):\n" + _TABLE + """    return bytes(byte_of[c] for i in ids for c in token_of[i]).decode("utf-8")
""", "errors='replace'"),
    "no_table": ("""def decode(ids, vocab):
    token_of = {i: t for t, i in vocab.items()}
    return "".join(token_of[i] for i in ids)
""", "byte-level characters were returned"),
    "skip_special": ("def decode(ids, vocab):\n" + _TABLE + """    ids = [i for i in ids if not token_of[i].startswith("<")]
    return bytes(byte_of[c] for i in ids for c in token_of[i]).decode("utf-8", "replace")
""", "control tokens were left out"),
    "errors_ignore": ("def decode(ids, vocab):\n" + _TABLE + """    return bytes(byte_of[c] for i in ids for c in token_of[i]).decode("utf-8", errors="ignore")
""", "decoded with errors='ignore'"),
}

CORRECT = {
    "bytearray": "def decode(ids, vocab):\n" + _TABLE + """    data = bytearray()
    for i in ids:
        for c in token_of[int(i)]:
            data.append(byte_of[c])
    return data.decode("utf-8", "replace")
""",
    "incremental": "import codecs\n\ndef decode(ids, vocab):\n" + _TABLE + """    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    out = "".join(dec.decode(bytes(byte_of[c] for c in token_of[i])) for i in ids)
    return out + dec.decode(b"", final=True)
""",
}
