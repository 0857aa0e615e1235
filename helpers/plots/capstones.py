"""The pictures of the capstones: notebook 09 (a real sentence encoder,
all-MiniLM-L6-v2) and notebook 10 (a modern LLM, SmolLM2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from helpers.plots.base import (ACCENT_COLOR, BASE_COLOR, WEIGHTS_CMAP,
                                heatmap, new_figure)


def gelu_figure(gelu_fn, x_min: float = -4.0, x_max: float = 3.0):
    """Notebook 09: ``gelu_fn`` (exact GELU) next to ReLU, and its gap to the tanh
    approximation of GELU (:func:`helpers.bert.gelu_tanh`)."""
    from helpers.bert import gelu_tanh

    x = np.linspace(x_min, x_max, 401)                           # [401]
    y = np.asarray(gelu_fn(x), dtype=float)                      # [401]
    fig, axes = new_figure(9.0, 3.2, ncols=2)
    axes[0].plot(x, np.maximum(0.0, x), color="0.6", linestyle="--", label="ReLU(x)")
    axes[0].plot(x, y, color=BASE_COLOR, linewidth=2, label=r"GELU(x) = x $\Phi$(x)")
    lowest = int(np.argmin(y))
    axes[0].plot(x[lowest], y[lowest], "o", color=ACCENT_COLOR,
                 label=f"minimum {y[lowest]:.3f} at x = {x[lowest]:.2f}")
    axes[0].axhline(0, color="0.85", linewidth=0.8, zorder=0)
    axes[0].set_xlabel("x")
    axes[0].legend(frameon=False, fontsize=8)
    axes[0].set_title("GELU lets small negative values through")
    axes[1].plot(x, y - gelu_tanh(x), color=ACCENT_COLOR)
    axes[1].axhline(0, color="0.85", linewidth=0.8, zorder=0)
    axes[1].set_xlabel("x")
    axes[1].ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    axes[1].set_title("exact GELU minus its tanh approximation")
    for ax in axes:
        ax.spines[["top", "right"]].set_visible(False)
    return fig


def it_context_figure(margins: dict, title: str | None = None):
    """Notebook 09: does "it" lean towards "chicken" or "road"?

    margins: ``{label: [L + 1]}``, for each sentence ``cos(it, chicken) - cos(it, road)``
    of the token vectors after the embeddings (0) and after each layer (1..L).
    """
    fig, ax = new_figure(6.4, 3.4)
    colors = [ACCENT_COLOR, BASE_COLOR, "0.5", "0.3"]
    for (label, values), color in zip(margins.items(), colors):
        values = np.asarray(values, dtype=float)
        ax.plot(range(len(values)), values, "o-", color=color, label=label)
    n = max(len(v) for v in margins.values())
    ax.set_xticks(range(n), ["emb."] + [str(i) for i in range(1, n)])
    ax.axhline(0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xlabel("after layer")
    ax.set_ylabel("cos(it, chicken) - cos(it, road)")
    ax.text(0.01, 0.97, "closer to chicken ^", transform=ax.transAxes, fontsize=8,
            color="0.4", va="top")
    ax.text(0.01, 0.03, "closer to road v", transform=ax.transAxes, fontsize=8, color="0.4")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, fontsize=8, loc="center right")
    if title:
        ax.set_title(title)
    return fig


def encoder_heads_figure(weights, tokens: Sequence[str], layer: int, head: int | None = None,
                         query: int | None = None):
    """Notebook 09: the attention of one layer of the sentence encoder.

    weights: ``[n_heads, N, N]`` (rows = queries, columns = keys); layer: 0-based, for
    the title. ``head=None`` draws every head small (a grid of 4 columns); a head
    number draws that head large, with the row of ``query`` outlined.
    """
    weights = np.asarray(weights, dtype=float)                   # [h, N, N]
    n_heads, n = weights.shape[0], weights.shape[1]
    tokens = [str(t) for t in tokens]
    if head is not None:
        fig, ax = new_figure(max(5.0, 0.38 * n + 2.0), max(4.0, 0.34 * n + 1.2))
        heatmap(ax, weights[head], tokens, tokens, vmin=0, vmax=1, annotate=False,
                xlabel="key (attended to)", ylabel="query", highlight_row=query,
                title=f"layer {layer + 1}, head {head + 1}")
        ax.tick_params(axis="x", labelrotation=90)
        return fig
    ncols = 4
    nrows = -(-n_heads // ncols)
    # a plain grid (no constrained layout, labels on the outer panels only): 12 panels
    # of tick labels would take seconds to lay out
    fig = Figure(figsize=(2.3 * ncols + 1.2, 2.3 * nrows + 0.9))
    fig.subplots_adjust(left=0.09, right=0.88, bottom=0.12, top=0.92, wspace=0.08,
                        hspace=0.18)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    image = None
    for c, ax in enumerate(axes):
        if c >= n_heads:
            ax.axis("off")
            continue
        image = ax.imshow(weights[c], cmap=WEIGHTS_CMAP, vmin=0, vmax=1, aspect="auto")
        ax.set_title(f"head {c + 1}", fontsize=8, pad=2)
        ax.set_xticks([])
        ax.set_yticks([])
        if c % ncols == 0:
            ax.set_yticks(range(n), tokens, fontsize=5)
        if c >= n_heads - ncols:
            ax.set_xticks(range(n), tokens, fontsize=5, rotation=90)
        ax.tick_params(length=0)
    fig.colorbar(image, cax=fig.add_axes((0.9, 0.25, 0.015, 0.5)), label="attention weight")
    fig.suptitle(f"layer {layer + 1}: all {n_heads} heads (rows = queries, columns = keys)",
                 fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------
# Notebook 10 (a modern LLM: SmolLM2)
# ---------------------------------------------------------------------------------------


def rope_figure(theta: float = 10000.0, pair: int = 0, d_head: int = 64,
                max_offset: int = 256):
    """Notebook 10: what rotary position embeddings do.

    Left: one pair of features ``(x[m], x[m + d_h/2])`` of a key, ``m = pair``, drawn as a
    2-D point at positions 0..15: it turns by ``theta^(-2m/d_h)`` radians per position.
    Right: the score ``q . k`` of a query and a key that are the SAME vector of ones
    before rotation, for the query ``offset`` positions after the key: 64 at offset 0,
    then an oscillation that shrinks with distance, the same for any absolute position.
    """
    from helpers.llama import apply_rope, rope_angles

    fig, (ax_pair, ax_score) = new_figure(9.6, 3.8, ncols=2)
    step = float(rope_angles([1], d_head, theta)[0, pair])       # radians per position
    angles = step * np.arange(16)
    circle = np.linspace(0, 2 * np.pi, 200)
    ax_pair.plot(np.cos(circle), np.sin(circle), color="0.85", linewidth=0.8)
    ax_pair.scatter(np.cos(angles), np.sin(angles), c=np.arange(16), cmap=WEIGHTS_CMAP,
                    vmin=-4, vmax=15, zorder=3)
    for p in (0, 1, 2, 15):
        ax_pair.annotate(f"pos {p}", (np.cos(angles[p]), np.sin(angles[p])), fontsize=7,
                         xytext=(4, 4), textcoords="offset points")
    ax_pair.set_aspect("equal")
    ax_pair.set_xlim(-1.4, 1.4)
    ax_pair.set_ylim(-1.4, 1.4)
    ax_pair.set_title(f"pair m = {pair}: {step:.3g} rad per position", fontsize=10)
    ax_pair.set_xlabel(f"feature {pair}")
    ax_pair.set_ylabel(f"feature {pair + d_head // 2}")

    offsets = np.arange(max_offset + 1)
    ones = np.ones((1, d_head))
    k = apply_rope(ones, [0], theta)[0]                          # the key at position 0
    q = apply_rope(np.repeat(ones, len(offsets), axis=0), offsets, theta)   # [n, d_h]
    ax_score.plot(offsets, q @ k, color=BASE_COLOR, linewidth=1.2)
    ax_score.axhline(0, color="0.8", linewidth=0.8, zorder=0)
    ax_score.set_xlabel("offset i - j (query after key)")
    ax_score.set_ylabel("q . k")
    ax_score.set_title(f"score of two equal vectors, theta = {theta:g}", fontsize=10)
    ax_score.spines[["top", "right"]].set_visible(False)
    return fig


def generation_times_figure(times: dict, n_new: int, title: str | None = None):
    """Notebook 10: seconds per generated token, step by step, with and without a cache.

    times: ``{label: [seconds of step 1, step 2, ...]}``.
    """
    fig, ax = new_figure(7.0, 3.2)
    colors = [BASE_COLOR, ACCENT_COLOR, "0.5", "0.3"]
    for (label, values), color in zip(times.items(), colors):
        values = np.asarray(values, dtype=float) * 1000.0
        ax.plot(np.arange(1, len(values) + 1), values, "o-", color=color, markersize=3,
                label=f"{label}: {values.sum() / 1000:.2f} s in all")
    ax.set_xlabel(f"generated token (of {n_new})")
    ax.set_ylabel("milliseconds")
    ax.set_ylim(bottom=0)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, fontsize=8)
    if title:
        ax.set_title(title)
    return fig
