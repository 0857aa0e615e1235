"""How values are written in the course's messages to a learner: numbers, arrays, a
case's inputs, expected against got, and the one truncation (:func:`shorten`)."""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["shorten", "number", "array_text", "expected_got", "value_text",
           "model_fingerprint"]


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters and ``...`` when longer: the one truncation of
    the course's messages to the learner (the grader cuts its records again)."""
    return text if len(text) <= limit else text[:limit] + "..."


def number(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    v = float(v)
    if np.isnan(v) or np.isinf(v):
        return str(v)
    return f"{v:.6g}"


def array_text(a, limit: int = 48, indent: int = 8) -> str:
    try:
        arr = np.asarray(a)
    except Exception:
        return repr(a)
    if arr.dtype == object or arr.dtype.kind not in "biufc":     # text: tokens, pairs
        text = repr(a)
        return text if len(text) <= 200 else f"{shorten(text, 200)} ({len(a)} items)"
    if arr.size <= limit:
        text = np.array2string(arr, precision=6, separator=", ", max_line_width=96,
                               suppress_small=False)
        return text.replace("\n", "\n" + " " * indent)
    lo, hi = (arr.min(), arr.max()) if arr.size else (0, 0)
    return f"array of shape {arr.shape}, values from {number(lo)} to {number(hi)}"


def expected_got(expected, got) -> str:
    """Two aligned lines: the expected array, then the one that was got."""
    return (f"\n    expected: {array_text(expected, indent=14)}"
            f"\n    got:      {array_text(got, indent=14)}")


def value_text(v, indent: int = 8) -> str:
    if isinstance(v, np.random.Generator):
        return "a numpy Generator (see the case's words for its seed)"
    if isinstance(v, dict) and v and all(isinstance(x, (int, str)) for x in v.values()):
        head = dict(list(v.items())[:6])                          # e.g. a vocabulary
        return f"dict of {len(v)} entries: {head!r}" + (" ..." if len(v) > 6 else "")
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            if k == "blocks":
                parts.append(f"blocks: {len(x)} block(s) with keys {', '.join(x[0])}" if x
                             else "blocks: []")
            else:
                parts.append(f"{k} {list(np.shape(x))}")
        return "dict with " + "; ".join(parts)
    if isinstance(v, (list, tuple, np.ndarray)):
        return array_text(v, indent=indent)
    return repr(v)


def model_fingerprint(obj) -> str:
    """A hash of every number in a (nested) params dict: equal models, equal hashes (the
    key of the reference logits that judging and diagnosing generate reuse)."""
    h = hashlib.sha1()

    def feed(o):
        if isinstance(o, dict):
            for k in sorted(o):
                h.update(str(k).encode())
                feed(o[k])
        elif isinstance(o, (list, tuple)) and o and isinstance(o[0], dict):
            for x in o:
                feed(x)
        else:
            a = np.asarray(o, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())

    feed(obj)
    return h.hexdigest()
