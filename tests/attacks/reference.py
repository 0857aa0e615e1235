"""Calling the reference implementation of the function under test, by any route.

Later notebooks may use earlier functions from helpers; the function being graded must
be the learner's own: in the isolated run, helpers.reference.<function> is a stub.
"""

from attacks import Attack

_SDPA_HEADER = "def scaled_dot_product_attention(Q, K, V, mask=None):\n"

ATTACKS = [
    Attack("from_helpers_import", "02_softmax", "softmax", """
from helpers import softmax as _reference_softmax

def softmax(z, axis=-1):
    return _reference_softmax(z, axis=axis)
""", "imports the reference softmax under another name and returns its answer"),
    Attack("reference_module_attribute", "04_queries_keys_values", "scaled_dot_product_attention", """
import helpers.reference as R

def scaled_dot_product_attention(Q, K, V, mask=None):
    return getattr(R, "scaled_dot_" + "product_attention")(Q, K, V, mask)
""", "reaches helpers.reference.scaled_dot_product_attention through getattr"),
    Attack("default_argument", "07_transformer_block", "layer_norm", """
import helpers

def layer_norm(x, gamma, beta, eps=1e-5, _ref=helpers.layer_norm):
    return _ref(x, gamma, beta, eps)
""", "captures the reference layer_norm as a default argument at definition time"),
    Attack("reload_reference", "02_softmax", "softmax", """
import importlib, helpers.reference
_fresh = importlib.reload(helpers.reference)

def softmax(z, axis=-1):
    return _fresh.softmax(z, axis)
""", "reloads helpers.reference, hoping to get the original function back"),
    Attack("exec_reference_source", "02_softmax", "softmax", """
import glob, os, sys, helpers
_ns = {}
_candidates = [os.path.join(os.path.dirname(helpers.__file__), "reference.py"),
               "@@REPO@@/helpers/reference.py"]
for _entry in sys.path:
    _candidates += glob.glob(os.path.join(_entry or ".", "*", "reference.py"))
    _candidates += glob.glob(os.path.join(_entry or ".", "*", "*", "reference.py"))
for _path in _candidates:
    try:
        _code = open(_path).read()
    except OSError:
        continue
    if "is hidden while" not in _code:
        exec(compile(_code, _path, "exec"), _ns)
        break

def softmax(z, axis=-1):
    return _ns["softmax"](z, axis)
""", "finds a copy of helpers/reference.py on disk (package folder, repository, every "
     "sys.path entry) and executes it", isolation=True),
    Attack("load_repo_by_path", "07_transformer_block", "layer_norm", """
import importlib.util, sys
sys.path.insert(0, "@@REPO@@")
_spec = importlib.util.spec_from_file_location("_ref_copy", "@@REPO@@/helpers/reference.py")
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)

def layer_norm(x, gamma, beta, eps=1e-5):
    return _mod.layer_norm(x, gamma, beta, eps)
""", "imports the repository's helpers/reference.py by absolute path", isolation=True),
    Attack("checks_private_reference", "02_softmax", "softmax", """
import helpers.checks

def softmax(z, axis=-1):
    return helpers.checks._REFERENCE["softmax"](z, axis)
""", "uses the reference that helpers.checks captured at import"),
    Attack("gc_search", "04_queries_keys_values", "scaled_dot_product_attention", """
import gc

def scaled_dot_product_attention(Q, K, V, mask=None):
    for obj in gc.get_objects():
        if (callable(obj) and getattr(obj, "__name__", "") == "scaled_dot_product_attention"
                and getattr(obj, "__module__", "") != "__main__"
                and obj is not scaled_dot_product_attention):
            try:
                return obj(Q, K, V, mask)
            except Exception:
                continue
    raise RuntimeError("nothing found")
""", "searches the garbage collector for any other function of the same name"),
    Attack("code_object_copy", "02_softmax", "softmax", """
import types, helpers.reference as R
softmax = types.FunctionType(R.softmax.__code__, R.__dict__, "softmax", R.softmax.__defaults__)
""", "copies the reference function's code object"),
    Attack("hides_behind_try", "02_softmax", "softmax", """
import helpers

def softmax(z, axis=-1):
    try:
        return helpers.softmax(z, axis)
    except BaseException:
        return np.full(np.shape(z), 0.5)
""", "calls the reference and falls back on garbage when the call is refused"),
    Attack("demo_fallback", "08_language_model", "language_model_forward", """
from helpers import demos_model

def _not_mine(token_ids, params, n_heads):
    raise NotImplementedError()
_not_mine.__name__ = "language_model_forward"

language_model_forward = demos_model.yours_or_reference(_not_mine)
""", "wraps a stub in the demos' yours_or_reference, which falls back on the reference"),
    Attack("asks_the_grader_for_itself", "07_transformer_block", "layer_norm", """
import helpers._yours as _y

def layer_norm(x, gamma, beta, eps=1e-5):
    if _y.trusted is None:
        raise NotImplementedError()
    return _y.trusted("helpers.reference:layer_norm", "layer_norm",
                      {"x": x, "gamma": gamma, "beta": beta, "eps": eps})
""", "asks the trusted grader, which answers a child the earlier functions it may use, "
     "for the function under test itself", expect="honest", answers="solutions",
           lose=("test_layer_norm",)),
    Attack("raw_request_to_the_grader", "02_softmax", "softmax", """
import os, socket, stat
from helpers import _wire

def _ask(sock, data):
    sock.sendall(len(data).to_bytes(8, "big") + data)
    size = int.from_bytes(sock.recv(8), "big")
    got = b""
    while len(got) < size:
        got += sock.recv(size - len(got))
    return _wire.decode(got)

def softmax(z, axis=-1):
    for fd in range(3, 64):
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(fd))
            _ask(sock, b"J" + b"[" * 5000)                        # garbage first
            reply = _ask(sock, _wire.encode({"fn": "helpers.reference:softmax",
                                             "args": {"z": z, "axis": axis},
                                             "blobs": {}}, short=True))
            if "value" in reply:
                return reply["value"]
        except Exception:
            continue
    return np.full(np.shape(z), 0.5)
""", "finds the socket on which the grader answers a child's course functions and asks "
     "it, with crafted bytes, for the function under test"),
]
