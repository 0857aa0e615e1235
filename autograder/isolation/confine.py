"""Isolation for untrusted student code: a private file system view, no network, rlimits.

Everything a submission runs (the notebook's cells in the grading kernel, and the
authoritative re-run of each exercise) happens in a child process that calls
:func:`confine_inner` first. Two modes, chosen once per worker by :func:`autograder.isolation.safety.probe_mode`:

``namespaces`` (Linux, as root or with unprivileged user namespaces)
    The child enters new mount, network, IPC, UTS and PID namespaces (plus a user
    namespace when the grader is not root). It builds a fresh root on a tmpfs holding
    only read-only bind mounts of what Python needs (``/usr``, the interpreter's prefix,
    the virtual environment, a few files of ``/etc`` and ``/dev``) and one copy of the
    course's ``helpers`` package chosen by the grader, then ``pivot_root``s into it and
    detaches the old root. The repository, ``solutions/``, the submissions, the grading
    output and every other user's files are simply not there. ``/tmp`` is a small
    private tmpfs (the working folder), everything else is read-only. The child then
    drops every privilege (``nobody`` when the grader is root, all capabilities
    otherwise) and sets ``no_new_privs``. In a new PID namespace the child is PID 1 of
    its own world: ``os.getppid()`` is 0, ``kill(-1)`` reaches only its own
    descendants, and it cannot see the grader or other students' children.
    When the grader is root, each child also gets a user of its own: after building its
    root it switches to the host uid ``CHILD_UID_BASE`` + the pid of its process A
    (distinct among all children alive on the machine) and enters a new user namespace
    in which that uid appears as ``nobody`` (A writes the map). Two children thus never
    share a uid, a user keyring or a process-count limit, whatever else fails. A
    non-root grader's children each get a user namespace of their own (the grader's
    uid, mapped to itself). Every child joins a new session keyring.

``fallback`` (no namespaces available)
    A documented weaker mode: new session, working folder in a private temp dir,
    environment cleared, rlimits, ``nobody`` when the grader is root, and ``helpers``
    imported from the grader's copy (so the stripped copy still hides the reference of
    the function under test). Files readable by that user stay readable; there is no
    network isolation. A root grader's children each run as a uid of their own
    (``CHILD_UID_BASE`` + pid, as above; no user namespace), so they cannot signal or
    read each other. The grader still survives any attack, because it never runs
    student code in its own process and reads results only through a size-capped pipe.
    Student code never runs as root: when the grader is root and cannot drop to
    ``nobody`` (the Python installation is not readable by ``nobody``, e.g. pyenv under
    ``/root``), :func:`autograder.isolation.safety.check_safe_to_grade` refuses to grade before any notebook runs,
    and :func:`confine_inner` refuses to hand a root process to student code, unless the
    instructor sets ``AUTOGRADER_ALLOW_ROOT_FALLBACK=1`` (unsafe, see
    ``docs/threat_model.md``).

Both modes apply rlimits: address space (``RLIMIT_AS``), CPU seconds, file size,
open files, core dumps, and (as ``nobody``) processes.

The copies of ``helpers`` a child imports are built by
:mod:`autograder.isolation.helpers_copy`; values cross the boundary only through
:mod:`autograder.isolation.wire`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import resource
import select
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path


from autograder import REPO_ROOT
from autograder.isolation import landlock

HELPERS_DIR = REPO_ROOT / "helpers"

# Linux constants (include/uapi/linux/sched.h, mount.h, prctl.h).
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
NOBODY = 65534
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEYCTL_JOIN_SESSION_KEYRING = 1
#: A root grader runs each child as host uid CHILD_UID_BASE + the pid of the child's
#: process A: unique among the children alive at any moment (pids are at most 2**22).
#: The range 0x70000000-0x703FFFFF lies above the container ranges systemd hands out
#: (up to 0x6FFFFFFF) and holds no user of the machine.
CHILD_UID_BASE = 0x70000000

#: Where the chosen ``helpers`` copy appears inside the child (its parent goes on sys.path).
COURSE_PATH = "/course"
#: The child's working folder inside the private root.
WORK_PATH = "/tmp/work"

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


#: Set to ``1`` to let student code run as root in fallback mode (unsafe: for a
#: throw-away container or VM only).
ALLOW_ROOT_FALLBACK_ENV = "AUTOGRADER_ALLOW_ROOT_FALLBACK"


class UnsafeToGrade(RuntimeError):
    """Student code would run as root here: grading is refused (see :mod:`autograder.isolation.safety`)."""


class IsolationError(OSError):
    """Setting up the isolation failed (the child must not run student code then)."""


@dataclass
class Limits:
    """Resource limits of one child process."""

    memory_mb: int = 2048        # RLIMIT_AS
    cpu_seconds: int = 150       # RLIMIT_CPU (a busy loop that ignores the timers)
    file_mb: int = 16            # RLIMIT_FSIZE, also the size of the private /tmp
    open_files: int = 256        # RLIMIT_NOFILE
    processes: int = 64          # RLIMIT_NPROC, only applied when running as nobody


@dataclass
class Confinement:
    """What a child needs to confine itself: mode, the helpers copy, data files."""

    mode: str                    # "namespaces" or "fallback"
    root_mount: str              # an empty folder to mount the private root on
    helpers_parent: str          # a folder holding the ``helpers`` package to expose
    data_dir: str | None = None  # files copied into the working folder (may be None)
    fallback_work: str | None = None  # the working folder in fallback mode
    limits: Limits = field(default_factory=Limits)
    #: Read-only data folders (host path -> environment variable naming it in the child),
    #: e.g. the course's cache of converted model weights.
    data_folders: dict[str, str] = field(default_factory=dict)


class ChildIdentity:
    """Who the learner's process B will be, arranged by its process A around the fork.

    A root grader gives B the host uid ``CHILD_UID_BASE + pid of A`` and, in namespace
    mode, a user namespace of its own whose map (that uid seen as ``nobody`` inside) A
    writes once B has entered it: a process cannot write such a map for itself. A shares
    B's mount namespace, whose root B replaces, so A opens ``/proc`` before the fork and
    B closes that copy at once. A pipe that A keeps open also tells B, once B's
    credentials are final, whether A is still alive (the kernel forgets B's parent-death
    signal at each change of credentials, so B sets it last, then checks).
    """

    def __init__(self, mode: str):
        self.uid = CHILD_UID_BASE + os.getpid() if os.getuid() == 0 else None
        self.userns = self.uid is not None and mode == "namespaces"
        self._ready = os.pipe() if self.userns else None
        self._proc = (os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                      if self.userns else None)
        self._alive = os.pipe()

    def in_child(self) -> None:
        """In B, just after the fork."""
        if self._ready:
            os.close(self._ready[0])
            os.close(self._proc)
        os.close(self._alive[1])

    def in_parent(self, pid: int) -> None:
        """In A, just after the fork: map B's user namespace once B has made it."""
        os.close(self._alive[0])
        if not self._ready:
            return
        os.close(self._ready[1])
        answer = b"x"                            # B finds no map and refuses to go on
        try:
            if os.read(self._ready[0], 1) == b"u":
                for name, text in (("uid_map", f"{NOBODY} {self.uid} 1\n"),
                                   ("setgroups", "deny"),
                                   ("gid_map", f"{NOBODY} {self.uid} 1\n")):
                    fd = os.open(f"{pid}/{name}", os.O_WRONLY, dir_fd=self._proc)
                    try:
                        os.write(fd, text.encode())
                    finally:
                        os.close(fd)
                answer = b"m"
        except OSError:
            pass
        finally:
            os.close(self._ready[0])
            os.close(self._proc)
        try:
            os.write(self._alive[1], answer)
        except OSError:
            pass

    def enter_user_namespace(self) -> None:
        """In B, already running as ``self.uid``: a new user namespace, mapped by A."""
        _check(_libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
        os.write(self._ready[1], b"u")
        os.close(self._ready[1])
        if os.read(self._alive[0], 1) != b"m" or os.getuid() != NOBODY:
            raise IsolationError(0, "the child's user namespace was not mapped")

    def check_parent(self) -> None:
        """In B, after its last change of credentials: set the parent-death signal and
        make sure A had not already gone (then the pipe reads as ended)."""
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        ready, _, _ = select.select([self._alive[0]], [], [], 0)
        os.close(self._alive[0])
        if ready:
            raise IsolationError(0, "the child's supervisor is gone")


# ---------------------------------------------------------------------------------------
# Namespaces: called in the forked child. "outer" runs in the process that forks the
# PID-1 child, "inner" in that child, before any student code.
# ---------------------------------------------------------------------------------------


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    _check(_libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def unshare_outer() -> None:
    """New namespaces for the children of the calling (single-threaded) process."""
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    _check(_libc.unshare(flags), "unshare")
    if uid != 0:   # identity map: we keep our uid but hold capabilities in the new userns
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _bind(src: str, root: str, *, writable: bool = False, target: str | None = None) -> None:
    """Bind ``src`` at the same path (or ``target``) under ``root``, read-only by default."""
    dest = root + (target or src)
    if os.path.isdir(src):
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.exists(dest):
            open(dest, "w").close()
    _mount(src, dest, None, MS_BIND | MS_REC)
    if not writable:
        # Keep the flags the source is mounted with (a user namespace may not drop them).
        st = os.statvfs(src)
        keep = st.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048 | 4096)
        _mount(None, dest, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | keep)


def _read_only_sources() -> list[str]:
    """Host paths the private root exposes read-only: what Python and NumPy need."""
    paths = ["/usr", sys.base_prefix, sys.prefix]
    paths += [f"/etc/{name}" for name in ("ld.so.cache", "localtime", "passwd", "group",
                                          "nsswitch.conf")]
    out = []
    for p in paths:
        p = os.path.realpath(p)
        if os.path.exists(p) and not any(p == q or p.startswith(q + "/") for q in out):
            out.append(p)
    return out


def _host_links() -> list[tuple[str, str]]:
    """The symbolic links on the way to what the interpreter uses (``sys.prefix``,
    ``sys.base_prefix``, ``sys.executable``, ``sys.path``; a course's ``.venv`` may be
    one), each with the real path it leads to, shortest first. The private root binds
    the real paths (:func:`_read_only_sources`) and recreates these links, so that the
    paths the interpreter already holds (its modules' ``__path__`` included) still lead
    somewhere: without them every import of a module not yet loaded failed and every
    answer was "not defined" (issue 23)."""
    out: dict[str, str] = {}
    for path in [sys.prefix, sys.base_prefix, sys.executable, *sys.path]:
        if not path or not os.path.isabs(path):
            continue
        parts = Path(path).parts
        for n in range(2, len(parts) + 1):
            q = str(Path(*parts[:n]))
            if q not in out and os.path.islink(q):
                out[q] = os.path.realpath(q)
    return sorted(out.items(), key=lambda item: (item[0].count("/"), item[0]))


def _recreate_links(root: str, links: list[tuple[str, str]]) -> None:
    """Recreate ``links`` (see :func:`_host_links`) in the private ``root``, where no
    file of that name exists yet; each points at the real path, absolute."""
    for link, target in links:
        dest = root + link
        try:
            if os.path.lexists(dest):
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.symlink(target, dest)
        except OSError:          # inside a read-only bind: the link is there already
            pass


def confine_inner(conf: Confinement, ident: ChildIdentity | None = None) -> str:
    """Confine the calling process; return its working folder. Run before student code.
    ``ident``: what its process A arranged (see :class:`ChildIdentity`)."""
    os.setsid()
    limits = conf.limits
    if conf.mode == "namespaces":
        root = conf.root_mount
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
        # The private /tmp first: a virtual environment or course folder that lives
        # under the host's /tmp (a CI clone, say) is then bound on top of it, not hidden.
        os.makedirs(root + "/tmp", exist_ok=True)
        _mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={limits.file_mb * 2}m,mode=1777")
        for src in _read_only_sources():
            _bind(src, root)
        for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(link):
                os.symlink(os.readlink(link), root + link)
        _recreate_links(root, _host_links())     # a symlinked .venv, say
        os.makedirs(root + "/dev", exist_ok=True)
        for dev in ("null", "zero", "random", "urandom"):
            _bind(f"/dev/{dev}", root, writable=True)
        _bind(conf.helpers_parent, root, target=COURSE_PATH)
        for n, host in enumerate(sorted(conf.data_folders)):
            if os.path.isdir(host):
                _bind(host, root, target=f"/data/{n}")
        os.makedirs(root + WORK_PATH)
        if conf.data_dir:
            _copy_tree(conf.data_dir, root + WORK_PATH)
        os.makedirs(root + "/.old")
        arch = os.uname().machine
        _check(_libc.syscall(SYS_PIVOT_ROOT[arch], root.encode(), (root + "/.old").encode()),
               "pivot_root")
        os.chdir("/")
        _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
        os.rmdir("/.old")
        _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        work = WORK_PATH
        sys.path[:] = [COURSE_PATH] + [p for p in sys.path if p and os.path.isdir(p)]
    else:
        work = conf.fallback_work or "/tmp"
        os.makedirs(work, exist_ok=True)
        if conf.data_dir:
            _copy_tree(conf.data_dir, work)
        venv = Path(sys.prefix).resolve()
        sys.path[:] = [conf.helpers_parent] + [
            p for p in sys.path
            if p and (not _inside(p, REPO_ROOT) or _inside(p, venv))
        ]
    # Never fall back on the editable install's finder, which knows the real helpers/.
    sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in getattr(
        f, "__name__", type(f).__name__)]
    sys.path_importer_cache.clear()
    os.chdir(work)
    _set_limits(limits)
    _drop_privileges(work, conf.mode, ident)
    if conf.mode == "fallback":          # no private mounts: the kernel limits the writes
        landlock.restrict_writes([work, "/dev/null"])
    _new_session_keyring()
    if ident is not None:
        ident.check_parent()
    if conf.mode == "fallback" and 0 in os.getresuid() and not root_fallback_allowed():
        raise UnsafeToGrade("refusing to run student code as root (privileges could not be "
                            f"dropped; see {ALLOW_ROOT_FALLBACK_ENV} in docs/grading.md)")
    os.environ.clear()
    os.environ.update({"HOME": work, "TMPDIR": "/tmp" if conf.mode == "namespaces" else work,
                       "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
                       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    for n, host in enumerate(sorted(conf.data_folders)):
        os.environ[conf.data_folders[host]] = host if conf.mode == "fallback" else f"/data/{n}"
    return work


def course_path(conf: Confinement) -> str:
    """Where a confined child finds the folder ``conf.helpers_parent`` (read-only)."""
    return COURSE_PATH if conf.mode == "namespaces" else conf.helpers_parent


def _inside(path: str, folder: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(folder)
    except OSError:
        return False


def _copy_tree(src: str, dest: str) -> None:
    for entry in os.scandir(src):
        if entry.is_dir(follow_symlinks=False):
            shutil.copytree(entry.path, os.path.join(dest, entry.name), symlinks=False)
        elif entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, os.path.join(dest, entry.name))


def _set_limits(limits: Limits) -> None:
    mb = 1024 * 1024
    for res, value in ((resource.RLIMIT_AS, limits.memory_mb * mb),
                       (resource.RLIMIT_CPU, limits.cpu_seconds),
                       (resource.RLIMIT_FSIZE, limits.file_mb * mb),
                       (resource.RLIMIT_NOFILE, limits.open_files),
                       (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(res)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(res, (value, value))


def world_can_run_python() -> bool:
    """Whether ``nobody`` can read this interpreter's files (pyenv under /root: no)."""
    for prefix in {sys.base_prefix, sys.prefix}:
        path = Path(prefix).resolve()
        for folder in (path, *path.parents):
            if not os.stat(folder).st_mode & 0o001:
                return False
    return True


def _drop_privileges(work: str, mode: str, ident: ChildIdentity | None = None) -> None:
    """Leave root (for a uid of this child's own, see :class:`ChildIdentity`, or
    ``nobody``) or, for a non-root grader, every capability; then ``no_new_privs``."""
    dropped = False
    if os.getuid() == 0 and (mode == "namespaces" or world_can_run_python()):
        uid = ident.uid if ident is not None and ident.uid is not None else NOBODY
        os.chown(work, uid, uid)
        os.chmod(work, 0o700)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)      # also clears every capability
        if ident is not None and ident.userns:
            ident.enter_user_namespace()  # uid seen as nobody; all capabilities there
        dropped = True
    if os.getuid() != 0:
        arch = os.uname().machine
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)      # _LINUX_CAPABILITY_VERSION_3
        data = (ctypes.c_uint32 * 6)()                      # all zero: no capabilities
        if arch in SYS_CAPSET:
            _check(_libc.syscall(SYS_CAPSET[arch], header, data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if dropped or os.getuid() == NOBODY:   # counted per uid: this child's own
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    # Nobody else may read this process's memory or files under /proc/PID, even a
    # process of the same user (a non-root grader's fallback children).
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")


def _new_session_keyring() -> None:
    """Join a new, empty session keyring: not the one inherited from the grader (which
    every child would share, whatever its uid)."""
    nr = SYS_KEYCTL.get(os.uname().machine)
    if nr is None:
        return
    _libc.syscall.restype = ctypes.c_long
    if _libc.syscall(nr, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        err = ctypes.get_errno()
        if err != errno.ENOSYS:              # a kernel without keys has nothing to share
            raise IsolationError(err, f"new session keyring: {os.strerror(err)}")


def root_fallback_allowed() -> bool:
    """Whether the instructor opted in to running student code as root (unsafe)."""
    return os.environ.get(ALLOW_ROOT_FALLBACK_ENV, "").strip() == "1"




def kill_quietly(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
