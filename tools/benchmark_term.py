"""A whole term timed: collect -> grade -> manual-template / manual-import -> gradebook
push / pull (formgrader's gradebook) -> export -> report.

Builds a Canvas-style "Download submissions" zip of N students from the course's own
notebooks (the students of ``tools/make_examples.py``: right answers, the typical
mistakes, notebooks handed in untouched, some notebooks not handed in, some uploads
late), then runs the real commands on it, each timed by wall clock, and prints a
Markdown table with the machine's cores and load average before and after:

    .venv/bin/python tools/benchmark_term.py --students 150 --jobs 2 \\
        --assignments 01_dot_products,02_softmax,03_simple_self_attention

The written answers are scored by a stand-in for the instructor (every row of
manual-template gets full points). The tests build their small classes with
:func:`canvas_download` (tests/autograder/test_term_walkthrough.py, tests/autograder/run/test_merge_identical.py).
This is a benchmark, not a test: run it by hand on the grading machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder.notebook import stored as notebook_format  # noqa: E402
import make_examples as ex  # noqa: E402

#: What the students of a generated class hand in, in turn: the solution, the two
#: typical mistakes of make_examples, the released notebook untouched, and the solution
#: with the last assignment not handed in.
KINDS = ("perfect", "mistake_1", "mistake_2", "unanswered", "partial")


def notebook_texts(assignments: list[str]) -> dict[str, dict[str, str]]:
    """``{kind: {assignment: notebook text}}`` for every kind of :data:`KINDS` (the
    ``partial`` student has no notebook of the last assignment)."""
    texts: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
    for assignment in assignments:
        [solution_path] = sorted((SOLUTIONS_DIR / assignment).glob("*.ipynb"))
        solution = notebook_format.read(solution_path)
        released = notebook_format.read(NOTEBOOKS_DIR / assignment / solution_path.name)
        perfect = ex.solved(released, solution)
        known = {f: ex.mistakes(f) for f in ex.answer_ids(solution)}
        known = [f for f in known if known[f]]
        texts["perfect"][assignment] = notebook_format.dumps(perfect)
        texts["unanswered"][assignment] = notebook_format.dumps(released)
        for variant, kind in enumerate(("mistake_1", "mistake_2")):
            nb = perfect
            if known:
                function = known[-1]
                wrong = ex.mistakes(function)
                _, source = wrong[min(variant, len(wrong) - 1)]
                nb = ex.with_answer(perfect, function, source)
            texts[kind][assignment] = notebook_format.dumps(nb)
        if assignment != assignments[-1]:
            texts["partial"][assignment] = texts["perfect"][assignment]
    return texts


def student(i: int, first_id: int = 4000) -> tuple[str, str, str]:
    """``(Canvas login name, Canvas user id, kind)`` of the i-th generated student."""
    return f"student{i:03d}", str(first_id + i), KINDS[i % len(KINDS)]


def canvas_download(path: Path, n_students: int, assignments: list[str], deadline: datetime,
                    late_every: int = 7, texts: dict | None = None,
                    first_id: int = 4000) -> Path:
    """Write a Canvas "Download submissions" zip of ``n_students`` to ``path``: member
    ``<login>[_LATE]_<user id>_<submission id>_<notebook>.ipynb``, every ``late_every``-th
    student's uploads marked ``_LATE``. As in Canvas's own zips, every entry bears the
    download's time (two days after ``deadline``), never an upload time (docs/grading.md
    cites content_zipper.rb and rubyzip; tests/lms/canvas.py builds them the same way)."""
    texts = texts or notebook_texts(assignments)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(n_students):
            login, uid, kind = student(i, first_id)
            late = late_every and i % late_every == late_every - 1
            when = deadline + timedelta(days=2)          # the download's time, for all
            for k, assignment in enumerate(assignments):
                text = texts[kind].get(assignment)
                if text is None:
                    continue
                name = (f"{login}{'_LATE' if late else ''}_{uid}_{900000 + 10 * i + k}_"
                        f"{assignment}.ipynb")
                info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, text)
    return path


def fill_scores(path: Path, fraction: float = 1.0) -> int:
    """The instructor's part of manual-template: ``points`` = ``fraction`` of the maximum
    in every row, with a comment. Returns the rows filled."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    for row in rows:
        row["points"] = f"{float(row['max_points']) * fraction:g}"
        row["comment"] = "read and scored"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def _children_cpu() -> float:
    """CPU seconds of this process's finished (reaped) descendants: every process of a
    step counts, so the figure hardly depends on what else the machine is doing."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--assignments", default="01_dot_products,02_softmax,"
                        "03_simple_self_attention",
                        help="comma-separated assignments handed in (default: %(default)s)")
    parser.add_argument("--no-formgrader", action="store_true",
                        help="skip timing `gradebook push` and `gradebook pull`")
    parser.add_argument("--keep", help="a folder to keep the term's files in (default: a "
                        "temporary folder, removed)")
    args = parser.parse_args()
    assignments = [a for a in args.assignments.split(",") if a]
    deadline = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
    with tempfile.TemporaryDirectory(prefix="term-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TMPDIR=str(work))
        steps: list[tuple[str, float, float | None, str]] = []

        def timed(label: str, *command: str) -> None:
            load, cpu = _load(), _children_cpu()
            start = time.perf_counter()
            result = subprocess.run([sys.executable, "-m", "autograder", *command], cwd=work,
                                    env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if result.returncode != 0:
                print(result.stdout, result.stderr, file=sys.stderr)
                raise SystemExit(f"{label} failed with status {result.returncode}")
            cpu = _children_cpu() - cpu
            steps.append((label, seconds, cpu, load))
            print(f"{label}: {seconds:.1f} s, CPU {cpu:.1f} s (load before: {load})",
                  file=sys.stderr)

        start = time.perf_counter()
        download = canvas_download(work / "download.zip", args.students, assignments,
                                   deadline)
        steps.append(("build the Canvas zip (not a course step)",
                      time.perf_counter() - start, None, _load()))
        timed("collect", "collect", str(download), "--out", "submissions")
        timed(f"grade --jobs {args.jobs}", "grade", "submissions", "--out", "grading-output",
              "--jobs", str(args.jobs))
        timed("manual-template", "manual-template", "grading-output", "--dest", "scores.csv")
        filled = fill_scores(work / "scores.csv")
        timed(f"manual-import ({filled} rows)", "manual-import", "grading-output",
              "scores.csv")
        if not args.no_formgrader:  # the gradebook formgrader shows (scores come via CSV here)
            timed("gradebook push (formgrader)", "gradebook", "push", "grading-output")
            timed("gradebook pull (formgrader)", "gradebook", "pull", "grading-output")
        timed("export canvas (late policy)", "export", "grading-output", "--format", "canvas",
              "--roster", "submissions/_roster.csv",
              "--deadline", deadline.strftime("%Y-%m-%dT%H:%M"), "--late-policy", "10:50")
        timed("report", "report", "grading-output")
        notebooks = sum(1 for _ in (work / "submissions").glob("*/*/*.ipynb"))
    print(f"\n{args.students} students, {notebooks} notebooks handed in "
          f"({', '.join(assignments)}); {os.cpu_count()} cores ({_cpu()}); "
          f"load average after: {_load()}\n")
    print("| step | wall s | CPU s | load average before (1, 5, 15 min) |")
    print("|---|---|---|---|")
    for label, seconds, cpu, load in steps:
        print(f"| {label} | {seconds:.1f} | {'' if cpu is None else f'{cpu:.1f}'} | {load} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
