"""Harming the grading processes: killing, exiting, forking, exhausting memory, flooding.

The notebook itself earns nothing; the run must go on, and every other student in the
same run must get exactly the grades they get alone.
"""

from attacks import WRONG_SOFTMAX, Attack

ATTACKS = [
    Attack("kill_parent", "02_softmax", "softmax",
           "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + WRONG_SOFTMAX,
           "kills its parent process"),
    Attack("kill_process_group", "02_softmax", "softmax",
           "import os, signal\nos.killpg(0, signal.SIGKILL)\n" + WRONG_SOFTMAX,
           "kills its process group"),
    Attack("kill_everything", "02_softmax", "softmax", """
import os, signal
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
for _pid in range(1, 4096):
    try:
        os.kill(_pid, signal.SIGKILL)
    except OSError:
        pass
""" + WRONG_SOFTMAX, "kills every process it may signal (kill(-1) and a scan of pids)",
           isolation=True),
    Attack("kill_from_inside_the_call", "02_softmax", "softmax", """
import os, signal

def softmax(z, axis=-1):
    for _pid in (os.getppid(), 0, -1):
        try:
            os.kill(_pid, signal.SIGKILL)
        except OSError:
            pass
    return np.full(np.shape(z), 0.5)
""", "kills its parents while the test (and the isolated re-run) call it", isolation=True),
    Attack("exit_in_the_call", "02_softmax", "softmax", """
import os, sys

def softmax(z, axis=-1):
    try:
        sys.exit(0)
    finally:
        os._exit(0)
""", "exits the process (sys.exit, then os._exit) when called"),
    Attack("keyboard_interrupt", "02_softmax", "softmax", """
def softmax(z, axis=-1):
    raise KeyboardInterrupt()
""", "raises KeyboardInterrupt (a BaseException) when called"),
    Attack("fork_children", "02_softmax", "softmax", """
import os, time
_children = []
for _ in range(40):
    try:
        _pid = os.fork()
    except OSError:
        break
    if _pid == 0:
        time.sleep(120)
        os._exit(0)
    _children.append(_pid)
""" + WRONG_SOFTMAX, "leaves 40 sleeping child processes behind"),
    Attack("memory_hog", "02_softmax", "softmax",
           "_hog = bytearray(8 * 1024 ** 3)\n" + WRONG_SOFTMAX,
           "allocates 8 GB"),
    Attack("output_flood", "02_softmax", "softmax", """
import sys
print("x" * 5_000_000)
sys.stderr.write("e" * 5_000_000)
""" + WRONG_SOFTMAX, "prints 10 MB to stdout and stderr"),
    Attack("close_descriptors", "02_softmax", "softmax", """
import os
os.closerange(0, 1024)
""" + WRONG_SOFTMAX, "closes every file descriptor, the result pipe included"),
    Attack("segfault", "02_softmax", "softmax", """
import ctypes

def softmax(z, axis=-1):
    ctypes.string_at(0)          # reads address 0: SIGSEGV
""", "crashes the process with a segmentation fault when called"),
    Attack("privilege_probe", "02_softmax", "softmax", """
import os

def softmax(z, axis=-1):
    raise PermissionError(f"uid={os.getuid()} euid={os.geteuid()}")
""", "reports the user id its code runs as (harmless: the test checks it is not root)"),
]
