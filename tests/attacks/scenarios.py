"""Issue 23 ("no verdict decided in a child"): an answer cell rebinds what the grader's
scenario scripts run in the learner's process (the scenario functions, their modules'
attributes, builtins), so that a wrong answer passes a scenario case. The child now
runs frozen copies of the scenarios, bound before the cells, which send raw observations;
the trusted grader decides what they mean. Each attack is wrong on its scenario cases
and must lose exactly that cell."""

from attacks import Attack

#: A llama_block that never uses the cache: a new row only attends to itself.
_NO_CACHE = '''
def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x)
    positions = np.arange(start, start + len(x))
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = split_heads(t1 @ block["W_Q"], config.n_heads).astype(x.dtype)
    K = split_heads(t1 @ block["W_K"], config.n_kv_heads).astype(x.dtype)
    V = split_heads(t1 @ block["W_V"], config.n_kv_heads).astype(x.dtype)
    Q = apply_rope(Q, positions, config.rope_theta)
    K = apply_rope(K, positions, config.rope_theta)
    heads = grouped_query_attention(Q, K, V)
    t3 = merge_heads(heads).astype(x.dtype) @ block["W_O"] + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3
'''

#: The right row computed without a cache (a full pass), and the cache's size claimed.
_FAKE_CACHE_SCENARIO = '''
def scenario_cache(llama_block, x, block, config, n, **kw):
    return n, llama_block(x, block, config)[-1:]
'''

#: A softmax_with_temperature that never checks T.
_NO_CHECK = '''
def softmax_with_temperature(z, temperature):
    return softmax(np.asarray(z, dtype=np.float64) / temperature, axis=-1)
'''

_SAY_VALUE_ERROR = '''
def scenario_raises_value_error(fn, *args, **kwargs):
    return "ValueError"
def scenario_raises_value_error_decide(observed):
    return "ValueError"
'''

ATTACKS = [
    Attack("scenario_redefined_no_kv_cache", "10_modern_llm", "llama_block",
           _NO_CACHE + _FAKE_CACHE_SCENARIO + '''
import helpers.exercises.llama_block as _m
_m.scenario_cache = scenario_cache
''', "llama_block without a KV cache; the answer cell redefines scenario_cache (and the "
           "module's) to compute the new row by a full pass", expect="honest",
           answers="solutions", lose=("test_llama_block",)),
    Attack("scenario_redefined_no_temperature_check", "02_softmax",
           "softmax_with_temperature", _NO_CHECK + _SAY_VALUE_ERROR + '''
import helpers.course.scenarios as _s
_s.scenario_raises_value_error = scenario_raises_value_error
_s.scenario_raises_value_error_decide = scenario_raises_value_error_decide
''', "softmax_with_temperature that never checks T; the answer cell redefines "
           "scenario_raises_value_error to say ValueError", expect="honest",
           answers="solutions", lose=("test_softmax_with_temperature",)),
    Attack("scenario_module_attributes_patched", "10_modern_llm", "llama_block",
           _NO_CACHE + _FAKE_CACHE_SCENARIO + '''
import sys, types, importlib
import helpers.course as _ex
import helpers.llama.model as _model
_mod = importlib.import_module("helpers.exercises.llama_block")
_mod.scenario_cache = scenario_cache
_mod.KVCache = _model.KVCache
_mod.np = types.SimpleNamespace(shape=lambda a: (0, 0), ndim=lambda a: 2)
_ex.resolve = lambda spec: scenario_cache
_ex.decide = lambda spec, observed: observed
_fake = types.ModuleType("helpers.exercises.llama_block")
_fake.scenario_cache = scenario_cache
sys.modules["helpers.exercises.llama_block"] = _fake
_ex.llama_block = _fake
try:
    import autograder.isolation.executor as _exe
    _exe._frozen = lambda fn: scenario_cache
    _exe._observers = lambda specs: [scenario_cache if s else None for s in specs]
except Exception:
    pass
''', "llama_block without a KV cache; the answer cell monkeypatches "
           "helpers.exercises.llama_block (in sys.modules too), helpers.exercises and the "
           "executor's scenario binding",
           expect="honest", answers="solutions", lose=("test_llama_block",)),
    Attack("scenario_builtins_replaced", "02_softmax", "softmax_with_temperature", '''
import builtins, os
_RealValueError, _real_abspath = ValueError, os.path.abspath

def _abspath(path):              # the driver calls it after its `except ValueError`
    builtins.ValueError, os.path.abspath = _RealValueError, _real_abspath
    return _real_abspath(path)

def softmax_with_temperature(z, temperature):
    builtins.ValueError, os.path.abspath = _RealValueError, _real_abspath
    if temperature <= 0:
        builtins.ValueError = KeyError        # `except ValueError` now catches a KeyError
        os.path.abspath = _abspath            # ... and puts everything back afterwards
        raise KeyError("temperature")         # not a ValueError
    return softmax(np.asarray(z, dtype=np.float64) / temperature, axis=-1)
''', "raises KeyError for T <= 0 after replacing builtins.ValueError (and os.path.abspath, "
           "which restores it), so that the driver takes it for a ValueError",
           expect="honest", answers="solutions", lose=("test_softmax_with_temperature",)),
]
