"""Turn an LMS download into the submissions layout ``<student_id>/<assignment>/<notebook>.ipynb``.

``python -m autograder collect DOWNLOAD --out SUBMISSIONS`` reads a zip file or a folder
and recognises how these name their files (tests/lms/ builds each from the LMS's source,
cited there and in docs/grading.md):

* Canvas ("Download submissions", ``lib/content_zipper.rb``):
  ``<name>[_LATE]_<user id>_<attachment id>_<file name>``, ``<name>`` the sortable name
  lower-cased with non-word characters removed; with anonymous grading
  ``[LATE_]anon_<anonymous id>_<attachment id>_<file name>``. A file re-uploaded under
  the same name is ``-1``, ``-2``. Student id: the user id, or ``anon_<anonymous id>``.
  Late: Canvas's ``LATE`` mark.
* Moodle ("Download all submissions", ``mod/assign/classes/downloader.php``): a folder
  ``<Full Name>_<participant id>_assignsubmission_file`` (``..._file_`` before Moodle
  4.1) or a file prefix ``<Full Name>_<participant id>_assignsubmission_file_``. Student
  id: the participant id.
* Gradescope ("Export submissions"): a ``submission_metadata.yml`` listing each
  submission's submitters, and next to it one folder per key (``submission_<id>/``). Student id: the
  submitter's SID, else the e-mail, else ``submission_<id>``; a group submission is
  copied to every member. Upload time: its ``created_at``.
* Already laid out: ``<student>/<assignment>/<notebook>.ipynb`` or ``<student>/<notebook>.ipynb``.
* Students' clones of the homework bundle's repository (the Git route of
  docs/homework.md): ``<student>/notebooks/<assignment>/<notebook>.ipynb``, the folder
  holding ``.git``. Student id: the clone's folder name, for everything inside it:
  files elsewhere under its ``notebooks/`` (``notebooks/bob/...``, a Moodle or Canvas
  name, a clone inside the clone) are not placed, and nothing in a clone names another
  student. Its ``.git`` and the course's own files are not copied, and git is never run.
  The upload time of such a file is the time it was cloned: clone at the deadline.

The outermost folder that names a student (a Gradescope or Moodle folder, a clone) owns
every file under it. Upload times: Canvas and Moodle zips stamp every entry with the
time of the download (rubyzip's ``Entry`` defaults to ``DOSTime.now``; ZipStream's file
options to ``new DateTime()``), so their entry times are never taken as upload times;
``_submissions.csv`` records the download's time instead, and the later of two
downloads holds the later file. When every file of a download has the same time,
collect says so (stderr and ``_collect_report.csv``) and does not use it as an upload
time in any layout.

A zip inside a submission (a student who zipped their notebooks) is opened and its
notebooks are matched as files of that student (its other files are kept in
``_unmatched/<zip name>.contents/``). Files under ``.ipynb_checkpoints/`` (Jupyter's
autosaves) are never matched. The course notebook a file is matched to
is found by its name: the same name as a notebook of ``solutions/``, a name that contains
it (``01_dot_products_jane.ipynb``), or the same leading number (``01_answers.ipynb``)
when only one notebook has that number.

No file is ever lost: everything that is not placed in the layout is copied to
``SUBMISSIONS/_unmatched/`` (the grader skips folders starting with ``_``), and
``SUBMISSIONS/_collect_report.csv`` says, for every file of the download, where it went
and why (``_collect_reports/`` keeps one such report per download). When one student has
two files for the same notebook, the later upload is placed (upload time, then the higher
``-N`` suffix, then the LMS's ids in the name, compared as numbers) and the other goes to
``_unmatched``; ``--keep first`` places the earliest instead. Across downloads collected
into the same SUBMISSIONS the same rule holds (a late resubmission in a second download
replaces the first file, which moves to ``_unmatched/replaced/``); a different file of
unknown upload time is never overwritten. ``SUBMISSIONS/_roster.csv`` records the names,
e-mails and ids the download gave (a value already there is kept);
``SUBMISSIONS/_submissions.csv`` the upload time, the download's time and the LMS's late
flag of every placed notebook (:mod:`autograder.results.late`).

One upload, never the class: any error reading one file of the download (a student's zip
that is damaged, encrypted, or cannot be extracted, a member the file system refuses)
refuses that file alone, with the reason (:mod:`autograder.intake.archives`). A Canvas
name that reads more than one way is not placed; with ``--roster`` every student id is
checked against the roster (:func:`autograder.lms.canvas_name`).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from autograder import SOLUTIONS_DIR
from autograder.notebook import source as notebook_source
from autograder import lms, safe_text
from autograder.intake import archives, gradescope, reports, sources  # noqa: F401
from autograder.intake.reports import REPORT, REPORTS, ROSTER  # noqa: F401 (its files)
from autograder.results import late

UNMATCHED = "_unmatched"
LINK = "a symbolic link: not followed, not copied"
REFUSED = "refused: "
NOT_KNOWN = "student id {ids} is not in the roster (--roster)"
NOT_UNPACKED = "not unpacked: "
UNPACKED = "a zip file: its notebooks were taken out and matched"
NESTED = "a zip inside a student's zip: not unpacked (one level is opened)"
KEEP = ("latest", "first")
CHECKPOINTS = ".ipynb_checkpoints"
CHECKPOINT = ("a Jupyter checkpoint (under .ipynb_checkpoints/): Jupyter's autosave, "
              "not the notebook handed in")
MACOS_METADATA = "macOS archive metadata (__MACOSX/ or a ._ file), not a submission"


def not_a_submission(parts: tuple[str, ...]) -> str | None:
    """Why a file at path ``parts`` is never a student's notebook (macOS's AppleDouble
    copies, which carry the notebook's name; Jupyter's checkpoints), else None."""
    if "__MACOSX" in parts or (parts and parts[-1].startswith("._")):
        return MACOS_METADATA
    return CHECKPOINT if CHECKPOINTS in parts else None

RESUBMISSION = re.compile(r"(?:-(\d+)| ?\((\d+)\))$")
#: Characters kept in a student id (the id becomes a folder name).
SAFE_ID = re.compile(r"[^A-Za-z0-9._@+-]")


@dataclasses.dataclass
class Candidate:
    """One file of the download, and what was made of it."""

    origin: str                 # where it was in the download (for the report)
    path: Path                  # the extracted file
    filename: str               # the file's own name, LMS prefix removed
    student_ids: list[str] = dataclasses.field(default_factory=list)
    assignment_hint: str | None = None
    lms: str = ""
    mtime: float = 0.0
    target: tuple[str, str] | None = None   # (assignment, notebook)
    how: str = ""
    late: bool = False          # the LMS flagged it late (Canvas's LATE)
    uploaded: float | None = None    # the upload time, when the download gives one
    downloaded: float | None = None  # the download's time (Canvas, Moodle: each file is
    #                                  the student's current one as of then)


@dataclasses.dataclass
class Outcome:
    origin: str
    status: str                 # "placed", "already there", "unmatched"
    where: str                  # path relative to SUBMISSIONS
    reason: str


def safe_id(text: str) -> str:
    text = SAFE_ID.sub("_", text.strip()).strip("._")
    return text[:100]


def _normalize_name(name: str) -> str:
    stem = name[:-6] if name.lower().endswith(".ipynb") else name
    stem = RESUBMISSION.sub("", stem.strip())
    return re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")


def resubmission_number(name: str) -> int:
    stem = name[:-6] if name.lower().endswith(".ipynb") else name
    m = RESUBMISSION.search(stem.strip())
    return int(m.group(1) or m.group(2)) if m else 0


def course_notebooks(solutions: Path = SOLUTIONS_DIR) -> list[tuple[str, str]]:
    """``(assignment, notebook file name)`` of every solution notebook."""
    return sorted(notebook_source.course_notebooks(solutions))


def match_notebook(filename: str, course: list[tuple[str, str]],
                   assignment_hint: str | None = None) -> tuple[tuple[str, str] | None, str]:
    """``(assignment, notebook)`` a file name stands for, and how it was matched (or why not)."""
    if not filename.lower().endswith(".ipynb"):
        return None, "not a notebook"
    name = _normalize_name(filename)
    if assignment_hint and (assignment_hint, filename) in course:
        return (assignment_hint, filename), "by path"
    exact = [c for c in course if _normalize_name(c[1]) == name]
    if len(exact) == 1:
        return exact[0], "by name"
    contained = [c for c in course if _normalize_name(c[1]) in name]
    if len(contained) == 1:
        return contained[0], "name contains the notebook's name"
    if assignment_hint:
        in_folder = [c for c in course if _normalize_name(c[0]) == _normalize_name(assignment_hint)]
        if len(in_folder) == 1:
            return in_folder[0], "by assignment folder"
    number = re.match(r"(\d+)", name)
    if number:
        same = [c for c in course if re.match(r"(\d+)", _normalize_name(c[1]))
                and int(re.match(r"(\d+)", _normalize_name(c[1])).group(1)) == int(number.group(1))]
        if len(same) == 1:
            return same[0], "by leading number"
    known = ", ".join(n for _, n in course)
    return None, f"no course notebook is named like {filename!r} (course notebooks: {known})"


# --------------------------------------------------------------------------- reading the download

def _identify(rel: PurePosixPath, ctx: _Context) -> tuple[list[str], str | None, str, str, str]:
    """``(student ids, assignment folder hint, file name, lms, refusal)`` for a path in
    the download (``lms`` is ``canvas-late`` for a file Canvas flagged late, ``course``
    for the course's own files in a student's clone; ``refusal``, when not empty, says
    why the file is not placed). The outermost folder that names a student owns
    everything under it: nothing inside a Moodle or Gradescope folder, or inside a
    student's clone, is read as naming another student. A Canvas name that reads two
    ways, or names no student of the roster given, is refused
    (:func:`autograder.lms.canvas_name`)."""
    gradescope, roster, assignment_names = ctx.submitted, ctx.roster, ctx.assignment_names
    parts = rel.parts
    for i, part in enumerate(parts):
        submission = PurePosixPath(*parts[:i + 1]).as_posix()
        if submission in gradescope:
            ids = []
            for s in gradescope[submission]:
                sid = safe_id(s.get("sid", "") or s.get("email", "") or part)
                roster.setdefault(sid, {"student_id": sid, "name": s.get("name", ""),
                                        "email": s.get("email", ""), "sid": s.get("sid", ""),
                                        "lms": "gradescope"})
                ids.append(sid)
            return ids or [safe_id(part)], None, parts[-1], "gradescope", ""
        m = lms.moodle_name(part)
        if m:
            sid = safe_id(m["student"])
            roster.setdefault(sid, {"student_id": sid, "name": m["name"], "email": "",
                                    "sid": "", "lms": "moodle"})
            filename = parts[-1] if i < len(parts) - 1 else m["file"]
            return [sid], None, filename, "moodle", ""
        if i < len(parts) - 1 and PurePosixPath(*parts[:i + 1]) in ctx.clones:
            return _in_clone(parts[i], parts[i + 1:], assignment_names)
    c, why = lms.canvas_name(parts[-1], ctx.known)
    why = ctx.conflicts.get(parts[-1], why)
    if why:
        return [], None, parts[-1], "canvas", why
    if c:
        sid = safe_id(c["student"])
        roster.setdefault(sid, {"student_id": sid, "name": c["name"], "email": "", "sid": "",
                                "lms": "canvas"})
        return [sid], None, c["file"], "canvas-late" if c["late"] else "canvas", ""
    if (len(parts) >= 4 and parts[-3] == "notebooks"
            and parts[-2] in assignment_names):   # <student>/notebooks/<assignment>/<file>
        return [safe_id(parts[-4])], parts[-2], parts[-1], "git", ""   # a clone without .git
    if len(parts) >= 3 and parts[-2] in assignment_names:   # .../<student>/<assignment>/<file>
        return [safe_id(parts[-3])], parts[-2], parts[-1], "folders", ""
    if len(parts) >= 2 and parts[-2] not in assignment_names:  # .../<student>/<file>
        return [safe_id(parts[-2])], None, parts[-1], "folders", ""
    return [], None, parts[-1], "", ""


def _in_clone(folder: str, inside: tuple[str, ...], assignment_names: set[str],
              ) -> tuple[list[str], str | None, str, str, str]:
    """A file of a student's clone (the Git route): the student is the clone's folder
    name, and only ``notebooks/<assignment>/<notebook>`` is a place of the bundle.
    Anything else under ``notebooks/`` is the student's own (however it is named: a
    folder ``bob/``, a Moodle or Canvas name, a clone in the clone) and is not placed;
    outside ``notebooks/`` are the course's files (``lms`` ``course``), not copied."""
    sid = safe_id(folder)
    if len(inside) < 2 or inside[0] != "notebooks":
        return [sid], None, inside[-1], "course", ""
    if len(inside) == 3 and inside[1] in assignment_names:
        return [sid], inside[1], inside[2], "git", ""
    return [sid], None, inside[-1], "git", (
        f"in {sid}'s clone, but not at notebooks/<assignment>/<notebook>.ipynb: a clone's "
        "files are its owner's, and only the bundle's places are graded")


def _clones(root: Path) -> set[PurePosixPath]:
    """Students' clones of the bundle's repository (the Git route, docs/homework.md): the
    folders holding both ``.git`` and ``notebooks/``. Nothing in them is run; git itself
    is not called."""
    found = set()
    for git in root.rglob(".git"):
        folder = git.parent
        if (folder / "notebooks").is_dir() and not (folder / "notebooks").is_symlink():
            found.add(PurePosixPath(folder.relative_to(root).as_posix()))
    return found


#: LMSs whose zips stamp every entry with the download's time, never the upload's:
#: Canvas (lib/content_zipper.rb writes with rubyzip's get_output_stream, whose Entry
#: defaults to DOSTime.now) and Moodle (mod/assign/classes/downloader.php streams with
#: ZipStream's addFileFromStream, whose FileOptions::defaultTo takes new DateTime()).
DOWNLOAD_TIMES = ("canvas", "moodle")
SAME_TIME = ("every file of the download carries the same time ({when}): entry times are "
             "the download's, not upload times; they are not used as upload times (late "
             "work: Canvas's LATE mark, Gradescope's created_at)")


@dataclasses.dataclass(frozen=True)
class Download:
    """A download read: every file of it identified (zips opened), the warnings about the
    download as a whole, and the members that could not be read (each one refused alone:
    ``Outcome``\\ s with status ``skipped``)."""

    candidates: list[Candidate]
    warnings: list[str]
    refused: list[Outcome]


def read_download(download: Path, work: Path, roster: dict[str, dict],
                  assignment_names: set[str], known: frozenset[str] | None = None) -> Download:
    """Every file of the download (a zip or a folder), identified, with zips opened; and
    the warnings about the download as a whole. ``roster`` collects what the download
    says of each student; ``known``: the ids of the roster given, if one was."""
    times: dict[Path, float] = {}
    refused = []
    if download.is_file():
        root = work / "download"
        extracted = archives.safe_extract(download, root)
        times.update(extracted.times)
        refused = [Outcome(name, "skipped", "", f"{REFUSED}{why}")
                   for name, why in sorted(extracted.refused.items())]
    else:
        root = download
    submitted, created = gradescope.submitters(root)
    clones = _clones(root)
    files = sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink())
    entry = {p: times.get(p, p.lstat().st_mtime) for p in files}
    own = [t for p, t in entry.items()          # a clone's times are its clone's
           if not any(PurePosixPath(p.relative_to(root).as_posix()).is_relative_to(c)
                      for c in clones)]
    warnings = []
    same_time = len(own) >= 2 and len(set(own)) == 1
    if same_time:
        warnings.append(SAME_TIME.format(when=late.iso(own[0])))
    context = _Context(work, submitted, created, roster, assignment_names, clones, same_time,
                       max(entry.values(), default=None), known,
                       lms.canvas_conflicts([p.name for p in files], known))
    candidates = []
    for path in files:
        rel = PurePosixPath(path.relative_to(root).as_posix())
        try:
            candidates += _read_file(path, rel, entry[path], context, len(candidates))
        except Exception as exc:           # whatever the file is: this upload alone
            candidates.append(Candidate(str(rel), path, path.name, [], None, "", entry[path],
                                        how=f"{REFUSED}could not be read ({archives.reason(exc, work)})"))
    return Download(candidates, warnings, refused)


@dataclasses.dataclass(frozen=True)
class _Context:
    """What every file of one download is read with."""

    work: Path
    submitted: dict[str, list[dict]]     # Gradescope: submission -> submitters
    created: dict[str, float]            # Gradescope: submission -> upload time
    roster: dict[str, dict]
    assignment_names: set[str]
    clones: set[PurePosixPath]
    same_time: bool                      # every entry has the same time
    downloaded: float | None             # the download's time
    known: frozenset[str] | None         # the ids of the roster given (--roster)
    conflicts: dict[str, str]            # Canvas names refused: lms.canvas_conflicts


def _read_file(path: Path, rel: PurePosixPath, mtime: float, ctx: _Context,
               n: int) -> list[Candidate]:
    """The candidates one file of the download gives (a student's zip: its files, then
    itself)."""
    ids, hint, filename, lms, refusal = _identify(rel, ctx)
    if lms == "course":
        return []                               # the course's own files in a student's clone
    if path.is_symlink():                       # a clone may hold links: never follow them
        return [Candidate(str(rel), path, path.name, [], None, "", 0.0, how=LINK)]
    if refusal:
        return [Candidate(str(rel), path, filename, [], hint, lms, mtime,
                          how=f"{REFUSED}{refusal}")]
    is_late = lms == "canvas-late"
    lms = "canvas" if is_late else lms
    uploaded = None if (lms in DOWNLOAD_TIMES or ctx.same_time) else mtime
    for i in range(len(rel.parts)):             # Gradescope's own upload time wins
        submission = PurePosixPath(*rel.parts[:i + 1]).as_posix()
        if lms == "gradescope" and submission in ctx.created:
            mtime = uploaded = ctx.created[submission]
            break
    when = {"uploaded": uploaded,
            "downloaded": ctx.downloaded if lms in DOWNLOAD_TIMES else None}
    itself = Candidate(str(rel), path, filename, ids, hint, lms, mtime, late=is_late, **when)
    if not (filename.lower().endswith(".zip") and ids and lms != "git"):   # a clone:
        return [itself]                                                     # notebooks only
    inner_root = ctx.work / "inner" / str(n) / path.name
    try:
        if not zipfile.is_zipfile(path):
            raise archives.ZipRefused("not a zip file that can be read (damaged, cut "
                                      "short, or something else named .zip)")
        inner_times = archives.safe_extract(path, inner_root, "student").times
    except Exception as exc:            # anything wrong with one student's zip refuses it
        shutil.rmtree(inner_root, ignore_errors=True)        # alone, kept as it is
        why = str(exc) if isinstance(exc, archives.ZipRefused) else archives.reason(
            exc, inner_root)
        itself.how = f"{NOT_UNPACKED}{why}"
        return [itself]
    out = []
    for inner in sorted(inner_times):
        inner_rel = inner.relative_to(inner_root).as_posix()
        out.append(Candidate(f"{rel}!{inner_rel}", inner, inner.name, list(ids), None, lms,
                             mtime, late=is_late,
                             how=NESTED if inner.name.lower().endswith(".zip") else "", **when))
    itself.how = UNPACKED                       # the zip itself is kept too (never lose a file)
    return out + [itself]


# --------------------------------------------------------------------------- placing

def collect(download: Path, out: Path, solutions: Path = SOLUTIONS_DIR,
            keep: str = "latest", *, known: frozenset[str] | None = None,
            uploads: dict[str, "sources.Upload"] | None = None) -> list[Outcome]:
    """Place the notebooks of ``download`` into ``out``; return what became of every file.
    With ``known`` (the student ids of a roster), a file of a student not among them is
    not placed (``_unmatched``, with the reason). With ``uploads`` (``--times``: the LMS's
    own record, :mod:`autograder.intake.sources`), a Canvas or Moodle file's upload time
    and late flag are the LMS's record of its student's submission.

    ``keep``: which of two uploads of one notebook is graded, ``latest`` (default) or
    ``first``; this holds within one download and across downloads collected into the
    same ``out`` (a late resubmission in a second download replaces the first file, which
    is kept in ``_unmatched/``)."""
    if keep not in KEEP:
        raise ValueError(f"keep must be one of {', '.join(KEEP)}, not {keep!r}")
    if not download.exists():
        raise FileNotFoundError(f"download not found: {download}")
    if download.is_file() and not zipfile.is_zipfile(download):
        raise ValueError(f"{download} is neither a folder nor a zip file")
    if download.is_dir() and out.resolve().is_relative_to(download.resolve()):
        raise ValueError(f"--out {out} is inside the download {download}: choose a folder outside it")
    course = course_notebooks(solutions)
    out.mkdir(parents=True, exist_ok=True)
    roster: dict[str, dict] = {}
    outcomes: list[Outcome] = []
    times = late.read_submissions(out)        # earlier downloads' upload times
    prefer = _newer if keep == "latest" else (lambda a, b: _newer(b, a))
    with tempfile.TemporaryDirectory(prefix="collect-") as tmp:
        read = read_download(download, Path(tmp), roster, {a for a, _ in course}, known)
        candidates, warnings = read.candidates, read.warnings
        outcomes += read.refused
        for warning in warnings:
            print(f"collect: warning: {safe_text.terminal(download.name)}: {warning}",
                  file=sys.stderr)
        unmatched: list[tuple[Candidate, str]] = []
        chosen: dict[tuple[str, str, str], Candidate] = {}
        for cand in candidates:
            if cand.how == LINK:
                outcomes.append(Outcome(cand.origin, "skipped", "", LINK))
                continue
            parts = PurePosixPath(cand.origin.replace("!", "/")).parts
            if not_a_submission(parts):
                unmatched.append((cand, not_a_submission(parts)))
                continue
            if cand.how.startswith(NOT_UNPACKED) or cand.how in (UNPACKED, NESTED):
                unmatched.append((cand, cand.how))
                continue
            if cand.how.startswith(REFUSED):
                unmatched.append((cand, cand.how[len(REFUSED):]))
                continue
            if not cand.student_ids:
                unmatched.append((cand, "no student in the file's name or folder (expected Canvas,"
                                        " Moodle or Gradescope naming, or <student>/<assignment>/"
                                        "<notebook>.ipynb)"))
                continue
            target, how = match_notebook(cand.filename, course, cand.assignment_hint)
            if target is None:
                unmatched.append((cand, how))
                continue
            strangers = [s for s in cand.student_ids if known is not None and s not in known]
            if strangers:
                unmatched.append((cand, NOT_KNOWN.format(ids=", ".join(strangers))))
                cand.student_ids = [s for s in cand.student_ids if s not in strangers]
                if not cand.student_ids:
                    continue
            cand.target, cand.how = target, how
            for sid in cand.student_ids:
                key = (sid, *target)
                other = chosen.get(key)
                if other is None:
                    chosen[key] = cand
                    continue
                newer, older = (cand, other) if prefer(cand, other) else (other, cand)
                chosen[key] = newer
                unmatched.append((older, f"{'older' if keep == 'latest' else 'later'} file "
                                         f"for {sid}/{target[0]}/{target[1]} (kept {newer.origin})"))
        for (sid, assignment, notebook), cand in sorted(chosen.items()):
            rel = Path(sid) / assignment / notebook
            dest = out / rel
            try:
                data = cand.path.read_bytes()
            except OSError as exc:              # e.g. a file of a folder nobody may read
                outcomes.append(Outcome(cand.origin, "skipped", "", f"could not be read "
                                        f"({archives.reason(exc)})"))
                continue
            row = {"student_id": sid, "assignment": assignment, "notebook": notebook,
                   "submitted_at": late.iso(cand.uploaded) if cand.uploaded is not None else "",
                   "downloaded_at": (late.iso(cand.downloaded) if cand.downloaded is not None
                                     else ""),
                   "lms_late": "yes" if cand.late else "", "source": cand.origin,
                   "lms": cand.lms}
            recorded = (uploads or {}).get(sid) if cand.lms in late.NO_UPLOAD_TIMES else None
            if recorded is not None and recorded.submitted_at is not None:
                row["submitted_at"] = recorded.submitted_at.isoformat(timespec="seconds")
                if recorded.late is not None:
                    row["lms_late"] = "yes" if recorded.late else ""
            if dest.exists():
                if dest.read_bytes() == data:
                    outcomes.append(Outcome(cand.origin, "already there", rel.as_posix(), cand.how))
                    continue
                known = times.get((sid, assignment, notebook), {})
                before, later = _order(row, known)
                if later is None:
                    unmatched.append((cand, f"{rel.as_posix()} already holds a different file "
                                            "of unknown upload time; not overwritten"))
                    continue
                if later != (keep == "latest"):
                    unmatched.append((cand, f"{rel.as_posix()} already holds the "
                                            f"{'later' if keep == 'latest' else 'earlier'} "
                                            f"file ({before}); not overwritten"))
                    continue
                old = _keep(dest, out, Path(UNMATCHED) / "replaced"
                            / before.split(" ")[-1].replace(":", "") / rel)
                outcomes.append(Outcome(cand.origin, "placed", rel.as_posix(),
                                        f"{cand.how}; replaces {before} "
                                        f"(moved to {old.as_posix()})"))
                dest.unlink()
            else:
                outcomes.append(Outcome(cand.origin, "placed", rel.as_posix(), cand.how))
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            times[(sid, assignment, notebook)] = row
        seen = set()
        for cand, reason in unmatched:
            key = (cand.origin, reason)
            if key in seen:
                continue
            seen.add(key)
            # a file from inside a student's zip goes under "<zip name>.contents/"
            rel = Path(UNMATCHED) / Path(*PurePosixPath(cand.origin.replace("!", ".contents/")).parts)
            try:
                rel = _keep(cand.path, out, rel)
            except OSError as exc:
                outcomes.append(Outcome(cand.origin, "skipped", "", f"{reason}; could not be "
                                        f"copied ({archives.reason(exc)})"))
                continue
            outcomes.append(Outcome(cand.origin, "unmatched", rel.as_posix(), reason))
    reports.write_report(outcomes, out / REPORT, warnings)
    reports.write_report(outcomes, reports.download_report(out, safe_id(download.name)), warnings)
    reports.write_roster(roster, out / ROSTER)
    late.write_submissions(out, times)
    return outcomes


def _keep(source: Path, out: Path, rel: Path) -> Path:
    """Copy ``source`` to ``out/rel``, or next to it (``name.2.ext``...) when a different
    file is already there; return where it went (relative to ``out``)."""
    candidate, n = rel, 1
    while (out / candidate).exists():
        if (out / candidate).is_file() and (out / candidate).read_bytes() == source.read_bytes():
            return candidate
        n += 1
        candidate = rel.with_name(f"{rel.stem}.{n}{rel.suffix}")
    (out / candidate).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, out / candidate)
    return candidate


def _natural(text: str) -> tuple:
    """``text`` as a sort key whose numbers compare as numbers (``99999 < 100000``)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", text) if part)


def _newer(a: Candidate, b: Candidate) -> bool:
    """Whether ``a`` is the later upload: by time, then resubmission number, then the ids
    in its name (an LMS's upload and attempt ids grow), numbers compared as numbers."""
    return (a.mtime, resubmission_number(a.filename), _natural(a.origin)) > (
        b.mtime, resubmission_number(b.filename), _natural(b.origin))


def _order(row: dict, known: dict) -> tuple[str, bool | None]:
    """``(what the file in place was, whether ``row`` is the later one)``; ``None``:
    unknown. Two upload times compare; else two downloads' times (a Canvas or Moodle
    download holds each student's current submission as of the download, so the later
    download's file is the later one)."""
    if row["submitted_at"] and known.get("submitted_at"):
        return f"the upload of {known['submitted_at']}", (
            late.parse_time(row["submitted_at"]) > late.parse_time(known["submitted_at"]))
    if (row["downloaded_at"] and known.get("downloaded_at")
            and not known.get("submitted_at")):
        return f"the file of the download of {known['downloaded_at']}", (
            late.parse_time(row["downloaded_at"]) > late.parse_time(known["downloaded_at"]))
    return "", None
