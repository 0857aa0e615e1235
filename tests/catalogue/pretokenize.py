"""Answers to ``pretokenize(text)`` (notebook 11)."""

_HEAD = """import re
from helpers.tokenizer import CONTROL_TOKENS, GPT2_PATTERN

"""

WRONG = {
    "digits_grouped": (_HEAD + """def pretokenize(text):
    controls = re.compile("(" + "|".join(re.escape(t) for t in CONTROL_TOKENS) + ")")
    out = []
    for part in controls.split(text):
        out += [part] if part in CONTROL_TOKENS else GPT2_PATTERN.findall(part)
    return out
""", "every digit a piece of its own"),
    "digits_after": (_HEAD + """def pretokenize(text):
    controls = re.compile("(" + "|".join(re.escape(t) for t in CONTROL_TOKENS) + ")")
    out = []
    for part in controls.split(text):
        if part in CONTROL_TOKENS:
            out.append(part)
            continue
        for piece in GPT2_PATTERN.findall(part):
            out += [c for c in re.split(r"(\\d)", piece) if c]
    return out
""", "after GPT2_PATTERN"),
    "controls_split": (_HEAD + """def pretokenize(text):
    out = []
    for chunk in re.split(r"(\\d)", text):
        if chunk:
            out += GPT2_PATTERN.findall(chunk)
    return out
""", "control token was split"),
    "trailing_space": (_HEAD + """def pretokenize(text):
    controls = re.compile("(" + "|".join(re.escape(t) for t in CONTROL_TOKENS) + ")")
    out = []
    for part in controls.split(text):
        if part in CONTROL_TOKENS:
            out.append(part)
            continue
        for chunk in re.split(r"(\\d)", part):
            if chunk:
                out += re.findall(r"\\S+\\s*|\\s+", chunk)
    return out
""", "folded into the previous word"),
}

CORRECT = {
    "index_scan": _HEAD + """def pretokenize(text):
    pieces, i = [], 0
    while i < len(text):
        control = next((t for t in CONTROL_TOKENS if text.startswith(t, i)), None)
        if control:
            pieces.append(control)
            i += len(control)
            continue
        j = i
        while j < len(text) and not any(text.startswith(t, j) for t in CONTROL_TOKENS):
            j += 1
        chunk = ""
        for ch in text[i:j]:
            if ch.isdigit():
                pieces += GPT2_PATTERN.findall(chunk) + [ch]
                chunk = ""
            else:
                chunk += ch
        pieces += GPT2_PATTERN.findall(chunk)
        i = j
    return pieces
""",
    "finditer": _HEAD + """def pretokenize(text):
    controls = "|".join(map(re.escape, CONTROL_TOKENS))
    out = []
    last = 0
    for m in re.finditer(controls, text):
        out += _words(text[last:m.start()]) + [m.group()]
        last = m.end()
    return out + _words(text[last:])


def _words(part):
    out = []
    for chunk in re.split(r"(\\d)", part):
        out.extend(GPT2_PATTERN.findall(chunk))
    return out
""",
}
