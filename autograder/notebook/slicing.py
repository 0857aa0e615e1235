"""Which statements of a notebook a grading run needs (a program slice over cells).

Notebooks carry demonstrations that grading does not need: text generation with the
learner's model, explorers, figures. Some take seconds, which would dominate grading
time (2400 notebooks in minutes). So both runs of a submission execute only what the
graded code depends on:

* the notebook run keeps every test cell and answer cell whole, plus the top-level
  statements of other cells that bind a name those need (transitively);
* the isolated run of a contract function keeps, from the non-test cells before the
  first test of that function, the statements that bind the function's name and,
  transitively, the names they use.

A statement *binds* a name when it assigns, defines, imports, deletes or loops over it,
assigns to one of its items or attributes (``params["W"] = ...``), or calls a method on
it (``cache.update(...)``, a likely mutation). It *uses* every name it mentions. The
uses of a function are the free names of its body that are not local to it (``symtable``);
dynamic lookups (``globals()[...]``,
``exec``) are not followed. Cells that cannot be analysed (a syntax error, a cell magic)
are kept whole when they are roots and dropped otherwise, except cell magics, which are
always kept whole (``%%time`` around a definition).

Dropped statements become blank lines, so line numbers in tracebacks stay right.
"""

from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass
from functools import lru_cache

from autograder.notebook.cells import ANSWER, TEST


@dataclass
class _Stmt:
    cell: int
    first: int      # 1-based first line (decorators included)
    last: int       # 1-based last line
    binds: frozenset[str]
    uses: frozenset[str]
    star: bool      # ``from x import *``: may bind anything


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _global_uses(code: str) -> set[str] | None:
    """Names ``code`` reads from the notebook's namespace (None: cannot tell).

    Uses ``symtable``: inside functions only free names that are not local count (a
    parameter called ``ids`` does not depend on a demo's ``ids = ...``).
    """
    try:
        top = symtable.symtable(code, "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()

    def visit(table) -> None:
        kind = table.get_type()
        for sym in table.get_symbols():
            if kind == "module":
                if sym.is_referenced():
                    names.add(sym.get_name())
            elif sym.is_global() or (kind == "class" and sym.is_referenced()
                                     and not sym.is_assigned()):
                names.add(sym.get_name())
        for child in table.get_children():
            visit(child)

    visit(top)
    return names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _top_level_nodes(stmt: ast.stmt):
    """The nodes of ``stmt`` that run in the notebook's namespace: nested function,
    class, lambda and comprehension scopes are entered only for their decorators,
    defaults and bases (what is evaluated at definition time), not their bodies."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        yield node
        if node is not stmt and isinstance(node, _SCOPES):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.extend(node.args.defaults + [d for d in node.args.kw_defaults if d])
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                todo.extend(node.bases)
            continue
        if node is stmt and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue   # a definition binds only its name
        todo.extend(ast.iter_child_nodes(node))


def _analyse(stmt: ast.stmt) -> tuple[set[str], set[str], bool]:
    binds: set[str] = set()
    uses: set[str] = set()
    star = False
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        binds.add(stmt.name)
    for node in _top_level_nodes(stmt):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                binds.add(node.id)
            uses.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    star = True
                else:
                    binds.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node is not stmt:
            binds.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    root = _root_name(sub)
                    if root:
                        binds.add(root)
        elif isinstance(node, ast.Global):
            binds.update(node.names)
    try:
        precise = _global_uses(ast.unparse(stmt))
    except (RecursionError, ValueError):
        precise = None
    if precise is not None:
        uses = precise | (binds & uses if isinstance(stmt, ast.AugAssign) else set())
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
            and isinstance(stmt.value.func, ast.Attribute):
        root = _root_name(stmt.value.func.value)
        if root:
            binds.add(root)
    return binds, uses, star


def syntax_error(source: str) -> str | None:
    """What Python says of a cell that cannot be parsed (IPython syntax translated first),
    as the learner would see it: ``SyntaxError: <message> (line N)`` and the line; None
    when it parses."""
    code, _ = _python(source)
    try:
        ast.parse(code)
    except SyntaxError as exc:
        line = (exc.text or "").rstrip("\n")
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return f"{type(exc).__name__}: {exc.msg}{where}" + (f"\n    {line.strip()}" if line.strip() else "")
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"the cell cannot be read ({type(exc).__name__})"
    return None


def _python(source: str) -> tuple[str, bool]:
    """(Python code of a cell, whether it is a cell magic). IPython syntax is translated."""
    try:
        ast.parse(source)
        return source, False            # plain Python already (the common case)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    if len(source) > 50_000:            # not worth translating: treated as unparseable
        return source, False
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        code = TransformerManager().transform_cell(source)
    except Exception:
        return source, False
    return code, "run_cell_magic(" in code


#: The most code cells and top-level statements a graded notebook may have: the course's
#: notebooks have under 150 cells and 2,000 statements. Slicing is linear, and these keep
#: it (and the runs) well inside the per-notebook budget whatever a submission holds.
MAX_CELLS = 2_000
MAX_STATEMENTS = 50_000


class TooLarge(ValueError):
    """A notebook over :data:`MAX_CELLS` or :data:`MAX_STATEMENTS`; the message says which."""


@dataclass
class CellCode:
    """One code cell as a run sees it: ``index`` in the merged notebook, ``root``: kept whole."""

    index: int
    source: str
    root: bool


def slice_cells(cells: list[CellCode], extra_names: set[str] = frozenset()) -> dict[int, str]:
    """The code to run per cell index (cells with nothing left are omitted).

    Roots are kept whole; other cells keep only the statements that bind a name the
    roots (or ``extra_names``) need, transitively.
    """
    if len(cells) > MAX_CELLS:
        raise TooLarge(f"the notebook has {len(cells)} code cells; at most {MAX_CELLS} are "
                       f"graded")
    codes: dict[int, str] = {}
    stmts: list[_Stmt] = []
    statements = 0
    whole: set[int] = set()
    needed = set(extra_names)
    for cell in cells:
        code, cell_magic, facts = _cell_facts(cell.source)
        codes[cell.index] = code
        statements += len(facts) if facts is not None else 0
        if statements > MAX_STATEMENTS:
            raise TooLarge(f"the notebook has more than {MAX_STATEMENTS} top-level "
                           f"statements; a graded notebook may not")
        if cell.root or cell_magic or facts is None:
            if cell.root or cell_magic:
                whole.add(cell.index)
                uses = _cell_uses(code) if facts is not None else None
                needed |= uses if uses is not None else _words(code)
            continue
        stmts.extend(_Stmt(cell.index, *fact) for fact in facts)
    # A worklist over names (linear in the statements and names, not quadratic): each
    # needed name keeps the statements that bind it, whose uses become needed in turn.
    binders: dict[str, list[int]] = {}
    kept: set[int] = set()
    for k, st in enumerate(stmts):
        if st.star:                                  # may bind anything: always kept
            kept.add(k)
            needed |= st.uses
        for name in st.binds:
            binders.setdefault(name, []).append(k)
    todo, seen = list(needed), set(needed)
    while todo:
        for k in binders.get(todo.pop(), ()):
            if k not in kept:
                kept.add(k)
                for name in stmts[k].uses - seen:
                    seen.add(name)
                    todo.append(name)
    kept_by_cell: dict[int, list[int]] = {}
    for k in sorted(kept):
        kept_by_cell.setdefault(stmts[k].cell, []).append(k)
    out: dict[int, str] = {}
    for cell in cells:
        if cell.index in whole:
            out[cell.index] = cell.source
            continue
        mine = [stmts[k] for k in kept_by_cell.get(cell.index, ())]
        if not mine:
            continue
        lines = codes[cell.index].splitlines()
        keep_line = [False] * len(lines)
        for st in mine:
            for n in range(st.first - 1, min(st.last, len(lines))):
                keep_line[n] = True
        out[cell.index] = "\n".join(line if keep_line[n] else ""
                                    for n, line in enumerate(lines))
    return out


def answers_and_tests(cells, keep=()) -> dict[int, str]:
    """What a graded run executes: the answer and test cells whole, the cells whose index
    is in ``keep`` whole, and of every other cell the statements they need. ``cells``:
    ``(index, source, kind)`` per code cell, ``kind`` as :mod:`autograder.notebook.cells`
    names it. The grader's notebook run and the bundle's recording of the checks' calls
    both cut a notebook this way."""
    return slice_cells([CellCode(index, source, kind in (ANSWER, TEST) or index in keep)
                        for index, source, kind in cells])


#: Cells up to this many characters have their analysis kept (:func:`_cell_facts`):
#: a class's notebooks share the solution's cells, and each exercise of a notebook
#: slices the same cells again. Of longer cells (a generated chain of 30,000
#: statements), the last two analysed are kept: those of the notebook being graded.
CACHED_CELL_CHARS = 100_000


def _cell_facts(source: str) -> tuple[str, bool, tuple | None]:
    """(Python code of a cell, whether it is a cell magic, and per top-level statement
    ``(first line, last line, binds, uses, star)``; None when it does not parse)."""
    if len(source) > CACHED_CELL_CHARS:
        return _analyse_long_cell(source)
    return _analyse_cell_kept(source)


def _analyse_cell(source: str) -> tuple[str, bool, tuple | None]:
    code, cell_magic = _python(source)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code, cell_magic, None
    facts = []
    for st in tree.body:
        first = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
        binds, uses, star = _analyse(st)
        facts.append((first, st.end_lineno or st.lineno, frozenset(binds), frozenset(uses),
                      star))
    return code, cell_magic, tuple(facts)


_analyse_cell_kept = lru_cache(maxsize=4096)(_analyse_cell)
_analyse_long_cell = lru_cache(maxsize=2)(_analyse_cell)


def _cell_uses(code: str) -> frozenset[str] | None:
    """:func:`_global_uses` of a root cell's code (kept for cells up to
    :data:`CACHED_CELL_CHARS`)."""
    if len(code) > CACHED_CELL_CHARS:
        uses = _global_uses(code)
        return None if uses is None else frozenset(uses)
    return _global_uses_kept(code)


@lru_cache(maxsize=1024)
def _global_uses_kept(code: str) -> frozenset[str] | None:
    uses = _global_uses(code)
    return None if uses is None else frozenset(uses)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def bound_names(code: str) -> set[str]:
    """The names the top-level statements of ``code`` bind (empty if it does not parse)."""
    try:
        tree = ast.parse(_python(code)[0])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for st in tree.body:
        names |= _analyse(st)[0]
    return names
