"""The exercise text of a notebook, rendered from the exercise's module.

An exercise's markdown cell in ``solutions/`` reads, top to bottom::

    ## Exercise 2: `softmax(z, axis=-1)`             <- heading(ex, k)

    **Difficulty:** ●●○ (2 of 3) · ...               <- header(ex)

    What to write: inputs with shapes, output, ...    <- the author's own text, kept

    **Inputs and output** (its contract): ...         <- contract(ex)

    <details><summary><b>Hint 1: the idea</b></summary>
    ...                                                <- hints(ex)
    </details>

Authors edit the heading's signature, the header, the contract and the hints only in the
module (``Exercise(..., difficulty=, importance=, minutes=, hints=, contract=)``); :func:`sync_cell` puts
them into the cell (``python -m autograder sync-exercises``, also run by ``release``),
and a test fails when a notebook differs from the render.
"""

from __future__ import annotations

import inspect

#: What each hint level is, in order (level 3 is optional).
LEVELS = ("the idea", "a nudge", "almost there")
#: How the header line starts (how :func:`sync_cell` recognises an old one).
HEADER_START = "**Difficulty:**"
#: How an exercise cell starts, and how its hints start.
HEADING_START = "## Exercise "
HINTS_START = "<details><summary><b>Hint 1"
#: How the block rendered from the exercise's contract starts.
CONTRACT_START = "**Inputs and output**"

_FULL, _EMPTY = "●", "○"


def _dots(level: int) -> str:
    return _FULL * level + _EMPTY * (3 - level)


def signature(ex) -> str:
    """``name(param, param=default)``: the function to write, without annotations."""
    params = [p.replace(annotation=inspect.Parameter.empty)
              for p in inspect.signature(ex.signature).parameters.values()]
    sig = inspect.Signature(params)
    return f"{ex.name}{sig}"


def heading(ex, k: int) -> str:
    """The cell's first line: ``## Exercise k: `signature```, with ``(extra)`` after
    ``k`` for an exercise of importance 1 (an optional extra)."""
    extra = " (extra)" if ex.importance == 1 else ""
    return f"{HEADING_START}{k}{extra}: `{signature(ex)}`"


def header(ex) -> str:
    """One line: difficulty and importance (dots and words, for screen readers too)
    and the expected minutes."""
    problems = declared_problems(ex)
    if problems:
        raise ValueError(f"exercise {ex.name}: " + "; ".join(problems))
    return (f"{HEADER_START} {_dots(ex.difficulty)} ({ex.difficulty} of 3) · "
            f"**Importance:** {_dots(ex.importance)} ({ex.importance} of 3) · "
            f"**Time:** about {ex.minutes} minutes")


def _bounds(arg) -> str:
    if arg.low is None and arg.high is None:
        return ""
    if arg.high is None:
        return f" >= {arg.low}"
    if arg.low is None:
        return f" <= {arg.high}"
    return f" from {arg.low} to {arg.high}"


def _kind(kind) -> str:
    """A kind of :class:`helpers.course.Arg` (a type, a tuple of kinds, an Arg) in words."""
    from helpers.course import Arg

    if isinstance(kind, Arg):
        return describe(kind)
    if isinstance(kind, tuple):
        return "a tuple `(" + ", ".join(_kind(k).strip("`") for k in kind) + ")`"
    return f"`{kind.__name__}`"


def describe(arg, shapes: tuple[str, ...] = ()) -> str:
    """One argument (or result) of a contract in words: ``an array `[..., d]` (or nested
    lists)``, ``an int >= 1``, ``a list, each item `str```. ``shapes``: the dimensions
    the contract's arrays name (an int that is one of them says so)."""
    shape = arg.shape
    if arg.is_array:
        dtypes = [d for d in arg.dtypes if d != "float64"] if "float64" in arg.dtypes \
            else list(arg.dtypes)
        text = f"an array `{shape}`"
        if dtypes:
            text += " of " + " or ".join(dtypes) + ("" if "float64" not in arg.dtypes else
                                                   " or float64")
        if arg.lists:
            text += " (or nested lists)"
        if arg.low is not None or arg.high is not None:
            text += ", entries" + _bounds(arg)
        return text
    if isinstance(shape, str):
        return "an int >= 1" + (f", the size `{shape}` of the shapes" if shape in shapes
                                else "")
    if isinstance(shape, tuple):
        return _kind(shape) + (" (or a list)" if arg.lists else "")
    if shape in (int, float, bool):
        return {int: "an int", float: "a float", bool: "a bool"}[shape] + _bounds(arg)
    text = f"a `{shape.__name__}`"
    if arg.fields:
        return text + " holding " + ", ".join(
            f"`{k}`" + (f" `{f.shape}`" if f.is_array else f" ({describe(f)})")
            + (" (optional)" if f.optional else "") for k, f in arg.fields.items())
    if arg.keys is not None:
        text += f", each key {_kind(arg.keys)}"
    if arg.items is not None:
        text += f", each {'value' if shape is dict else 'item'} {_kind(arg.items)}"
    return text


def contract(ex) -> str:
    """The exercise's inputs and output as its contract states them (``""`` without one):
    one line per argument, the result, what ``...`` stands for, and what else holds."""
    c = ex.contract
    if c is None:
        return ""
    lines = [f"{CONTRACT_START} (its contract: what `check()` and the grader call it with):", ""]
    returns = c.returns if isinstance(c.returns, tuple) else (c.returns,)
    shapes = tuple(t for a in list(c.args.values()) + list(returns) if a.is_array
                   for t in a.tokens)
    for name, arg in c.args.items():
        lines.append(f"- `{name}`{' (optional)' if arg.optional else ''}: "
                     f"{describe(arg, shapes)}")
    if len(returns) > 1:
        lines.append(f"- returns a tuple of {len(returns)}: "
                     + "; ".join(describe(r) for r in returns))
    else:
        lines.append(f"- returns {describe(returns[0])}")
    arrays = list(c.args.values()) + list(returns)
    if any(a.is_array and "..." in a.tokens for a in arrays):
        counts = [str(b) for b in c.batch]
        n = counts[0] if len(counts) == 1 else ", ".join(counts[:-1]) + " or " + counts[-1]
        lines.append(f"- `...` stands for {n} leading axes, the same in every argument")
    if c.where:
        lines.append("- where " + ", ".join(f"`{w}`" for w in c.where))
    lines += [f"- {text}" for text in c.invariants]
    return "\n".join(lines)


def hints(ex) -> str:
    """The hints as successive collapsed blocks, one click each."""
    blocks = []
    for level, text in enumerate(ex.hints, start=1):
        blocks.append(f"<details><summary><b>Hint {level}: {LEVELS[level - 1]}</b></summary>"
                      f"\n\n{text.strip()}\n\n</details>")
    return "\n\n".join(blocks)


def declared_problems(ex) -> list[str]:
    """What is missing or out of range in the exercise's teaching fields (empty: fine)."""
    out = []
    for field in ("difficulty", "importance"):
        value = getattr(ex, field)
        if value not in (1, 2, 3):
            out.append(f"{field} must be 1, 2 or 3 (got {value!r})")
    if not isinstance(ex.minutes, int) or not 1 <= ex.minutes <= 120:
        out.append(f"minutes must be a whole number from 1 to 120 (got {ex.minutes!r})")
    if not 2 <= len(ex.hints) <= 3:
        out.append(f"hints must hold 2 or 3 levels (got {len(ex.hints)})")
    if any(not isinstance(h, str) or not h.strip() for h in ex.hints):
        out.append("every hint level must be non-empty markdown")
    return out


def is_heading(line: str) -> bool:
    """Whether ``line`` opens an exercise cell: ``## Exercise`` alone (a new exercise's
    cell, before its first sync) or followed by a space (``## Exercise 3: ...``)."""
    line = line.rstrip()
    return line == HEADING_START.rstrip() or line.startswith(HEADING_START)


def sync_cell(source: str, ex, k: int) -> str:
    """The exercise cell ``source`` with its heading, header and hints rendered from
    ``ex`` (exercise number ``k``); the author's instructions in between are kept."""
    lines = source.strip("\n").split("\n")
    if not lines or not is_heading(lines[0]):
        raise ValueError(f"exercise {ex.name}: its cell must start with {HEADING_START.rstrip()!r}")
    body = lines[1:]
    while body and not body[0].strip():
        body.pop(0)
    if body and body[0].startswith(HEADER_START):
        body.pop(0)
    cut = next((i for i, line in enumerate(body) if line.startswith((CONTRACT_START,
                                                                      HINTS_START))), len(body))
    instructions = "\n".join(body[:cut]).strip("\n")
    parts = [heading(ex, k), header(ex)] + ([instructions] if instructions else [])
    parts += [contract(ex)] if ex.contract is not None else []
    parts.append(hints(ex))
    return "\n\n".join(parts)


def instructions(source: str) -> str:
    """The author's part of an exercise cell (between the header and the hints)."""
    lines = source.strip("\n").split("\n")[1:]
    while lines and (not lines[0].strip() or lines[0].startswith(HEADER_START)):
        lines.pop(0)
    cut = next((i for i, line in enumerate(lines) if line.startswith((CONTRACT_START,
                                                                       HINTS_START))),
               len(lines))
    return "\n".join(lines[:cut]).strip("\n")


def code_blocks(markdown: str) -> list[str]:
    """The ```python fenced blocks of a markdown text, in order."""
    blocks, current = [], None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if current is None and stripped.startswith("```python"):
            current = []
        elif current is not None and stripped.startswith("```"):
            blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


#: The heading of a reference function's "inputs and output" section (its docstring).
DOCSTRING_START = "Inputs and output (the exercise's contract; its arrays are checked at the edge):"


def docstring(ex) -> str:
    """The "inputs and output" section of the reference's docstring, rendered from the
    exercise's contract: one line per argument, the result and the conditions, in the
    docstring's ``literal`` style (indented as a function body's docstring is)."""
    lines = [line for line in contract(ex).splitlines()[2:]
             if line.startswith(("- `", "- returns", "- where"))
             and not line.startswith("- `...`")]      # the reference takes any batch
    import textwrap

    return "\n".join(["    " + DOCSTRING_START, ""] + [
        textwrap.fill(line.replace("`", "``"), width=96, initial_indent="    ",
                      subsequent_indent="      ", break_long_words=False,
                      break_on_hyphens=False) for line in lines])
