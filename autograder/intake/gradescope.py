"""Gradescope's "Export submissions": its ``submission_metadata.yml`` (who submitted each
folder, and when)."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath


def submitters(root: Path) -> tuple[dict[str, list[dict]], dict[str, float]]:
    """``({submission: [submitter, ...]}, {submission: upload time})`` from the download's
    own ``submission_metadata.yml``: the one nearest its top (at the root or in its one
    top-level folder). A submission is the path, in the download, of the folder (or file)
    next to the metadata that each of its keys names (``submission_<id>``, or any name:
    otter-grader's ``GradescopeParser`` reads every key as a folder). A file of that name
    inside a submission is a student's file, and never says who submitted what."""
    found: dict[str, list[dict]] = {}
    created: dict[str, float] = {}
    metas = sorted(root.rglob("submission_metadata.yml"),
                   key=lambda p: len(p.relative_to(root).parts))
    top = [m for m in metas if len(m.relative_to(root).parts) <= 2]
    for meta in top[:1]:
        import yaml

        data = yaml.safe_load(meta.read_text(encoding="utf-8")) or {}
        level = PurePosixPath(meta.parent.relative_to(root).as_posix())
        for key, value in data.items():
            if not isinstance(value, dict) or "/" in str(key) or str(key) in ("", ".", ".."):
                continue
            where = (level / str(key)).as_posix()
            submitters = value.get(":submitters") or value.get("submitters") or []
            found[where] = [{str(k).lstrip(":"): ("" if v is None else str(v))
                             for k, v in s.items()} for s in submitters if isinstance(s, dict)]
            when = value.get(":created_at") or value.get("created_at")
            if when:
                try:
                    created[where] = created_time(when)
                except ValueError:
                    pass                         # no time: the zip's time stands
    return found, created


def created_time(value) -> float:
    """Gradescope's ``created_at`` (``2026-10-01 12:00:00.123456789 -0700``, or a datetime
    YAML already parsed) as seconds since the epoch."""
    import datetime as dt

    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).timestamp()
    m = re.match(r"^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.\d+)?\s*(Z|[+-]\d\d:?\d\d)?$",
                 str(value).strip())
    if not m:
        raise ValueError(value)
    zone = (m.group(3) or "+0000").replace("Z", "+0000").replace(":", "")
    return dt.datetime.strptime(f"{m.group(1)} {m.group(2)} {zone}",
                                "%Y-%m-%d %H:%M:%S %z").timestamp()
