"""The students' feedback as the zip an LMS takes back: ``python -m autograder
feedback-package --lms canvas|moodle OUT --dest FILE.zip``.

* ``moodle``: the zip of an assignment's "Upload multiple feedback files in a zip"
  (feedback type "Feedback files"). Moodle reads each path part as
  ``fullname_participantid_plugintype_pluginname[_...]`` (split on ``_``, at most 5 parts;
  ``mod/assign/feedback/file/importziplib.php``, ``is_valid_filename_for_import``) and
  keeps what follows as the file's path, so each student gets the folder
  ``<Full Name>_<participant id>_assignfeedback_file_/`` with ``index.html`` and the
  notebook pages (``<assignment>/<notebook>.html``), links between them intact. The
  participant id is the student id ``collect`` took from a Moodle download; the name
  (the roster's, with ``_`` and every character but letters, digits and spaces
  removed) only helps a person reading the zip.
* ``canvas``: the zip of the gradebook's "Upload submission comments" / SpeedGrader's
  re-upload ("Re-Upload Submissions"). Canvas splits each file's base name on ``_`` and
  takes the first two all-digit parts as the user id and the id of a file of that
  user's submission (``app/models/assignment.rb``, ``infer_comment_context_from_filename``
  and ``generate_comments_from_files``), the names its own download gives
  (``<name>_<user id>_<attachment id>_<file>``, which ``collect`` records in
  ``_submissions.csv``'s ``source`` and ``grade`` in each record); the file must be one
  of the submission's current attempt, so the attachment id is taken from the latest
  download (``downloaded_at``) that had a file of the student. Each student gets
  one file, ``<name>_<user id>_<attachment id>_feedback.html`` (the name: letters only,
  so that no part of it reads as an id), holding the index and every notebook page:
  Canvas attaches each file to a comment on its own, so links between files would not
  work. A student whose Canvas file name is unknown (not collected from a Canvas
  download) is left out and named.

The pages are the feedback pages of ``OUT`` (:mod:`autograder.results.feedback`: every
text escaped, no scripts), with the late penalty of ``--deadline/--late-policy/--homework``
when given, else of the policy the last ``export`` stored in OUT. Make one package per
LMS assignment (grade each homework into its own OUT).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder import lms as lms_names
from autograder.results import late
from autograder.results.feedback import render, render_combined, render_index
from autograder.results.records import read_records, sort_key

LMS = ("canvas", "moodle")
#: Why there is no Gradescope package: what its "Upload scores" takes is a CSV of scores
#: (``export --format gradescope``); feedback files reach students through its
#: autograder's results (``python -m autograder gradescope``), not through an upload.
GRADESCOPE = ("Gradescope takes no feedback files from an instructor's upload: its "
              "\"Upload scores\" reads scores only (export --format gradescope writes that "
              "CSV). To give students their feedback in Gradescope, grade there on submit: "
              "`python -m autograder gradescope ASSIGNMENT --out DIR` builds the autograder "
              "zip whose results show each student the same feedback (docs/grading.md)")

def _downloaded(record: dict) -> float:
    try:
        return late.parse_time(str(record.get("downloaded_at") or "")).timestamp()
    except ValueError:
        return float("-inf")


def _canvas_ids(student_id: str, records: list[dict]) -> tuple[str, str] | None:
    """``(name part, attachment id)`` from a Canvas file name this student handed in,
    from the latest download that had one: Canvas takes a comment only for a file of
    the submission's current attempt (``submission.attachments``), and a later attempt
    (a late resubmission of one notebook) holds only the files uploaded with it."""
    found = None
    for record in sorted(records, key=sort_key):
        source = Path(str(record.get("source") or "").split("!")[0]).name
        m = next((r for r in lms_names.canvas_readings(source)
                  if r["student"] == student_id), None)
        if m and (found is None or _downloaded(record) > found[0]):
            found = (_downloaded(record), m["name"], m["attachment"])
    return None if found is None else found[1:]


def package(out: Path, lms: str, dest: Path, roster: dict[str, dict] | None = None,
            stored: "late.Stored | None" = None,
            anonymous: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Write the zip; return ``(students packed, one line per student left out)``.
    ``stored``: the late policy (default: the one export stored in ``out``);
    ``anonymous``: Canvas's ``anon_<id>`` -> user id (:mod:`autograder.intake.sources`).
    A package that would hold no student is refused (nothing written)."""
    if lms == "gradescope":
        raise ValueError(GRADESCOPE)
    if lms not in LMS:
        raise ValueError(f"unknown LMS {lms!r}: choose one of {', '.join(LMS)}")
    roster, anonymous = roster or {}, anonymous or {}
    records = read_records(out)
    stored = stored if stored is not None else late.load_policy(out)
    if stored is not None:
        late.require_times(records, stored.policy)
    penalties = late.penalties_of(records, stored)
    by_student: dict[str, list[dict]] = {}
    for record in records:
        by_student.setdefault(record["student_id"], []).append(record)
    skipped: list[str] = []
    packed = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for collected_as, own in sorted(by_student.items()):
            student_id = anonymous.get(collected_as, collected_as) if lms == "canvas" \
                else collected_as
            if student_id.startswith("anon_"):
                skipped.append(f"{student_id}: anonymously graded in Canvas; its Canvas user "
                               f"id is needed (--anonymous-map, once anonymity is lifted)")
                continue
            if not student_id.isdigit() or not student_id.isascii():
                skipped.append(f"{student_id}: not a {lms.capitalize()} "
                               f"{'participant' if lms == 'moodle' else 'user'} id")
                continue
            name = str(roster.get(student_id, {}).get("name") or "")
            if lms == "moodle":
                folder = f"{lms_names.moodle_part(name)}_{student_id}_assignfeedback_file_"
                zf.writestr(f"{folder}/index.html", render_index(student_id, own, penalties))
                for record in sorted(own, key=sort_key):
                    if record["status"] != "missing":
                        zf.writestr(f"{folder}/{record['assignment']}/"
                                    f"{Path(record['notebook']).stem}.html",
                                    render(record, penalties.get(sort_key(record))))
            else:
                ids = _canvas_ids(collected_as, own)
                if ids is None:
                    skipped.append(f"{student_id}: no Canvas file name recorded (collect the "
                                   f"Canvas download, then grade)")
                    continue
                first, attachment = ids
                zf.writestr(f"{lms_names.canvas_part(name or first)}_{student_id}_{attachment}_feedback.html",
                            render_combined(student_id, own, penalties))
            packed += 1
    if not packed:
        tmp.unlink()
        raise ValueError(f"no student could be packed for {lms.capitalize()}, so no zip was "
                         f"written: " + "; ".join(skipped[:5])
                         + (f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else ""))
    tmp.replace(dest)
    return packed, skipped
