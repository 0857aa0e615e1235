"""Tricks with Where it goes wrong (issue 37): the grader traces a failing answer once
more in the sandboxed child and reads back what its lines held, as plain data. A
learner's code can lift the child's caps on that record, forge its names, or behave
differently when traced: the record is refused or cut by the trusted process, never
shown raw, and the verdict is the one the wrong answer gets without the trick."""

from attacks import Attack

#: A wrong layer_norm (eps outside the square root: a named mistake) whose cell first
#: does ``@@TRICK@@`` to the child's tracer, then keeps many large arrays when traced.
TRACED_LAYER_NORM = """
import sys
import helpers.course.trace as _trace
{trick}

def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    if sys.gettrace() is not None:
        {when_traced}
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / (x.std(axis=-1, keepdims=True) + eps) + beta
"""

#: Lifting the child's caps on the record (every array kept, however many).
UNCAPPED = "_trace.MAX_SEEN = 10**9\n_trace.MAX_SEEN_BYTES = 10**13"
#: Many distinct large arrays while traced: ``n`` of 65,536 float64 entries (512 KB each).
MANY_ARRAYS = "for _k in range({n}):\n            big = np.full(1 << 16, float(_k))"
#: Every recorded name made terminal escapes, markup and backticks.
FORGED_NAMES = ("_Seen = _trace.Seen\n_trace.Seen = lambda line, name, value: _Seen(line, "
                "'\\x1b[2J<script>alert(1)</script>`', value)")


def traced_layer_norm(trick: str = "", when_traced: str = "pass") -> str:
    return TRACED_LAYER_NORM.format(trick=trick, when_traced=when_traced)


#: What each trick does: (key, its code, why).
TRICKS = [
    ("trace_record_too_large_to_send",
     traced_layer_norm(UNCAPPED, MANY_ARRAYS.format(n=80)),
     "lifts the tracer's caps and keeps 40 MB of arrays while traced (past what a reply "
     "carries)"),
    ("trace_record_past_its_cap",
     traced_layer_norm(UNCAPPED, MANY_ARRAYS.format(n=30)),
     "lifts the tracer's caps and keeps 15 MB of arrays while traced (a reply the wire "
     "carries, past the record's own cap)"),
    ("trace_record_forged_names",
     traced_layer_norm(FORGED_NAMES),
     "names every recorded array with terminal escapes, markup and a backtick"),
    ("trace_run_hangs",
     traced_layer_norm(when_traced="while True:\n            pass"),
     "runs forever when traced (only the grader's trace run is traced)"),
]

ATTACKS = [Attack(key, "07_transformer_block", "layer_norm", code, why, expect="honest",
                  answers="solutions", lose=("test_layer_norm",))
           for key, code, why in TRICKS]
