"""One real grading run of every catalogue entry, every attack and two honest students.

``graded()`` writes SUBMISSIONS (one student per catalogue entry and per attack, plus
the honest students ``0-honest-first``, who hands in every solution notebook, and
``zz-honest-last``, who hands in those of the attacked assignments), runs
``python -m autograder grade SUBMISSIONS --out OUT --jobs 3`` once, and returns what the
tests need: the grades per student, the feedback pages, the exit code, the time taken,
and what changed on disk. Meanwhile a separate run of the command grades
``0-honest-first`` alone, so that tests can check that sharing a run with attackers
changed nothing for an honest student.

The result is cached for the test session (the ``catalogue_run`` fixture of
``tests/conftest.py``): ``tests/autograder/engine/test_catalogue.py``, ``test_trust.py``
and ``tests/autograder/isolation/test_attacks.py`` share the same run.
"""

from __future__ import annotations

import atexit
import csv
import hashlib
import html
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR

from catalogue import (Entry, assignments, entries, exercises, nbgrader,
                       student_notebook, text)

#: Limits of the run (the command's options): generous for honest notebooks, short
#: enough that the hanging attacks do not dominate the run. Three grading processes:
#: the first honest student and the slow one (:data:`SLOW`, which mostly waits) start
#: at once, and the attacks start beside them in the third.
TIMEOUT, CELL_TIMEOUT, JOBS = 40, 20, 3
HONEST = ("0-honest-first", "zz-honest-last")


@dataclass
class Run:
    submissions: Path
    out: Path
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    rows: dict[tuple[str, str], dict[str, dict]]        # (student, assignment) -> grade_id -> row
    records: dict[tuple[str, str], dict]                 # (student, assignment) -> record
    students: dict[str, object]                          # student id -> [Entry] or Attack
    student_of: dict[str, str]                           # Entry.id or Attack.key -> student id
    alone_rows: dict[tuple[str, str], dict[str, dict]]   # honest-first graded alone
    alone_records: dict[tuple[str, str], dict]
    alone_seconds: float                                  # until the main run had ended
    submissions_before: dict[str, str]
    submissions_after: dict[str, str]
    canary: Path
    canary_before: str
    canary_after: str | None
    canary_dir_after: list[str]
    marker: str
    marker_hits: list[str]                                # files outside OUT holding the marker
    missing_after_run: list[str]                          # protected files gone after the run
    new_gradebooks: list[str]                             # gradebook.db files that appeared
    out_unexpected: list[str]                             # files in OUT the grader does not write
    network_hits: list[bytes] = field(default_factory=list)
    mode: str = ""
    cpu_seconds: float = 0.0                              # both runs, all their processes

    def feedback(self, student: str, assignment: str) -> str:
        """The student's feedback page for an assignment, as plain text (unescaped)."""
        path = self.out / "feedback" / student / assignment / f"{assignment}.html"
        return html.unescape(path.read_text(encoding="utf-8")) if path.is_file() else ""

    def cell_text(self, student: str, assignment: str, grade_ids: list[str]) -> str:
        """The message and feedback of some graded cells (from results.jsonl)."""
        record = self.records[(student, assignment)]
        return "\n".join(f"{c['message']}\n{c['feedback']}" for c in record["cells"]
                         if c["grade_id"] in grade_ids)

    def feedback_html(self, student: str, assignment: str) -> str:
        path = self.out / "feedback" / student / assignment / f"{assignment}.html"
        return path.read_text(encoding="utf-8") if path.is_file() else ""


def student_id(prefix: str, n: int, key: str) -> str:
    return f"{prefix}{n:03d}-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", key)


def _hash_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _protected() -> list[Path]:
    """Files an attack tries to change or delete: solutions, the reference, the grader."""
    return sorted(SOLUTIONS_DIR.glob("*/*.ipynb")) + [
        REPO_ROOT / "helpers" / "reference.py", REPO_ROOT / "helpers" / "checks.py",
        REPO_ROOT / "autograder" / "engine.py"]


#: Where an attack plants files for later students (tests/attacks/writes.py): shared
#: folders and the interpreter's import path; only these names are looked at there.
PLANTED_NAMES = ("sitecustomize.py", "usercustomize.py", "helpers.py", "gradebook.db")


def _planted() -> set[Path]:
    """Files with a planted name (or a name holding "PWNED") in shared folders."""
    folders = [Path(tempfile.gettempdir()), Path("/tmp"), Path("/dev/shm"), Path.home(),
               Path.home() / ".ipython" / "profile_default" / "startup"]
    folders += [Path(p) for p in sys.path if p]
    found = set()
    for folder in dict.fromkeys(folders):
        if not folder.is_dir():
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found |= {folder / n for n in names if n in PLANTED_NAMES or "PWNED" in n
                  or (folder.name == "startup" and n.endswith(".py"))}
    return found


def _gradebooks(roots: list[Path]) -> set[str]:
    found = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in (".git", ".venv", "node_modules")]
            found |= {os.path.join(dirpath, f) for f in filenames if f.startswith("gradebook")}
    return found


def _unexpected_outputs(out: Path) -> list[str]:
    """Files in OUT that the grading command does not write (its layout: docs/grading.md)."""
    allowed = {"results.jsonl", "grades.csv", "summary.csv"}
    bad = []
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).parts
        if path.is_dir():
            continue
        if len(rel) == 1 and rel[0] in allowed:
            continue
        if len(rel) == 4 and rel[0] == "feedback" and rel[3] == f"{rel[2]}.html":
            continue
        if len(rel) == 3 and rel[0] == "feedback" and rel[2] == "index.html":
            continue                                  # the student's index page
        bad.append("/".join(rel))
    return bad


def _scan_for_marker(roots: list[Path], marker: str, skip: list[Path],
                     max_depth: int = 100) -> list[str]:
    """Files under ``roots`` (our own folders: the repository and the run's temp folder;
    not under ``skip``, at most ``max_depth`` folders down) whose name or first MB holds
    ``marker``."""
    hits = []
    needle = marker.encode()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            hits += [str(here / d) for d in dirnames if marker in d]
            depth = len(here.relative_to(root).parts)
            dirnames[:] = [d for d in dirnames if d not in (".git", ".venv", "node_modules")
                           and not any((here / d) == s for s in skip) and depth < max_depth]
            for name in filenames:
                path = here / name
                try:
                    if marker in name:
                        hits.append(str(path))
                    elif path.is_file() and path.stat().st_size < 50_000_000:
                        with open(path, "rb") as f:
                            if needle in f.read(1_000_000):
                                hits.append(str(path))
                except OSError:
                    continue
    return hits


class _Listener:
    """A TCP server on 127.0.0.1 that records what connects (network-isolation check)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.hits: list[bytes] = []
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.hits.append(conn.recv(1000) or b"<connected>")
                except OSError:
                    self.hits.append(b"<connected>")

    def close(self):
        self.stop = True
        self.thread.join(3)
        self.sock.close()


def _read_rows(out: Path) -> dict[tuple[str, str], dict[str, dict]]:
    rows: dict[tuple[str, str], dict[str, dict]] = {}
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            rows.setdefault((row["student_id"], row["assignment"]), {})[row["grade_id"]] = row
    return rows


def _read_records(out: Path) -> dict[tuple[str, str], dict]:
    records = {}
    for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            records[(r["student_id"], r["assignment"])] = r
    return records


#: Students of the trust findings (one exercise, one place), graded in the same run.
#: The run hands students out in the order of their ids: SLOW's, which waits for about
#: a minute, is second (in a grading process of its own beside the first honest student
#: and the attacks), not last, where it would leave one grading process working alone
#: at the end.
SLOW, CASCADE = "0-slow-honest", "trust-cascade"
#: Seconds of top-level work at the end of each of two answer cells of SLOW's notebook 04:
#: each under the cell limit, together under the notebook limit.
SLOW_SECONDS = 12


def cascade_breaks() -> dict[str, dict[str, str]]:
    """assignment -> {exercise: wrong source}: in every notebook, each exercise that a
    later exercise of the same notebook uses gets a wrong answer (the first of its
    catalogue; ``embed`` is left unanswered); the exercises that use them stay right."""
    from helpers import course as registry

    wrong = {}
    for e in entries():
        if e.kind == "wrong" and e.function not in wrong:
            wrong[e.function] = e.source
    kept = set(exercises())
    out: dict[str, dict[str, str]] = {}
    for assignment, names in registry.NOTEBOOKS.items():
        used = {dep for n in names for dep in registry.get(n).uses
                if dep in names and dep in kept}        # CATALOGUE_ONLY: only those kept
        if used:
            out[assignment] = {
                n: ("def embed(token_ids, E, P):\n    raise NotImplementedError()\n"
                    if n == "embed" else wrong[n]) for n in used}
    return out


def trust_students() -> dict[str, dict[str, dict]]:
    """student -> assignment -> notebook, for :data:`SLOW` and :data:`CASCADE`."""
    slow = student_notebook("04_queries_keys_values")
    for cell in slow["cells"]:
        if nbgrader(cell).get("grade_id") in ("project_qkv", "scaled_dot_product_attention"):
            cell["source"] = (text(cell) + f"\n\nimport time\ntime.sleep({SLOW_SECONDS})"
                              "   # slow top-level work, under the cell limit\n")
    return {SLOW: {"04_queries_keys_values": slow},
            CASCADE: {a: student_notebook(a, breaks) for a, breaks in cascade_breaks().items()}}


def _write(nb: dict, root: Path, student: str, assignment: str) -> None:
    path = root / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


#: The grading secret of the catalogue's runs: fixed, so that every run draws the same
#: hidden inputs for a student (what a wrong answer is caught by stays the same from run
#: to run; tests/autograder/engine/test_hidden_seed.py checks right answers on many students' draws).
TEST_SECRET = "catalogue-" + "0123456789abcdef" * 3


def _command(submissions: Path, out: Path) -> list[str]:
    key = out.parent / "catalogue-grading-secret.key"
    if not key.exists():
        key.write_text(TEST_SECRET + "\n")
        key.chmod(0o600)
    return [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
            "--jobs", str(JOBS), "--timeout", str(TIMEOUT), "--cell-timeout", str(CELL_TIMEOUT),
            "--secret-file", str(key)]


def wrong_packs() -> list[list[Entry]]:
    """The wrong entries, packed: the k-th wrong answers of every function of a notebook
    share one (``k`` from 0 to the most wrong answers of any of its functions), which
    keeps the run short. Each is judged on its own function's test cells only: a wrong
    function that another wrong one uses costs that one nothing (the grader judges a
    failing function again with the course's own, ``autograder/engine/grading.py``), and
    every other test cell of the notebook (the right functions, those that use a wrong
    one included) must keep its points."""
    from helpers import course as registry

    by_function: dict[str, list[Entry]] = {}
    for e in entries():
        if e.kind == "wrong":
            by_function.setdefault(e.function, []).append(e)
    packs = []
    for assignment in registry.NOTEBOOKS:
        members = [f for f in registry.NOTEBOOKS[assignment] if f in by_function]
        for k in range(max((len(by_function[f]) for f in members), default=0)):
            packs.append([by_function[f][k] for f in members if k < len(by_function[f])])
    return packs


def correct_packs() -> list[list[Entry]]:
    """The correct entries, packed: the k-th correct answer of every function of an
    assignment share one notebook (every test cell of it must earn full marks), which
    keeps the run short."""
    by_slot: dict[tuple[str, int], list[Entry]] = {}
    counts: dict[str, int] = {}
    for entry in entries():
        if entry.kind != "correct":
            continue
        k = counts[entry.function] = counts.get(entry.function, -1) + 1
        by_slot.setdefault((assignments()[entry.function], k), []).append(entry)
    return [by_slot[key] for key in sorted(by_slot)]


_RUN: list = []


def graded(base: Path | None = None) -> Run:
    """The one run of the test session (every module that needs it shares it, whatever
    ``base`` it names): built on first use by :func:`_grade_once`."""
    if not _RUN:
        _RUN.append(_grade_once(base))
    return _RUN[0]


def _grade_once(base: Path | None) -> Run:
    """Build SUBMISSIONS, grade it once with the real command, collect the evidence.
    Everything (the grader's temporary folders included) lives in a folder made under
    ``base`` (the test session's own temporary folder), not in the machine's."""
    from attacks import attacks as all_attacks

    only = bool(os.environ.get("CATALOGUE_ONLY"))    # a development knob: only those
    # exercises' answers, and the honest student's notebooks holding them; no attacks,
    # no trust students, no run of the honest student alone

    def attacks():
        return [] if only else all_attacks()

    from autograder.isolation import safety

    mode = safety.probe_mode()
    tmp = Path(tempfile.mkdtemp(prefix="grading-truth-", dir=base))
    env = {**os.environ, "TMPDIR": str(tmp / "tmp")}
    (tmp / "tmp").mkdir()
    if not os.environ.get("GRADING_TRUTH_KEEP"):      # set it to inspect OUT afterwards
        atexit.register(shutil.rmtree, tmp, True)
    submissions, out = tmp / "SUBMISSIONS", tmp / "OUT"
    canary_dir = tmp / "canary"
    canary_dir.mkdir()
    canary = canary_dir / "canary.txt"
    canary.write_text("the grader must not touch this file\n")
    marker = "PWNED" + hashlib.sha256(str(tmp).encode()).hexdigest()[:12]
    listener = _Listener()
    places = {"REPO": str(REPO_ROOT), "OUT": str(out), "SUBMISSIONS": str(submissions),
              "CANARY": str(canary), "MARK": marker, "PORT": str(listener.port),
              "SOLUTIONS": str(SOLUTIONS_DIR)}

    students: dict[str, object] = {}
    student_of: dict[str, str] = {}
    for n, pack in enumerate(wrong_packs()):
        sid = student_id("cat", n, "+".join(e.id for e in pack))[:120]
        students[sid] = pack
        student_of.update((e.id, sid) for e in pack)
        _write(student_notebook(assignments()[pack[0].function],
                                {e.function: e.source for e in pack}),
               submissions, sid, assignments()[pack[0].function])
    for n, pack in enumerate(correct_packs()):
        assignment = assignments()[pack[0].function]
        sid = student_id("cok", n, assignment)
        students[sid] = pack
        student_of.update((e.id, sid) for e in pack)
        _write(student_notebook(assignment, {e.function: e.source for e in pack}),
               submissions, sid, assignment)
    for n, attack in enumerate(attacks()):
        if attack.isolation and mode != "namespaces":
            continue                   # not contained by the fallback: never run it
        sid = student_id("atk", n, attack.key)
        students[sid], student_of[attack.key] = attack, sid
        for assignment, nb in attack.notebooks(places).items():
            _write(nb, submissions, sid, assignment)
    for sid, notebooks in ({} if only else trust_students()).items():
        students[sid] = sid
        for assignment, nb in notebooks.items():
            _write(nb, submissions, sid, assignment)
    kept = {assignments()[name] for name in exercises()}
    honest = {a: student_notebook(a) for a in sorted({p.parent.name for p in
                                                      SOLUTIONS_DIR.glob("*/*.ipynb")})
              if not only or a in kept}
    attacked = {a.assignment for a in attacks()}
    for assignment, nb in honest.items():         # the first hands in everything, the last
        _write(nb, submissions, HONEST[0], assignment)      # what the attacks are about
        if assignment in attacked:
            _write(nb, submissions, HONEST[1], assignment)
    alone = tmp / "ALONE"
    for assignment, nb in honest.items():
        _write(nb, alone, HONEST[0], assignment)

    before = _hash_tree(submissions)
    planted_before = _planted()
    protected = [p for p in _protected() if p.is_file()]
    gradebooks_before = _gradebooks([REPO_ROOT, tmp])
    # The honest student alone, in a separate run of the command at the same time.
    alone_log = open(tmp / "alone.log", "w+")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    t1 = time.monotonic()
    alone_proc = subprocess.Popen(
        _command(alone, tmp / "ALONE_OUT") if not only else [sys.executable, "-c", ""],
        cwd=REPO_ROOT, env=env, stdout=alone_log, stderr=subprocess.STDOUT)
    t0 = time.monotonic()
    proc = subprocess.run(_command(submissions, out), cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=900, env=env)
    seconds = time.monotonic() - t0
    listener.close()
    after = _hash_tree(submissions)
    missing_after_run = [str(p) for p in protected if not p.is_file()]
    new_gradebooks = sorted(_gradebooks([REPO_ROOT, tmp]) - gradebooks_before)
    canary_after = canary.read_text() if canary.is_file() else None
    canary_dir_after = sorted(p.name for p in canary_dir.iterdir())
    marker_hits = _scan_for_marker([REPO_ROOT, tmp], marker, skip=[out, submissions])
    marker_hits += [str(p) for p in _planted() - planted_before]

    alone_code = alone_proc.wait(timeout=900)
    alone_seconds = time.monotonic() - t1
    alone_log.close()
    alone_rows = _read_rows(tmp / "ALONE_OUT") if alone_code == 0 and not only else {}
    alone_records = _read_records(tmp / "ALONE_OUT") if alone_code == 0 and not only else {}
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = cpu.ru_utime + cpu.ru_stime - cpu_before

    rows = _read_rows(out) if (out / "grades.csv").is_file() else {}
    records = _read_records(out) if (out / "results.jsonl").is_file() else {}
    return Run(submissions, out, proc.returncode, seconds, proc.stdout, proc.stderr, rows,
               records, students, student_of, alone_rows, alone_records, alone_seconds,
               before, after, canary,
               "the grader must not touch this file\n", canary_after, canary_dir_after,
               marker, marker_hits, missing_after_run, new_gradebooks,
               _unexpected_outputs(out) if out.is_dir() else ["OUT missing"], listener.hits,
               mode, cpu_seconds)

