"""The second security review's classes (docs/threat_model.md): attacks on the boundary
between the learner's process and the grader.

Forged replies naming classes that would act when dropped, and (third review) forged
replies that would exhaust the grader's memory or stack, the kernel keyring as a
channel between the notebook run and the isolated run, the grader's stack and inherited
memory as a source of hidden tests or other students' answers, overwritten inputs,
processes that outlive their job, the per-call timer turned off, a dependency chain that
makes slicing slow, and system calls a learner never needs.
"""

from attacks import WRONG_SOFTMAX, Attack

#: The argument of the ``sleep`` a surviving process would run (the test looks for it).
SURVIVOR_SECONDS = "4321.123"

#: Markers around each base85 chunk the stack thief puts in its error message.
B85_OPEN, B85_CLOSE = "<<b85:", ":b85>>"

#: The third review's forged replies (issue 23): each kind is a reply line the learner's
#: code writes on every pipe it holds, for the first cases, before the real ones.
FORGERIES = ("dtype_bomb", "deep_line", "deep_value", "many_items", "shape_mismatch",
             "wrong_rng_state")

_FORGE = r"""
import base64, json, os, stat, zipfile, io as _io

def _npy(descr, shape, data):
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data

def _value(structure, members=None, raw=None):
    text = raw if raw is not None else json.dumps(structure).encode()
    buf = _io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("__structure__.npy", _npy("|u1", (len(text),), text))
        for name, data in (members or {}).items():
            zf.writestr(name + ".npy", data)
    return base64.b64encode(buf.getvalue()).decode()

def _line(kind, k):
    if kind == "dtype_bomb":          # 1.2 GB per key, if the dtype text reached NumPy
        state = {"bit_generator": "MT19937",
                 "state": {"key": {"__list__": [0], "dtype": "(15000,10000)f8"}, "pos": 0}}
        return json.dumps({"case": k, "value": _value({"__rng__": "MT19937", "state": state})})
    if kind == "deep_line":           # RecursionError in a json parser
        return '{"case": %d, "value": ' % k + "[" * 200000 + "]" * 200000 + "}"
    if kind == "deep_value":
        depth = 100000
        raw = b'{"__seq__": "list", "items": [' * depth + b"1" + b"]}" * depth
        return json.dumps({"case": k, "value": _value(None, raw=raw)})
    if kind == "many_items":
        raw = b'{"__seq__": "list", "items": [' + b"0," * 1200000 + b"0]}"
        return json.dumps({"case": k, "value": _value(None, raw=raw)})
    if kind == "shape_mismatch":      # a header claiming 1.2 GB over 8 bytes of data
        return json.dumps({"case": k, "value": _value(
            {"__nd__": "a0", "scalar": False}, {"a0": _npy("<f8", (15000, 10000), bytes(8))})})
    if kind == "wrong_rng_state":
        state = {"bit_generator": "PCG64", "state": {"state": -1, "inc": "x" * 100},
                 "has_uint32": 7}
        return json.dumps({"case": k, "value": _value({"__rng__": "PCG64", "state": state})})
    raise ValueError(kind)

def _forge(kinds, cases=3):
    lines = [(_line(kinds[k % len(kinds)], k) + "\n").encode() for k in range(cases)]
    for fd in range(3, 64):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            for line in lines:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
        except OSError:
            pass
"""


def forging_softmax(kinds: tuple[str, ...], right: bool) -> str:
    """A softmax answer cell that first writes forged reply lines of ``kinds`` (see
    :data:`FORGERIES`) on every pipe, once per process; right or wrong otherwise."""
    body = ("    e = np.exp(np.asarray(z, float) - np.max(z, axis=axis, keepdims=True))\n"
            "    return e / e.sum(axis=axis, keepdims=True)\n" if right else
            "    return np.full(np.shape(z), 0.5)\n")
    return (_FORGE + f"\n_FORGED = []\n\ndef softmax(z, axis=-1):\n"
            f"    if not _FORGED:\n        _FORGED.append(1)\n        _forge({kinds!r})\n"
            + body)


_SYSCALLS = """
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_ARCH = os.uname().machine
#               add_key keyctl bpf perf_event_open io_uring_setup ptrace unshare
_NUMBERS = {"x86_64": (248, 250, 321, 298, 425, 101, 272),
            "aarch64": (217, 219, 280, 241, 425, 117, 97)}[_ARCH]
SYS_ADD_KEY, SYS_KEYCTL, SYS_BPF, SYS_PERF, SYS_IO_URING, SYS_PTRACE, SYS_UNSHARE = _NUMBERS
_libc.syscall.restype = ctypes.c_long
"""

ATTACKS = [
    Attack("forged_reply_bombs", "02_softmax", "softmax", forging_softmax(FORGERIES, False),
           "writes reply lines of its own: a generator state whose dtype text would make "
           "NumPy allocate 1.2 GB, a line and a value nested 200,000 deep, 1.2 million "
           "items, an array header claiming 1.2 GB over 8 bytes, a wrong PCG64 state"),
    Attack("forged_reply_naming_classes", "02_softmax", "softmax", """
import io, json, os, base64, stat

def _forged(structure):
    buf = io.BytesIO()
    np.savez(buf, __structure__=np.frombuffer(json.dumps(structure).encode(), dtype=np.uint8))
    return base64.b64encode(buf.getvalue()).decode()

_VALUES = [
    {"__obj__": "numpy.lib.npyio:DataSource", "state": [["_destpath", "@@SUBMISSIONS@@"]]},
    {"__obj__": "tempfile:TemporaryDirectory", "state": [["name", "@@SUBMISSIONS@@"]]},
    {"__obj__": "helpers.reference:np.lib.npyio.DataSource", "state": []},
    {"__obj__": "shutil:rmtree", "state": [["path", "@@SOLUTIONS@@"]]},
    {"__file__": "../../../@@CANARY@@"},
]

def softmax(z, axis=-1):
    # a reply line for every case, written before the real one, on every pipe we have
    for fd in range(3, 64):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            for k in range(40):
                line = {"case": k, "value": _forged(_VALUES[k % len(_VALUES)])}
                os.write(fd, (json.dumps(line) + "\\n").encode())
        except OSError:
            pass
    return np.full(np.shape(z), 0.5)
""", "writes reply lines of its own whose values name classes that delete files when "
       "dropped (DataSource, TemporaryDirectory), a function, and a file outside the run"),
    Attack("keyring_smuggling", "02_softmax", "softmax", _SYSCALLS + """
import inspect, zlib
_TYPE, _DESC, _USER_KEYRING = b"user", b"course-reference", -4
try:
    import helpers
    _src = inspect.getsource(helpers.reference)
except Exception:
    _src = ""
if _src and "hidden while" not in _src:    # where a reference were importable: store it
    _data = zlib.compress(_src.encode(), 9)
    _libc.syscall(SYS_ADD_KEY, _TYPE, _DESC, _data, len(_data), _USER_KEYRING)
_key = _libc.syscall(SYS_KEYCTL, 10, _USER_KEYRING, _TYPE, _DESC, 0)   # KEYCTL_SEARCH
_ns = {"__name__": "stolen"}
if _key > 0:                                 # the isolated run: read it back and use it
    _buf = ctypes.create_string_buffer(1 << 16)
    _n = _libc.syscall(SYS_KEYCTL, 11, _key, _buf, len(_buf))          # KEYCTL_READ
    if _n > 0:
        exec(zlib.decompress(_buf.raw[:_n]).decode(), _ns)
if "softmax" in _ns:
    softmax = _ns["softmax"]
else:
    def softmax(z, axis=-1):
        return np.full(np.shape(z), 0.5)
""", "stores the reference's source in the user keyring during the notebook run and "
       "reads it back in the isolated run"),
    Attack("hidden_tests_from_frames_base85", "02_softmax", "softmax_with_temperature", """
import base64, gc, sys

def _strings():
    seen = []
    frame = sys._getframe()
    while frame is not None:                 # up the stack of the isolated run
        seen.extend(repr(v) for v in list(frame.f_locals.values()))
        frame = frame.f_back
    for obj in gc.get_objects():             # and everything the process holds
        if isinstance(obj, dict):
            seen.extend(v for v in obj.values() if isinstance(v, str) and "assert" in v)
    return [s for s in seen if "assert" in s or "HIDDEN" in s]

def softmax_with_temperature(z, temperature):
    chunks = [base64.b85encode(s.encode()).decode() for s in _strings()[:50]]
    raise ValueError(" ".join("%s%s%s" % ("@@B85_OPEN@@", c, "@@B85_CLOSE@@")
                              for c in chunks)[:1900])
""".replace("@@B85_OPEN@@", B85_OPEN).replace("@@B85_CLOSE@@", B85_CLOSE),
           "walks the frames above its call and the heap for test source and sends it "
           "base85-encoded in an exception message, which feedback shows"),
    Attack("other_students_answer_in_memory", "02_softmax", "softmax", """
import gc

def _candidates():
    for obj in gc.get_objects():
        values = obj.values() if isinstance(obj, dict) else (obj if isinstance(obj, (list, tuple)) else ())
        for v in list(values):
            if isinstance(v, (bytes, bytearray)):
                v = bytes(v).decode("utf-8", "replace")
            if isinstance(v, str) and "def softmax" in v and "0.5" not in v:
                yield v

def _stolen():
    for text in _candidates():
        start = text.index("def softmax")
        ns = {"np": np}
        try:
            exec(text[start:].encode().decode("unicode_escape"), ns)
            if abs(ns["softmax"](np.array([1.0, 2.0])).sum() - 1) < 1e-9:
                return ns["softmax"]
        except Exception:
            continue
    return None

def softmax(z, axis=-1):
    other = _stolen()
    return other(z, axis) if other else np.full(np.shape(z), 0.5)
""", "searches its process's memory (inherited from the process that forked it) for another "
       "student's answer cell or an earlier reply, and calls what it finds"),
    Attack("overwrite_inputs", "02_softmax", "softmax", """
def softmax(z, axis=-1):
    z_arr = np.asarray(z)
    if isinstance(z, np.ndarray) and z.flags.writeable and z.dtype.kind == "f":
        z[...] = 0.0                 # the input is now all zeros ...
    n = z_arr.shape[axis] if z_arr.ndim else 1
    return np.full(z_arr.shape, 1.0 / n)   # ... and this is softmax of zeros
""", "overwrites its input with zeros and returns the softmax of zeros, so that a test "
       "computing its expectation after the call would agree"),
    Attack("survivor_after_setsid", "02_softmax", "softmax", """
import os
_pid = os.fork()
if _pid == 0:
    os.setsid()
    if os.fork() == 0:                       # the grandchild, in a session of its own
        try:
            os.execv("/bin/sleep", ["/bin/sleep", "@@SURVIVOR@@"])
        finally:
            os._exit(0)
    os._exit(0)
os.waitpid(_pid, 0)
""".replace("@@SURVIVOR@@", SURVIVOR_SECONDS) + WRONG_SOFTMAX,
           "leaves a grandchild behind in a new session (double fork and setsid) to outlive "
           "the run"),
    Attack("timer_signal_blocked", "02_softmax", "softmax", """
import signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGPROF, signal.SIGVTALRM})

def softmax(z, axis=-1):
    import helpers.checks
    if "Stand-in" not in (helpers.checks.__doc__ or ""):
        return np.full(np.shape(z), 0.5)      # the notebook run: do not spin there
    while True:                               # the isolated run: spin, timer blocked
        pass
""", "blocks the timer signals (SIGPROF: the per-call timer of CPU time; SIGALRM, "
       "SIGVTALRM) and loops forever in the isolated run"),
    Attack("slicing_chain", "02_softmax", "softmax",
           "".join(f"v{i} = v{i - 1} + 1\n" if i else "v0 = 0\n" for i in range(30_000))
           + "\ndef softmax(z, axis=-1):\n    return np.full(np.shape(z), 0.5 + 0 * v29999)\n",
           "makes the answer cell a chain of 30,000 dependent statements (quadratic "
           "dependency slicing would hold a worker for many minutes)"),
    Attack("kernel_surface", "02_softmax", "softmax", """
import errno, fcntl, os, socket

def _reached():
    # what got past the filter: sockets of other families than AF_UNIX (VSOCK reached a
    # hypervisor in the review), an anonymous memory file, a lock on the helpers copy
    # that concurrent children share (the review's covert channel), a pidfd
    got = []
    for name, family, kind in [("AF_VSOCK", 40, socket.SOCK_STREAM),
                               ("AF_PACKET", 17, socket.SOCK_RAW),
                               ("AF_NETLINK", 16, socket.SOCK_RAW),
                               ("AF_ALG", 38, socket.SOCK_SEQPACKET),
                               ("AF_INET", 2, socket.SOCK_DGRAM)]:
        try:
            socket.socket(family, kind).close()
            got.append(name)
        except OSError:
            pass
    try:
        os.close(os.memfd_create("x"))
        got.append("memfd_create")
    except OSError:
        pass
    try:
        import helpers
        with open(helpers.__file__, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            got.append("flock")
    except (OSError, ImportError):
        pass
    try:
        os.close(os.pidfd_open(os.getpid()))
        got.append("pidfd_open")
    except OSError:
        pass
    return got

def softmax(z, axis=-1):
    # the "reward" of any of them: the right answer
    if _reached():
        e = np.exp(np.asarray(z, float) - np.max(z, axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    return np.full(np.shape(z), 0.5)
""", "opens sockets of the families AF_VSOCK, AF_PACKET, AF_NETLINK, AF_ALG and AF_INET, "
       "an anonymous memory file, a pidfd, and locks the shared helpers copy; it answers "
       "right only if one of them works"),
    Attack("forbidden_system_calls", "02_softmax", "softmax", _SYSCALLS + """
def _allowed():
    # the calls that got past the filter (which answers EPERM to each of them)
    def tried(*args):
        ctypes.set_errno(0)
        return _libc.syscall(*args) >= 0 or ctypes.get_errno() != 1   # 1: EPERM
    attr, params = ctypes.create_string_buffer(128), ctypes.create_string_buffer(120)
    calls = {"add_key": (SYS_ADD_KEY, b"user", b"probe", b"x", 1, -4),
             "keyctl": (SYS_KEYCTL, 0, -4, 0),                  # KEYCTL_GET_KEYRING_ID
             "bpf": (SYS_BPF, 0, None, 0),
             "perf_event_open": (SYS_PERF, attr, 0, -1, -1, 0),
             "io_uring_setup": (SYS_IO_URING, 1, params),
             "ptrace": (SYS_PTRACE, 0, 0, 0, 0),                  # PTRACE_TRACEME
             "unshare": (SYS_UNSHARE, 0x10000000)}                 # CLONE_NEWUSER
    return [name for name, args in calls.items() if tried(*args)]

def softmax(z, axis=-1):
    # the "reward" of any system call that should be denied: the right answer
    if _allowed():
        e = np.exp(np.asarray(z, float) - np.max(z, axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    return np.full(np.shape(z), 0.5)
""", "calls the keyring, bpf, perf_event_open, io_uring_setup, ptrace and unshare(NEWUSER); "
       "it answers right only if one of them is allowed"),
]
