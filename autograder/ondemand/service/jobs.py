"""One grading job: ``python -m autograder grade`` on one student's notebook, run here,
on Slurm (``sbatch --wait``) or as a Kubernetes Job, then its records joined to OUT.

Every backend runs the very command an instructor runs, on a private copy of the
submission (``SUBMISSIONS/.jobs/<id>/``) with the course's grading secret, so the scores
are ``grade``'s. On a cluster the folders and the interpreter must be on storage every
node mounts at the same path (docs/grading.md).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from autograder.results import late
from autograder.results.outputs import write_outputs
from autograder.results.records import read_records
from autograder.run import secret as hidden

from .intake import Receipt
from .settings import Settings

#: Seconds a job may take (queueing on a cluster included) before it counts as failed.
JOB_DEADLINE = 3600


class JobFailed(RuntimeError):
    """The grading command did not finish; ``str()`` has the end of its output."""


@dataclasses.dataclass(frozen=True)
class JobFolders:
    root: Path
    submissions: Path
    out: Path


def prepare(settings: Settings, receipt: Receipt) -> JobFolders:
    """A private copy of the submission (and its receipt row) for one job."""
    root = settings.submissions / ".jobs" / uuid.uuid4().hex
    folders = JobFolders(root, root / "submissions", root / "out")
    target = folders.submissions / receipt.student_id / receipt.assignment
    target.mkdir(parents=True)
    shutil.copyfile(settings.submissions / receipt.student_id / receipt.assignment
                    / receipt.notebook, target / receipt.notebook)
    key = (receipt.student_id, receipt.assignment, receipt.notebook)
    row = late.read_submissions(settings.submissions).get(key)
    late.write_submissions(folders.submissions, {key: row} if row else {})
    return folders


def grade_command(settings: Settings, receipt: Receipt, folders: JobFolders) -> list[str]:
    """``python -m autograder grade`` for this one notebook, with the course's secret."""
    return [sys.executable, "-m", "autograder", "grade", str(folders.submissions),
            "--out", str(folders.out), "--jobs", "1", "--assignments", receipt.assignment,
            "--secret-file", str(secret_file(settings)), *settings.grade_options]


def secret_file(settings: Settings) -> Path:
    return hidden.location(settings.out)


def ensure_secret(settings: Settings) -> None:
    """Make the course's grading secret once, before two jobs could race to make it."""
    settings.out.mkdir(parents=True, exist_ok=True)
    hidden.load(secret_file(settings))


def _finish(result: subprocess.CompletedProcess, what: str) -> None:
    if result.returncode != 0:
        raise JobFailed(f"{what} exited {result.returncode}: "
                        f"{(result.stdout or '')[-1500:]}{(result.stderr or '')[-1500:]}")


def run_local(command: list[str], folders: JobFolders, settings: Settings) -> None:
    _finish(subprocess.run(command, capture_output=True, text=True, timeout=JOB_DEADLINE),
            "grade")


def run_slurm(command: list[str], folders: JobFolders, settings: Settings) -> None:
    """``sbatch --wait``: Slurm runs the command on some node; the call returns at its end."""
    script = folders.root / "job.sh"
    script.write_text("#!/bin/sh\nexec " + shlex.join(command) + "\n")
    script.chmod(0o755)
    _finish(subprocess.run(["sbatch", "--wait", "--parsable", "--job-name", "grader",
                            "--output", str(folders.root / "slurm.log"),
                            *settings.cluster_options, str(script)],
                           capture_output=True, text=True, timeout=JOB_DEADLINE), "sbatch")


def kubernetes_manifest(command: list[str], folders: JobFolders, settings: Settings) -> dict:
    """A batch/v1 Job running ``command`` in the image of ``cluster_options[0]`` with the
    course folder mounted from the PersistentVolumeClaim ``cluster_options[1]``."""
    if len(settings.cluster_options) < 2:
        raise ValueError("the kubernetes backend needs --cluster-option IMAGE "
                         "--cluster-option CLAIM (the volume holding the course folders)")
    image, claim = settings.cluster_options[:2]
    mount = str(settings.submissions.parent)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"grader-{folders.root.name[:20]}"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "grade", "image": image, "command": command,
                                "volumeMounts": [{"name": "course", "mountPath": mount}]}],
                "volumes": [{"name": "course",
                             "persistentVolumeClaim": {"claimName": claim}}]}}}}


def run_kubernetes(command: list[str], folders: JobFolders, settings: Settings) -> None:
    manifest = kubernetes_manifest(command, folders, settings)
    path = folders.root / "job.json"
    path.write_text(json.dumps(manifest))
    name = manifest["metadata"]["name"]
    _finish(subprocess.run(["kubectl", "create", "-f", str(path)], capture_output=True,
                           text=True, timeout=120), "kubectl create")
    _finish(subprocess.run(["kubectl", "wait", "--for=condition=complete",
                            f"--timeout={JOB_DEADLINE}s", f"job/{name}"],
                           capture_output=True, text=True, timeout=JOB_DEADLINE + 60),
            "kubectl wait")


BACKENDS = {"local": run_local, "slurm": run_slurm, "kubernetes": run_kubernetes}


class Outcome:
    """Joins each job's records to OUT, one job at a time."""

    def __init__(self, out: Path):
        self.out = out
        self._lock = threading.Lock()

    def join(self, new: list[dict]) -> None:
        """OUT's records with these notebooks' replaced by ``new``; every file rewritten.
        A record of a later submission already there wins (two jobs of one student can
        finish in either order)."""
        with self._lock:
            try:
                kept = read_records(self.out)
            except FileNotFoundError:
                kept = []
            newer = {_key(r): r.get("submitted_at", "") for r in kept}
            new = [r for r in new if r.get("submitted_at", "") >= newer.get(_key(r), "")]
            keys = {_key(r) for r in new}
            kept = [r for r in kept if _key(r) not in keys]
            write_outputs(kept + new, self.out)


def _key(record: dict) -> tuple[str, str, str]:
    return record["student_id"], record["assignment"], record["notebook"]


def grade(settings: Settings, receipt: Receipt, outcome: Outcome) -> list[dict]:
    """Grade one receipt with the configured backend; return its records (joined to OUT)."""
    folders = prepare(settings, receipt)
    try:
        BACKENDS[settings.backend](grade_command(settings, receipt, folders), folders, settings)
        mine = (receipt.student_id, receipt.assignment, receipt.notebook)
        new = [r for r in read_records(folders.out) if _key(r) == mine]   # not "missing" others
        outcome.join(new)
        return new
    finally:
        shutil.rmtree(folders.root, ignore_errors=True)
