"""Landlock (Linux 5.13+): in the fallback mode, the learner's child may write only
inside its working folder (and to ``/dev/null``).

The fallback mode has no private mount namespace: without this, a child running as
``nobody`` could write into any world-writable folder, and a child of a non-root grader
(which keeps the grader's user) into the repository, ``solutions/`` or the grading
output. Landlock is the kernel's own unprivileged access control; the rules are set
with its three system calls through ``ctypes``. Reading is not restricted (the fallback
mode's documented limit). Where the kernel lacks Landlock, :func:`restrict_writes`
returns False and the grader says so.
"""

from __future__ import annotations

import ctypes
import os
import platform

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}   # create, add_rule, restrict
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# LANDLOCK_ACCESS_FS_*: every right that changes the file system, by ABI version
_WRITE_FILE, _TRUNCATE = 1 << 1, 1 << 14
_CHANGES = {1: sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12)),   # write, remove, make
            2: 1 << 13,                                                  # refer (rename/link)
            3: _TRUNCATE}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version (0: none)."""
    nrs = _SYS.get(platform.machine())
    if nrs is None:
        return 0
    version = _libc.syscall(nrs[0], None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def restrict_writes(writable: list[str]) -> bool:
    """From now on (this process and its children), no change to the file system except
    beneath ``writable`` (folders; files such as ``/dev/null`` may be named too).
    False when the kernel has no Landlock; OSError when setting the rules fails."""
    version = abi()
    if version == 0:
        return False
    create, add_rule, restrict = _SYS[platform.machine()]
    handled = sum(bits for v, bits in _CHANGES.items() if v <= version)
    attr = _RulesetAttr(handled)
    ruleset = _libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in writable:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rights = handled if os.path.isdir(path) else handled & (_WRITE_FILE | _TRUNCATE)
                rule = _PathBeneath(rights, fd)
                if _libc.syscall(add_rule, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule),
                                 ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
            finally:
                os.close(fd)
        if _libc.syscall(restrict, ruleset, ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return True
