"""Tampering with the checks inside the learner's own process (notebook 02, softmax).

Every attack here answers softmax wrongly and then tries to make the test cell pass
anyway. The notebook run may well be fooled; the points come from the isolated re-run.
"""

from attacks import WRONG_SOFTMAX, Attack

ATTACKS = [
    Attack("rebind_check", "02_softmax", "softmax",
           "check = lambda *args, **kwargs: print('softmax: 6/6 checks passed')\n" + WRONG_SOFTMAX,
           "rebinds the name `check` used by the test cell to a function that prints success",
           flagged="tampering suspected"),
    Attack("patch_helpers_checks", "02_softmax", "softmax", """
import helpers.checks
helpers.checks.check = lambda *args, **kwargs: None
helpers.checks.CheckFailed = type("Never", (Exception,), {})
check = helpers.checks.check
""" + WRONG_SOFTMAX,
           "replaces helpers.checks.check (and the name check) by a no-op",
           flagged="tampering suspected"),
    Attack("patch_compare_and_cases", "02_softmax", "softmax", """
import helpers.course.judge
helpers.course.judge.compare = lambda *args, **kwargs: None
helpers.course.judge.cases = lambda *args, **kwargs: []
helpers.course.judge.diagnose = lambda *args, **kwargs: None
""" + WRONG_SOFTMAX,
           "empties the case list and makes compare() accept anything, in the learner's process"),
    Attack("patch_numpy_comparisons", "02_softmax", "softmax", """
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(np.asarray(a), np.asarray(b)).shape, bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.testing.assert_array_equal = lambda *a, **k: None
""" + WRONG_SOFTMAX,
           "monkeypatches NumPy's comparison functions and assertion helpers"),
    Attack("input_transformer", "02_softmax", "softmax", """
def _swallow(lines):
    return ["try:\\n"] + ["    " + l for l in lines] + ["\\nexcept BaseException:\\n    pass\\n"]
get_ipython().input_transformers_post.append(_swallow)
""" + WRONG_SOFTMAX,
           "an IPython input transformer wraps every later cell (the tests) in try/except",
           flagged="tampering suspected"),
    Attack("ast_transformer", "02_softmax", "softmax", """
import ast as _ast
class _Erase(_ast.NodeTransformer):
    def visit_Module(self, node):
        node.body = [_ast.Pass()]
        return node
get_ipython().ast_transformers.append(_Erase())
""" + WRONG_SOFTMAX,
           "an IPython AST transformer replaces every later cell by `pass`",
           flagged="tampering suspected"),
    Attack("run_cell_replaced", "02_softmax", "softmax", """
_shell = get_ipython()
_shell.run_cell = lambda *args, **kwargs: None
type(_shell).run_cell = lambda *args, **kwargs: None
""" + WRONG_SOFTMAX,
           "replaces the shell's run_cell so that later cells never run"),
    Attack("showtraceback_silenced", "02_softmax", "softmax", """
_shell = get_ipython()
_shell.showtraceback = lambda *args, **kwargs: None
_shell.showsyntaxerror = lambda *args, **kwargs: None
type(_shell).showtraceback = lambda *args, **kwargs: None
""" + WRONG_SOFTMAX,
           "silences the shell's error reporting so failing tests look clean"),
    Attack("pre_run_cell_event", "02_softmax", "softmax", """
import helpers.checks
def _before(*args):
    g = get_ipython().user_ns
    g["check"] = lambda *a, **k: None
    g["assert_close"] = lambda *a, **k: None
get_ipython().events.register("pre_run_cell", _before)
""" + WRONG_SOFTMAX,
           "an IPython event hook rebinds check/assert_close before every cell",
           flagged="tampering suspected"),
    Attack("patch_grader_runner", "02_softmax", "softmax", """
import sys as _sys
for _name, _mod in list(_sys.modules.items()):
    if _name.startswith("autograder") and hasattr(_mod, "_Runner"):
        _orig = _mod._Runner.run
        def _run(self, index, source, timeout, *args, _orig=_orig, **kwargs):
            res = _orig(self, index, source, timeout, *args, **kwargs)
            res.update(error=None, stderr="", timeout=False, memory=False)
            return res
        _mod._Runner.run = _run
""" + WRONG_SOFTMAX,
           "patches the grader's own cell runner (present in the forked process) to report "
           "every cell as clean"),
    Attack("forge_result_lines", "04_queries_keys_values", "project_qkv", """
import json as _json, os as _os
for _fd in range(3, 64):
    for _cell in range(0, 60):
        try:
            _os.write(_fd, (_json.dumps({"cell": _cell, "stdout": "", "stderr": "", "error": None,
                                         "timeout": False, "memory": False}) + "\\n").encode())
        except OSError:
            break
def project_qkv(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return X, X, X
""",
           "writes forged 'cell passed' result lines to every open file descriptor (the "
           "pipe that carries results to the grader)"),
    Attack("noncontract_input_transformer", "02_softmax", "softmax_with_temperature", """
def _swallow(lines):
    return ["try:\\n"] + ["    " + l for l in lines] + ["\\nexcept BaseException:\\n    pass\\n"]
get_ipython().input_transformers_post.append(_swallow)

def softmax_with_temperature(z, temperature):
    return np.zeros(np.shape(z))
""", "answers every contract function correctly (so no check disagrees with the isolated "
     "re-run) and swallows the errors of the one test outside the contract",
           expect="honest", answers="solutions", lose=("test_softmax_with_temperature",),
           flagged="tampering suspected"),
    Attack("rebind_check_for_a_notebook_exercise", "04_queries_keys_values", "wash_we", """
check = lambda *args, **kwargs: print("wash_we: 1/1 checks passed")

def wash_we():
    return (np.zeros(3), np.zeros(3), np.zeros(4), np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3))
""", "rebinds check (the one line of every test cell) to print a pass, and answers the "
     "notebook's own exercise wash_we wrongly",
           expect="honest", answers="solutions", lose=("test_wash_we",),
           flagged="tampering suspected"),
]
