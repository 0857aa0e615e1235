"""Canvas's "Download submissions" zip, as ``instructure/canvas-lms`` builds it.

Source: ``lib/content_zipper.rb``, class ``ContentZipper``:

* ``zip_assignment``: one zip for the assignment, made with rubyzip
  (``Zip::File.open(zip_name, Zip::File::CREATE)``); each submission of the students
  is added by ``add_submission``.
* ``add_submission`` / ``get_filename``: the prefix of every file of one submission is
  ``[users_name, submission.late? ? "LATE" : nil, id].compact.join("_")`` passed through
  ``sanitize_file_name`` (``gsub(/[^[[:word:]]]/, "")``: every non-word character
  removed), where ``id`` is ``submission.user_id``, or ``"anon_#{submission.anonymous_id}"``
  when ``@assignment.anonymize_students?`` (then ``users_name`` is nil: the prefix is
  ``anon_<id>`` or ``LATE_anon_<id>``).
* ``get_user_name`` / ``sanitize_user_name``: ``users_name`` is the student's
  ``sortable_name`` ("Doe, Jane") with ``_(\\d+)_`` replaced by the digits, then
  lower-cased (``doejane`` once the comma and space are removed).
* ``add_upload_submission``: each uploaded file is
  ``"#{filename}_#{file.id}_#{sanitize_attachment_filename(file.display_name)}"``
  (``file.id``: the attachment id), ``sanitize_attachment_filename`` replacing runs of
  ``\\x00 / \\ : * ? " < > |`` with ``_``.
* ``get_uploaded_files_from``: the files are ``submission.attachment_ids``: the
  submission's current attempt only (an earlier upload is not in the zip).
* ``add_text_or_url``: a text entry is ``<prefix>_text.html``, a URL ``<prefix>_link.html``.
* ``add_attachment_to_zip``: a name already in the zip is made unique by
  ``Attachment.make_unique_filename`` (``app/models/attachment.rb``):
  ``<base>-1<ext>``, ``-2``...; then ``zipfile.get_output_stream(filename)`` with no
  time.
* Entry times: rubyzip's ``Zip::File#get_output_stream(entry, ..., time: nil)``
  (``rubyzip/rubyzip`` ``lib/zip/file.rb``) makes a ``Zip::Entry`` whose ``initialize``
  (``lib/zip/entry.rb``) sets ``@time`` to ``::Zip::DOSTime.now`` when no time is
  given: every entry carries the time the zip was made, the download's, never the
  upload's. (Canvas's own reading of such names back, ``Assignment#
  infer_comment_context_from_filename`` in ``app/models/assignment.rb``, takes the first
  two all-digit ``_``-separated parts as the user id and the attachment id.)
* ``lib/anonymity.rb`` ``Anonymity.generate_short_id``: an anonymous id is
  ``SecureRandom.base58(5)``.
"""

from __future__ import annotations

import dataclasses
import re
import zipfile
from datetime import datetime
from pathlib import Path

BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


@dataclasses.dataclass
class Student:
    """One student's current submission: ``uploads`` are ``(display name, bytes)``."""

    user_id: int
    sortable_name: str
    uploads: list[tuple[str, bytes]] = dataclasses.field(default_factory=list)
    late: bool = False
    anonymous_id: str = ""      # Anonymity.generate_short_id: 5 base58 characters
    text_entry: str | None = None


def sanitize_user_name(name: str) -> str:
    """``ContentZipper#sanitize_user_name``."""
    name = re.sub(r"_(\d+)_", r"\1", name)
    return name.lower()


def sanitize_file_name(name: str) -> str:
    """``ContentZipper#sanitize_file_name``: ``[^[[:word:]]]`` removed (Python's ``\\w``
    stands for Ruby's ``[[:word:]]``: letters, digits, underscore)."""
    return re.sub(r"[^\w]", "", name)


def sanitize_attachment_filename(name: str) -> str:
    """``ContentZipper#sanitize_attachment_filename``."""
    return re.sub(r'[\x00/\\:*?"<>|]+', "_", name)


def prefix(student: Student, anonymize: bool) -> str:
    """``ContentZipper#get_filename``."""
    users_name = None if anonymize else sanitize_user_name(student.sortable_name)
    ident = f"anon_{student.anonymous_id}" if anonymize else str(student.user_id)
    parts = [p for p in (users_name, "LATE" if student.late else None, ident) if p is not None]
    return sanitize_file_name("_".join(parts))


def make_unique_filename(name: str, existing: set[str]) -> str:
    """``Attachment.make_unique_filename`` (the extension rule simplified to the last
    ``.ext``)."""
    if name not in existing:
        return name
    stem, dot, ext = name.rpartition(".")
    base, ext = (stem, dot + ext) if dot else (name, "")
    n = 1
    while f"{base}-{n}{ext}" in existing:
        n += 1
    return f"{base}-{n}{ext}"


def member_names(students: list[Student], anonymize: bool = False,
                 first_attachment_id: int = 900_001) -> list[tuple[str, bytes]]:
    """``(name in the zip, bytes)`` of every file, in the order Canvas adds them."""
    out, seen, attachment_id = [], set(), first_attachment_id
    for student in students:
        called = prefix(student, anonymize)
        if student.text_entry is not None:
            name = make_unique_filename(f"{called}_text.html", seen)
            seen.add(name)
            out.append((name, student.text_entry.encode()))
        for display_name, data in student.uploads:
            name = f"{called}_{attachment_id}_{sanitize_attachment_filename(display_name)}"
            attachment_id += 1
            name = make_unique_filename(name, seen)
            seen.add(name)
            out.append((name, data))
    return out


def download(path: Path, students: list[Student], downloaded_at: datetime,
             anonymize: bool = False, first_attachment_id: int = 900_001) -> Path:
    """Write the zip Canvas gives for ``students`` to ``path``: every entry stamped with
    ``downloaded_at`` (rubyzip's ``DOSTime.now`` when the zip is made)."""
    when = downloaded_at.timetuple()[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in member_names(students, anonymize, first_attachment_id):
            info = zipfile.ZipInfo(name, date_time=when)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def canvas_target(name: str):
    """(user id, attachment id) as Canvas's infer_comment_context_from_filename reads a
    file's base name: the first two all-digit pieces of its '_'-split."""
    digits = [p for p in name.rsplit("/", 1)[-1].split("_") if re.fullmatch(r"\d+", p)]
    return tuple(digits[:2])
