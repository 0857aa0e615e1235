"""``generate`` (notebook 08_language_model): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference

from helpers.course import Arg, Case, Contract, Exercise, draw, case
from helpers.course.text import model_fingerprint as _fingerprint
from helpers.exercises.language_model_forward import PARAMS
from helpers.exercises._variants import _gen, _onehot, _sampler_multiplied, _sampler_no_temperature, _sampler_uniform


#: The references the judging uses, captured at import (a poison in place cannot fool it).
_LM_FORWARD = reference.language_model_forward
_SOFTMAX = reference.softmax
#: |z| above this for the negative log-likelihood of sampled ids fails a sampling case.
SAMPLING_Z_LIMIT = 5.0
#: A sampling mistake is named when the ids fit its distribution this well (|z| <= 3.5).
SAMPLING_DIAGNOSIS_Z = 3.5


def _compare(case, expected, got):
    return _judge(case, expected, got)


def _diagnose(case, got, error):
    return _diagnosis(case, got, error)


CONTRACT = Contract(
    args={"token_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True),
          "params": Arg(dict, fields=PARAMS), "n_heads": Arg(int, low=1),
          "n_new": Arg(int, low=0),
          "temperature": Arg(float, optional=True, low=0.0),
          "rng": Arg(np.random.Generator, optional=True)},
    returns=Arg("[M]", dtype="int"), draw=False, where=("N >= 1",),
    invariants=("M = N + n_new", "rng is given when temperature > 0"))

EXERCISE = Exercise(
    'generate', reference.generate, contract=CONTRACT, uses=('language_model_forward', 'softmax'),
    output='ids', compare=_compare, diagnose=_diagnose,
    difficulty=3, importance=3, minutes=25,
    hints=(
        r"""A loop of `n_new` steps. Each step runs the model on the last $n_{ctx}$ ids, keeps
only the **last** row of the logits (the guess for the token after them), chooses a token
from it (the argmax when `temperature` is 0, otherwise a draw from
$\operatorname{softmax}(\boldsymbol{u}/T)$ with `rng`) and appends it, so that the next
step reads it.""",
        r"""The tools: `n_ctx = len(params["P"])` and `ids[-n_ctx:]` crop the context;
`np.argmax`; `rng.choice(V, p=probs)` draws one index with the probabilities `probs`;
`np.append(ids, next_id)` returns a longer array. When `rng` is `None` and you need one,
make it with `np.random.default_rng()`.

```python
ids = np.asarray(token_ids, dtype=int)
n_ctx = len(params["P"])
for _ in range(n_new):
    logits = ___                 # [V]: the last row, for ids[-n_ctx:]
    if temperature == 0:
        next_id = ___
    else:
        probs = ___              # [V]
        next_id = int(rng.choice(len(probs), p=probs))
    ids = ___
return ids
```""",
        r"""The two lines most often wrong. The rest of the loop (choosing, appending) is
yours:

```python
logits = language_model_forward(ids[-n_ctx:], params, n_heads)[-1]   # [V], the last row
probs = softmax(logits / temperature)                                # only when T > 0
```""",
    ),
)


def _gen_models():
    """Small language models of the listed cases (built per call: cases may change them)."""
    return {
        "m8": draw.seeded_lm(308, V=8, d=8, n_ctx=5, n_blocks=1, ln_f=False, e_scale=0.5),
        "m4": draw.seeded_lm(272, V=6, d=4, n_ctx=4, n_blocks=2, ln_f=True),
        "ms": draw.seeded_lm(273, V=6, d=4, n_ctx=5, n_blocks=1, ln_f=True, e_scale=0.6),
    }


@EXERCISE.cases
def cases():
    m = _gen_models()
    return [
        case("greedy", "greedy (temperature 0), prompt [1, 5], 5 new tokens, n_ctx = 5",
             (np.array([1, 5]), m["m8"], 2, 5), group="greedy"),
        case("greedy_list",
             "greedy with temperature=0.0 given, prompt as a list [3], 3 new tokens",
             ([3], m["m8"], 2, 3), {"temperature": 0.0}, group="greedy"),
        case("same_seed", "sampling at temperature 0.7, prompt [2], 60 new tokens, called three "
             "times: twice with rng = np.random.default_rng(5) (the ids must be equal) and once "
             "with np.random.default_rng(6) (they must differ)",
             (np.array([2]), m["ms"], 2, 60), {"temperature": 0.7, "seed": 5, "other_seed": 6},
             group="sampling", scenario="helpers.exercises.generate:scenario_same_seed"),
        case("sampling", "sampling at temperature 0.5 with rng = np.random.default_rng(7), "
             "prompt [2], 200 new tokens, n_ctx = 5", (np.array([2]), m["ms"], 2, 200),
             {"temperature": 0.5, "rng": draw.rng(7)}, group="sampling"),
        case("greedy_crop", "greedy, prompt of 3 tokens, 6 new tokens, n_ctx = 4 (the context "
             "must be cropped)", (np.array([0, 3, 5]), m["m4"], 2, 6), group="cropping",
             hidden=True),
        case("greedy_full", "greedy, a prompt of exactly n_ctx = 4 tokens, 3 new tokens",
             (np.array([2, 2, 1, 4]), m["m4"], 1, 3), group="cropping", hidden=True),
        case("zero_new_visible", "n_new = 0 (returns the prompt [2, 1])",
             (np.array([2, 1]), m["m8"], 2, 0), group="greedy"),
        case("zero_new", "n_new = 0 (returns the prompt)", (np.array([4, 0, 1]), m["m8"], 2, 0),
             group="greedy", hidden=True),
        case("greedy_long", "greedy, prompt [3], 10 new tokens, n_ctx = 5, n_heads = 1",
             (np.array([3]), m["ms"], 1, 10), group="greedy", hidden=True),
        case("sampling_hot", "sampling at temperature 2.0 with rng = np.random.default_rng(11), "
             "prompt [0, 1], 200 new tokens, n_ctx = 5", (np.array([0, 1]), m["ms"], 2, 200),
             {"temperature": 2.0, "rng": draw.rng(11)}, group="sampling", hidden=True),
        case("sampling_cold", "sampling at temperature 0.25 with rng = np.random.default_rng(12), "
             "prompt [3], 150 new tokens, n_ctx = 5", (np.array([3]), m["ms"], 1, 150),
             {"temperature": 0.25, "rng": draw.rng(12)}, group="sampling", hidden=True),
        case("sampling_crop", "sampling at temperature 0.8 with rng = np.random.default_rng(13), "
             "prompt of 3 tokens, 200 new tokens, n_ctx = 4, 2 blocks",
             (np.array([1, 2, 3]), m["m4"], 2, 200), {"temperature": 0.8, "rng": draw.rng(13)},
             group="sampling", hidden=True),
        case("same_seed_hot", "sampling at temperature 1.5, prompt [1, 4], 60 new tokens, twice "
             "with rng = np.random.default_rng(21) and once with np.random.default_rng(22)",
             (np.array([1, 4]), m["ms"], 1, 60),
             {"temperature": 1.5, "seed": 21, "other_seed": 22}, group="sampling", hidden=True,
             scenario="helpers.exercises.generate:scenario_same_seed"),
    ]


def scenario_same_seed(generate, token_ids, params, n_heads, n_new, temperature, seed,
                       other_seed, *, _default_rng=np.random.default_rng, _array=np.array,
                       _tuple=tuple):
    """Three calls: two with generators seeded ``seed``, one seeded ``other_seed``; their
    outputs (observations: the judge compares them in the trusted process)."""
    runs = []
    for s in (seed, seed, other_seed):
        ids = _array(token_ids, copy=True)
        runs.append(generate(ids, params, n_heads, n_new, temperature=temperature,
                             rng=_default_rng(s)))
    return _tuple(runs)


# Known mistakes

@EXERCISE.mistake("context_never_extended",
                  "each step fed the prompt again: append the new id and feed the grown sequence "
                  "(cropped to the last n_ctx tokens) at the next step")
def _gen_no_extend(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, extend=False)


@EXERCISE.mistake("not_cropped",
                  "the context was not cropped: feed only the last n_ctx tokens, ids[-n_ctx:]")
def _gen_no_crop(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, crop=0)


@EXERCISE.mistake("cropped_one_short",
                  "the context was cropped to n_ctx - 1 tokens; keep the last n_ctx: ids[-n_ctx:]")
def _gen_crop_short(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    n_ctx = np.shape(params["P"])[0]
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, crop=max(n_ctx - 1, 1))


@EXERCISE.mistake("first_position_logits",
                  "used the logits of the first position; the next token is scored by the last row, "
                  "logits[-1]")
def _gen_first(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, position=0)


@EXERCISE.mistake("argmax_flat",
                  "took np.argmax of the whole [N, V] logits matrix (a flat index); take the argmax "
                  "of the last row, logits[-1]")
def _gen_flat(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, flat_argmax=True)


@EXERCISE.mistake("only_new_tokens",
                  "returned only the new ids; return the prompt followed by the n_new new ids")
def _gen_only_new(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, only_new=True)


@EXERCISE.mistake("one_token_short",
                  "generated n_new - 1 tokens (an off-by-one in the loop); generate exactly n_new")
def _gen_short(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, max(n_new - 1, 0), temperature, rng)


@EXERCISE.mistake("uniform_sampling",
                  "sampled uniformly (rng.choice(V) without p=...); pass the probabilities: "
                  "rng.choice(V, p=softmax(logits / temperature))",
                  sampler=_sampler_uniform)
def _gen_uniform(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng,
                sampler=_sampler_uniform if temperature > 0 else None)


@EXERCISE.mistake("temperature_multiplied",
                  "the logits were multiplied by the temperature; divide them: softmax(logits / "
                  "temperature)",
                  sampler=_sampler_multiplied)
def _gen_t_mult(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng,
                sampler=_sampler_multiplied if temperature > 0 else None)


@EXERCISE.mistake("temperature_ignored",
                  "the temperature was ignored when sampling: sample from softmax(logits / temperature)",
                  sampler=_sampler_no_temperature)
def _gen_t_ignored(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng,
                sampler=_sampler_no_temperature if temperature > 0 else None)


@EXERCISE.mistake("always_greedy",
                  "always took the argmax: with temperature > 0, sample from softmax(logits / "
                  "temperature) "
                  "with rng.choice",
                  sampler=_onehot)
def _gen_greedy(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, 0.0, None)


@EXERCISE.mistake("rng_ignored",
                  "the rng argument was not used (same seed, different outputs): draw with "
                  "rng.choice(V, p=probs), not np.random")
def _gen_rng_ignored(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, None)


# Judging (greedy cases exactly; sampling cases by distribution; the same-seed scenario)

def _ids_array(got):
    """(ids as int64, None) or (None, what is wrong with the output)."""
    if got is None:
        return None, "the output is None: is a `return` missing?"
    try:
        with np.errstate(all="ignore"):
            arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return None, f"the output could not be read as an array of ids ({exc})"
    if arr.ndim != 1:
        return None, f"the output must be a 1-D array of ids, got shape {arr.shape}"
    if not (np.isfinite(arr).all() and np.array_equal(arr, np.round(arr))):
        return None, "the output must hold whole numbers (token ids)"
    return arr.astype(np.int64), None


def _generate_parts(case: Case):
    prompt, params, n_heads, n_new = case.args[:4]
    temperature = case.kwargs.get("temperature", 0.0)
    return np.asarray(prompt).astype(np.int64), params, n_heads, n_new, temperature


#: Reference next-token logits by (model fingerprint, n_heads, context bytes).
_LOGITS_CACHE: dict = {}


def _sampling_statistics(case: Case, ids: np.ndarray, samplers: list) -> list:
    """For each sampler, (z, n_impossible) of the sampled ids' negative log-likelihood.

    The per-step distribution is sampler(reference logits on the answer's own context).
    """
    prompt, params, n_heads, n_new, T = _generate_parts(case)
    n_ctx = np.shape(params["P"])[0]
    N = len(prompt)
    model = (_fingerprint(params), n_heads)
    acc = [[0.0, 0.0, 0.0, 0] for _ in samplers]          # nll, entropy, variance, impossible
    with np.errstate(all="ignore"):
        for t in range(n_new):
            ctx = ids[: N + t][-n_ctx:]
            key = (model, ctx.tobytes())
            logits = _LOGITS_CACHE.get(key)
            if logits is None:
                logits = _LM_FORWARD(ctx, params, n_heads)[-1]
                if len(_LOGITS_CACHE) > 20000:
                    _LOGITS_CACHE.clear()
                _LOGITS_CACHE[key] = logits
            s = int(ids[N + t])
            for a, sampler in zip(acc, samplers):
                p = sampler(logits, T)
                if p[s] < 1e-12:
                    a[3] += 1
                    continue
                logp = np.log(np.where(p > 0, p, 1.0))
                h = -(p * logp).sum()
                a[0] += -logp[s]
                a[1] += h
                a[2] += (p * logp * logp).sum() - h * h
    out = []
    for nll, ent, var, impossible in acc:
        z = (nll - ent) / np.sqrt(var) if var > 1e-12 else (0.0 if abs(nll - ent) < 1e-9
                                                            else np.inf)
        out.append((float(z), impossible))
    return out


def _correct_sampler(logits, temperature):
    z = (logits - logits.max()) / temperature
    return _SOFTMAX(z)


def _sample_problem(case: Case, expected, got) -> str | None:
    ids, problem = _ids_array(got)
    if problem:
        return problem
    prompt, params, n_heads, n_new, T = _generate_parts(case)
    V = np.shape(params["E"])[0]
    want = len(prompt) + n_new
    if len(ids) != want:
        return (f"the output has {len(ids)} ids; expected {want} (the prompt's {len(prompt)} "
                f"followed by n_new = {n_new} new ones)")
    if not np.array_equal(ids[: len(prompt)], prompt):
        return (f"the output must start with the prompt {prompt.tolist()}; it starts with "
                f"{ids[: len(prompt)].tolist()}")
    if ((ids < 0) | (ids >= V)).any():
        bad = ids[(ids < 0) | (ids >= V)][0]
        return f"id {bad} is not a token of the vocabulary (V = {V})"
    if not case.is_sampling:
        exp = np.asarray(expected)
        if np.array_equal(ids, exp):
            return None
        k = int(np.argmax(ids != exp))
        return (f"wrong ids: expected {exp.tolist()}, got {ids.tolist()} (first difference "
                f"at position {k}, new token {k - len(prompt) + 1})")
    (z, impossible), = _sampling_statistics(case, ids, [_correct_sampler])
    if impossible:
        return (f"{impossible} sampled ids have (almost) zero probability under "
                f"softmax(logits / temperature) of the last {np.shape(params['P'])[0]} tokens")
    if abs(z) > SAMPLING_Z_LIMIT:
        way = ("more likely" if z < 0 else "less likely")
        return (f"the sampled ids do not follow softmax(logits / temperature): they are "
                f"{way} than samples from it would be (z = {z:.1f} over {n_new} steps, "
                f"|z| <= {SAMPLING_Z_LIMIT:g} expected)")
    return None




def _rng_mistake():
    return next(m for m in EXERCISE.mistakes if m.key == "rng_ignored")


def _judge(case, expected, got):
    if case is None:                                # are two outputs the same?
        a, _ = _ids_array(expected)
        b, _ = _ids_array(got)
        return None if a is not None and b is not None and np.array_equal(a, b) else "differ"
    if not case.scenario:
        return _sample_problem(case, expected, got)
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return "the scenario needs the three outputs of generate"
    first, again, other = got
    a, b, c = _ids_array(first)[0], _ids_array(again)[0], _ids_array(other)[0]
    if a is not None and (b is None or not np.array_equal(a, b)):
        return "two calls with the same seeded rng gave different ids"
    if a is not None and c is not None and np.array_equal(a, c):
        return ("calls with differently seeded generators gave the same ids: draw the "
                "samples with the rng argument")
    problem = _sample_problem(case, None, first)
    return f"first call: {problem}" if problem else None


def _diagnosis(case, got, error):
    if error is not None:
        if not case.scenario:
            # An error of generate shows within the first n_ctx + 2 steps (the context grows
            # past n_ctx there); replaying the whole case for every mistake would be slow.
            n_ctx = np.shape(case.args[1]["P"])[0]
            args = list(case.args)
            args[3] = min(args[3], n_ctx + 2)
            short = Case(case.function, case.name, case.description, tuple(args), case.kwargs,
                         case.group, case.hidden)
            return [m for m in EXERCISE.mistakes if _raises_same(m, short, error)]
        return []
    if case.scenario:
        if isinstance(got, (tuple, list)) and len(got) == 3:
            a, b = _ids_array(got[0])[0], _ids_array(got[1])[0]
            if a is None or b is None or not np.array_equal(a, b):
                return [_rng_mistake()]
            got = got[0]
        else:
            return []
    if not case.is_sampling:
        return None                                   # the usual: replay each mistake
    ids, problem = _ids_array(got)
    samplers = [m for m in EXERCISE.mistakes if m.sampler is not None]
    prompt = _generate_parts(case)[0]
    if problem or len(ids) != len(prompt) + case.args[3] or \
            not np.array_equal(ids[: len(prompt)], prompt):
        return []
    V = np.shape(case.args[1]["E"])[0]
    if ((ids < 0) | (ids >= V)).any():
        return []
    stats = _sampling_statistics(case, ids, [m.sampler for m in samplers])
    return [m for m, (z, imp) in zip(samplers, stats)
            if imp == 0 and abs(z) <= SAMPLING_DIAGNOSIS_Z]


def _raises_same(mistake, case, error) -> bool:
    try:
        with np.errstate(all="ignore"):
            case.run(mistake.fn)
    except Exception as exc:                            # a mistake may fail on some inputs
        return type(exc) is type(error) and str(exc) == str(error)
    return False
