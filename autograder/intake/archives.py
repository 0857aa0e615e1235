"""Zip files read from an LMS download, or handed in by a student inside one: hostile input
(docs/threat_model.md, "Collecting"). A zip over the caps (members, size, compression
ratio) is refused before anything is extracted; a member never escapes the folder it is
extracted into."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

from autograder import safe_text

#: Caps on a zip: the whole download, and a zip a student handed in (inside it).
ZIP_CAPS = {"download": (20_000, 8 * 1024 ** 3), "student": (2_000, 200 * 1024 ** 2)}
#: A member that expands more than this many times is refused (a "zip bomb").
MAX_ZIP_RATIO = 200


class ZipRefused(ValueError):
    """A zip over the caps (members, size, compression ratio); the message says which."""


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


def safe_extract(archive: Path, dest: Path, kind: str = "download") -> dict[Path, float]:
    """Extract a zip without letting a member escape ``dest``; return member times.
    :class:`ZipRefused` when it is over the caps (nothing is extracted then)."""
    import calendar

    times = {}
    with zipfile.ZipFile(archive) as zf:
        check_zip(zf, archive.name, kind)
        for info in zf.infolist():
            if info.is_dir():
                continue
            parts = [p for p in PurePosixPath(info.filename.replace("\\", "/")).parts
                     if p not in ("", ".", "..", "/")]
            if not parts:
                continue
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            times[target] = float(calendar.timegm((*info.date_time, 0, 0, 0)))
    return times
