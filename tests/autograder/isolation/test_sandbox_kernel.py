"""The kernel surface a learner's child reaches (issue 23, item 2;
autograder/isolation/seccomp.py): AF_UNIX socket pairs only, no anonymous memory files,
no handles on other processes, no locks or watches on the files concurrent children
share (the hard-linked helpers copies), and what notebooks need still works.

Each probe runs in a real confined child of the grading worker (as the grader runs a
notebook), and the filter alone in a forked child of this test process."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from autograder.isolation import seccomp
from sandbox_jobs import run_cells as _run, stdout_lines as _stdout

pytestmark = pytest.mark.slow

PROBE = r"""
import ctypes, errno, fcntl, json, os, platform, socket
def outcome(fn):
    try:
        fn()
        return "allowed"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
seen = {}
for name, family, kind in [("AF_INET", 2, socket.SOCK_STREAM), ("AF_INET6", 10, socket.SOCK_DGRAM),
                           ("AF_NETLINK", 16, socket.SOCK_RAW), ("AF_PACKET", 17, socket.SOCK_RAW),
                           ("AF_ALG", 38, socket.SOCK_SEQPACKET), ("AF_VSOCK", 40, socket.SOCK_STREAM),
                           ("AF_UNIX", 1, socket.SOCK_STREAM)]:
    seen["socket " + name] = outcome(lambda: socket.socket(family, kind).close())
seen["socketpair AF_UNIX"] = outcome(lambda: [s.close() for s in socket.socketpair()])
seen["socketpair AF_INET"] = outcome(lambda: socket.socketpair(socket.AF_INET))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(nr, *args):
    ctypes.set_errno(0)
    if libc.syscall(nr, *[ctypes.c_long(a) for a in args]) >= 0:
        return "allowed"
    return errno.errorcode.get(ctypes.get_errno(), "?")
# socket(AF_VSOCK) with high bits set in the family argument (the kernel reads 32 bits)
SOCKET = {"x86_64": 41, "aarch64": 198}[platform.machine()]
seen["socket AF_VSOCK high bits"] = raw(SOCKET, (1 << 32) | 40, 1, 0)
seen["memfd_create"] = outcome(lambda: os.memfd_create("x"))
seen["pidfd_open"] = outcome(lambda: os.pidfd_open(os.getpid()))
KCMP, PERSONALITY = {"x86_64": (312, 135), "aarch64": (272, 92)}[platform.machine()]
seen["kcmp"] = raw(KCMP, os.getpid(), os.getpid(), 0, 0, 0)
seen["personality"] = raw(PERSONALITY, 0xFFFFFFFF)           # a query, harmless if run
import helpers
shared = helpers.__file__                      # a hard link every concurrent child shares
f = open(shared, "rb")
seen["flock helpers"] = outcome(lambda: fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB))
seen["fcntl lock helpers"] = outcome(lambda: fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB))
F_OFD_SETLK = 37
seen["ofd lock helpers"] = outcome(lambda: fcntl.fcntl(f, F_OFD_SETLK, bytes(32)))
FCNTL = {"x86_64": 72, "aarch64": 25}[platform.machine()]
seen["fcntl lock high bits"] = raw(FCNTL, f.fileno(), (1 << 32) | 6, 0)
seen["inotify"] = raw({"x86_64": 294, "aarch64": 26}[platform.machine()], 0)  # inotify_init1
# the page cache of the shared file, read: RWF_NOWAIT reads and mincore
seen["preadv2 nowait helpers"] = outcome(lambda: os.preadv(f.fileno(), [bytearray(8)], 0,
                                                           os.RWF_NOWAIT))
seen["preadv2 helpers"] = outcome(lambda: os.preadv(f.fileno(), [bytearray(8)], 0, 0))
import mmap
mapped = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)     # mapping a shared file works
vec = ctypes.create_string_buffer(64)
page = ctypes.create_string_buffer(8192)
aligned = (ctypes.addressof(page) + 4095) & ~4095
MINCORE = {"x86_64": 27, "aarch64": 232}[platform.machine()]
ctypes.set_errno(0)
seen["mincore"] = ("allowed" if libc.syscall(MINCORE, ctypes.c_void_p(aligned), 4096, vec) >= 0
                   else errno.errorcode.get(ctypes.get_errno(), "?"))
print(json.dumps(seen))
"""

NEEDED = r"""
import ctypes, json, socket, subprocess, threading
import numpy as np
import matplotlib.pyplot as plt
fig, ax = plt.subplots(); ax.plot(np.arange(3)); fig.canvas.draw(); plt.close(fig)
a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)
t = threading.Thread(target=lambda: None); t.start(); t.join()
print(json.dumps({"matmul": float(np.ones(200) @ np.ones(200)), "callback": cb(1),
                  "svd": float(np.linalg.svd(np.eye(3))[1].sum())}))
"""

DENIED = {"socket AF_INET": "EAFNOSUPPORT", "socket AF_INET6": "EAFNOSUPPORT",
          "socket AF_NETLINK": "EAFNOSUPPORT", "socket AF_PACKET": "EAFNOSUPPORT",
          "socket AF_ALG": "EAFNOSUPPORT", "socket AF_VSOCK": "EAFNOSUPPORT",
          "socket AF_UNIX": "EAFNOSUPPORT", "socket AF_VSOCK high bits": "EAFNOSUPPORT",
          "socketpair AF_UNIX": "allowed", "socketpair AF_INET": "EAFNOSUPPORT",
          "memfd_create": "EPERM", "pidfd_open": "EPERM", "kcmp": "EPERM",
          "personality": "EPERM", "flock helpers": "EPERM", "fcntl lock helpers": "EPERM",
          "ofd lock helpers": "EPERM", "fcntl lock high bits": "EPERM", "inotify": "EPERM",
          "preadv2 nowait helpers": "EPERM", "preadv2 helpers": "allowed", "mincore": "EPERM"}


def test_the_child_reaches_only_the_kernel_surface_it_needs(helper_copies):
    assert seccomp.available() == (True, "")
    reply, lines = _run([PROBE, NEEDED], helper_copies, cell_timeout=20, timeout=60)
    out = _stdout(lines)
    assert json.loads(out[0]) == DENIED, (out, lines)
    assert json.loads(out[1]) == {"matmul": 200.0, "callback": 2, "svd": 3.0}, lines


def test_the_isolated_run_cannot_lock_the_shared_helpers_copy(helper_copies):
    """The review's covert channel: concurrent children of one exercise share one
    hard-linked helpers copy; a lock taken by one is seen by the others. Under the
    filter no child takes any lock on it (in the calls job too)."""
    code = ("import fcntl, helpers, json\n"
            "f = open(helpers.__file__, 'rb')\n"
            "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); r = 'locked'\n"
            "except OSError as e:\n    r = e.errno\n"
            "print(json.dumps(r))\n")
    _, lines = _run([code], helper_copies, strip="softmax")
    assert json.loads(_stdout(lines)[0]) == 1            # EPERM


def test_the_filter_alone_denies_and_keeps_python_working(tmp_path):
    """In a forked child of this process: the filter, without the namespaces."""
    lock = tmp_path / "lock"
    lock.write_text("x")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover - runs in the child
        code = 1
        try:
            import errno
            import fcntl
            import socket
            import subprocess

            os.close(r)
            assert seccomp.install()
            seen = {}
            for fam in (1, 2, 16, 17, 38, 40):
                try:
                    socket.socket(fam, socket.SOCK_DGRAM).close()
                    seen[fam] = "allowed"
                except OSError as e:
                    seen[fam] = errno.errorcode[e.errno]
            with open(lock, "rb") as f:
                for name, fn in (("flock", lambda: fcntl.flock(f, fcntl.LOCK_SH)),
                                 ("lockf", lambda: fcntl.lockf(f, fcntl.LOCK_SH)),
                                 ("memfd", lambda: os.memfd_create("m"))):
                    try:
                        fn()
                        seen[name] = "allowed"
                    except OSError as e:
                        seen[name] = errno.errorcode[e.errno]
            seen["true"] = subprocess.run(["true"]).returncode
            seen["numpy"] = float(np.arange(4.0) @ np.arange(4.0))
            os.write(w, json.dumps(seen).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    data = os.read(r, 65536)
    os.close(r)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert json.loads(data) == {"1": "EAFNOSUPPORT", "2": "EAFNOSUPPORT", "16": "EAFNOSUPPORT",
                                "17": "EAFNOSUPPORT", "38": "EAFNOSUPPORT",
                                "40": "EAFNOSUPPORT", "flock": "EPERM", "lockf": "EPERM",
                                "memfd": "EPERM", "true": 0, "numpy": 14.0}


FLOOD = r"""
import os, stat
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.write(fd, b"\x01" * (4 << 20) + b"\xff\xfe\n")
    except OSError:
        pass
print("after the flood")
"""


def test_a_flood_of_control_bytes_reaches_the_grader_at_four_thirds_its_size(helper_copies):
    """The worker hands a child's output on in base64: 4 MB of control bytes make a
    reply of about 5.3 MB, not the 24 MB of JSON escapes; the cells' lines still parse."""
    from autograder.isolation import client

    sizes = []
    real = client.Worker._output

    def spy(text):
        sizes.append(len(text))
        return real(text)

    client.Worker._output = staticmethod(spy)
    try:
        reply, lines = _run([FLOOD], helper_copies)
    finally:
        client.Worker._output = staticmethod(real)
    assert sizes and max(sizes) < 6 << 20, sizes
    assert reply["output"].count("\x01") == 4 << 20
    assert _stdout(lines) == ["after the flood\n"]
