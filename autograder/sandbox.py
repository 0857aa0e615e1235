"""Isolation for untrusted student code: a private file system view, no network, rlimits.

Everything a submission runs (the notebook's cells in the grading kernel, and the
authoritative re-run of its contract functions) happens in a child process that calls
:func:`confine` first. Two modes, chosen once per worker by :func:`probe_mode`:

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

``fallback`` (no namespaces available)
    A documented weaker mode: new session, working folder in a private temp dir,
    environment cleared, rlimits, ``nobody`` when the grader is root, and ``helpers``
    imported from the grader's copy (so the stripped copy still hides the reference of
    the function under test). Files readable by that user stay readable; there is no
    network isolation. The grader still survives any attack, because it never runs
    student code in its own process and reads results only through a size-capped pipe.
    Student code never runs as root: when the grader is root and cannot drop to
    ``nobody`` (the Python installation is not readable by ``nobody``, e.g. pyenv under
    ``/root``), :func:`check_safe_to_grade` refuses to grade before any notebook runs,
    and :func:`confine_inner` refuses to hand a root process to student code, unless the
    instructor sets ``AUTOGRADER_ALLOW_ROOT_FALLBACK=1`` (unsafe, see
    ``docs/threat_model.md``).

Both modes apply rlimits: address space (``RLIMIT_AS``), CPU seconds, file size,
open files, core dumps, and (as ``nobody``) processes.

:func:`prepare_helpers` builds the copies of ``helpers`` a child may import: the full
package for the grading kernel, and for each exercise a *stripped* copy in which its
reference and the functions it refuses are stubs that raise (an AST rewrite, so that
code is not in the child's process at all), every function of the exercise modules
(hidden cases, known mistakes: close to correct answers) is a stub too, except the
``scenario_*`` functions the calls run, and ``helpers/checks.py`` is a harmless
stand-in.

Data crosses the process boundary only as JSON and uncompressed ``.npz`` bytes read
with ``allow_pickle=False`` (:func:`encode` / :func:`decode`), both size-capped. Besides
numbers, strings, arrays and containers, only NumPy generators and objects of classes
defined in the course's ``helpers`` (a model configuration, a KV cache) cross, rebuilt
field by field without running their code. :class:`ArrayRefs` sends a large array once
and then names it by digest; :func:`restore` copies what a call did to its arguments
back into the caller's objects.
"""

from __future__ import annotations

import ast
import base64
import ctypes
import ctypes.util
import io
import json
import os
import py_compile
import resource
import shutil
import signal
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder import REPO_ROOT

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
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
NOBODY = 65534

#: Where the chosen ``helpers`` copy appears inside the child (its parent goes on sys.path).
COURSE_PATH = "/course"
#: The child's working folder inside the private root.
WORK_PATH = "/tmp/work"

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


#: Set to ``1`` to let student code run as root in fallback mode (unsafe: for a
#: throw-away container or VM only).
ALLOW_ROOT_FALLBACK_ENV = "AUTOGRADER_ALLOW_ROOT_FALLBACK"


class UnsafeToGrade(RuntimeError):
    """Student code would run as root here: grading is refused (see :func:`check_safe_to_grade`)."""


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


def confine_inner(conf: Confinement) -> str:
    """Confine the calling process; return its working folder. Run before student code."""
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
    _drop_privileges(work, conf.mode)
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


def _world_can_run_python() -> bool:
    """Whether ``nobody`` can read this interpreter's files (pyenv under /root: no)."""
    for prefix in {sys.base_prefix, sys.prefix}:
        path = Path(prefix).resolve()
        for folder in (path, *path.parents):
            if not os.stat(folder).st_mode & 0o001:
                return False
    return True


def _drop_privileges(work: str, mode: str) -> None:
    if os.getuid() == 0 and (mode == "namespaces" or _world_can_run_python()):
        os.chown(work, NOBODY, NOBODY)
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)      # also clears every capability
    elif os.getuid() != 0:
        arch = os.uname().machine
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)      # _LINUX_CAPABILITY_VERSION_3
        data = (ctypes.c_uint32 * 6)()                      # all zero: no capabilities
        if arch in SYS_CAPSET:
            _libc.syscall(SYS_CAPSET[arch], header, data)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if os.getuid() == NOBODY:
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))


def root_fallback_allowed() -> bool:
    """Whether the instructor opted in to running student code as root (unsafe)."""
    return os.environ.get(ALLOW_ROOT_FALLBACK_ENV, "").strip() == "1"


def can_drop_privileges() -> bool:
    """Whether a child of this process can run Python as ``nobody`` (always, when not root).

    The probe does what :func:`_drop_privileges` does in fallback mode: a forked child
    switches to ``nobody`` and runs this interpreter, which must import NumPy.
    """
    if os.getuid() != 0:
        return True
    if not _world_can_run_python():
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


def check_safe_to_grade(mode: str | None = None, stream=None) -> str:
    """Decide once, before any notebook runs, whether student code may run here.

    Returns the isolation mode (:func:`probe_mode` unless given). Raises
    :class:`UnsafeToGrade` when, in fallback mode, the grader is root and
    :func:`can_drop_privileges` fails, unless ``AUTOGRADER_ALLOW_ROOT_FALLBACK=1``,
    in which case a warning is written to ``stream`` (default: stderr).
    """
    mode = mode or probe_mode()
    if mode != "fallback" or can_drop_privileges():
        return mode
    prefix = Path(sys.base_prefix).resolve()
    why = ("the Python installation is not readable by every user" if not
           _world_can_run_python() else "Python fails to start as 'nobody'")
    message = ROOT_FALLBACK_MESSAGE.format(why=why, prefix=prefix, env=ALLOW_ROOT_FALLBACK_ENV)
    if not root_fallback_allowed():
        raise UnsafeToGrade(message)
    print(f"WARNING: {ALLOW_ROOT_FALLBACK_ENV}=1: STUDENT CODE RUNS AS ROOT in fallback mode "
          "(no namespaces): a notebook can read, change or delete any file on this machine, "
          "solutions/ and helpers/ included. Grade like this only inside a throw-away "
          "container or VM.", file=stream or sys.stderr, flush=True)
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


# ---------------------------------------------------------------------------------------
# The helpers package a child may import.
# ---------------------------------------------------------------------------------------

_CHECKS_STAND_IN = '''"""Stand-in for helpers.checks inside the isolated grading run (checks happen outside)."""


class CheckFailed(AssertionError):
    pass


def check(name, fn, *args, **kwargs):
    return None


def assert_close(*args, **kwargs):
    return None
'''


#: Part of the message of the stub that replaces the reference of the graded function.
REFERENCE_STUB_MARK = "is hidden while your own is graded"


def _stub_function(tree: ast.Module, name: str, label: str | None = None) -> bool:
    """Replace the body of every top-level ``def name`` by ``raise RuntimeError``
    (the message names the function as ``label``, by default ``helpers.<name>``)."""
    message = f"{label or f'helpers.{name}'} {REFERENCE_STUB_MARK}"
    found = False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            node.body = ast.parse(f"raise RuntimeError({message!r})").body
            node.decorator_list = []
            found = True
    return found


def exercise_stubs(name: str) -> dict[str, set[str]]:
    """What the learner's code must not find while exercise ``name`` is graded:
    ``{module: {function}}`` for its reference and the functions it ``refuse``s."""
    from helpers import exercises

    ex = exercises.get(name)
    out: dict[str, set[str]] = {}
    for fn in [ex.reference] + [exercises.resolve(spec) for spec in ex.refuse]:
        out.setdefault(fn.__module__, set()).add(fn.__name__)   # where it is defined
    return out


def _module_file(pkg: Path, module: str) -> Path:
    parts = module.split(".")[1:]                  # without the leading "helpers"
    base = pkg.joinpath(*parts) if parts else pkg
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _stub_file(py: Path, names, label_of) -> list[str]:
    tree = ast.parse(py.read_text(encoding="utf-8"))
    stubbed = sorted(n for n in names if _stub_function(tree, n, label_of(n)))
    if stubbed:
        py.write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    return stubbed


def hide_exercise(pkg: Path, name: str) -> dict[str, list[str]]:
    """In the copy ``pkg`` of ``helpers``: stub the reference of exercise ``name`` and the
    functions it refuses, and every function of the exercise modules
    (``helpers/exercises/*.py``: references, case builders with the hidden cases, known
    mistakes) except the ``scenario_*`` functions the grader's calls run. Returns
    ``{module file: stubbed names}``."""
    from helpers import exercises

    # the course's versions of the earlier functions it uses stay callable
    keep = {(f.__module__, f.__name__) for f in
            (exercises.get(dep).reference for dep in exercises.get(name).uses)}
    hidden: dict[str, list[str]] = {}
    for module, names in exercise_stubs(name).items():
        py = _module_file(pkg, module)
        # helpers.reference is re-exported by the package: name it as learners call it
        prefix = "helpers" if module == "helpers.reference" else module
        stubbed = _stub_file(py, names, lambda n, p=prefix: f"{p}.{n}")
        if stubbed:
            hidden[str(py.relative_to(pkg))] = stubbed
    for py in sorted((pkg / "exercises").glob("*.py")):
        if py.name == "__init__.py":
            continue
        tree = ast.parse(py.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and not n.name.startswith("scenario_")
                 and (f"helpers.exercises.{py.stem}", n.name) not in keep}
        stubbed = _stub_file(py, names, lambda n, m=py.stem: f"helpers.exercises.{m}.{n}")
        if stubbed:
            hidden[str(py.relative_to(pkg))] = stubbed
    return hidden


def prepare_helpers(dest: Path, strip: str | None = None, source: Path | None = None) -> Path:
    """Copy ``helpers/`` to ``dest/helpers`` (compiled); return ``dest`` (for sys.path).

    With ``strip`` (an exercise's name), the copy is the one that exercise is graded
    with (:func:`hide_exercise`), and its checks module is a no-op stand-in.
    """
    source = HELPERS_DIR if source is None else source
    pkg = dest / "helpers"
    if pkg.exists():
        shutil.rmtree(pkg)
    shutil.copytree(source, pkg, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".ipynb_checkpoints"))
    if strip is not None:
        from helpers import exercises

        ref = exercises.get(strip).reference
        hidden = hide_exercise(pkg, strip)
        where = str(_module_file(pkg, ref.__module__).relative_to(pkg))
        if ref.__name__ not in hidden.get(where, ()):
            raise ValueError(f"{where} defines no function {ref.__name__} to hide")
        (pkg / "checks.py").write_text(_CHECKS_STAND_IN, encoding="utf-8")
    for py in pkg.rglob("*.py"):
        py_compile.compile(str(py), doraise=False, quiet=2)
    return dest


# ---------------------------------------------------------------------------------------
# Values across the boundary: JSON structure + uncompressed npz for arrays.
# ---------------------------------------------------------------------------------------

MAX_VALUE_BYTES = 32 * 1024 * 1024


class DecodeError(ValueError):
    pass


class ArrayRefs:
    """Large arrays sent once over a channel, then named by their digest.

    The sender's side remembers which digests it sent (and the digest of each array
    object, so that an array is hashed once); the receiver's side keeps the arrays.
    """

    THRESHOLD = 1 << 20          # bytes: smaller arrays are always sent inline

    def __init__(self):
        self.sent: set[str] = set()
        self.digests: dict[int, tuple[np.ndarray, str]] = {}
        self.store: dict[str, np.ndarray] = {}
        self.given: dict[int, tuple[np.ndarray, str]] = {}   # copies handed to a call

    def unchanged(self, a: np.ndarray) -> str | None:
        """The digest of ``a`` if it is a copy handed out and still equal to the original."""
        known = self.given.get(id(a))
        if known is None or known[0] is not a:
            return None
        original = self.store.get(known[1])
        if original is not None and original.shape == a.shape and np.array_equal(original, a):
            return known[1]
        return None

    def original(self, digest: str) -> np.ndarray | None:
        for a, d in self.digests.values():
            if d == digest:
                return a
        return None

    def digest(self, a: np.ndarray) -> str:
        known = self.digests.get(id(a))
        if known is not None and known[0] is a:
            return known[1]
        import hashlib

        h = hashlib.blake2b(digest_size=16)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).data)
        self.digests[id(a)] = (a, h.hexdigest())
        return self.digests[id(a)][1]


def encode(obj, refs: ArrayRefs | None = None) -> bytes:
    """Encode numbers, strings, arrays, lists/tuples/sets/dicts, NumPy generators as .npz.

    With ``refs``, an array of at least ``ArrayRefs.THRESHOLD`` bytes is sent once and
    afterwards named by its digest (see :func:`decode`).
    """
    arrays: dict[str, np.ndarray] = {}

    def enc(x, depth=0):
        if depth > 20:
            return {"__repr__": "nested too deeply"}
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, (int, float)) and not isinstance(x, (np.generic,)):
            return {"__int__": str(x)} if isinstance(x, int) and abs(x) > 2**53 else x
        if isinstance(x, (np.ndarray, np.generic)):
            a = np.asarray(x)
            if a.dtype.kind not in "biufc":
                try:
                    a = a.astype(np.float64)
                except (TypeError, ValueError):
                    return {"__repr__": f"array of dtype {a.dtype}"}
            if refs is not None and a.nbytes >= ArrayRefs.THRESHOLD:
                digest = refs.unchanged(a) if refs.given else None
                if digest is not None:           # handed to a call and left as it was
                    return {"__ref__": digest}
                digest = refs.digest(a)
                if digest not in refs.sent:
                    arrays[f"r{digest}"] = a
                    refs.sent.add(digest)
                return {"__ref__": digest}
            key = f"a{len(arrays)}"
            arrays[key] = a
            return {"__nd__": key, "scalar": isinstance(x, np.generic)}
        if isinstance(x, (list, tuple, set, frozenset)):
            kind = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}.get(
                type(x), "tuple" if isinstance(x, tuple) else "list")
            items = x if isinstance(x, (list, tuple)) else _sorted_items(x)
            return {"__seq__": kind, "items": [enc(v, depth + 1) for v in items]}
        if isinstance(x, dict):
            return {"__dict__": [[str(k), enc(v, depth + 1)] for k, v in x.items()]}
        if isinstance(x, np.random.Generator):
            bg = x.bit_generator
            return {"__rng__": type(bg).__name__, "state": _jsonable(bg.state)}
        cls = type(x)
        if _course_class(cls.__module__, cls.__qualname__) is cls:
            return {"__obj__": f"{cls.__module__}:{cls.__qualname__}",
                    "state": [[k, enc(v, depth + 1)] for k, v in _object_state(x).items()]}
        return {"__repr__": type(x).__name__}

    structure = json.dumps(enc(obj))
    buf = io.BytesIO()
    np.savez(buf, __structure__=np.frombuffer(structure.encode(), dtype=np.uint8), **arrays)
    return buf.getvalue()


def _course_class(module: str, qualname: str):
    """A class defined in the course's ``helpers`` package (configurations, caches), or
    None: only those objects cross the boundary, rebuilt field by field (no code of
    theirs runs)."""
    if not (module == "helpers" or module.startswith("helpers.")) or "<" in qualname:
        return None
    mod = sys.modules.get(module)
    if mod is None:
        try:
            import importlib

            mod = importlib.import_module(module)
        except Exception:
            return None
    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def _object_state(x) -> dict:
    import dataclasses

    if dataclasses.is_dataclass(x):
        return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    return dict(getattr(x, "__dict__", {}))


def _in_place(original, new) -> bool:
    """Whether ``original`` can take ``new``'s content in place (so callers see it)."""
    if isinstance(original, (np.ndarray, list, dict, tuple)):
        return True
    return type(original) is type(new) and _course_class(
        type(new).__module__, type(new).__qualname__) is not None


def restore(original, new):
    """Copy what a call did to its (decoded copies of) arguments back into the originals:
    arrays in place, lists and dicts by content, course objects field by field."""
    if original is new:
        return
    if isinstance(original, np.ndarray) and isinstance(new, np.ndarray):
        if original.shape == new.shape and original.flags.writeable:
            try:
                np.copyto(original, new, casting="unsafe")
            except (TypeError, ValueError):
                pass
    elif isinstance(original, list) and isinstance(new, list):
        original[:] = new
    elif isinstance(original, dict) and isinstance(new, dict):
        for k in list(original):
            if k not in new:
                del original[k]
        for k, v in new.items():
            if k in original and _in_place(original[k], v):
                restore(original[k], v)
            else:
                original[k] = v
    elif isinstance(original, tuple) and isinstance(new, tuple) and len(original) == len(new):
        for o, n in zip(original, new):
            restore(o, n)
    elif type(original) is type(new) and _course_class(type(new).__module__,
                                                       type(new).__qualname__):
        for k, v in _object_state(new).items():
            object.__setattr__(original, k, v)


def _sorted_items(items) -> list:
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return {"__list__": x.tolist(), "dtype": str(x.dtype)}
    if isinstance(x, np.integer):
        return int(x)
    return x


def _unjsonable(x):
    if isinstance(x, dict):
        if "__list__" in x:
            return np.asarray(x["__list__"], dtype=x["dtype"])
        return {k: _unjsonable(v) for k, v in x.items()}
    return x


def decode(data: bytes, max_bytes: int = MAX_VALUE_BYTES, refs: ArrayRefs | None = None):
    """Inverse of :func:`encode`, for untrusted bytes: size-capped, no pickle.

    With ``refs``, arrays sent by digest are kept and every use gets its own copy (a
    function that modifies its input cannot spoil a later call).
    """
    if len(data) > max_bytes:
        raise DecodeError(f"value of {len(data)} bytes exceeds the cap of {max_bytes}")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            if sum(i.file_size for i in zf.infolist()) > max_bytes:
                raise DecodeError("value too large")
        npz = np.load(io.BytesIO(data), allow_pickle=False)
        structure = json.loads(bytes(npz["__structure__"]).decode())
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(f"unreadable value ({type(exc).__name__})") from None

    def dec(x, depth=0):
        if depth > 40:
            raise DecodeError("nested too deeply")
        if not isinstance(x, dict):
            if isinstance(x, list):
                raise DecodeError("bad structure")
            return x
        if "__nd__" in x:
            a = npz[str(x["__nd__"])]
            return a[()] if x.get("scalar") else a
        if "__ref__" in x:
            digest = str(x["__ref__"])
            if refs is None:
                raise DecodeError("an array reference without a store")
            if f"r{digest}" in npz.files:
                refs.store[digest] = npz[f"r{digest}"]
            if digest not in refs.store:
                mine = refs.original(digest)     # one of ours, coming back unchanged
                if mine is None:
                    raise DecodeError("a reference to an array never sent")
                return mine
            copy = refs.store[digest].copy()
            refs.given[id(copy)] = (copy, digest)
            return copy
        if "__int__" in x:
            return int(x["__int__"])
        if "__seq__" in x:
            items = [dec(v, depth + 1) for v in x["items"]]
            kind = x["__seq__"]
            if kind in ("set", "frozenset"):
                try:
                    return set(items) if kind == "set" else frozenset(items)
                except TypeError:
                    raise DecodeError("unhashable item in a set") from None
            return tuple(items) if kind == "tuple" else items
        if "__dict__" in x:
            return {str(k): dec(v, depth + 1) for k, v in x["__dict__"]}
        if "__rng__" in x:
            name = str(x["__rng__"])
            if name not in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"):
                raise DecodeError(f"unknown bit generator {name}")
            bg = getattr(np.random, name)()
            bg.state = _unjsonable(x["state"])
            return np.random.Generator(bg)
        if "__obj__" in x:
            module, _, qualname = str(x["__obj__"]).partition(":")
            cls = _course_class(module, qualname)
            if cls is None:
                raise DecodeError(f"objects of {x['__obj__']} cannot cross")
            obj = object.__new__(cls)
            for k, v in x.get("state", []):
                object.__setattr__(obj, str(k), dec(v, depth + 1))
            return obj
        if "__repr__" in x:
            return Unencodable(str(x["__repr__"])[:200])
        raise DecodeError("bad structure")

    try:
        return dec(structure)
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(f"unreadable value ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class Unencodable:
    """Stands for a returned object that cannot cross the boundary (e.g. a function)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<object of type {self.type_name}>"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str, max_bytes: int = MAX_VALUE_BYTES) -> bytes:
    if not isinstance(text, str) or len(text) > max_bytes * 4 // 3 + 8:
        raise DecodeError("bad or oversized payload")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except Exception:
        raise DecodeError("bad base64 payload") from None


def kill_quietly(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
