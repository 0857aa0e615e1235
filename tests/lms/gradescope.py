"""Gradescope's "Export submissions" (programming and online assignments).

Gradescope's own code is not public. The layout follows the public parsers that read
these exports and their test fixtures:

* ``ucbds-infra/otter-grader`` ``otter/grade/metadata.py`` ``GradescopeParser``: the
  export folder holds ``submission_metadata.yml``; every top-level key of it is a folder
  of the export holding that submission's files (``os.listdir(os.path.join(
  submissions_dir, folder))``), and ``metadata[folder][":submitters"]`` lists who
  submitted it (a group submission lists every member), each with ``:name``.
* ``ucbds-infra/otter-grader`` ``test/test-grade/gradescope-export/
  submission_metadata.yml`` and ``test/sample-metadata/gradescope-export/
  submission_metadata.yml``: the YAML keys are Ruby symbols written with a leading
  colon (``:submitters:``, ``:name:``, ``:email:``, ``:sid:``, ``:created_at:``,
  ``:score:``, ``:original_filename:``), a submitter may carry ``section_name`` (no
  colon), ``:sid:`` is a quoted string, and ``:created_at:`` is Ruby's time format
  ``2020-02-27 06:58:05.746365000 Z``.
* The folder names ``submission_<id>`` (and the export's top folder
  ``assignment_<id>_export``) are what Gradescope's download is observed to use; the
  parsers above accept any key.
* The zip's entry times are not documented anywhere; this fixture stamps them with
  the download's time, so a test cannot pass by reading upload times from them
  (``created_at`` is the upload time).
"""

from __future__ import annotations

import dataclasses
import zipfile
from datetime import datetime, timezone
from pathlib import Path


@dataclasses.dataclass
class Submitter:
    name: str
    email: str
    sid: str = ""
    section_name: str = ""


@dataclasses.dataclass
class Submission:
    """One submission: its id, submitters, upload time and ``(path, bytes)`` files."""

    id: int
    submitters: list[Submitter]
    created_at: datetime
    files: list[tuple[str, bytes]] = dataclasses.field(default_factory=list)
    score: float = 0.0


def ruby_time(when: datetime) -> str:
    """``2020-02-27 06:58:05.746365000 Z`` (UTC), as in otter-grader's fixtures."""
    when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond:06d}000 Z"


def quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def metadata(submissions: list[Submission]) -> str:
    """``submission_metadata.yml`` in the form of otter-grader's fixtures."""
    lines = ["---"]
    for sub in submissions:
        lines.append(f"submission_{sub.id}:")
        lines.append("  :submitters:")
        for s in sub.submitters:
            lines.append(f"  - :name: {quoted(s.name)}")
            lines.append(f"    :email: {quoted(s.email)}")
            lines.append(f"    :sid: {quoted(s.sid)}" if s.sid else "    :sid:")
            if s.section_name:
                lines.append(f"    section_name: {quoted(s.section_name)}")
        lines.append(f"  :created_at: {ruby_time(sub.created_at)}")
        lines.append(f"  :score: {sub.score}")
        if sub.files:
            lines.append(f"  :original_filename: {quoted(sub.files[0][0].rpartition('/')[2])}")
    return "\n".join(lines) + "\n"


def download(path: Path, submissions: list[Submission], downloaded_at: datetime,
             assignment_id: int = 77) -> Path:
    """Write the export zip: ``assignment_<id>_export/submission_metadata.yml`` and
    ``assignment_<id>_export/submission_<id>/<files>``."""
    top = f"assignment_{assignment_id}_export"
    when = downloaded_at.timetuple()[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo(f"{top}/submission_metadata.yml", date_time=when),
                    metadata(submissions))
        for sub in submissions:
            for name, data in sub.files:
                zf.writestr(zipfile.ZipInfo(f"{top}/submission_{sub.id}/{name}",
                                            date_time=when), data)
    return path
