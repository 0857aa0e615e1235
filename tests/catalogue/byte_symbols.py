"""Answers to ``byte_symbols(text)`` (notebook 11)."""

WRONG = {
    "latin1": ("""def byte_symbols(text):
    return "".join(chr(b) for b in text.encode("utf-8"))
""", "which is why a space shows as"),
    "characters": ("""def byte_symbols(text):
    keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
    table, k = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + k)
            k += 1
    return "".join(table.get(ord(c), c) for c in text)
""", "encode the text first"),
    "offset_by_byte": ("""def byte_symbols(text):
    keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
    return "".join(chr(b) if b in keep else chr(256 + b) for b in text.encode("utf-8"))
""", "k counting only the moved bytes"),
    "unknown_utf16": ("""def byte_symbols(text):
    keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
    moved = [b for b in range(256) if b not in keep]
    table = {b: chr(b) if b in keep else chr(256 + moved.index(b)) for b in range(256)}
    return "".join(table[b] for b in text.encode("utf-16-le"))
""", "first difference"),
    "tilde_left_out": ("""def byte_symbols(text):
    printable = list(range(ord("!"), ord("~"))) + list(range(ord("¡"), ord("¬") + 1)) \\
        + list(range(ord("®"), ord("ÿ") + 1))
    table, k = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + k)
            k += 1
    return "".join(table[b] for b in text.encode("utf-8"))
""", "leaves out '~'"),
}

CORRECT = {
    "two_lists": """def byte_symbols(text):
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \\
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, map(chr, cs)))
    return "".join(table[b] for b in text.encode("utf-8"))
""",
    "isprintable": """def byte_symbols(text):
    out, moved = {}, 0
    for b in range(256):
        c = chr(b)
        if c.isprintable() and c != " " and b != 0xAD:
            out[b] = c
        else:
            out[b] = chr(256 + moved)
            moved += 1
    return "".join(out[b] for b in bytearray(text, "utf-8"))
""",
}
