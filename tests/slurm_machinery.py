"""A private one-node Slurm (munged, slurmctld, slurmd) for the tests that submit jobs
(tests/autograder/run/test_slurm.py, tests/autograder/ondemand/test_grader_slurm.py); see
test_slurm.py's docstring for what works in a container without systemd."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")
MISSING = [p for p in PROGRAMS if shutil.which(p) is None]
#: Generous, because the machine may be shared: the daemons' start.
START_DEADLINE_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_line() -> str:
    """This machine as ``slurmd -C`` sees it (CPUs, sockets, cores, threads, memory)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore",
            "RealMemory")
    return " ".join(f"{k}={fields[k]}" for k in keys if k in fields)


def wait_for(what: str, check, deadline_s: float, logs: list[Path]) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return
        time.sleep(1)
    pytest.fail(f"{what}: not within {deadline_s} s\n" + tails(logs))


def tails(paths: list[Path]) -> str:
    out = []
    for p in paths:
        if p.exists():
            lines = p.read_text(errors="replace").splitlines()[-25:]
            out.append(f"--- {p.name}\n" + "\n".join(lines))
    return "\n".join(out)


@contextmanager
def one_node_slurm(root: Path):
    """munged, slurmctld and slurmd on localhost, all state under ``root``; yields the
    environment for the client commands (``SLURM_CONF``) and the daemons' log files."""
    munge, state = root / "munge", root / "slurm"
    munge.mkdir(mode=0o700, parents=True)
    (state / "state").mkdir(parents=True)
    (state / "spool").mkdir()
    key, sock = munge / "munge.key", munge / "munge.socket"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname()
    conf = state / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=agtest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}",
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={sock}",
        f"StateSaveLocation={state}/state", f"SlurmdSpoolDir={state}/spool",
        f"SlurmctldPidFile={state}/slurmctld.pid", f"SlurmdPidFile={state}/slurmd.pid",
        f"SlurmctldLogFile={state}/slurmctld.log", f"SlurmdLogFile={state}/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
        "MpiDefault=none", "SwitchType=switch/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
        "SchedulerType=sched/backfill", "ReturnToService=2",
        f"NodeName=node1 NodeAddr=127.0.0.1 NodeHostname={host} {node_line()} State=UNKNOWN",
        "PartitionName=agtest Nodes=node1 Default=YES MaxTime=INFINITE State=UP",
        ""]))
    env = dict(os.environ, SLURM_CONF=str(conf))
    logs = [munge / "munged.log", state / "slurmctld.log", state / "slurmd.log",
            root / "daemons.out"]
    daemons: list[subprocess.Popen] = []
    out = open(root / "daemons.out", "wb")
    try:
        daemons.append(subprocess.Popen(
            ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
             f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
             f"--seed-file={munge}/munged.seed"], stdout=out, stderr=subprocess.STDOUT))
        wait_for("munged's socket", sock.exists, START_DEADLINE_S, logs)
        daemons.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env,
                                        stdout=out, stderr=subprocess.STDOUT))
        daemons.append(subprocess.Popen(["slurmd", "-D", "-N", "node1", "-f", str(conf)],
                                        env=env, stdout=out, stderr=subprocess.STDOUT))

        def idle() -> bool:
            assert all(d.poll() is None for d in daemons), "a daemon exited\n" + tails(logs)
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True,
                               text=True, timeout=60)
            return r.stdout.strip() == "idle"

        wait_for("the node idle in sinfo", idle, START_DEADLINE_S, logs)
        yield env, logs
    finally:
        # Jobs first (their slurmstepd would outlive slurmd), then the daemons.
        if len(daemons) == 3 and daemons[1].poll() is None:
            subprocess.run(["scancel", "--full", "--partition=agtest"], env=env,
                           capture_output=True, timeout=60)
            end = time.monotonic() + 60
            while time.monotonic() < end and subprocess.run(
                    ["squeue", "-h"], env=env, capture_output=True, text=True,
                    timeout=60).stdout.strip():
                time.sleep(1)
        for d in reversed(daemons):
            d.terminate()
        for d in reversed(daemons):
            try:
                d.wait(30)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait(30)
        out.close()
