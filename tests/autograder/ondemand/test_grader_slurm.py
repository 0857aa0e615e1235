"""The grading service's Slurm backend on the one-node Slurm of
tests/autograder/run/test_slurm.py (tests/slurm_machinery.py): each notebook handed in
is graded by a job ``sbatch --wait`` submits, and the scores are those of
``python -m autograder grade`` on the same notebooks with the same secret.

Deadlines (generous, the machine may be shared): 2 minutes for the daemons, 30 minutes
for the jobs (the job's own deadline, ``jobs.JOB_DEADLINE``, is an hour), 10 minutes for
the grade command.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from autograder.ondemand.service.service import GradingService
from autograder.ondemand.service.settings import Settings
from autograder.results.records import read_records
from graded_again import graded_by_the_command
from slurm_machinery import MISSING, one_node_slurm

ASSIGNMENT, NOTEBOOK = "01_dot_products", "01_dot_products.ipynb"
GRADE_DEADLINE = 600

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.getuid() != 0, reason="starts slurmctld, slurmd and munged as "
                       "root (a private one-node Slurm)"),
    pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed "
                       "(Debian: apt-get install slurm-wlm munge)"),
]


def test_the_slurm_backend_grades_each_submission_in_a_job(tmp_path, monkeypatch):
    from benchmark_term import notebook_texts

    texts = notebook_texts([ASSIGNMENT])
    # Slurm's daemons make Unix sockets under their folder: a short path (as test_slurm)
    with tempfile.TemporaryDirectory(prefix="ag-slurm-", dir="/tmp") as short, \
            one_node_slurm(Path(short)) as (env, logs):
        monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])
        monkeypatch.setenv("SBATCH_EXPORT", "ALL")
        settings = Settings(submissions=tmp_path / "subs", out=tmp_path / "out", workers=2,
                            backend="slurm",
                            cluster_options=("--cpus-per-task=1", "--mem=1G"))
        service = GradingService(settings)
        try:
            for student, kind in (("ann", "perfect"), ("bob", "mistake_1")):
                service.submit(student, ASSIGNMENT, NOTEBOOK,
                               texts[kind][ASSIGNMENT].encode())
            service.queue.join()
        finally:
            service.stop()
        assert set(service.queue.state.values()) == {"graded"}, service.queue.state
        controller = next(p for p in logs if p.name == "slurmctld.log").read_text()
        assert controller.count("_slurm_rpc_submit_batch_job: JobId=") == 2, controller[-3000:]
    served = {r["student_id"]: r for r in read_records(settings.out)}
    graded = graded_by_the_command(settings.submissions, settings.out, tmp_path, ("ann", "bob"),
                                   ASSIGNMENT, NOTEBOOK, GRADE_DEADLINE)
    for student in ("ann", "bob"):
        assert ([(c["grade_id"], c["points"]) for c in served[student]["cells"]]
                == [(c["grade_id"], c["points"]) for c in graded[student]["cells"]])
    assert served["ann"]["points"] == served["ann"]["max_points"] > served["bob"]["points"]
