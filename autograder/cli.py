"""The instructor's command line: ``python -m autograder COMMAND ...`` (see ``--help``).

Exit status: 0 when the command did its job (for grade: every submission was graded,
whatever the scores), 2 when it could not run (e.g. a folder is missing, or student code
would run as root: see AUTOGRADER_ALLOW_ROOT_FALLBACK in docs/grading.md), 1 when the
grader itself failed on some notebook (listed with status grader_error).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR

#: Exit status when the grader itself could not run.
CANNOT_RUN = 2
#: Exit status of a run stopped by SIGTERM or SIGINT (what was graded is kept).
INTERRUPTED = 130


def _show(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def cmd_release(args: argparse.Namespace) -> int:
    from autograder.release.notebooks import release

    if args.bundle:
        from autograder.release.bundle import BundleError, build

        try:
            zip_path = build(Path(args.bundle), args.assignment, args.reveal or [])
        except BundleError as exc:
            print(f"release: {exc}", file=sys.stderr)
            return 2
        print(f"release: wrote the student bundle {_show(Path(args.bundle))}/ and {_show(zip_path)}")
        return 0
    if args.reveal:
        print("release: --reveal goes with --bundle", file=sys.stderr)
        return 2

    changed = release(Path(args.dest), args.assignment or None, sync=True)
    for path in changed:
        print(f"updated {_show(path)}")
    print(f"release: {len(changed)} file(s) changed in {args.dest}")
    return 0


def cmd_sync_exercises(args: argparse.Namespace) -> int:
    from autograder.release.notebooks import sync_exercises

    stale = sync_exercises(args.assignment or None, write=not args.check)
    for path, name in stale:
        print(f"{'stale' if args.check else 'updated'} {_show(path)}: exercise {name}")
    if args.check:
        print(f"sync-exercises: {len(stale)} exercise cell(s) differ from their modules")
        return 1 if stale else 0
    print(f"sync-exercises: {len(stale)} exercise cell(s) rewritten")
    return 0


#: The course repository's tool that writes the example class (it reads the test suite's
#: catalogue of wrong answers, so it is no part of the installed package).
MAKE_EXAMPLES = REPO_ROOT / "tools" / "make_examples.py"


def _make_examples(*args: str) -> tuple[int, list[str]]:
    """Run tools/make_examples.py with ``args``: (exit status, the files it says changed)."""
    import subprocess

    if not MAKE_EXAMPLES.is_file():
        print(f"make-examples: {_show(MAKE_EXAMPLES)} is missing: the example class is made "
              "from a clone of the course repository", file=sys.stderr)
        return 2, []
    done = subprocess.run([sys.executable, str(MAKE_EXAMPLES), *args], cwd=REPO_ROOT,
                          stdout=subprocess.PIPE, text=True)
    lines = done.stdout.splitlines()
    return done.returncode, [line[len("updated "):] for line in lines
                             if line.startswith("updated ")]


def cmd_regenerate(args: argparse.Namespace) -> int:
    """Everything derived from the exercise modules and solutions/, in one step."""
    from autograder.notebook import stored
    from autograder.release import tables
    from autograder.release.notebooks import release

    changed = [_show(p) for p in sorted(SOLUTIONS_DIR.rglob("*.ipynb"))
               if ".ipynb_checkpoints" not in p.parts and stored.write(stored.read(p), p)]
    changed += [_show(p) for p in release(NOTEBOOKS_DIR, sync=True)]   # headers, notebooks/
    status, examples = _make_examples("--expected-only", "--dest",
                                      str(REPO_ROOT / "tests" / "fixtures" / "examples"))
    if status:
        print("regenerate: the example class's expectations could not be written",
              file=sys.stderr)
        return status
    changed += examples
    changed += [_show(path) for path, write in ((tables.README, tables.write_readme),
                                                (tables.CONTRACT, tables.write_contract))
                if write()]
    for path in changed:
        print(f"updated {path}")
    print(f"regenerate: {len(changed)} file(s) changed")
    return 0


def cmd_normalize(args: argparse.Namespace) -> int:
    from autograder.notebook import stored as notebook_format  # nbformat: about 1.5 s of CPU to import

    paths = [Path(p) for p in args.paths] or sorted(SOLUTIONS_DIR.rglob("*.ipynb"))
    n = 0
    for path in paths:
        if ".ipynb_checkpoints" in path.parts:
            continue
        if notebook_format.write(notebook_format.read(path), path):
            print(f"normalized {path}")
            n += 1
    print(f"normalize: {n} notebook(s) changed")
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    from autograder.intake.collect import REPORT, collect
    from autograder.safe_text import terminal

    from autograder.intake.archives import ZipRefused

    try:
        from autograder.intake.reports import read_ids

        from autograder.intake.sources import SourceError, read_uploads, unknown_times_note

        known = read_ids(Path(args.roster)) if args.roster else None
        uploads = read_uploads(Path(args.times), args.times_zone) if args.times else None
        outcomes = collect(Path(args.download), Path(args.out), keep=args.keep, known=known,
                           uploads=uploads)
    except ZipRefused as exc:
        print(f"collect: error: the download was not unpacked: {exc}", file=sys.stderr)
        return CANNOT_RUN
    except SourceError as exc:
        print(f"collect: error: --times: {exc} (nothing was collected)", file=sys.stderr)
        return CANNOT_RUN
    placed = [o for o in outcomes if o.status in ("placed", "already there")]
    unmatched = [o for o in outcomes if o.status == "unmatched"]
    skipped = [o for o in outcomes if o.status == "skipped"]
    students = {o.where.split("/")[0] for o in placed}
    print(f"collect: {len(placed)} notebook(s) of {len(students)} student(s) in {args.out}")
    for group, what in ((unmatched, f"not matched (copied to {args.out}/_unmatched/)"),
                        (skipped, "not copied")):
        if group:
            print(f"{len(group)} file(s) {what}:")
            for o in group:       # names from the download: escaped for the terminal
                print(f"  {terminal(o.origin)}: {terminal(o.reason)}")
    note = unknown_times_note(Path(args.out), bool(args.times))
    if note:
        print(f"collect: {note}", file=sys.stderr)
    print(f"details: {Path(args.out) / REPORT}")
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from autograder.run.pool import Limits, parse_shard, run
    from autograder.results.records import summary_table

    shard = parse_shard(args.shard) if args.shard else None
    limits = Limits(cell_timeout=args.cell_timeout, notebook_timeout=args.timeout,
                    memory_mb=args.memory_mb, hidden_feedback=args.hidden_feedback,
                    credit=args.credit)
    from autograder.engine import UnsafeToGrade
    from autograder.run.pool import Interrupted

    try:
        records = run(Path(args.submissions), Path(args.out), jobs=args.jobs, limits=limits,
                      shard=shard, resume=args.resume, only=args.student,
                      assignments=[a.strip() for a in args.assignments.split(",") if a.strip()]
                      if args.assignments else None, secret_file=args.secret_file)
    except UnsafeToGrade as exc:
        print(f"grade: error: {exc}", file=sys.stderr)
        return CANNOT_RUN
    except Interrupted as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return INTERRUPTED
    if not records:
        where = f" in shard {args.shard}" if shard else ""
        top = [p for p in Path(args.submissions).iterdir() if p.is_file()
               and p.suffix.lower() in (".zip", ".ipynb")] if not shard else []
        if top:       # an LMS download handed to grade as it is
            print(f"grade: error: no <student>/<assignment>/<notebook>.ipynb in "
                  f"{args.submissions}, but it holds {len(top)} notebook or zip file(s) "
                  f"at its top: an LMS download? Run `python -m autograder collect "
                  f"{args.submissions} --out submissions` first, then grade that.",
                  file=sys.stderr)
            return CANNOT_RUN
        print(f"grade: no students found{where} in {args.submissions}")
        return 0
    print(summary_table(records))
    print(f"\nwrote {Path(args.out) / 'grades.csv'}, summary.csv and feedback/")
    errors = [r for r in records if r["status"] == "grader_error"]
    if errors:
        print(f"grade: the grader failed on {len(errors)} notebook(s); see summary.csv",
              file=sys.stderr)
        return 1
    return 0


def cmd_manual_template(args: argparse.Namespace) -> int:
    from autograder.results.manual import template

    n = template(Path(args.out), Path(args.dest))
    print(f"manual-template: {n} written answer(s) to score in {args.dest} (fill `points`, "
          f"then run manual-import)")
    return 0


def cmd_manual_import(args: argparse.Namespace) -> int:
    from autograder.results.manual import BadScores, import_scores

    try:
        n = import_scores(Path(args.out), Path(args.scores))
    except BadScores as exc:
        print(f"manual-import: error: {exc} (nothing was applied)", file=sys.stderr)
        return CANNOT_RUN
    print(f"manual-import: {n} score(s) taken in; {args.out}/summary.csv, the exports and "
          f"the feedback pages count them")
    return 0


def cmd_gradebook(args: argparse.Namespace) -> int:
    from autograder.results import gradebook
    from autograder.safe_text import terminal

    out = Path(args.out)
    try:
        if args.action == "push":
            from autograder.results import late
            try:
                deadlines = late.parse_deadlines(args.deadline)
            except ValueError as exc:
                raise gradebook.GradebookError(str(exc)) from None
            done = gradebook.push(out, Path(args.solutions), deadlines=deadlines)
        elif args.action == "pull":
            done = gradebook.pull(out)
        else:
            return gradebook.serve(out, port=args.port, ip=args.ip,
                                   open_browser=not args.no_browser, extra=args.jupyter_option)
    except gradebook.GradebookError as exc:
        print(f"gradebook {args.action}: error: {exc} (nothing was changed)", file=sys.stderr)
        return CANNOT_RUN
    for note in done.notes:
        print(f"  note: {terminal(note)}")
    if args.action == "push":
        print(f"gradebook push: {done.notebooks} graded notebook(s) in {done.folder}/gradebook.db, "
              f"{done.to_grade} written answer(s) to grade; start formgrader with "
              f"`python -m autograder gradebook serve {out}`, then run `gradebook pull {out}`")
    else:
        print(f"gradebook pull: {done.taken} score(s) taken from formgrader; {out}/summary.csv, "
              f"the exports and the feedback pages count them")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from autograder.results.records import summary_table
    from autograder.run.merge import merge

    from autograder.run.merge import MergeConflict

    try:
        records = merge([Path(p) for p in args.outputs], Path(args.out),
                        allow_mixed=args.allow_mixed)
    except MergeConflict as exc:
        print(f"merge: error: {exc}", file=sys.stderr)
        return CANNOT_RUN
    print(summary_table(records))
    print(f"\nmerged {len(args.outputs)} output(s) into {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from autograder.results.report import report

    csv_path, png_path = report(Path(args.out), Path(args.dest) if args.dest else None)
    print(f"wrote {csv_path} and {png_path}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from autograder.intake.sources import late_sources
    from autograder.results.export import export, parse_rename, parse_weights

    roster = Path(args.roster) if args.roster else None
    assignments = [a.strip() for a in args.assignments.split(",") if a.strip()] \
        if args.assignments else None
    try:
        from autograder.results import late

        policy = late.Policy.parse(args.late_policy).assuming(args.assume_late_days)
        deadlines = late.parse_deadlines(args.deadline)
        from autograder.results.export import parse_homework

        extensions, anonymous = late_sources(*_paths(args.extensions, args.anonymous_map))
        paths = export(Path(args.out), args.format, Path(args.dest) if args.dest else None,
                       roster, parse_rename(args.rename), assignments,
                       parse_weights(args.weights), deadlines=deadlines,
                       policy=policy, homeworks=parse_homework(args.homework),
                       extensions=extensions, anonymous=anonymous)
    except ValueError as exc:
        from autograder.safe_text import terminal

        print(f"export: error: {terminal(str(exc))} (nothing was written)", file=sys.stderr)
        return CANNOT_RUN
    for path in paths:
        print(f"wrote {path}")
    from autograder.results.records import read_manual, read_records, stale_scores
    from autograder.safe_text import terminal

    stale = stale_scores(read_records(Path(args.out)), read_manual(Path(args.out)))
    if stale:             # they count 0 in what was written: say so, every time
        print(f"export: warning: {len(stale)} written answer(s) changed since they were "
              f"graded by hand; they count 0 until graded again (manual-template, or "
              f"gradebook push):", file=sys.stderr)
        for line in stale:
            print(f"  {terminal(line)}", file=sys.stderr)
    return 0


def _late_source_options(p: argparse.ArgumentParser) -> None:
    """export's and feedback-package's options for what the LMS knows of lateness."""
    p.add_argument("--extensions", metavar="CSV",
                   help="per-student deadlines: student_id,assignment,deadline (an assignment "
                        "or a --homework name); the late policy uses them")
    p.add_argument("--assume-late-days", type=int, metavar="N",
                   help="a notebook the LMS flagged late without an upload time (a Canvas "
                        "download collected without --times) counts N days late; without "
                        "it, a late policy refuses such notebooks")
    p.add_argument("--anonymous-map", metavar="FILE",
                   help="anonymous Canvas grading: anon ids to Canvas user ids (Canvas's "
                        "Submissions API JSON, or a CSV anonymous_id,user_id)")


def _paths(*texts: str | None) -> list[Path | None]:
    return [Path(t) if t else None for t in texts]


def cmd_feedback_package(args: argparse.Namespace) -> int:
    from autograder.intake.sources import late_sources
    from autograder.results import late
    from autograder.results.export import parse_homework, read_roster
    from autograder.results.package import package
    from autograder.safe_text import terminal

    try:
        stored = None
        extensions, anonymous = late_sources(*_paths(args.extensions, args.anonymous_map))
        if args.deadline or args.late_policy or args.homework or args.extensions:
            stored = late.Stored(late.parse_deadlines(args.deadline),
                                 late.Policy.parse(args.late_policy).assuming(
                                     args.assume_late_days),
                                 parse_homework(args.homework), extensions)
        packed, skipped = package(Path(args.out), args.lms, Path(args.dest),
                                  read_roster(Path(args.roster)) if args.roster else None, stored,
                                  anonymous)
    except ValueError as exc:
        print(f"feedback-package: error: {terminal(str(exc))}", file=sys.stderr)
        return CANNOT_RUN
    for line in skipped:
        print(f"  left out: {terminal(line)}")
    print(f"feedback-package: the feedback of {packed} student(s) in {args.dest} "
          f"({args.lms}); {len(skipped)} left out")
    return 0


def cmd_make_examples(args: argparse.Namespace) -> int:
    """tools/make_examples.py, as before it moved there."""
    status, changed = _make_examples("--dest", str(Path(args.dest).resolve()),
                                     *(["--expected-only"] if args.expected_only else []))
    for path in changed:
        print(f"updated {path}")
    if not status:
        print(f"make-examples: {len(changed)} file(s) changed in {_show(Path(args.dest))}")
    return status


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    from autograder.run.pool import default_jobs
    # the example class's folder, as in tools/make_examples.py
    EXAMPLES_DIR = REPO_ROOT / "grading-output" / "example-class"

    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("release", help="regenerate the student notebooks from solutions/")
    p.add_argument("assignment", nargs="*", help="assignments to release (default: all)")
    p.add_argument("--dest", default=str(NOTEBOOKS_DIR), help="where to write (default: notebooks/)")
    p.add_argument("--bundle", metavar="OUT", help="write the student bundle for graded homework "
                   "(the notebooks, helpers without the answers of any assignment not revealed, "
                   "stored visible checks, a README) as OUT/ and OUT.zip")
    p.add_argument("--reveal", nargs="+", metavar="ASSIGNMENT",
                   help="with --bundle: ship the course's answers to these (earlier) assignments")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("sync-exercises", help="rewrite the exercise cells of solutions/ "
                       "(heading, header, hints) from helpers/exercises (release does it too)")
    p.add_argument("assignment", nargs="*", help="assignments to sync (default: all)")
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 when a cell differs from its module")
    p.set_defaults(func=cmd_sync_exercises)

    p = sub.add_parser("regenerate", help="after adding or changing an exercise: rewrite "
                       "everything derived (solutions' exercise cells and stored form, notebooks/, "
                       "the example class's expectations, the README's course table)")
    p.set_defaults(func=cmd_regenerate)

    p = sub.add_parser("normalize", help="strip outputs and volatile metadata from notebooks")
    p.add_argument("paths", nargs="*", help="notebooks (default: every notebook in solutions/)")
    p.set_defaults(func=cmd_normalize)

    p = sub.add_parser("collect", help="turn an LMS download into the submissions layout")
    p.add_argument("download", help="a zip file or folder downloaded from Canvas, Moodle or Gradescope")
    p.add_argument("--out", required=True, help="the submissions folder to fill")
    p.add_argument("--keep", choices=("latest", "first"), default="latest",
                   help="which of two uploads of a notebook is graded (default: %(default)s)")
    p.add_argument("--roster", metavar="CSV",
                   help="the class: a CSV with a student_id column (as export's --roster); "
                        "a file of a student not in it is not placed (_unmatched, with the "
                        "reason), and a Canvas name is read with the ids it holds")
    p.add_argument("--times", metavar="FILE",
                   help="the LMS's record of upload times (Canvas and Moodle downloads carry "
                        "none): Canvas's Submissions API JSON or Moodle's grading worksheet "
                        "CSV. See docs/grading.md")
    p.add_argument("--times-zone", metavar="ZONE",
                   help="the time zone of a Moodle worksheet's times (that of the user who "
                        "downloaded it), e.g. Europe/Berlin")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("grade", help="grade every submission",
                       description="Grade SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb into OUT"
                                   " (grades.csv, summary.csv, feedback/). SUBMISSIONS is never written.")
    p.add_argument("submissions", help="folder of <student>/<assignment>/<notebook>.ipynb")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--jobs", type=_positive(int), default=default_jobs(),
                   help="students graded at once (default: the number of cores, %(default)s)")
    p.add_argument("--timeout", type=_positive(float), default=120.0,
                   help="time limit per notebook in seconds (default: %(default)s)")
    p.add_argument("--cell-timeout", type=_positive(float), default=30.0,
                   help="time limit per cell in seconds (default: %(default)s)")
    p.add_argument("--memory-mb", type=_positive(int), default=2048,
                   help="memory cap of a notebook's process in MB (default: %(default)s)")
    p.add_argument("--shard", metavar="I/N",
                   help="grade only the I-th of N disjoint parts of the class (1 <= I <= N)")
    p.add_argument("--resume", action="store_true",
                   help="continue a run that was stopped (SIGTERM, Ctrl-C): grade only the "
                        "notebooks OUT/results.partial.jsonl does not hold yet")
    p.add_argument("--hidden-feedback", choices=("full", "brief"), default="brief",
                   help="what a student's feedback says of a failing hidden case: only that "
                        "a hidden case of a group failed, with the likely mistake (brief, "
                        "the default), or its inputs and expected values too (full)")
    p.add_argument("--assignments", metavar="A,B,...",
                   help="the assignments of this homework: a student who handed in nothing "
                        "for one is 'missing' there (default: every notebook some student "
                        "handed in; a course notebook nobody handed in is not graded)")
    p.add_argument("--credit", choices=("all", "cases"), default="all",
                   help="points of a test cell: all or nothing (all, the default), or the "
                        "fraction of its case groups passed (cases); tampering or a missing "
                        "answer still scores 0")
    p.add_argument("--secret-file", metavar="FILE",
                   help="the instructor's grading secret, from which each student's hidden "
                        "inputs are drawn (default: $AUTOGRADER_SECRET_FILE, else "
                        "OUT/grading-secret.key; made, mode 0600, when missing). Give every "
                        "shard of a class the same file")
    p.add_argument("--student", nargs="+", action="extend", metavar="ID",
                   help="regrade only these students into an existing OUT (the other "
                        "students' grades there are kept)")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("manual-template", help="a CSV of the written answers to score by hand")
    p.add_argument("out", help="a grading output folder")
    p.add_argument("--dest", required=True, help="the CSV to write")
    p.set_defaults(func=cmd_manual_template)

    p = sub.add_parser("manual-import", help="take in hand-given scores of written answers")
    p.add_argument("out", help="a grading output folder")
    p.add_argument("scores", help="the CSV of manual-template, filled in")
    p.set_defaults(func=cmd_manual_import)

    p = sub.add_parser("gradebook", help="written answers graded in nbgrader's formgrader",
                       description="push: fill OUT/nbgrader/gradebook.db with the graded "
                       "submissions (nothing is run); serve: start formgrader on it (no "
                       "kernels, no terminals); pull: take the scores and comments given "
                       "there into OUT (they survive later grade runs). See docs/grading.md.")
    p.add_argument("action", choices=("push", "serve", "pull"))
    p.add_argument("out", help="a grading output folder")
    p.add_argument("--solutions", default=str(SOLUTIONS_DIR),
                   help="push: the solution notebooks that graded OUT (default: solutions/)")
    p.add_argument("--deadline", action="append", default=[], metavar="[ASSIGNMENT=]WHEN",
                   help="push: the due date formgrader shows, as export's --deadline "
                        "(repeatable; default: the deadlines the last `export` stored)")
    p.add_argument("--port", type=_positive(int), default=8899,
                   help="serve: the port (default: %(default)s)")
    p.add_argument("--ip", default="127.0.0.1", help="serve: the address (default: %(default)s)")
    p.add_argument("--no-browser", action="store_true", help="serve: do not open a browser")
    p.add_argument("--jupyter-option", action="append", default=[], metavar="OPTION",
                   help="serve: one more option for the Jupyter server, e.g. "
                        "--jupyter-option=--IdentityProvider.token=... (repeatable)")
    p.set_defaults(func=cmd_gradebook)

    p = sub.add_parser("merge", help="join the outputs of several sharded grade runs")
    p.add_argument("outputs", nargs="+", help="output folders of `grade --shard I/N`")
    p.add_argument("--out", required=True, help="merged output folder")
    p.add_argument("--allow-mixed", action="store_true",
                   help="merge outputs graded with different solutions/ or grader versions")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("report", help="per-exercise item analysis (CSV and PNG chart)")
    p.add_argument("out", help="a grading output folder")
    p.add_argument("--dest", help="where to write (default: the output folder)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="grades as a CSV for an LMS gradebook")
    p.add_argument("out", help="a grading output folder")
    p.add_argument("--format", choices=("canvas", "gradescope", "moodle"), required=True)
    p.add_argument("--dest", help="where to write (default: the output folder)")
    p.add_argument("--roster", help="CSV with student_id and name/email/sid/sis_user_id/"
                                    "sis_login_id/section (collect writes _roster.csv)")
    p.add_argument("--rename", action="append", default=[], metavar="ASSIGNMENT=NAME",
                   help="column name for an assignment (repeatable)")
    p.add_argument("--assignments", metavar="A,B,...",
                   help="export only these assignments, in this order (default: all graded)")
    p.add_argument("--homework", action="append", default=[], metavar="NAME=A,B,...",
                   help="one column (file) NAME for these assignments, their points summed "
                        "and the late policy applied to the homework as a whole (as late as "
                        "its latest notebook); repeatable; only the homeworks are exported")
    p.add_argument("--deadline", action="append", default=[], metavar="[ASSIGNMENT=]WHEN",
                   help="the deadline (ISO 8601, UTC unless a zone is given) of every "
                        "assignment, or of one (repeat the option)")
    p.add_argument("--late-policy", metavar="PERCENT[:CAP]", default="none",
                   help="points off per day late, at most CAP percent; none (default) or "
                        "zero (late work scores 0). See docs/grading.md")
    p.add_argument("--weights", metavar="A=W,...",
                   help="multiply an assignment's points and maximum by W (default 1)")
    _late_source_options(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("feedback-package", help="the students' feedback pages as the zip an "
                       "LMS takes back (Moodle's feedback files, Canvas's comment re-upload)")
    p.add_argument("out", help="a grading output folder")
    p.add_argument("--lms", choices=("canvas", "moodle", "gradescope"), required=True)
    p.add_argument("--dest", required=True, help="the zip file to write")
    p.add_argument("--roster", help="names for the files (collect writes _roster.csv)")
    p.add_argument("--deadline", action="append", default=[], metavar="[ASSIGNMENT=]WHEN",
                   help="as for export (default: the late policy export stored in OUT)")
    p.add_argument("--late-policy", metavar="PERCENT[:CAP]", help="as for export")
    p.add_argument("--homework", action="append", default=[], metavar="NAME=A,B,...",
                   help="as for export: the late policy per homework")
    _late_source_options(p)
    p.set_defaults(func=cmd_feedback_package)

    p = sub.add_parser("make-examples", help="regenerate the example submissions")
    p.add_argument("--dest", default=str(EXAMPLES_DIR),
                   help="default: grading-output/example-class/")
    p.add_argument("--expected-only", action="store_true",
                   help="write only EXPECTED.json and EXPECTED.md (make examples: into "
                        "tests/fixtures/examples/)")
    p.set_defaults(func=cmd_make_examples)
    from autograder.lti import commands as lti  # the LTI tool: lti ..., roster --lti
    from autograder.ondemand import gradescope  # grading on submit: each its own parser
    from autograder.ondemand.service import app as service
    for add in (gradescope.add_parser, service.add_parser, lti.add_parsers):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        print(f"{args.command}: error: {exc}", file=sys.stderr)
        return CANNOT_RUN
    except ImportError as exc:  # e.g. the grading engine or a dependency is broken
        print(f"{args.command}: error: cannot load the grader ({exc})", file=sys.stderr)
        return CANNOT_RUN


if __name__ == "__main__":
    sys.exit(main())
