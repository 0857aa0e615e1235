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
DIGITS = re.compile(r"[0-9]+")


def canvas_name(name: str) -> dict | None:
    """What a Canvas "Download submissions" file name says, or ``None`` if it is not one.

    lib/content_zipper.rb builds it (``get_filename``, ``add_upload_submission``) as
    ``<name>[_LATE]_<user id>_<attachment id>_<file name>``, ``<name>`` being the sortable
    name lower-cased with every non-word character removed (it may hold ``_`` and
    digits, or be empty), or ``[LATE_]anon_<anonymous id>_<attachment id>_<file name>``.
    Read as Canvas reads it back (``Assignment#infer_comment_context_from_filename``:
    the first two all-digit ``_``-separated parts are the user and attachment ids).
    ``LATE`` is upper case and a name never is (Canvas lower-cases it)."""
    m = CANVAS_ANONYMOUS.match(name)
    if m:
        return {"student": f"anon_{m['anon']}", "name": "", "late": bool(m["late"]),
                "attachment": m["attachment"], "file": m["file"]}
    parts = name.split("_")
    for i in range(1, len(parts) - 2):
        if DIGITS.fullmatch(parts[i]) and DIGITS.fullmatch(parts[i + 1]):
            break
    else:
        return None
    head, file = parts[:i], "_".join(parts[i + 2:])
    is_late = head[-1] == "LATE"
    user = "_".join(head[:-1] if is_late else head)
    if not file or not re.fullmatch(r"\w*", user) or user != user.lower():
        return None
    return {"student": parts[i], "name": user, "late": is_late, "attachment": parts[i + 1],
            "file": file}


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
