"""The file names the LMSs give the files of a download, and those they take back: one
place for both directions. ``collect`` (autograder/intake) reads a download's names;
``feedback-package`` (autograder/results/package.py) writes the names each LMS reads
back. tests/lms/ builds the downloads as each LMS's own code does.

* Canvas: "Download submissions" (``lib/content_zipper.rb``) names a file
  ``<name>[_LATE]_<user id>_<attachment id>_<file name>``; "Upload submission comments"
  reads the user and attachment ids back from a name of the same form.
* Moodle: "Download all submissions" (``mod/assign/classes/downloader.php``) names a
  folder or file ``<Full Name>_<participant id>_assignsubmission_file...``; "Upload
  multiple feedback files in a zip" reads ``<Full Name>_<participant id>_assignfeedback_
  file_`` folders back.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- Canvas

#: Canvas, anonymous grading (lib/content_zipper.rb get_filename: ``anon_`` and the
#: submission's anonymous id, lib/anonymity.rb: 5 base58 characters).
CANVAS_ANONYMOUS = re.compile(r"^(?P<late>LATE_)?anon_(?P<anon>[1-9A-HJ-NP-Za-km-z]{5})_"
                              r"(?P<attachment>[0-9]+)_(?P<file>.+)$")
#: A Canvas id as Canvas writes it: a database id, digits without a leading zero.
CANVAS_ID = re.compile(r"[1-9][0-9]*")
#: Why a Canvas file name is not read as anyone's: it reads two ways.
TWO_WAYS = ("a Canvas name that reads more than one way: {readings} (the name part may "
            "hold _<digits>_; Canvas reads the first): not placed; see whose it is in "
            "Canvas and place it by hand")
#: Why it is not: read as Canvas reads it, it gives a user another name than the rest of
#: the download does.
CONFLICT = ("a Canvas name that reads more than one way, and read as Canvas reads it "
            "user {id} is called {name!r} here but {others} in the download's other "
            "files: not placed; see whose it is in Canvas and place it by hand")
#: Why it is not: no way of reading it names a student of the roster.
NOT_IN_ROSTER = "user id {ids} is not in the roster"


#: Moodle's name of a participant in a worksheet's ``Identifier`` column
#: (``get_string('hiddenuser', 'assign')``), followed by the participant id.
MOODLE_PARTICIPANT = "Participant "

def canvas_readings(name: str) -> list[dict]:
    """Every way of reading a Canvas "Download submissions" file name, leftmost first
    (``[]``: not one).

    lib/content_zipper.rb builds it (``get_filename``, ``add_upload_submission``) as
    ``<name>[_LATE]_<user id>_<attachment id>_<file name>``, ``<name>`` being the sortable
    name lower-cased with every non-word character removed (it may hold ``_`` and
    digits, or be empty), or ``[LATE_]anon_<anonymous id>_<attachment id>_<file name>``.
    A reading takes two ``_``-separated parts that are ids (digits, no leading zero) as
    the user and attachment ids, what is before them as a name (``LATE`` is upper case
    and a name never is: Canvas lower-cases it) and the rest as the file name. Canvas's
    own reading back (``Assignment#infer_comment_context_from_filename``) takes the first
    two all-digit parts."""
    m = CANVAS_ANONYMOUS.match(name)
    if m:
        return [{"student": f"anon_{m['anon']}", "name": "", "late": bool(m["late"]),
                 "attachment": m["attachment"], "file": m["file"], "at": 1}]
    parts = name.split("_")
    out = []
    for i in range(1, len(parts) - 2):
        if not (CANVAS_ID.fullmatch(parts[i]) and CANVAS_ID.fullmatch(parts[i + 1])):
            continue
        head, file = parts[:i], "_".join(parts[i + 2:])
        is_late = head[-1] == "LATE"
        user = "_".join(head[:-1] if is_late else head)
        if file and re.fullmatch(r"\w*", user) and user == user.lower():
            out.append({"student": parts[i], "name": user, "late": is_late,
                        "attachment": parts[i + 1], "file": file, "at": i})
    return out


def canvas_name(name: str, roster: frozenset[str] | None = None) -> tuple[dict | None, str]:
    """``(what a Canvas file name says, "")``; ``(None, "")`` if it is not one; ``(None,
    why)`` when it names no student for sure.

    Of its readings (:func:`canvas_readings`): when one starts two or more parts after
    the first (``eve_4242_9_5555_900001_...``: the name part of one holds
    ``_<digits>_``), it reads two ways, whatever a roster says (the one of them a
    roster knows may be another student's id). Otherwise, with a ``roster``, the one
    reading whose user id it holds (none: not in the roster; two: two ways); without,
    Canvas's own, the first (another one part later means the file name starts with a
    number: ``doejane_4711_900001_10_lm.ipynb``)."""
    readings = canvas_readings(name)
    if not readings:
        return None, ""
    first = readings[0]
    if any(r["at"] > first["at"] + 1 for r in readings) or (roster is not None and len(
            [r for r in readings if r["student"] in roster]) > 1):
        return None, TWO_WAYS.format(readings=" or ".join(
            f"user {r['student']} (attachment {r['attachment']})" for r in readings))
    if roster is None:
        return first, ""
    known = [r for r in readings if r["student"] in roster]
    if not known:
        return None, NOT_IN_ROSTER.format(ids=" or ".join(r["student"] for r in readings))
    return known[0], ""


def canvas_conflicts(names, roster: frozenset[str] | None = None) -> dict[str, str]:
    """Of the file names of one Canvas download, those read one of several ways whose
    user id the names read only one way give another name part (Canvas writes one name
    for a user throughout a download: ``eve_4242_5555_...`` is not user 4242's when
    ``smithbob_4242_...`` is): name -> why."""
    read = {n: (canvas_name(n, roster)[0], len(canvas_readings(n))) for n in set(names)}
    certain: dict[str, set[str]] = {}
    for reading, count in read.values():
        if reading is not None and count == 1:
            certain.setdefault(reading["student"], set()).add(reading["name"])
    out = {}
    for n, (reading, count) in read.items():
        others = certain.get(reading["student"], set()) if reading and count > 1 else set()
        if others and reading["name"] not in others:
            out[n] = CONFLICT.format(id=reading["student"], name=reading["name"],
                                     others=", ".join(sorted(others)))
    return out


def canvas_part(name: str) -> str:
    """A name as the first part of a Canvas file name: letters only (no ``_``, no digits),
    lower case, as Canvas writes it."""
    return re.sub(r"[\W\d_]", "", name)[:40].lower() or "student"


# --------------------------------------------------------------------------- Moodle

#: Moodle (mod/assign/classes/downloader.php, get_student_prefix and
#: load_submissionplugin_filelist): ``<full name, "_" made " ">_<participant id>`` then
#: ``_assignsubmission_<plugin>``, a folder (``/`` and the file's path; Moodle before
#: 4.1 added a ``_``), or with ``_<file name>`` a flat file.
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<pid>\d+)_assign(?:submission|feedback)_"
                    r"(?P<type>[a-z0-9]+?)(?:_(?P<file>.*))?$")


def moodle_name(part: str) -> dict | None:
    """What one part of a Moodle download's path says (a submission folder, or a flat
    file's name), or ``None`` if it is not one: the participant id, the full name and, for
    a flat file, its own name (``""`` for a folder)."""
    m = MOODLE.match(part)
    if not m:
        return None
    return {"student": m.group("pid"), "name": m.group("name"), "file": m.group("file") or ""}


def moodle_part(name: str) -> str:
    """A full name as a Moodle folder's first part: letters, digits and single spaces."""
    return " ".join(re.sub(r"[^\w ]|_", " ", name).split())[:60] or "Student"
