"""The copies of ``helpers`` a learner's code may import while it is graded.

Every child imports what a student has, built by the builder of the student bundle
(:mod:`autograder.isolation.student_helpers`): every exercise's answer (its reference and
what it refuses) is a stub with no line of the original, the exercise modules keep only
how an output is judged (no case builder, hidden case, input generator or known mistake),
and nothing of the course's math is in the process. A stub answers, in a grading child,
with what the trusted grader computes for the earlier functions that child may use
(``answers.answer``), else with the learner's own function of that name, else by naming
the exercise to finish.

* The notebook run's copy (one per assignment) stores the assignment's visible cases as
  plain data, so the real ``check`` of the notebook's test cells runs them as the course
  does: it is the witness for tampering flags, and decides no points.
* An exercise's copy stores no case (the trusted process sends them); its own reference
  and the functions it refuses are stubs that raise, saying they are hidden while the
  learner's own is graded, and ``helpers/checks.py`` (what notebooks import: ``check``,
  ``quiet``, ``assert_close``, ``CheckFailed``) is a harmless stand-in: the kept cells of
  the learner's notebook import it and may call ``check`` or ``assert_close`` (in an
  answer cell), and the verdict is not reached in this process, so neither may decide
  anything in it.

The copies are hard links to one store of files per grading process (:class:`Store`),
compiled once.
"""

from __future__ import annotations

import hashlib
import importlib._bootstrap_external
import importlib.util
import os
import shutil
from functools import lru_cache
from pathlib import Path

from autograder import REPO_ROOT
from autograder.isolation import student_helpers

HELPERS_DIR = REPO_ROOT / "helpers"



_CHECKS_STAND_IN = '''"""Stand-in for helpers.checks inside the isolated grading run (checks happen outside)."""

import contextlib
import warnings


class CheckFailed(AssertionError):
    pass


def check(name, fn, *args, **kwargs):
    return None


def assert_close(*args, **kwargs):
    return None


@contextlib.contextmanager
def quiet():
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield
'''


#: Part of the message of the stub that replaces the reference of the graded function.
REFERENCE_STUB_MARK = student_helpers.REFERENCE_STUB_MARK


@lru_cache(maxsize=None)
def _bytecode(text: str) -> bytes:
    """The ``.pyc`` of a module's source, checked by the source's hash (PEP 552), so that
    one compiled file serves every copy holding the same source, whatever its time (the
    import system sets the code's file name to the module's path when it loads it)."""
    data = text.encode("utf-8")
    code = compile(data, "<helpers>", "exec", dont_inherit=True)
    return bytes(importlib._bootstrap_external._code_to_hash_pyc(
        code, importlib.util.source_hash(data), checked=True))


class Store:
    """Content-addressed files in a folder of the grader's own (mode 0700, never shown to
    a child): each copy of ``helpers`` is made of hard links to them, so the ~250 files
    of a copy are written once per grading process, not once per exercise. The store
    remembers what each of its files holds (by content, and by inode for the copies'
    links to them), so a copy costs a link per file, never a hash or a read again."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(mode=0o700, exist_ok=True)
        self._stored: dict[bytes, str] = {}       # content -> its file in the store
        self.by_inode: dict[tuple[int, int], bytes] = {}    # (device, inode) -> content

    def _file(self, data: bytes) -> str:
        stored = self._stored.get(data)
        if stored is None:
            stored = os.path.join(self.folder, hashlib.sha256(data).hexdigest())
            if not os.path.exists(stored):
                tmp = f"{stored}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.chmod(tmp, 0o644)
                os.replace(tmp, stored)
            st = os.stat(stored)
            self.by_inode[(st.st_dev, st.st_ino)] = data
            self._stored[data] = stored
        return stored

    def put(self, dest, data: bytes) -> None:
        """Make ``dest`` a file holding ``data``: a new link to the store's file of that
        content (one already at ``dest``, maybe a link into the store, is replaced, never
        written through)."""
        stored = self._file(data)
        if os.path.lexists(dest):
            os.unlink(dest)
        try:
            os.link(stored, dest)
        except OSError:                        # another file system, or no links
            student_helpers.write(Path(dest), data)

    def content(self, path: str) -> bytes:
        """What the copy's file ``path`` holds (read only when it is not a link here)."""
        st = os.stat(path)
        data = self.by_inode.get((st.st_dev, st.st_ino))
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        return data


@lru_cache(maxsize=None)
def _read(path: str, mtime_ns: int, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _copy_tree(source: Path, pkg: Path, store: Store) -> None:
    for folder, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".ipynb_checkpoints")]
        rel = os.path.relpath(folder, source)
        target = os.path.normpath(os.path.join(pkg, rel))
        os.makedirs(target, exist_ok=True)
        for name in files:
            if not name.endswith(".pyc"):
                src = os.path.join(folder, name)
                st = os.stat(src)
                store.put(os.path.join(target, name), _read(src, st.st_mtime_ns, st.st_size))


def _compile_tree(pkg: Path, store: Store) -> None:
    for folder, dirs, files in os.walk(pkg):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        cache = None
        for name in files:
            if not name.endswith(".py"):
                continue
            py = os.path.join(folder, name)
            try:
                pyc = _bytecode(store.content(py).decode("utf-8"))
            except (SyntaxError, ValueError, UnicodeDecodeError):
                continue                       # imported from source (and fails there)
            target = importlib.util.cache_from_source(py)
            if cache is None:
                cache = os.path.dirname(target)
                os.makedirs(cache, exist_ok=True)
            store.put(target, pyc)


def prepare_helpers(dest: Path, strip: str | None = None, source: Path | None = None,
                    notebook_run: bool = False, assignment: str | None = None,
                    store: Store | None = None) -> Path:
    """Copy ``helpers/`` to ``dest/helpers`` (compiled); return ``dest`` (for sys.path).

    With ``strip`` (an exercise's name), the copy is the one that exercise is graded
    with (its reference and what it refuses raise: ``student_helpers.build(graded=...)``),
    and its checks module is a no-op stand-in. With
    ``notebook_run``, the copy is the notebook run's: what a student of ``assignment``
    has (:func:`autograder.isolation.student_helpers.build`, the builder of the student
    bundle): every exercise's answer a stub, no case builder, hidden case or known
    mistake, the visible cases of the assignment's exercises stored (of every exercise
    when ``assignment`` is not one of the course's), the real checks. Without either,
    the full package (the sandbox's own tests and benchmark). ``store``: the
    :class:`Store` its files are links into (one kept for every copy a grading process
    makes; by default a new one in ``dest``'s parent folder).
    """
    if strip is not None and notebook_run:
        raise ValueError("a copy is either an exercise's or the notebook run's")
    source = HELPERS_DIR if source is None else source
    pkg = dest / "helpers"
    if pkg.exists():
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    store = Store(dest.parent / ".helpers-store") if store is None else store
    _copy_tree(source, pkg, store)
    if strip is not None:
        from helpers import course

        student_helpers.build(pkg, course.names(), (), put=store.put, graded=strip,
                              get=store.content)
        student_helpers.write(pkg / "checks.py", _CHECKS_STAND_IN.encode("utf-8"))
    elif notebook_run:
        from helpers import course

        names = course.names()
        student_helpers.build(pkg, names, course.NOTEBOOKS.get(assignment, names),
                              put=store.put, logits=False, get=store.content)
    _compile_tree(pkg, store)
    return dest
