"""The pictures of notebook 14 (looking inside a model), drawn for SmolLM2: where its
induction heads are, and how the logit lens's rank of the right token falls layer by
layer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.patches import Rectangle

from helpers.plots.base import ACCENT_COLOR, BASE_COLOR, heatmap, new_figure


def induction_heads_figure(scores, top: int = 3, title: str | None = None):
    """Notebook 14: every head's induction score, one column per block, one row per head.

    scores: ``[L, H]`` (``induction_scores`` of a model's patterns), in ``[0, 1]``. The
    ``top`` highest-scoring heads are outlined and named in the legend (0-based, as
    ``scores[block, head]``).
    """
    scores = np.asarray(scores, dtype=float)                     # [L, H]
    n_blocks, n_heads = scores.shape
    fig, ax = new_figure(max(6.4, 0.26 * n_blocks + 2.0), max(2.6, 0.3 * n_heads + 1.2))
    heatmap(ax, scores.T, [f"head {c}" for c in range(n_heads)],
            [str(b) for b in range(n_blocks)], vmin=0, vmax=1, annotate=False,
            xlabel="block", title=title or "induction score of each head")
    ax.tick_params(axis="x", labelrotation=0, labelsize=7)
    best = np.argsort(scores, axis=None)[::-1][:top]             # flat indices, best first
    for flat in best:
        b, c = np.unravel_index(flat, scores.shape)
        ax.add_patch(Rectangle((b - 0.5, c - 0.5), 1, 1, fill=False, edgecolor=ACCENT_COLOR,
                               linewidth=2, label=f"block {b}, head {c}: {scores[b, c]:.2f}"))
    if top:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=top, fontsize=8,
                  frameon=False, handlelength=1)
    return fig


def lens_ranks_figure(ranks, labels: Sequence[str], highlight: int = -1,
                      title: str | None = None):
    """Notebook 14: the rank of the right next token in each layer's logit lens.

    ranks: ``[L + 1, N]`` (``answer_ranks`` of the lens; layer 0 is the embeddings);
    labels: one per position (e.g. ``"' of' -> ' Paris'"``). Each position is a line of
    rank + 1 on a log scale, so rank 0 (the layer's top guess is right) is the bottom
    line; ``highlight`` (a position) is drawn thick in the accent colour.
    """
    ranks = np.asarray(ranks, dtype=float)                       # [L + 1, N]
    layers = np.arange(ranks.shape[0])
    highlight = highlight % ranks.shape[1]
    fig, ax = new_figure(7.6, 3.8)
    shades = np.linspace(0.35, 0.75, ranks.shape[1])
    for n, label in enumerate(labels):
        if n == highlight:
            continue
        ax.plot(layers, ranks[:, n] + 1, color=str(shades[n]), linewidth=1, label=label)
    ax.plot(layers, ranks[:, highlight] + 1, color=ACCENT_COLOR, linewidth=2.5, marker="o",
            markersize=3, label=labels[highlight])
    ax.set_yscale("log")
    ax.axhline(1, color=BASE_COLOR, linewidth=0.8, linestyle="--", zorder=0)
    ax.set_xlabel("layer (0: the embeddings)")
    ax.set_ylabel("rank of the right token + 1")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    if title:
        ax.set_title(title)
    return fig
