"""Whether student code may run here, decided once before any notebook runs.

:func:`probe_mode` finds the isolation mode this machine allows (``namespaces`` when a child
can build the private root of :mod:`autograder.isolation.confine`, else ``fallback``), and
:func:`check_safe_to_grade` refuses to grade where student code would run as root: in
fallback mode when the grader is root and cannot drop to ``nobody``, or as root of a user
namespace that does not map the ids the children are given. Only
``AUTOGRADER_ALLOW_ROOT_FALLBACK=1`` (a throw-away container or VM) overrides the refusal.
How a child is confined is :mod:`autograder.isolation.confine`; this module only decides.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder.isolation.confine import (ALLOW_ROOT_FALLBACK_ENV, CHILD_UID_BASE, NOBODY,
                                          SYS_PIVOT_ROOT, WORK_PATH, Confinement,
                                          UnsafeToGrade, confine_inner, root_fallback_allowed,
                                          unshare_outer, world_can_run_python)


def can_drop_privileges() -> bool:
    """Whether a child of this process can run Python as ``nobody`` (always, when not root).

    The probe does what :func:`_drop_privileges` does in fallback mode: a forked child
    switches to ``nobody`` and runs this interpreter, which must import NumPy.
    """
    if os.getuid() != 0:
        return True
    if not world_can_run_python():
        return False
    pid = os.fork()
    if pid == 0:   # pragma: no cover - runs in the child
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.chdir("/")
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            os.execv(sys.executable, [sys.executable, "-I", "-c",
                                      "import os, numpy; os._exit(0 if os.getuid() else 1)"])
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


ROOT_FALLBACK_MESSAGE = (
    "refusing to grade: the sandbox has no Linux namespaces here (fallback mode), the "
    "grader runs as root, and it cannot drop to the unprivileged user 'nobody' ({why}), "
    "so student code would run as root and could change solutions/, helpers/ or anything "
    "else on this machine. Do one of: run the grader as a non-root user; run it where "
    "namespaces work (as root, or with unprivileged user namespaces enabled, e.g. "
    "sysctl kernel.unprivileged_userns_clone=1; check with `unshare --user --map-root-user "
    "--mount true`); or make the Python installation readable and executable by every "
    "user (chmod o+rx on {prefix} and every folder above it). Only inside a throw-away "
    "container or VM, {env}=1 runs student code as root anyway (unsafe).")


USERNS_MESSAGE = (
    "refusing to grade: the grader runs as root inside a user namespace (a container or "
    "pod with users of its own, e.g. Kubernetes hostUsers: false, or unshare --user) "
    "whose {which} ({maps}) {lack} {missing}, the users the sandbox runs student code as "
    "when the grader is root: a uid of each child's own, {base:#x} + its pid, and "
    "'nobody' ({nobody}). Without them every notebook would crash, or student code would "
    "run as root. Do one of: run the grader as a non-root user there (e.g. "
    "securityContext.runAsUser: 1000; it then confines student code in a user namespace "
    "of its own); or map those ids into the namespace. Only inside a throw-away "
    "container or VM, {env}=1 runs student code as root anyway (unsafe).")


def _id_map(name: str) -> list[tuple[int, int]] | None:
    """``[(first inner id, count)]`` of ``/proc/self/{uid,gid}_map`` (None: unreadable)."""
    try:
        lines = Path(f"/proc/self/{name}").read_text().splitlines()
        return [(int(f[0]), int(f[2])) for f in (line.split() for line in lines) if len(f) == 3]
    except (OSError, ValueError):
        return None


def unmapped_child_ids() -> str | None:
    """For a root grader: which of the ids it gives its children (``CHILD_UID_BASE`` +
    pid, and ``nobody``, as uid and gid) this user namespace does not map, described
    (None: all mapped, or not root)."""
    if os.getuid() != 0 or not sys.platform.startswith("linux"):
        return None
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 1 << 22
    wanted = {"the children's uids": (CHILD_UID_BASE, pid_max), "'nobody'": (NOBODY, 1)}
    problems, maps, which = [], [], []
    for name in ("uid_map", "gid_map"):
        extents = _id_map(name)
        if extents is None:
            continue
        missing = [what for what, (first, count) in wanted.items()
                   if not any(lo <= first and first + count <= lo + n for lo, n in extents)]
        if missing:
            which.append(f"/proc/self/{name}")
            text = Path(f"/proc/self/{name}").read_text()
            maps.append("; ".join(" ".join(line.split()) for line in text.splitlines()))
            problems.extend(m for m in missing if m not in problems)
    if not problems:
        return None
    return USERNS_MESSAGE.format(
        which=" and ".join(which), maps=" | ".join(maps), lack="lack" if maps[1:] else "lacks",
        missing=" and ".join(problems), base=CHILD_UID_BASE, nobody=NOBODY,
        env=ALLOW_ROOT_FALLBACK_ENV)


def check_safe_to_grade(mode: str | None = None, stream=None) -> str:
    """Decide once, before any notebook runs, whether student code may run here.

    Returns the isolation mode (:func:`probe_mode` unless given). Raises
    :class:`UnsafeToGrade` when, in fallback mode, the grader is root and
    :func:`can_drop_privileges` fails, or when the grader is root of a user namespace
    that does not map the ids it gives its children (:func:`unmapped_child_ids`), unless
    ``AUTOGRADER_ALLOW_ROOT_FALLBACK=1``, in which case a warning is written to
    ``stream`` (default: stderr) in fallback mode.
    """
    userns = unmapped_child_ids()
    if userns and not root_fallback_allowed():
        raise UnsafeToGrade(userns)
    mode = mode or probe_mode()
    if mode != "fallback" or can_drop_privileges():
        return mode
    prefix = Path(sys.base_prefix).resolve()
    why = ("the Python installation is not readable by every user" if not
           world_can_run_python() else "Python fails to start as 'nobody'")
    message = ROOT_FALLBACK_MESSAGE.format(why=why, prefix=prefix, env=ALLOW_ROOT_FALLBACK_ENV)
    if not root_fallback_allowed():
        raise UnsafeToGrade(message)
    print(f"WARNING: {ALLOW_ROOT_FALLBACK_ENV}=1: STUDENT CODE RUNS AS ROOT in fallback mode "
          "(no namespaces): a notebook can read any file on this machine, solutions/ and "
          "helpers/ included, and where the kernel lacks Landlock also change or delete "
          "them. Grade like this only inside a throw-away container or VM.",
          file=stream or sys.stderr, flush=True)
    return mode


def probe_mode() -> str:
    """``"namespaces"`` when a child can build the private root here, else ``"fallback"``.

    Forced with the environment variable ``AUTOGRADER_ISOLATION`` (for tests).
    """
    forced = os.environ.get("AUTOGRADER_ISOLATION")
    if forced in ("namespaces", "fallback"):
        return forced
    if not sys.platform.startswith("linux") or os.uname().machine not in SYS_PIVOT_ROOT:
        return "fallback"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="agr-probe-") as tmp:
        os.makedirs(f"{tmp}/root")
        os.makedirs(f"{tmp}/course")
        conf = Confinement("namespaces", f"{tmp}/root", f"{tmp}/course")
        pid = os.fork()
        if pid == 0:   # pragma: no cover - runs in the child
            code = 1
            try:
                unshare_outer()
                inner = os.fork()
                if inner == 0:
                    try:
                        confine_inner(conf)
                        ok = (not os.path.exists(str(Path(__file__).resolve()))
                              and os.getcwd() == WORK_PATH)
                        os._exit(0 if ok else 1)
                    except BaseException:
                        os._exit(1)
                _, status = os.waitpid(inner, 0)
                code = 0 if os.waitstatus_to_exitcode(status) == 0 else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return "namespaces" if os.waitstatus_to_exitcode(status) == 0 else "fallback"
