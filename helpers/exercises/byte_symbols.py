"""``byte_symbols`` (notebook 11_tokenizer): cases and known mistakes."""

from __future__ import annotations

from helpers import tokenizer
from helpers.course import Arg, Contract, Exercise, draw, case


def _compare(case, expected, got):
    if not isinstance(got, str):
        return f"expected a str, got {'None: is a `return` missing?' if got is None else type(got).__name__}"
    if got == expected:
        return None
    at = next((i for i, (e, g) in enumerate(zip(expected, got)) if e != g),
              min(len(expected), len(got)))
    return (f"expected {expected!r} ({len(expected)} characters), got {got!r} "
            f"({len(got)}); first difference at character {at}")


def _text(rng, shape, dims):
    return draw.text(rng)


CONTRACT = Contract(args={"text": Arg(str, values=_text)}, returns=Arg(str),
                    invariants=("one character per UTF-8 byte of text",))

EXERCISE = Exercise(
    "byte_symbols", tokenizer.byte_symbols, contract=CONTRACT, compare=_compare,
    refuse=("helpers.tokenizer:_byte_table",),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Two steps. `text.encode("utf-8")` gives the bytes (0 to 255; `é` is two of them,
an emoji four). Then each byte becomes one character: a byte that prints as itself in
Latin-1 (`!` to `~`, `¡` to `¬`, `®` to `ÿ`) keeps `chr(b)`; the others are numbered
`k = 0, 1, 2, ...` in byte order and become `chr(256 + k)`.""",
        r"""Build the table once, then look each byte up:

```python
printable = set(range(ord("!"), ord("~") + 1)) | set(range(ord("¡"), ord("¬") + 1)) \
    | set(range(ord("®"), ord("ÿ") + 1))
table, k = {}, 0
for b in range(256):
    if b in printable:
        table[b] = ___
    else:
        table[b] = ___
        k += 1
return "".join(___ for b in text.encode("utf-8"))
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("hello_world", "'Hello world' (the space is byte 32)", ("Hello world",)),
        case("cafe", "' café' (é is two bytes, C3 A9)", (" café",)),
        case("controls", "'a\\nb\\tc' (newline and tab)", ("a\nb\tc",)),
        case("emoji_cjk", "'😀 日本' (4 bytes, then 3 bytes per character)", ("😀 日本",)),
        case("empty", "the empty text", ("",), group="edge"),
        case("accents", "'naïve résumé, ½'", ("naïve résumé, ½",), hidden=True),
        case("euro_crlf", "'€100\\r\\n' (€ is three bytes)", ("€100\r\n",), hidden=True),
        case("greek_tabs", "'\\t\\tαβγ  ' ", ("\t\tαβγ  ",), hidden=True),
        case("del_nbsp", "'x\\x7fy\\xa0z' (DEL and a no-break space)", ("x\x7fy\xa0z",),
             group="edge", hidden=True),
    ]


def _table(moved, last_ascii=126):
    keep = set(range(33, last_ascii + 1)) | set(range(161, 173)) | set(range(174, 256))
    table, k = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = moved(b, k)
            k += 1
    return table


@EXERCISE.mistake("characters_not_bytes",
                  "the characters were looked up, not the UTF-8 bytes: encode the text first "
                  "(text.encode('utf-8')), so that é gives two symbols and an emoji four")
def _characters(text):
    table = _table(lambda b, k: chr(256 + k))
    return "".join(table.get(ord(c), c) for c in text)


@EXERCISE.mistake("latin1",
                  "every byte became chr(b): the bytes that do not print (the space, newline, "
                  "tab, 127-160, 173) must move to chr(256 + k), which is why a space shows as Ġ")
def _latin1(text):
    return "".join(chr(b) for b in text.encode("utf-8"))


@EXERCISE.mistake("offset_by_byte",
                  "a moved byte became chr(256 + b); it is chr(256 + k), k counting only the "
                  "moved bytes in order (byte 127 is the 34th moved byte: chr(256 + 33))")
def _offset_by_byte(text):
    table = _table(lambda b, k: chr(256 + b))
    return "".join(table[b] for b in text.encode("utf-8"))


@EXERCISE.mistake("tilde_left_out",
                  "the printable range stops one short: range(ord('!'), ord('~')) leaves out "
                  "'~' (byte 126), so it moved and every moved byte after it is off by one; "
                  "the range is range(ord('!'), ord('~') + 1)")
def _tilde_left_out(text):
    table = _table(lambda b, k: chr(256 + k), last_ascii=125)
    return "".join(table[b] for b in text.encode("utf-8"))
