"""The Gradescope autograder zip, run as Gradescope runs it (issue 39).

The test builds the zip with ``python -m autograder gradescope``, unpacks it as Gradescope
does into ``/autograder/source``, and runs ``setup.sh`` and then, for each student,
``run_autograder`` with the student's files in ``/autograder/submission`` and Gradescope's
``submission_metadata.json`` beside them, all inside a private mount namespace whose root
is a fresh tmpfs holding this machine's system folders and a scratch folder mounted at
``/autograder`` (``unshare --mount`` as root, then ``pivot_root`` into it, as a container
runtime does; a plain ``chroot`` would forbid the sandbox's user namespaces): the layout
of Gradescope's image, with nothing made on this machine's own ``/``. ``setup.sh`` installs the course's
pinned packages from PyPI into ``/autograder/venv`` with the machine's pip cache.

A perfect and a wrong student get, in ``results.json``, the scores ``python -m autograder
grade`` gives the same notebooks with the same secret and student id; the wrong
student's hidden-case words are only in entries visible ``after_published``; a
submission past the due date is penalised by the late policy, one within the student's
extension (Gradescope's per-user due date) is not.

Deadlines (the machine may be busy): 30 minutes for setup.sh, 10 minutes per run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from benchmark_term import notebook_texts

ASSIGNMENT = "02_softmax"
DUE = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
SETUP_DEADLINE, RUN_DEADLINE = 1800, 600
SYSTEM = ("/usr", "/etc", "/root", "/dev", "/proc", "/sys", "/tmp", "/var", "/run", "/opt")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="needs root and unshare (a private mount namespace)")

ENTER = r"""
set -euo pipefail
new="$1"; scratch="$2"; shift 2
mount -t tmpfs tmpfs "$new"
for d in /bin /sbin /lib /lib64 /usr /etc /root /dev /proc /sys /tmp /var /run /opt; do
    if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$new$d"
    elif [ -d "$d" ]; then mkdir -p "$new$d"; mount --rbind "$d" "$new$d"; fi
done
mkdir "$new/autograder" "$new/.old"
mount --bind "$scratch" "$new/autograder"
cd "$new"
pivot_root . .old
exec /usr/sbin/chroot . /bin/sh -c 'umount -l /.old && rmdir /.old && exec "$@"' enter \
    /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TMPDIR=/tmp LANG=C.UTF-8 "$@"
"""


def _in_gradescope(scratch: Path, tmp: Path, *command: str, timeout: float):
    new = tmp / "root"
    new.mkdir(exist_ok=True)
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                           ENTER, "enter", str(new), str(scratch), *command],
                          capture_output=True, text=True, timeout=timeout)


def _cli(*args, tmp: Path, check: bool = True):
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)],
                          cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=RUN_DEADLINE)
    if check:
        assert done.returncode == 0, (done.stdout, done.stderr)
    return done


@pytest.fixture(scope="module")
def gradescope(tmp_path_factory):
    """The zip built and unpacked at ``/autograder/source``, ``setup.sh`` run."""
    base = tmp_path_factory.mktemp("gradescope")
    tmp = base / "tmp"
    tmp.mkdir()
    _cli("gradescope", ASSIGNMENT, "--out", base / "zip", "--late-policy", "10:50",
         tmp=tmp)
    scratch = base / "autograder"
    with zipfile.ZipFile(base / "zip" / "autograder.zip") as zf:
        names = zf.namelist()
        zf.extractall(scratch / "source")
        for info in zf.infolist():          # zip modes, as Gradescope's unzip keeps them
            os.chmod(scratch / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    assert {"setup.sh", "run_autograder", "gradescope.json", "grading-secret.key"} <= set(names)
    assert not any(n.startswith(("tests/", "notebooks/", ".git")) for n in names)
    setup = _in_gradescope(scratch, tmp, "/bin/bash", "/autograder/source/setup.sh",
                           timeout=SETUP_DEADLINE)
    assert setup.returncode == 0, setup.stderr[-3000:]
    assert (scratch / "venv" / "bin" / "python").exists()
    return {"scratch": scratch, "tmp": tmp, "base": base}


def _submit(g: dict, name: str, text: str, metadata: dict) -> dict:
    scratch = g["scratch"]
    for folder in ("submission", "results"):
        shutil.rmtree(scratch / folder, ignore_errors=True)
        (scratch / folder).mkdir()
    (scratch / "submission" / f"{ASSIGNMENT}.ipynb").write_text(text)
    (scratch / "submission_metadata.json").write_text(json.dumps(metadata))
    done = _in_gradescope(scratch, g["tmp"], "/autograder/source/run_autograder",
                          timeout=RUN_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((scratch / "results" / "results.json").read_text())


def _metadata(sid: str, created: datetime, own_due: datetime | None = None) -> dict:
    """``submission_metadata.json`` as Gradescope writes it (its documented fields)."""
    user = {"email": f"{sid}@example.edu", "id": 1000 + len(sid), "name": f"Student {sid}",
            "sid": sid, "assignment": {"due_date": (own_due or DUE).isoformat(),
                                       "late_due_date": None, "release_date": None}}
    return {"id": 123456, "created_at": created.isoformat(), "assignment": {
        "due_date": DUE.isoformat(), "group_size": None, "id": 99, "late_due_date": None,
        "release_date": (DUE - timedelta(days=7)).isoformat(), "title": "Softmax",
        "total_points": "10.0"}, "submission_method": "upload", "users": [user],
        "previous_submissions": []}


def _grade_scores(g: dict, sid: str, text: str) -> float:
    """What ``python -m autograder grade`` gives the same notebook, student id and secret."""
    subs = g["base"] / f"subs-{sid}"
    (subs / sid / ASSIGNMENT).mkdir(parents=True)
    (subs / sid / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text(text)
    out = g["base"] / f"out-{sid}"
    _cli("grade", subs, "--out", out, "--jobs", "1", "--secret-file",
         g["scratch"] / "source" / "grading-secret.key", tmp=g["tmp"])
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return record["points"]


@pytest.mark.slow
def test_a_perfect_and_a_wrong_student_score_as_grade_does(gradescope):
    texts = notebook_texts([ASSIGNMENT])
    for sid, kind in (("s1001", "perfect"), ("s1002", "mistake_1")):
        text = texts[kind][ASSIGNMENT]
        results = _submit(gradescope, sid, text, _metadata(sid, DUE - timedelta(hours=1)))
        expected = _grade_scores(gradescope, sid, text)
        assert results["score"] == pytest.approx(expected), (kind, results["output"])
        scored = [t for t in results["tests"] if "max_score" in t]
        assert sum(t["score"] for t in scored) == pytest.approx(expected)
        assert {t["visibility"] for t in results["tests"]} <= {"visible", "after_published"}
        assert "s1001" in results["output"] or sid in results["output"]
        if kind == "perfect":
            assert all(t["score"] == t["max_score"] for t in scored)
        else:
            assert expected < sum(t["max_score"] for t in scored)
            wrong = [t for t in scored if t["score"] < t["max_score"]]
            assert wrong and all(t["output"] for t in wrong)
        # a hidden case's words are never in what a student sees before publishing
        visible = "\n".join(t["output"] for t in results["tests"] if t["visibility"] == "visible")
        for t in results["tests"]:
            if t["visibility"] == "after_published":
                for line in t["output"].splitlines()[1:]:
                    if "hidden" in line.lower() and len(line) > 20:
                        assert line not in visible, line


@pytest.mark.slow
def test_late_is_gradescopes_time_against_the_students_own_due_date(gradescope):
    text = notebook_texts([ASSIGNMENT])["perfect"][ASSIGNMENT]
    on_time = _submit(gradescope, "s1003", text, _metadata("s1003", DUE - timedelta(hours=1)))
    late = _submit(gradescope, "s1003", text, _metadata("s1003", DUE + timedelta(hours=30)))
    extended = _submit(gradescope, "s1003", text,
                       _metadata("s1003", DUE + timedelta(hours=30), DUE + timedelta(days=2)))
    assert on_time["score"] > 0
    assert late["score"] == pytest.approx(on_time["score"] * 0.8)     # 2 days, 10 % each
    assert "2 day(s) late" in late["output"]
    assert extended["score"] == pytest.approx(on_time["score"])


@pytest.mark.slow
def test_a_submission_without_the_notebook_is_told_what_to_upload(gradescope):
    scratch = gradescope["scratch"]
    for folder in ("submission", "results"):
        shutil.rmtree(scratch / folder, ignore_errors=True)
        (scratch / folder).mkdir()
    (scratch / "submission" / "notes.txt").write_text("hello")
    (scratch / "submission_metadata.json").write_text(json.dumps(
        _metadata("s1004", DUE)))
    done = _in_gradescope(scratch, gradescope["tmp"], "/autograder/source/run_autograder",
                          timeout=RUN_DEADLINE)
    assert done.returncode == 0, done.stderr
    results = json.loads((scratch / "results" / "results.json").read_text())
    assert results["score"] == 0 and f"{ASSIGNMENT}.ipynb" in results["output"]
    assert "notes.txt" in results["output"]


def test_an_unknown_assignment_or_policy_builds_nothing(tmp_path):
    for args in (("99_nothing",), (ASSIGNMENT, "--late-policy", "lots")):
        done = _cli("gradescope", *args, "--out", tmp_path / "z", tmp=tmp_path / "t",
                    check=False)
        assert done.returncode == 2 and "nothing was written" in done.stderr
        assert not (tmp_path / "z" / "autograder.zip").exists()


def _group(created: datetime, *members: tuple[str, datetime | None, str]) -> dict:
    """A group submission's metadata: several ``users[]``, each (sid, own due, name)."""
    metadata = _metadata(members[0][0], created)
    metadata["users"] = [{**_metadata(sid, created, due)["users"][0], "name": name}
                         for sid, due, name in members]
    return metadata


@pytest.mark.slow
def test_a_group_submission_is_judged_against_its_most_generous_members_deadline(gradescope):
    """Gradescope gives a group the extension of any of its members; the names it
    gives (hostile: a student writes their own) are escaped in the output."""
    text = notebook_texts([ASSIGNMENT])["perfect"][ASSIGNMENT]
    created = DUE + timedelta(hours=30)
    hostile = "Eve\x1b[2J\x1b]8;;http://x\x07\u202e"
    plain = _submit(gradescope, "s1005", text,
                    _metadata("s1005", DUE - timedelta(hours=1)))["score"]
    no_extension = _submit(gradescope, "s1005", text, _group(
        created, ("s1005", None, "Ann"), ("s1006", None, hostile)))
    second_has_one = _submit(gradescope, "s1005", text, _group(
        created, ("s1005", None, "Ann"), ("s1006", DUE + timedelta(days=2), hostile)))
    assert no_extension["score"] == pytest.approx(plain * 0.8)       # 2 days, 10 % each
    assert second_has_one["score"] == pytest.approx(plain)
    for results in (no_extension, second_has_one):
        assert "s1005" in results["output"] and "s1006" in results["output"]
        assert not any(c in results["output"] for c in "\x1b\x07\u202e")


def test_a_build_time_extension_of_any_group_member_covers_the_group(tmp_path):
    """``--extensions`` at build time, given to the group's second member."""
    from autograder.ondemand import gradescope as gs
    from autograder.results import late

    ext = tmp_path / "ext.csv"
    ext.write_text(f"student_id,assignment,deadline\ns1008,{ASSIGNMENT},"
                   f"{(DUE + timedelta(days=3)).isoformat()}\n")
    config = {"deadline": None, "extensions": late.read_extensions(ext).to_json()}
    metadata = _group(DUE + timedelta(hours=30), ("s1007", None, "A"), ("s1008", None, "B"))
    received, due = gs.lateness(metadata, config, ASSIGNMENT)
    assert due == DUE + timedelta(days=3) and received > DUE
    alone = _metadata("s1007", DUE + timedelta(hours=30))
    assert gs.lateness(alone, config, ASSIGNMENT)[1] == DUE


@pytest.mark.parametrize("fake", [f"__MACOSX/hw/._{ASSIGNMENT}.ipynb", f"hw/._{ASSIGNMENT}.ipynb",
                                  f"__MACOSX/._{ASSIGNMENT}.ipynb", f"._{ASSIGNMENT}.ipynb",
                                  f"hw/.ipynb_checkpoints/{ASSIGNMENT}-checkpoint.ipynb"])
@pytest.mark.parametrize("real", [f"{ASSIGNMENT}.ipynb", f"hw/{ASSIGNMENT}.ipynb"])
def test_a_zip_made_on_a_mac_is_graded_by_its_notebook_not_its_metadata(tmp_path, fake, real):
    """Gradescope unpacks an uploaded zip into ``/autograder/submission``; one made on a
    Mac carries ``._NAME`` copies (under ``__MACOSX/`` or beside the file), which sort
    before the notebook. The notebook is what is placed."""
    from autograder.ondemand import gradescope as gs

    submission = tmp_path / "submission"
    for name, data in ((fake, b"\x00\x05\x16\x07Mac OS X"), (real, b'{"cells": []}')):
        (submission / name).parent.mkdir(parents=True, exist_ok=True)
        (submission / name).write_bytes(data)
    placed, notes = gs.place(submission, "s1", [ASSIGNMENT], tmp_path / "subs")
    assert placed == [(ASSIGNMENT, f"{ASSIGNMENT}.ipynb")], notes
    graded = tmp_path / "subs" / "s1" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert graded.read_bytes() == b'{"cells": []}'
