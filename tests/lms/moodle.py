"""Moodle's "Download all submissions" zip, as ``moodle/moodle`` builds it.

Source: ``mod/assign/classes/downloader.php``, class ``mod_assign\\downloader``
(Moodle 4.1 and later; ``mod/assign/locallib.php`` ``assign::download_submissions``
hands over to it):

* ``get_student_prefix``: ``clean_filename(str_replace('_', ' ', $fullname) . '_' .
  $manager->get_uniqueid_for_user($student->id))``: the full name with every ``_``
  turned into a space, then ``_`` and the participant id. With blind marking
  (``is_blind_marking()``) the full name is ``get_string('participant',
  'mod_assign')`` ("Participant"). Team submissions: the group's name and ``_<group
  id>`` instead.
* ``load_submissionplugin_filelist``, ``downloadasfolders`` on (the default, user
  preference ``assign_downloadasfolders``, 1): one folder per student and plugin,
  ``clean_filename($prefix . '_' . $subtype . '_' . $type)`` followed by the file's own
  path in the file area (``$file->get_filepath()``, ``/`` or ``/sub/folder/``) and its
  name: ``Jane Doe_4411_assignsubmission_file/01_dot_products.ipynb``; other plugins
  (online text) ``<prefix>_assignsubmission_onlinetext/<file>``. Off: one flat file
  ``clean_filename($prefix . '_' . $subtype . '_' . $type . '_' . $zipfilename)``.
  (Moodle before 4.1 wrote the folder with a trailing ``_``:
  ``..._assignsubmission_file_/``; ``collect`` reads both.)
* ``download_zip``: ``archive_writer::get_stream_writer(..., ZIP_WRITER)`` and
  ``add_file_from_stored_file($pathinzip, $file)`` per file;
  ``files/classes/local/archive_writer/zip_writer.php`` ``add_file_from_stored_file``
  calls ZipStream's ``addFileFromStream($name, $filehandle)`` with no options, and
  ZipStream (``lib/zipstream/src/ZipStream.php`` ``addFileFromStream``,
  ``lib/zipstream/src/Option/File.php`` ``defaultTo``: ``$this->time = $this->time ?:
  new DateTime()``) stamps the entry with the current time. Every entry carries the
  time of the download, not the upload (nor the file's ``timemodified``).
* ``zip_writer::sanitise_filepath`` / ZipStream ``File::filterFilename``: leading
  slashes stripped, ``\\ : * ? " < > |`` turned into ``_``.

The names used here are ones ``clean_filename`` leaves as they are (letters, digits,
spaces, ``.`` ``-``): the fixture does not re-implement it.
"""

from __future__ import annotations

import dataclasses
import re
import zipfile
from datetime import datetime
from pathlib import Path


@dataclasses.dataclass
class Student:
    """One student: ``files`` are ``(path in the file area, bytes)``, the path ``name``
    or ``sub/folder/name`` (the file manager keeps folders)."""

    participant_id: int
    fullname: str
    files: list[tuple[str, bytes]] = dataclasses.field(default_factory=list)
    onlinetext: str | None = None


def student_prefix(student: Student, blind: bool = False) -> str:
    """``downloader::get_student_prefix`` (individual submissions)."""
    fullname = "Participant" if blind else student.fullname
    return f"{fullname.replace('_', ' ')}_{student.participant_id}"


def filter_filename(name: str) -> str:
    """ZipStream ``File::filterFilename``."""
    name = re.sub(r"^/+", "", name)
    for ch in '\\:*?"<>|':
        name = name.replace(ch, "_")
    return name


def member_names(students: list[Student], folders: bool = True,
                 blind: bool = False) -> list[tuple[str, bytes]]:
    """``(path in the zip, bytes)`` of every file, as ``load_submissionplugin_filelist``
    names them (the file plugin first, then online text, as ``get_submission_plugins``
    orders them by default)."""
    out = []
    for student in students:
        prefix = student_prefix(student, blind)
        plugins = [("file", [(p, d) for p, d in student.files])]
        if student.onlinetext is not None:
            plugins.append(("onlinetext", [("onlinetext.html", student.onlinetext.encode())]))
        for plugin, files in plugins:
            for path, data in files:
                folder, _, name = path.rpartition("/")
                filepath = f"/{folder}/" if folder else "/"
                if folders:
                    base = f"{prefix}_assignsubmission_{plugin}"
                    member = base + (filepath if plugin == "file" else "/") + name
                else:
                    member = f"{prefix}_assignsubmission_{plugin}_{name}"
                out.append((filter_filename(member), data))
    return out


def download(path: Path, students: list[Student], downloaded_at: datetime,
             folders: bool = True, blind: bool = False) -> Path:
    """Write the zip Moodle streams for ``students`` to ``path``: every entry stamped
    with ``downloaded_at`` (ZipStream's ``new DateTime()``)."""
    when = downloaded_at.timetuple()[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in member_names(students, folders, blind):
            info = zipfile.ZipInfo(name, date_time=when)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


# --------------------------------------------------------------------------- the worksheet

#: "Download grading worksheet" (assignment with offline grading): ``mod/assign/
#: gradingtable.php`` in download mode writes these headers (``lang/en/assign.php`` and
#: core strings: ``recordid`` "Identifier", ``fullnameuser``, the identity field "Email
#: address", ``status``, ``grade``, ``maxgrade`` "Maximum Grade", ``gradecanbechanged``,
#: ``timesubmitted`` "Last modified (submission)", ``lastmodifiedgrade``, the feedback
#: comments plugin's "Feedback comments").
WORKSHEET_HEADERS = ["Identifier", "Full name", "Email address", "Status", "Grade",
                     "Maximum Grade", "Grade can be changed", "Last modified (submission)",
                     "Last modified (grade)", "Feedback comments"]


#: ``strftimedaydatetime`` of two language packs (``lang/en/langconfig.php``,
#: ``lang/en_us/langconfig.php`` in Moodle's source): the default, and US English's.
DAYDATETIME = {"en": "%A, %d %B %Y, %I:%M %p", "en_us": "%A, %B %d, %Y, %I:%M %p"}


def userdate(when: datetime, zone, pack: str = "en") -> str:
    """``userdate($time)`` with its default format ``strftimedaydatetime`` (of the
    language pack ``pack``) in the downloading user's time zone; ``%d`` and ``%I``
    without their leading zero, as Moodle strips them (``userdate``'s ``$fixday`` and
    ``$fixhour``)."""
    local = when.astimezone(zone)
    fmt = DAYDATETIME[pack].replace("%d", str(local.day)).replace("%I", str(
        local.hour % 12 or 12))
    return local.strftime(fmt)


def worksheet(path: Path, students: list[tuple[Student, datetime | None]], zone,
              pack: str = "en") -> Path:
    """The worksheet CSV of ``students`` (each with their submission's time, None when
    nothing was submitted: ``-``), times in ``zone``."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(WORKSHEET_HEADERS)
        for student, when in students:
            writer.writerow([f"Participant {student.participant_id}", student.fullname,
                             f"{student.participant_id}@example.org",
                             "Submitted for grading" if when else "No submission", "",
                             "100.00", "Yes", userdate(when, zone, pack) if when else "-", "-", ""])
    return path
