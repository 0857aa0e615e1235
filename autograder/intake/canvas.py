"""Canvas's "Download submissions" file names (``lib/content_zipper.rb``), read as Canvas
reads them back."""

from __future__ import annotations

import re

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
                "file": m["file"]}
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
    return {"student": parts[i], "name": user, "late": is_late, "file": file}
