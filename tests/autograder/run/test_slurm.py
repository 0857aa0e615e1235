"""The documented Slurm array job, run on a real (one-node) Slurm: issue 21.

The test takes ``grade.sbatch`` and the ``jobid=$(sbatch ...)`` / ``sbatch --dependency
... merge`` lines from ``docs/grading.md`` itself (the two fenced ``bash`` blocks after
"**Slurm**") and changes only the array size (``--array=1-8`` -> ``1-2``), the CPUs
(``--cpus-per-task=4`` -> ``1``), the memory (``--mem=16G`` -> ``1G``) and the course path
(``"$HOME/course"`` -> a temporary course folder holding ``submissions/`` and a copy of
this ``.venv`` made of hard links). It submits them as the documentation says, waits
for both jobs, and compares the merged folder with one unsharded ``grade`` of the same
class: every file byte for byte (``grades.csv``, ``summary.csv``, every feedback page,
...), and ``results.jsonl`` record for record but for ``"seconds"``, the wall time of the
run that graded the notebook (as in tests/autograder/run/test_merge_identical.py).

The cluster is Debian's ``slurmctld``, ``slurmd`` and ``munged`` (packages ``slurm-wlm``
and ``munge``; ``.ci/run`` installs them when it runs as root), started in the
foreground as children of the test, as root, with everything in the test's temporary
folder: a private munge key and socket (``AuthInfo=socket=...``), a ``slurm.conf`` for
one node on 127.0.0.1 with this machine's CPUs and memory (from ``slurmd -C``), free
TCP ports, state, spool, pid and log files. ``SLURM_CONF`` points the client commands
at it. What works in a container without systemd or a delegated cgroup tree (Slurm
22.05.8, Debian bookworm)::

    ProctrackType=proctrack/linuxproc      # not proctrack/cgroup
    TaskPlugin=task/none                   # not task/cgroup or task/affinity
    JobAcctGatherType=jobacct_gather/none
    AccountingStorageType=accounting_storage/none   # so no sacct: squeue is polled
    SlurmUser=root, SlurmdUser=root; munged --force (it runs as root)

The jobs inherit the test's environment (``sbatch``'s default ``--export=ALL``, set
explicitly with ``SBATCH_EXPORT=ALL``), so ``TMPDIR`` is the test's own folder. Every
daemon is stopped in a ``finally`` (jobs still queued or running are cancelled first),
whether the test passes or fails. Skipped unless root with the four programs installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from autograder.run.pool import shard_of
from benchmark_term import canvas_download
from slurm_machinery import MISSING, one_node_slurm, tails, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.getuid() != 0, reason="starts slurmctld, slurmd and munged as "
                       "root (a private one-node Slurm)"),
    pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed "
                       "(Debian: apt-get install slurm-wlm munge; .ci/run does it as root)"),
]

#: Generous, because the machine may be shared: the two jobs.
JOBS_DEADLINE_S = 30 * 60

STUDENTS = 4                       # perfect, two typical mistakes, untouched notebook
ASSIGNMENTS = ["01_dot_products"]

#: What the test changes in the documented script: (documented, used), each once.
SUBSTITUTIONS = [("--array=1-8", "--array=1-2"), ("--cpus-per-task=4", "--cpus-per-task=1"),
                 ("--mem=16G", "--mem=1G")]


def documented_slurm_blocks() -> tuple[str, str]:
    """``grade.sbatch`` and the submit lines: the two ```bash blocks after **Slurm**."""
    text = (REPO_ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    start = text.index("**Slurm**")
    end = text.index("**Kubernetes**", start)
    blocks = re.findall(r"```bash\n(.*?)```", text[start:end], flags=re.S)
    assert len(blocks) == 2, blocks
    return blocks[0], blocks[1]


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_documented_slurm_array_job_merges_to_one_runs_output(tmp_path):
    sbatch_script, submit = documented_slurm_blocks()
    course = tmp_path / "course"
    course.mkdir()
    # The course's .venv: hard links to this one's files (a symlink would not do: the
    # sandbox mounts the venv's real path, but runs the kernel by the path invoked, which
    # then does not exist inside it and every answer is "not defined").
    r = subprocess.run(["cp", "-al", sys.prefix, str(course / ".venv")], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"cannot hard-link {sys.prefix} into {course}: {r.stderr.strip()}")
    assert '"$HOME/course"' in sbatch_script
    sbatch_script = sbatch_script.replace('"$HOME/course"', f'"{course}"')
    for documented, used in SUBSTITUTIONS:
        assert sbatch_script.count(documented) == 1, (documented, sbatch_script)
        sbatch_script = sbatch_script.replace(documented, used)
    (course / "grade.sbatch").write_text(sbatch_script)
    (course / "submit.sh").write_text("set -euo pipefail\n" + submit)

    deadline = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
    canvas_download(tmp_path / "download.zip", STUDENTS, ASSIGNMENTS, deadline)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    def run(*args: str) -> None:
        r = subprocess.run([".venv/bin/python", "-m", "autograder", *args], cwd=course,
                           env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (args, r.stdout, r.stderr)

    run("collect", str(tmp_path / "download.zip"), "--out", "submissions")
    students = sorted(p.name for p in (course / "submissions").iterdir()
                      if not p.name.startswith("_"))
    assert len(students) == STUDENTS
    assert {shard_of(s, 2) for s in students} == {1, 2}     # both array tasks grade someone
    # the documented secret file, made by this first grade; the array job's shards use it
    run("grade", "submissions", "--out", str(tmp_path / "single"), "--jobs", "2",
        "--secret-file", "grading-secret.key")
    assert (course / "grading-secret.key").is_file()

    # Slurm's daemons make Unix sockets under their spool folder, and a socket's path has
    # at most 107 bytes: the test's own folder is too deep (under pytest-xdist, 112 bytes
    # made every job fail to launch), so the cluster lives in a short folder of its own.
    with tempfile.TemporaryDirectory(prefix="ag-slurm-", dir="/tmp") as short, \
            one_node_slurm(Path(short) / "cluster") as (slurm_env, logs):
        slurm_env = dict(slurm_env, OPENBLAS_NUM_THREADS="1", SBATCH_EXPORT="ALL")
        job_logs = lambda: sorted(course.glob("slurm-*.out"))     # noqa: E731

        def done() -> bool:
            q = subprocess.run(["squeue", "-h", "-o", "%i %T %r"], env=slurm_env,
                               capture_output=True, text=True, timeout=60)
            assert q.returncode == 0, q.stderr
            for failed in ("DependencyNeverSatisfied", "launch_failed"):
                assert failed not in q.stdout, (
                    "a job failed\n" + q.stdout + tails(job_logs() + logs))
            return not q.stdout.strip()

        # the test's environment reaches a job: its own TMPDIR
        r = subprocess.run(["sbatch", "--output", str(tmp_path / "env.out"),
                            "--wrap", "printenv TMPDIR"], env=slurm_env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, (r.stdout, r.stderr, tails(logs))
        wait_for("the job printing its TMPDIR", done, JOBS_DEADLINE_S, logs)
        assert (tmp_path / "env.out").read_text().strip() == os.environ["TMPDIR"]
        r = subprocess.run(["bash", "submit.sh"], cwd=course, env=slurm_env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (r.stdout, r.stderr, tails(logs))

        wait_for("the array job and the merge job", done, JOBS_DEADLINE_S,
                 [*job_logs(), *logs])
        merged = course / "grading-output"
        assert merged.is_dir(), tails(job_logs() + logs)
        assert sorted(p.name for p in (course / "out").iterdir()) == ["shard-1", "shard-2"]
        for log in job_logs():
            assert "Traceback" not in log.read_text(), log.read_text()

    single, merged_files = files(tmp_path / "single"), files(merged)
    assert sorted(single) == sorted(merged_files)
    assert len([n for n in single if n.startswith("feedback/")]) >= STUDENTS
    for name in single:
        if name != "results.jsonl":
            assert single[name] == merged_files[name], name

    def records(data: bytes) -> list[dict]:
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in data.decode().splitlines()]

    assert records(single["results.jsonl"]) == records(merged_files["results.jsonl"])
    # really graded: the right answers get full marks, the typical mistakes do not
    points = {r["student_id"]: (r["points"], r["max_points"])
              for r in records(single["results.jsonl"]) if r["assignment"] == ASSIGNMENTS[0]}
    assert sorted(points) == students
    assert points[students[0]][0] == points[students[0]][1] > 0          # perfect
    assert all(points[s][0] < points[s][1] for s in students[1:])      # mistakes, untouched
