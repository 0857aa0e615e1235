"""Zip files read from an LMS download, or handed in by a student inside one: hostile input
(docs/threat_model.md, "Collecting"). A zip over the caps (members, size, compression
ratio) is refused before anything is extracted; a member never escapes the folder it is
extracted into. A member that cannot be extracted (encrypted, an unknown compression
method, a bad CRC, a name the file system refuses, a file and a folder of the same name,
or anything else that goes wrong reading it) is refused alone in a download (the other
members are extracted), and refuses the whole zip a student handed in (nothing of it
is kept extracted): one upload, never the class."""

from __future__ import annotations

import calendar
import dataclasses
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from autograder import safe_text

#: Caps on a zip: the whole download, and a zip a student handed in (inside it).
ZIP_CAPS = {"download": (20_000, 8 * 1024 ** 3), "student": (2_000, 200 * 1024 ** 2)}
#: A member that expands more than this many times is refused (a "zip bomb").
MAX_ZIP_RATIO = 200
#: The longest name (in bytes) of one file or folder that file systems take (ext4, APFS,
#: NTFS: 255).
MAX_NAME_BYTES = 255
#: At most this many characters of a member's name in a reason.
NAME_SHOWN = 80
#: Compression methods Python's zipfile reads.
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate",
           zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}


class ZipRefused(ValueError):
    """A zip over the caps (members, size, compression ratio), or a student's zip that
    cannot be read; the message says which."""


@dataclasses.dataclass(frozen=True)
class Extracted:
    """What :func:`safe_extract` made of a zip: the time of each extracted file, and the
    members refused (name in the zip -> why), none of them extracted."""

    times: dict[Path, float]
    refused: dict[str, str]


def check_zip(zf: zipfile.ZipFile, name: str, kind: str) -> None:
    max_members, max_bytes = ZIP_CAPS[kind]
    infos = zf.infolist()
    if len(infos) > max_members:
        raise ZipRefused(f"{name}: {len(infos)} files, more than the {max_members} a "
                         f"{kind} zip may hold")
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise ZipRefused(f"{name}: {total / 1024 ** 2:.0f} MB once unpacked, more than the "
                         f"{max_bytes / 1024 ** 2:.0f} MB a {kind} zip may hold")
    for i in infos:
        if i.file_size > 1024 ** 2 and i.file_size > MAX_ZIP_RATIO * max(i.compress_size, 1):
            raise ZipRefused(f"{name}: {safe_text.terminal(i.filename)} would expand "
                             f"{i.file_size / max(i.compress_size, 1):.0f} times (a zip bomb?)")


def member_parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    """The path of a member inside the folder it is extracted into: ``..``, ``.``, empty
    parts and leading slashes dropped (no member escapes)."""
    return tuple(p for p in PurePosixPath(info.filename.replace("\\", "/")).parts
                 if p not in ("", ".", "..", "/"))


def member_problem(info: zipfile.ZipInfo, parts: tuple[str, ...]) -> str | None:
    """Why a member cannot be extracted as it is, found before reading it; None if it can."""
    if info.flag_bits & 0x1:
        return "encrypted (a password is needed): not read"
    if info.compress_type not in METHODS:
        return (f"compressed with method {info.compress_type}, which is not one of "
                f"{', '.join(METHODS.values())}: not read")
    long = [p for p in parts if len(p.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES]
    if long:
        return (f"a name of {len(long[0].encode('utf-8', 'surrogateescape'))} bytes, longer "
                f"than the {MAX_NAME_BYTES} a file system takes: not extracted")
    return None


def layout_problems(members: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Members whose path is also a folder of another member's path (a file and a folder
    of the same name: one of them cannot be written): name -> why."""
    files = {parts: name for name, parts in members.items() if parts}
    folders = {parts[:i] for parts in files for i in range(1, len(parts))}
    return {name: "a file and a folder of the same name in the zip: not extracted"
            for parts, name in files.items() if parts in folders}


def _shown(name: str) -> str:
    return safe_text.terminal(safe_text.shorten(name, NAME_SHOWN))


def reason(exc: BaseException, work: Path | None = None) -> str:
    """``exc`` as a reason for the report: its kind and message, without the temporary
    folder it was extracted into (escaping is the writer's: terminal, CSV)."""
    text = str(exc)
    if work is not None:
        text = text.replace(str(work), "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _extract_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> float:
    """Write one member to ``target`` (removed again if reading it fails); its time."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zf.open(info) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return float(calendar.timegm((*info.date_time, 0, 0, 0)))


def safe_extract(archive: Path, dest: Path, kind: str = "download") -> Extracted:
    """Extract a zip without letting a member escape ``dest``. :class:`ZipRefused` when it
    is over the caps (nothing is extracted then), or, for a ``student`` zip, when any
    member cannot be extracted (what was extracted is removed again); a ``download``'s
    members that cannot be are refused alone (:attr:`Extracted.refused`)."""
    with zipfile.ZipFile(archive) as zf:
        check_zip(zf, archive.name, kind)
        infos = [i for i in zf.infolist() if not i.is_dir() and member_parts(i)]
        members = {i.filename: member_parts(i) for i in infos}
        refused = layout_problems(members)
        refused.update({i.filename: why for i in infos
                        if (why := member_problem(i, members[i.filename]))})
        if kind == "student" and refused:
            name, why = sorted(refused.items())[0]
            raise ZipRefused(f"{_shown(name)}: {why}")
        times = {}
        for info in infos:
            if info.filename in refused:
                continue
            target = dest.joinpath(*members[info.filename])
            try:
                times[target] = _extract_member(zf, info, target)
            except Exception as exc:                # whatever the zip holds: this one only
                if kind == "student":
                    shutil.rmtree(dest, ignore_errors=True)
                    raise ZipRefused(f"{_shown(info.filename)}: "
                                     f"{reason(exc, dest)}") from exc
                refused[info.filename] = reason(exc, dest)
    return Extracted(times, refused)
