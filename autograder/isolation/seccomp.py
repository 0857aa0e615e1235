"""A seccomp filter for the learner's child, through libseccomp (Debian's ``libseccomp2``).

:func:`install` is called in every confined child just before the learner's code runs.
It allows every system call except those a notebook never needs and an attacker would
use: the kernel keyrings (shared by every ``nobody`` child: a way to pass the reference
from one run to the next), BPF, perf events, io_uring, tracing other processes and
reading their memory, new namespaces (``unshare``, ``setns``, ``clone`` with a namespace
flag; ``clone3``, whose flags the filter cannot read, answers ``ENOSYS`` so that the C
library falls back to ``clone``), mounting, changing the root, loading kernel code,
handles to files by number, user-space page faults; anonymous memory files
(``memfd_create``), handles on other processes (``pidfd_open``, ``pidfd_getfd``,
``kcmp``), ``modify_ldt``, ``personality``; file locks (``flock`` and fcntl's record
locks, leases and notifications) and file watches (inotify, fanotify), which concurrent
children could use as a channel through the files they share, and the page-cache
probes of the same channel (``mincore``, ``cachestat``, ``preadv2`` with
``RWF_NOWAIT``). Those answer ``EPERM``.
Sockets are AF_UNIX pairs only (``socketpair``): ``socket`` answers ``EAFNOSUPPORT``
for every family (AF_INET, AF_VSOCK, AF_PACKET, AF_ALG, AF_NETLINK, ..., AF_UNIX).

libseccomp is used through ``ctypes`` (no compiled module). When it cannot be loaded,
:func:`install` returns False and :func:`available` says why; the grader reports that in
its mode line and ``docs/threat_model.md`` says what is lost. ``AUTOGRADER_SECCOMP=off``
in the grader's environment turns the filter off as if libseccomp were missing (the
grader warns the same way): tests use it to show that the other layers hold alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from functools import lru_cache

#: System calls that answer EPERM in the learner's child.
DENIED = (
    "keyctl", "add_key", "request_key",                               # kernel keyrings
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "unshare", "setns",                                               # new namespaces
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "move_mount",
    "open_tree",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at",
    # files without a path, handles on other processes, the kernel's view of the
    # process: nothing a notebook needs (issue 23)
    "memfd_create", "memfd_secret", "pidfd_open", "pidfd_getfd", "kcmp", "modify_ldt",
    "personality",
    # locks and watches on files that concurrent children share (the hard-linked helpers
    # copies): a covert channel between children
    "flock", "inotify_init", "inotify_init1", "fanotify_init",
    # whether a shared file's pages are in the page cache: the same channel, read
    "mincore", "cachestat",
)
#: preadv2's flag that reports whether data is in the page cache (EAGAIN when not).
RWF_NOWAIT = 0x8
#: The one socket family a child may use: AF_UNIX, and only as a connected pair
#: (``socketpair``: what multiprocessing and subprocess pipes need). ``socket`` answers
#: EAFNOSUPPORT for every family: AF_INET, AF_VSOCK, AF_PACKET, AF_ALG, AF_NETLINK ...,
#: and AF_UNIX itself, whose named and abstract sockets would reach the host's services
#: and concurrent children in fallback mode (no network namespace there).
SOCKET_FAMILIES = (1,)                                                 # AF_UNIX
#: fcntl() commands that answer EPERM: record locks (classic and open-file-description),
#: leases, directory notifications.
FCNTL_DENIED = {"F_GETLK": 5, "F_SETLK": 6, "F_SETLKW": 7, "F_OFD_GETLK": 36,
                "F_OFD_SETLK": 37, "F_OFD_SETLKW": 38, "F_SETLEASE": 1024,
                "F_GETLEASE": 1025, "F_NOTIFY": 1026}
#: clone() flags that create namespaces: a clone with any of them answers EPERM.
CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
                         0x20000000, 0x40000000)   # NS, CGROUP, UTS, IPC, USER, PID, NET

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_NE = 1
_SCMP_CMP_MASKED_EQ = 7


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0x0000FFFF)                  # SCMP_ACT_ERRNO(code)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


#: Set to ``off`` to run without the filter (tests of the other layers).
DISABLE_ENV = "AUTOGRADER_SECCOMP"


def _off() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() == "off"


#: Read when the worker starts: a confined child has cleared its environment by the
#: time it installs the filter.
_OFF_AT_START = _off()


def _library():
    """(libseccomp, None) or (None, why not)."""
    if _OFF_AT_START or _off():
        return None, f"{DISABLE_ENV}=off turns it off"
    return _load()


@lru_cache(maxsize=1)
def _load():
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        return None, f"libseccomp cannot be loaded ({exc}); install Debian's libseccomp2"
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib, None


def available() -> tuple[bool, str]:
    """(True, "") when the filter can be installed here, else (False, why not)."""
    lib, why = _library()
    return lib is not None, why or ""


def program() -> bytes | None:
    """The filter as a BPF program (``struct sock_filter`` array), built by libseccomp once
    per process and kept: the grader's zygote builds it before forking any child, so that
    a child only hands it to the kernel. None when libseccomp is missing."""
    lib, _ = _library()
    if lib is None:
        return None
    global _PROGRAM
    if _PROGRAM is None:
        _PROGRAM = _build(lib)
    return _PROGRAM


_PROGRAM: bytes | None = None


def _build(lib) -> bytes:
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        eperm = _errno_action(errno.EPERM)

        def rule(name: str, action: int, *cmps: _ArgCmp) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:                         # not a system call of this architecture
                return
            array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name} failed")

        for name in DENIED:
            rule(name, eperm)
        for flag in CLONE_NAMESPACE_FLAGS:
            rule("clone", eperm, _ArgCmp(0, _SCMP_CMP_MASKED_EQ, flag, flag))
        rule("clone3", _errno_action(errno.ENOSYS))
        # no socket; a pair of one family: any other value of the 64-bit argument (the
        # family with high bits set included) is refused
        assert SOCKET_FAMILIES == (1,)
        rule("socket", _errno_action(errno.EAFNOSUPPORT))
        rule("socketpair", _errno_action(errno.EAFNOSUPPORT),
             _ArgCmp(0, _SCMP_CMP_NE, SOCKET_FAMILIES[0], 0))
        for name in ("preadv2", "pwritev2"):       # flags are the 6th argument
            rule(name, eperm, _ArgCmp(5, _SCMP_CMP_MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT))
        for cmd in FCNTL_DENIED.values():       # the kernel reads cmd as 32 bits
            for name in ("fcntl", "fcntl64"):
                rule(name, eperm, _ArgCmp(1, _SCMP_CMP_MASKED_EQ, 0xFFFFFFFF, cmd))
        r, w = os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctx, w)
            os.close(w)
            w = -1
            if rc < 0:
                raise OSError(-rc, "seccomp_export_bpf failed")
            chunks = []
            while chunk := os.read(r, 65536):
                chunks.append(chunk)
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
    finally:
        lib.seccomp_release(ctx)
    data = b"".join(chunks)
    if not data or len(data) % 8:
        raise OSError("seccomp_export_bpf gave no program")
    return data


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def install() -> bool:
    """Install the filter in this process (irreversible, inherited by its children).
    False when libseccomp is missing; raises OSError when it fails to load a filter."""
    prog = program()
    if prog is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.addressof(buf))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"loading the seccomp filter failed: {os.strerror(err)}")
    return True
