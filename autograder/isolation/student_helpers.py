"""The ``helpers`` a student has: one builder for the student bundle and for the grading
children's copies.

:func:`build` turns a copy of ``helpers/`` into what a student of an assignment has:

* every course function that answers an exercise the student must not find answered
  (its reference, and what the grader refuses for it, except :data:`COMPOSITES`) is a
  stub written from the syntax tree (no source, no bytecode of the original): its
  docstring, then a call of ``helpers._yours.course`` (:mod:`.course_calls`, shipped as
  ``helpers/_yours.py``), which answers with a recorded output of the same arguments
  (a bundle's worked examples), else with what the trusted grader computes (a grading
  child, for the earlier notebooks' exercises and those its exercise uses:
  :func:`trusted_answers`), else with the learner's own function of that name, else
  says which exercise to finish;
* each exercise module keeps only how its output is judged (its ``_compare`` and
  ``scenario_*`` functions and what they need); its case builders, hidden cases, input
  generators and known mistakes are gone, and so are the private modules of
  ``helpers/exercises/`` (inputs, variants);
* the visible cases of the chosen exercises are stored with their expected outputs as
  plain data (``helpers/exercises/_stored/<name>.wire``: the wire's short form, read
  without pickle), with the reference model's next-token logits for the sampling cases
  of ``generate``.

``release --bundle`` builds it for the assignments handed out (the revealed ones keep
their references); the grader builds it for every child: the notebook run's copy (the
assignment's visible cases stored) and each exercise's run's (nothing stored, the
graded exercise's own functions stubs that raise).
"""

from __future__ import annotations

import ast
import importlib
from functools import lru_cache
from pathlib import Path

from helpers.checks import BUNDLE_MARK

#: Files of ``helpers/exercises/`` kept as they are (no answer in them).
KEEP_EXERCISE_FILES = ("__init__.py",)
#: What a left-out course function says (the check shows messages holding BUNDLE_MARK).
STUB_MESSAGE = ("is exercise {name} of notebook {notebook}, " + BUNDLE_MARK + ": the "
                "course has its output for this notebook's own examples only; for other "
                "inputs it calls your own {name} once it is defined in this notebook (copy "
                "it from your {notebook} if it is an earlier one)")
#: What a left-out helper of an exercise's answer says (a function, class, method or value
#: the exercise refuses: the course's own way to its answer, never the learner's).
REFUSED_MESSAGE = ("computes the answer of exercise {name} of notebook {notebook}, " + BUNDLE_MARK
                   + ": write your own {name} (and what it needs) in this notebook instead")
#: Course functions that only chain left-out ones and take the learner's own as an
#: argument (``block_fn``): kept as they are, so a demo runs the learner's block for real.
#: Neither is the reference of an exercise; what they call is left out.
COMPOSITES = frozenset({"helpers.llama.model:forward", "helpers.llama.model:generate"})
#: Exercises whose visible cases are judged with the reference model's next-token logits
#: (sampling, judged by distribution): the logits are stored for every context the cases
#: can reach, and the judge reads them instead of calling the model
#: (``_stored.next_token_logits``).
SAMPLING_LOGITS = {"generate": "_LM_FORWARD"}
#: The model those logits come from. A grading child stores none (computing them takes
#: seconds): its judge's calls of the model are answered by the trusted grader.
SAMPLING_MODEL = {"generate": "helpers.reference:language_model_forward"}
#: At most this many contexts per sampling case (6 tokens, 5 positions: 8,035).
MAX_SAMPLING_CONTEXTS = 50_000
#: The runtime of the stubs, shipped as ``helpers/_yours.py``.
COURSE_CALLS = Path(__file__).with_name("course_calls.py")
#: The plain-data codec, shipped as ``helpers/_wire.py`` and its ground floor
#: ``helpers/_wire_read.py`` (the stored cases are read with it).
PLAIN_DATA_CODEC = Path(__file__).with_name("wire.py")
PLAIN_DATA_READER = Path(__file__).with_name("wire_read.py")


def codec_files() -> dict[str, bytes]:
    """The codec's files as the child's ``helpers`` holds them, by file name: the
    encoder's import of its ground floor names the shipped copy."""
    here, there = b"from autograder.isolation.wire_read import", b"from helpers._wire_read import"
    codec = PLAIN_DATA_CODEC.read_bytes()
    if codec.count(here) != 1:
        raise BuildError("the codec must import its ground floor once")
    return {"_wire.py": codec.replace(here, there),
            "_wire_read.py": PLAIN_DATA_READER.read_bytes()}


class BuildError(ValueError):
    pass


def write(path: Path, data: bytes) -> None:
    """Replace ``path`` by a new file (never write through a hard link into a store)."""
    path.unlink(missing_ok=True)
    path.write_bytes(data)


def read(path: Path) -> bytes:
    """What the file ``path`` holds."""
    return Path(path).read_bytes()


# -- exercise modules: only what judges an output -------------------------------------------


def _referenced_names(nodes) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for node in nodes for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _decorated_by_exercise(node: ast.AST) -> bool:
    return any(isinstance(d, (ast.Call, ast.Attribute)) and "EXERCISE" in ast.unparse(d)
               for d in getattr(node, "decorator_list", []))


@lru_cache(maxsize=None)
def strip_exercise_module(source: str) -> str:
    """The exercise module's source with only what judges an output: the ``EXERCISE``
    declaration (without ``diagnose=``), its ``compare=`` function, the ``scenario_*``
    functions, its ``@EXERCISE.edge`` check and the top-level names those need; imports
    reduced to the names used."""
    tree = ast.parse(source)
    defs: dict[str, ast.stmt] = {}
    exercise = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not _decorated_by_exercise(node):
            defs[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == "EXERCISE":
                exercise = node
            else:
                defs[node.targets[0].id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defs[node.target.id] = node
    if exercise is None:
        raise BuildError("an exercise module without EXERCISE")
    call = exercise.value
    call.keywords = [k for k in call.keywords if k.arg != "diagnose"]
    for k in call.keywords:              # what the copy drops cannot be refused
        if k.arg == "refuse" and isinstance(k.value, (ast.Tuple, ast.List)):
            k.value.elts = [e for e in k.value.elts if not (
                isinstance(e, ast.Constant) and str(e.value).startswith("helpers.exercises._"))]
    keep = {name: n for name, n in defs.items() if name.startswith("scenario_")}
    # what the reference checks at the learner's edge beyond its contract (@EXERCISE.edge)
    keep.update({node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and any(ast.unparse(d) == "EXERCISE.edge" for d in node.decorator_list)})
    todo = [exercise, *keep.values()]
    while todo:
        for name in _referenced_names([todo.pop()]):
            if name in defs and name not in keep:
                keep[name] = defs[name]
                todo.append(defs[name])
    kept = {id(n) for n in keep.values()} | {id(exercise)}
    body_nodes = [n for n in tree.body if id(n) in kept]
    used = {n.id for node in body_nodes for n in ast.walk(node) if isinstance(n, ast.Name)}
    imports = []                         # an imported name is used as a name, never as `x.name`
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                imports.append(node)
                continue
            node.names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
            if node.names:
                imports.append(node)
    doc = "How this exercise's output is judged (a student's copy: its visible cases are stored)."
    module = ast.Module(body=[ast.Expr(ast.Constant(doc))] + imports + body_nodes,
                        type_ignores=[])
    return ast.unparse(module) + "\n"


# -- stored visible cases --------------------------------------------------------------------


#: helpers/exercises/_stored/__init__.py of every student copy: the visible cases kept as
#: plain data (and the sampling cases' stored logits).
STORED_INIT = '''"""The visible cases of this copy's exercises, with their expected outputs, as plain
data (written by ``python -m autograder release --bundle`` and by the grader for its
notebook run)."""

from pathlib import Path

from helpers import _wire

_HERE = Path(__file__).parent


def load(name):
    """The case fields of exercise ``name`` (see ``helpers.course.case``), or []."""
    path = _HERE / f"{name}.wire"
    if not path.exists():
        return []
    return list(_wire.decode(path.read_bytes(), max_bytes=256 * 1024 * 1024))


def next_token_logits(name, fingerprint, fallback):
    """A stand-in for the course model's forward pass while exercise ``name`` is judged:
    the stored last row of logits for a (model, heads, context) the visible sampling
    cases can reach, else ``fallback``."""
    table = {}

    def forward(token_ids, params, n_heads):
        if not table:
            path = _HERE / f"{name}_logits.wire"
            if path.exists():
                data = _wire.decode(path.read_bytes(), max_bytes=256 * 1024 * 1024)
                table.update(zip(data["keys"], data["logits"]))
            table.setdefault(None, None)
        import numpy as np

        ids = np.asarray(token_ids).astype(np.int64).reshape(-1).tolist()
        row = table.get(f"{fingerprint(params)}:{n_heads}:{ids}")
        return fallback(token_ids, params, n_heads) if row is None else row[None, :]

    return forward
'''


def visible_case_fields(name: str) -> list[dict]:
    """The visible cases of ``name`` as :func:`helpers.course.case` fields, each with
    its expected output computed by the reference (in the trusted process)."""
    from helpers import course

    out = []
    for c in course.get(name).all_cases():
        if c.hidden:
            continue
        out.append({"name": c.name, "description": c.description, "args": c.args,
                    "kwargs": c.kwargs, "group": c.group, "hidden": False,
                    "scenario": c.scenario,
                    "answer": None if c.is_sampling else c.expected()})
    return out


def sampling_logits(name: str) -> dict | None:
    """The course model's last row of logits for every context the visible sampling
    cases of ``name`` can reach (prompt, then any ids, cropped to the model's context),
    keyed as ``_stored.next_token_logits`` reads them; None when there is none."""
    import numpy as np

    from helpers import course, reference

    module = importlib.import_module(f"helpers.exercises.{name}")
    keys, rows = [], []
    for c in course.get(name).all_cases():
        if c.hidden or not c.is_sampling:
            continue
        prompt, params, n_heads, n_new = c.args[:4]
        n_ctx, vocab = len(params["P"]), len(params["E"])
        fp = module._fingerprint(params)
        start = tuple(int(i) for i in np.asarray(prompt).reshape(-1))[-n_ctx:]
        seen, todo, depth = {start}, [start], 0
        while todo and depth < n_new:
            nxt = []
            for ctx in todo:
                for v in range(vocab):
                    new = (ctx + (v,))[-n_ctx:]
                    if new not in seen:
                        seen.add(new)
                        nxt.append(new)
            todo, depth = nxt, depth + 1
            if len(seen) > MAX_SAMPLING_CONTEXTS:
                raise BuildError(f"{name} case {c.name}: more than {MAX_SAMPLING_CONTEXTS} "
                                 "contexts to store")
        for ctx in sorted(seen):
            key = f"{fp}:{n_heads}:{list(ctx)}"
            if key not in keys:
                keys.append(key)
                rows.append(reference.language_model_forward(np.array(ctx), params,
                                                              n_heads)[-1])
    return {"keys": keys, "logits": np.array(rows)} if keys else None


@lru_cache(maxsize=None)
def stored_files(name: str, logits: bool = True) -> tuple[tuple[str, bytes], ...]:
    """The files ``helpers/exercises/_stored/`` holds for exercise ``name``: its visible
    cases, and (with ``logits``) the sampling cases' logits. Computed once per process."""
    from autograder.isolation import wire

    out = [(f"{name}.wire", wire.encode(visible_case_fields(name), short=True))]
    logits = sampling_logits(name) if logits and name in SAMPLING_LOGITS else None
    if logits:
        out.append((f"{name}_logits.wire", wire.encode(logits, short=True)))
    return tuple(out)


def write_exercises(pkg: Path, stored_for, put=write, logits: bool = True,
                    get=read) -> None:
    """Strip the exercise modules of the copy ``pkg`` to what judges an output, drop the
    private ones, and store the visible cases of the exercises ``stored_for``, with the
    sampling cases' logits unless ``logits`` is false (``put(path, bytes)`` writes a
    file, ``get(path)`` reads one)."""
    ex_dir = pkg / "exercises"
    for py in sorted(ex_dir.glob("*.py")):
        if py.name in KEEP_EXERCISE_FILES:
            continue
        if py.stem.startswith("_"):
            py.unlink()                    # inputs and variants: hidden seeds, mistakes
            continue
        text = strip_exercise_module(get(py).decode("utf-8"))
        text += (f"\nfrom helpers.exercises import _stored\n"
                 f"EXERCISE.stored_cases(lambda: _stored.load({py.stem!r}))\n")
        if py.stem in SAMPLING_LOGITS:
            var = SAMPLING_LOGITS[py.stem]
            text += (f"{var} = _stored.next_token_logits({py.stem!r}, _fingerprint, "
                     f"{var})\n")
        put(py, text.encode("utf-8"))
    stored = ex_dir / "_stored"
    stored.mkdir()
    put(stored / "__init__.py", STORED_INIT.encode("utf-8"))
    for name in stored_for:
        for file, data in stored_files(name, logits):
            put(stored / file, data)


# -- stubs of the course functions that answer exercises ----------------------------------


def _forward_call(node: ast.FunctionDef) -> str:
    """The arguments of ``node`` as a call passing each one on (``a, b, *c, d=d, **e``)."""
    a = node.args
    parts = [x.arg for x in a.posonlyargs + a.args]
    if a.vararg:
        parts.append("*" + a.vararg.arg)
    parts += [f"{x.arg}={x.arg}" for x in a.kwonlyargs]
    if a.kwarg:
        parts.append("**" + a.kwarg.arg)
    return ", ".join(parts)


def _arguments_dict(node: ast.FunctionDef) -> str:
    """The arguments of ``node`` by name, as :func:`inspect.Signature.bind` gives them."""
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args]
    names += [a.vararg.arg] if a.vararg else []
    names += [x.arg for x in a.kwonlyargs]
    names += [a.kwarg.arg] if a.kwarg else []
    return "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"


#: Part of the message of the stub that replaces the reference of the graded function.
REFERENCE_STUB_MARK = "is hidden while your own is graded"


def _answer_labels(name: str, forbidden: bool = False) -> dict[str, str]:
    """``"module:name" -> how learners reach it`` for the reference of exercise ``name``
    and what it refuses, as ``refuse`` names them: a function, a class (``_FastBPE``),
    a method (``_FastBPE.word``) or another module-level value such as a compiled
    pattern (``helpers.reference``'s are re-exported by the package: ``helpers.softmax``);
    with ``forbidden``, also what it ``forbid``s (refused while it is graded, not hidden)."""
    return dict(_labels(name, forbidden))


@lru_cache(maxsize=None)
def _labels(name: str, forbidden: bool) -> tuple[tuple[str, str], ...]:
    """:func:`_answer_labels`, computed once per process (every copy asks it)."""
    from helpers import course

    ex = course.get(name)
    out: dict[str, str] = {}
    specs = [*ex.refuse, *(ex.forbid if forbidden else ())]
    for spec in [course.qualified(ex.reference), *map(defined_at, specs)]:
        module, _, attr = spec.partition(":")
        prefix = "helpers" if module == "helpers.reference" else module
        out[spec] = f"{prefix}.{attr}"
    return tuple(out.items())


@lru_cache(maxsize=None)
def defined_at(spec: str) -> str:
    """``spec`` as the module that defines it names it: a function or class re-exported by
    a package (``helpers.bert:encode``) is written where its ``def`` is
    (``helpers.bert.model:encode``); a value (a compiled pattern) has no such name and
    stays as ``refuse`` writes it."""
    from helpers import course

    obj = course.resolve(spec)
    if callable(obj) and isinstance(getattr(obj, "__qualname__", None), str) and \
            isinstance(getattr(obj, "__module__", None), str):
        return course.qualified(obj)
    return spec


def hidden_references(name: str) -> dict[str, str]:
    """``"module:function" -> message`` for the reference of exercise ``name`` and the
    functions it refuses, in the copy its answer is graded with: stubs that raise, saying
    they are hidden while the learner's own is graded (composites included)."""
    return {spec: f"{label} {REFERENCE_STUB_MARK}"
            for spec, label in _answer_labels(name, forbidden=True).items()}


def stubbed_functions(names) -> dict[str, str]:
    """``"module:function" -> message`` for every course function left out when exercises
    ``names`` are not answered (their references and what they refuse, except
    :data:`COMPOSITES`)."""
    return dict(_stubbed(tuple(names)))


@lru_cache(maxsize=None)
def _stubbed(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """:func:`stubbed_functions`, computed once per process for each ``names``."""
    from helpers import course

    out: dict[str, str] = {}
    for name in names:
        fields = {"name": name, "notebook": course.notebook_of(name)}
        reference = course.qualified(course.get(name).reference)
        for spec, label in _answer_labels(name).items():
            if spec not in COMPOSITES:
                text = STUB_MESSAGE if spec == reference else REFUSED_MESSAGE
                out.setdefault(spec, f"{label} {text.format(**fields)}")
    return tuple(out.items())


def _earlier(name: str) -> list[str]:
    """The exercises of the notebooks before exercise ``name``'s, in course order."""
    from helpers import course

    out = []
    for notebook, names in course.NOTEBOOKS.items():
        if name in names:
            return out
        out += names
    return out


@lru_cache(maxsize=None)
def trusted_answers(name: str) -> tuple[str, ...]:
    """The course functions (``"module:function"``) the trusted grader answers for the
    child that judges exercise ``name``: those of every exercise of an earlier notebook
    (what a student has once the earlier homework is revealed) and of the exercises it
    uses, and theirs in turn (credit isolation), never its own."""
    from helpers import course

    seen: set[str] = set(_earlier(name))
    todo = list(course.get(name).uses)
    while todo:
        dep = todo.pop()
        if dep != name and dep not in seen:
            seen.add(dep)
            todo += course.get(dep).uses
    return tuple(sorted(set(stubbed_functions(sorted(seen))) - set(stubbed_functions([name]))))


@lru_cache(maxsize=None)
def trusted_answers_of_notebook(names: tuple[str, ...]) -> tuple[str, ...]:
    """The course functions the trusted grader answers for the notebook run of an
    assignment whose exercises are ``names``: those of the earlier notebooks (what a
    student has once the earlier homework is revealed), none of the assignment's own but
    the model a sampling check judges with (:data:`SAMPLING_MODEL`)."""
    own = set(stubbed_functions(names))
    judging = {SAMPLING_MODEL[n] for n in names if n in SAMPLING_MODEL}
    return tuple(sorted(({s for n in names for s in trusted_answers(n)} - own) | judging))


@lru_cache(maxsize=None)
def exercise_references() -> frozenset[str]:
    """The specs of the exercises' references: the functions a notebook asks the learner
    to write under the same name, which the learner's function may stand in for."""
    from helpers import course

    return frozenset(course.qualified(course.get(n).reference) for n in course.names())


def _stub_body(spec: str, name: str, node: ast.FunctionDef, message: str,
               raises: bool) -> list[ast.stmt]:
    """The body of the stub of function ``node``: ``raise RuntimeError(message)`` when
    ``raises``, else its docstring (what to write) and one call of ``helpers._yours.course``
    (the learner's function ``name`` may stand in for it only when ``spec`` is an
    exercise's reference: :func:`exercise_references`)."""
    if raises:
        return ast.parse(f"raise RuntimeError({message!r})").body
    doc = ast.get_docstring(node, clean=False)
    stand_in = spec in exercise_references()
    return ([ast.Expr(ast.Constant(doc))] if doc else []) + ast.parse(
        f"return _yours.course({spec!r}, {name!r}, {message!r}, {_arguments_dict(node)}, "
        f"lambda _fn: _fn({_forward_call(node)}), stand_in={stand_in!r})").body


def _stub_function(node: ast.FunctionDef, spec: str, name: str, message: str,
                   raises: bool) -> None:
    node.body = _stub_body(spec, name, node, message, raises)
    node.decorator_list = [d for d in node.decorator_list if isinstance(d, ast.Name) and
                           d.id in ("staticmethod", "classmethod")]


def _stub_class(node: ast.ClassDef, spec: str, message: str, raises: bool) -> None:
    """Every method of class ``node`` a stub (spec ``module:Class.method``); the class
    keeps its docstring and those stubs, nothing else of its body (a class attribute may
    hold a table). A method's stub is never answered by a learner's function of its name
    (``Class.method`` is no name a notebook defines)."""
    body = []
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _stub_function(item, f"{spec}.{item.name}", f"{node.name}.{item.name}",
                           message, raises)
            body.append(item)
        elif item is node.body[0] and isinstance(item, ast.Expr) and \
                isinstance(item.value, ast.Constant):
            body.append(item)
    node.body = body or [ast.Pass()]
    node.decorator_list = []


def _stub_value(node: ast.Assign | ast.AnnAssign, spec: str, message: str,
                raises: bool) -> None:
    """A module-level value (a compiled pattern, a table, a callable object) replaced by
    ``helpers._yours.Hidden``: any use of it raises ``message``."""
    node.value = ast.parse(f"_yours.Hidden({spec!r}, {message!r}, {raises!r})",
                           mode="eval").body


def _assigned_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
        return [node.target.id]
    return []


@lru_cache(maxsize=None)
def _stubbed_source(text: str, fns: tuple) -> tuple[str, tuple[str, ...]]:
    """``text`` with every top-level name of ``fns`` (``(name, spec, message, raises)``
    each) a stub: a function a call of ``helpers._yours.course`` (its docstring kept: what
    to write), or, when ``raises``, ``raise RuntimeError(message)``; a class (``C``) or
    one method (``C.m``) the same, method by method; any other module-level value a
    ``helpers._yours.Hidden``. No line of their body stays. Returns the text and the names
    found. Cached: every copy of a grading process stubs the same sources alike."""
    tree = ast.parse(text)
    found = []
    fns = {fn: (spec, message, raises) for fn, spec, message, raises in fns}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in fns:
            spec, message, raises = fns[node.name]
            _stub_function(node, spec, node.name, message, raises)
            node.decorator_list = []
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            if node.name in fns:
                _stub_class(node, *fns[node.name])
                found.append(node.name)
                continue
            for item in node.body:
                key = f"{node.name}.{getattr(item, 'name', '')}"
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and key in fns:
                    spec, message, raises = fns[key]
                    _stub_function(item, spec, key, message, raises)
                    found.append(key)
        else:
            names = [n for n in _assigned_names(node) if n in fns]
            if names:
                _stub_value(node, *fns[names[0]])
                found += names
    at = next((i + 1 for i, n in enumerate(tree.body) if isinstance(n, ast.ImportFrom)
               and n.module == "__future__"), 0)
    tree.body.insert(at, ast.parse("from helpers import _yours").body[0])
    return ast.unparse(tree) + "\n", tuple(found)


def stub_answers(pkg: Path, stubs: dict[str, str], raising: dict[str, str] | None = None,
                 put=write, get=read) -> set[str]:
    """Replace the functions ``stubs`` (spec -> message) in the copy ``pkg`` by calls of
    ``helpers._yours.course``, and those of ``raising`` by stubs raising their message:
    no line of their body stays (``put(path, bytes)`` replaces a file, ``get(path)``
    reads one). Returns the specs found and stubbed."""
    from helpers import course

    raising = raising or {}
    by_file: dict[Path, list] = {}
    for spec, message in {**stubs, **raising}.items():
        module, _, fn = spec.partition(":")
        by_file.setdefault(course.module_file(pkg, module), []).append(
            (fn, spec, message, spec in raising))
    done: set[str] = set()
    for py, fns in by_file.items():
        if not py.exists():                  # a module the copy drops (variants)
            continue
        text, found = _stubbed_source(get(py).decode("utf-8"), tuple(sorted(fns)))
        put(py, text.encode("utf-8"))
        done |= {spec for fn, spec, _, _ in fns if fn in found}
    return done


def build(pkg: Path, hidden, stored_for, put=write, logits: bool = True,
          graded: str | None = None, get=read) -> dict[str, str]:
    """Make the copy ``pkg`` of ``helpers/`` a student's: the exercises ``hidden``
    answered by stubs, the exercise modules stripped, the visible cases of ``stored_for``
    stored (with the sampling cases' logits unless ``logits`` is false: see
    :data:`SAMPLING_MODEL`). With ``graded`` (an exercise's name), the copy its answer is
    graded with: its reference and what it refuses raise (:func:`hidden_references`).
    ``put(path, bytes)`` writes a file of the copy, ``get(path)`` reads one. Returns the
    stubs (spec -> message)."""
    stubs = stubbed_functions(hidden)
    done = stub_answers(pkg, stubs, hidden_references(graded) if graded else None, put, get)
    if graded:
        from helpers import course

        ref = course.qualified(course.get(graded).reference)
        if ref not in done:
            raise BuildError(f"no {ref} to hide")
    put(pkg / "_yours.py", COURSE_CALLS.read_bytes())
    for name, data in codec_files().items():
        put(pkg / name, data)
    write_exercises(pkg, stored_for, put, logits, get)
    return stubs
