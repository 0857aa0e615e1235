"""What the confined children see: per-process helpers copies, data files, caches, and the
plain-data codec; the grading worker's life cycle."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT
from autograder.notebook.source import Source
from autograder.isolation import client, executor, helpers_copy, runners, safety, seccomp, wire


# ---------------------------------------------------------------------------------------
# Resources the children see: helpers copies, data files.
# ---------------------------------------------------------------------------------------


#: The plain-data codec of the wire (no pickle), which a student bundle ships to read its
#: stored cases (autograder/release/bundle.py).
PLAIN_DATA_CODEC = Path(wire.__file__)


def plain_data(obj) -> bytes:
    """``obj`` in the wire's plain-data form (see ``PLAIN_DATA_CODEC``)."""
    return wire.encode(obj)


def from_plain_data(data: bytes, max_bytes: int):
    """What :func:`plain_data` wrote (at most ``max_bytes``); nothing but plain values."""
    return wire.decode(data, max_bytes=max_bytes)


class _Resources:
    """Per-process copies of ``helpers`` (the notebook run's, with no case builder, hidden
    case or known mistake; one per exercise with what that exercise must not find
    stubbed) and data."""

    def __init__(self, worker: client.Worker):
        self.worker = worker
        self.base = worker.home
        os.chmod(self.base, 0o711)
        self._helpers: dict[tuple, str] = {}
        self._store = helpers_copy.Store(self.base / ".helpers-store")   # every copy's files
        self._data: dict[str, str | None] = {}
        self._arrays: set[str] = set()
        self._jobs = 0

    def helpers(self, strip: str | None, assignment: str | None = None) -> str:
        """The folder holding the helpers copy of exercise ``strip``'s run, or (``None``)
        of the notebook run of ``assignment``."""
        key = (strip, assignment if strip is None else None)
        if key not in self._helpers:
            label = re.sub(r"[^A-Za-z0-9_.-]", "_", str(assignment))[:80]
            dest = self.base / (f"helpers-notebook-{label}" if strip is None
                                else f"helpers-no-{strip}")
            dest.mkdir(exist_ok=True)
            os.chmod(dest, 0o755)
            self._helpers[key] = str(helpers_copy.prepare_helpers(
                dest, strip=strip, notebook_run=strip is None, assignment=assignment,
                store=self._store))
        return self._helpers[key]

    def arrays(self, strip: str, store: dict) -> None:
        """The large arrays of exercise ``strip``'s cases, beside its helpers copy."""
        if store and strip not in self._arrays:
            wire.write_arrays(store, Path(self.helpers(strip)) / runners.ARRAYS_FOLDER)
            self._arrays.add(strip)

    def data(self, source: Source) -> str | None:
        key = str(source.path.parent)
        if key not in self._data:
            files = [p for p in source.path.parent.iterdir()
                     if p.suffix != ".ipynb" and not p.name.startswith(".")
                     and p.name != "__pycache__"]
            if not files:
                self._data[key] = None
            else:
                dest = self.base / "data" / source.assignment
                if dest.exists():
                    shutil.rmtree(dest)
                dest.mkdir(parents=True)
                for p in files:
                    if p.is_dir():
                        shutil.copytree(p, dest / p.name)
                    else:
                        shutil.copy(p, dest / p.name)
                os.chmod(self.base / "data", 0o755)
                self._data[key] = str(dest)
        return self._data[key]

    def conf(self, strip: str | None, source: Source) -> dict:
        self._jobs += 1
        work = self.base / "fallback-work" / str(self._jobs)
        return {"root_mount": str(self.base / "root"),
                "helpers_parent": self.helpers(strip, source.assignment),
                "data_dir": self.data(source), "fallback_work": str(work),
                "data_folders": _course_caches()}

    def cleanup_fallback(self) -> None:
        shutil.rmtree(self.base / "fallback-work", ignore_errors=True)


_RESOURCES: dict[tuple[int, int], _Resources] = {}


def _course_caches() -> dict[str, str]:
    """The course's cache of converted model weights, shown read-only to the children
    when this machine has one (``helpers.llama.cache_dir``, named by the environment
    variable ``TRANSFORMERS_COURSE_CACHE``): without it, every graded notebook that uses
    the pretrained model converts its weights again (about ten seconds). Build it once
    before grading by loading the model (``helpers.llama.load_smollm2()``)."""
    from helpers.llama.weights import cache_dir      # the one statement of where it is

    home = cache_dir()
    return {str(home): "TRANSFORMERS_COURSE_CACHE"} if home.is_dir() else {}


_PREPARED: set[str] = set()


def _prepare(source: Source) -> None:
    """Run what the assignment declares it needs prepared (``helpers.course.PREPARE``,
    e.g. building the SmolLM2 weights cache), once per process, in a trusted subprocess
    before any child needs it: the children see the caches read-only, so a missing
    cache would cost every graded notebook a conversion. A failure here only costs
    speed, never a grade."""
    from helpers import course

    for spec in course.PREPARE.get(source.assignment, ()):
        if spec in _PREPARED:
            continue
        _PREPARED.add(spec)
        module, _, function = spec.partition(":")
        code = f"import {module} as m\nm.{function}()\n"
        try:
            subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600,
                           cwd=str(REPO_ROOT),
                           env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        except (OSError, subprocess.SubprocessError):
            pass


def check_safe_to_grade(stream=None) -> str:
    """Decide, before any notebook runs, whether student code may run here (see
    :func:`autograder.isolation.safety.check_safe_to_grade`); also say so when the
    seccomp deny-list cannot be installed. Returns the isolation mode."""
    mode = safety.check_safe_to_grade(stream=stream)
    ok, why = seccomp.available()
    if not ok:
        print(f"warning: no seccomp filter for student code: {why}. Keyrings, BPF, perf "
              "events and io_uring stay callable (docs/threat_model.md).",
              file=stream or sys.stderr, flush=True)
    return mode


def close_worker() -> None:
    """Stop this process's grading worker and remove its files."""
    client.get_worker().close()


def _resources() -> _Resources:
    worker = client.get_worker()
    key = (os.getpid(), id(worker))
    if key not in _RESOURCES:
        _RESOURCES[key] = _Resources(worker)
    return _RESOURCES[key]


