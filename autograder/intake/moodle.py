"""Moodle's "Download all submissions" names (``mod/assign/classes/downloader.php``)."""

from __future__ import annotations

import re

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
