"""Jobs sent to the grading worker by the sandbox tests (tests/autograder/isolation/):
the copies of ``helpers`` their children import, one notebook-kind job of plain cells,
run in a confined child, and its printed lines."""

from __future__ import annotations

import os
import time

from autograder.isolation import client, confine, helpers_copy


def helpers_copies(tmp_path_factory, label: str, strips) -> dict:
    """``{strip: folder}``: the copy of ``helpers`` each exercise of ``strips`` is graded
    with (``None``: the full package), in folders a confined child may read."""
    base = tmp_path_factory.mktemp(label)
    os.chmod(base, 0o755)
    out = {}
    for strip in strips:
        dest = base / (strip or "full")
        dest.mkdir()
        os.chmod(dest, 0o755)
        out[strip] = str(helpers_copy.prepare_helpers(dest, strip=strip))
    return out


def run_cells(cells, helper_copies, *, kind="notebook", strip=None, worker=None, timeout=20.0,
         cell_timeout=5.0, limits=None, **job):
    worker = worker or client.get_worker()
    conf = {"root_mount": str(worker.home / "root"), "helpers_parent": helper_copies[strip],
            "data_dir": None, "fallback_work": str(worker.home / f"fw-{time.monotonic_ns()}")}
    (worker.home / "root").mkdir(exist_ok=True)
    job = {"kind": kind, "cells": [{"index": i, "kind": "other", "source": s}
                                   for i, s in enumerate(cells)],
           "cell_timeout": cell_timeout, "timeout": timeout, **job}
    reply = worker.run(job, conf, limits or confine.Limits())
    return reply, client.parse_lines(reply["output"])


def stdout_lines(lines) -> list[str]:
    return [line.get("stdout", "") for line in lines if "cell" in line]
