"""The pictures of notebooks 01-04: dot products, softmax, simple self-attention,
queries, keys and values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import helpers.reference as ref
from helpers.plots.base import (ACCENT_COLOR, BASE_COLOR, 
                                bars, heatmap, new_figure)


def _arrow(ax, v, color, label):
    ax.annotate("", xy=(v[0], v[1]), xytext=(0, 0),
                arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2.2})
    ax.text(v[0] * 1.12, v[1] * 1.12, label, color=color, fontsize=12,
            ha="center", va="center")


def vectors_2d(a, b, labels: Sequence[str] = ("a", "b")):
    """Notebook 01: two 2-D vectors as arrows, with their dot product and cosine.

    a, b: ``[2]``. Left: the arrows and the shadow of ``b`` on ``a`` (the dot product
    is ``|a|`` times its signed length). Right: dot product and cosine for every
    direction of ``b`` (same length), the current direction marked.
    """
    a = np.asarray(a, dtype=float)                               # [2]
    b = np.asarray(b, dtype=float)                               # [2]
    fig, (ax, curve) = new_figure(9.0, 4.0, ncols=2)
    lim = max(1.0, float(np.abs(np.concatenate([a, b])).max())) * 1.3
    ax.axhline(0, color="0.85", linewidth=0.8)
    ax.axvline(0, color="0.85", linewidth=0.8)
    if a.any():
        shadow = (a @ b) / (a @ a) * a                           # projection of b on a
        ax.plot([0, shadow[0]], [0, shadow[1]], color=ACCENT_COLOR, linewidth=7,
                alpha=0.3, solid_capstyle="butt", label="shadow of b on a")
        ax.plot([b[0], shadow[0]], [b[1], shadow[1]], linestyle=":", color="0.5")
        ax.legend(loc="lower left", fontsize=8, frameon=False)
    _arrow(ax, a, BASE_COLOR, labels[0])
    _arrow(ax, b, ACCENT_COLOR, labels[1])
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    both = a.any() and b.any()
    cos = ref.cosine_similarity(a, b) if both else float("nan")
    ax.set_title(f"{labels[0]} · {labels[1]} = {ref.dot(a, b):.2f}     cos = {cos:.2f}")

    # dot and cosine as b turns around the origin (its length kept)
    angles = np.linspace(-180, 180, 361)                         # [361] degrees
    rad = np.radians(angles)
    b_len, a_len = float(np.linalg.norm(b)), float(np.linalg.norm(a))
    a_angle = np.arctan2(a[1], a[0])
    dots = a_len * b_len * np.cos(rad)                           # angle between a and b
    curve.plot(angles, dots, color=BASE_COLOR, label="dot product")
    curve.plot(angles, np.cos(rad), color=ACCENT_COLOR, label="cosine")
    if both:
        between = np.degrees(np.arctan2(b[1], b[0]) - a_angle)
        between = (between + 180) % 360 - 180                    # in [-180, 180)
        curve.plot([between], [ref.dot(a, b)], "o", color=BASE_COLOR)
        curve.plot([between], [cos], "o", color=ACCENT_COLOR)
    curve.axhline(0, color="black", linewidth=0.6)
    curve.set_xticks([-180, -90, 0, 90, 180])
    curve.set_xlabel(f"angle from {labels[0]} to {labels[1]} (degrees)")
    curve.set_title(f"turning {labels[1]} around, |{labels[1]}| = {b_len:.2f}")
    curve.legend(fontsize=8, frameon=False)
    curve.spines[["top", "right"]].set_visible(False)
    return fig


def similarity_matrices(X, tokens: Sequence[str]):
    """Notebook 01: every pair of tokens compared, by dot product and by cosine.

    X: ``[N, d]``. Left: ``X X^T``; right: the cosine of each pair.
    """
    X = np.asarray(X, dtype=float)                               # [N, d]
    scores = ref.pairwise_scores(X)                              # [N, N]
    norms = np.linalg.norm(X, axis=1)                            # [N]
    cosines = scores / np.outer(norms, norms)                    # [N, N]
    fig, axes = new_figure(9.0, 3.8, ncols=2)
    heatmap(axes[0], scores, tokens, tokens, title="dot products  X Xᵀ",
            xlabel="token j", ylabel="token i")
    heatmap(axes[1], cosines, tokens, tokens, title="cosine similarities", vmin=0, vmax=1,
            xlabel="token j")
    return fig


def _entropy_bits(p) -> float:
    p = np.asarray(p, dtype=float)
    nz = p[p > 0]
    return float(-(nz * np.log2(nz)).sum())


def softmax_temperatures(z, labels: Sequence[str],
                         temperatures: Sequence[float] = (0.25, 1.0, 4.0)):
    """Notebook 02: one score vector, and its softmax at several temperatures.

    z: ``[n]``. First panel: the scores; then ``softmax(z / T)`` for each ``T``.
    """
    z = np.asarray(z, dtype=float)                               # [n]
    fig, axes = new_figure(3.0 * (len(temperatures) + 1), 3.2,
                           ncols=len(temperatures) + 1)
    bars(axes[0], z, labels, title="scores z", color="0.55")
    for ax, t in zip(axes[1:], temperatures):
        p = ref.softmax(z / t)
        bars(ax, p, labels, ylim=(0, 1.12), highlight=int(np.argmax(p)),
             title=f"softmax(z / {t:g})")
    return fig


def softmax_temperature(z, labels: Sequence[str], temperature: float):
    """Notebook 02 explorer: ``z / T`` and ``softmax(z / T)`` side by side.

    The title reports the largest weight and the entropy (in bits: 0 for a one-hot
    vector, ``log2 n`` for the uniform one).
    """
    z = np.asarray(z, dtype=float)                               # [n]
    p = ref.softmax(z / temperature)                             # [n]
    fig, axes = new_figure(9.0, 3.4, ncols=2)
    bars(axes[0], z / temperature, labels, color="0.55",
         title=f"scores divided by T = {temperature:g}")
    bars(axes[1], p, labels, ylim=(0, 1.12), highlight=int(np.argmax(p)),
         title=f"softmax: max {p.max():.3f}, entropy {_entropy_bits(p):.2f} of "
               f"{np.log2(len(p)):.2f} bits")
    return fig


#: Hand-made features for the "it was too tired / too wide" sentences (notebook 03).
#: Not learned: each coordinate is a property a reader might attach to the word.
TOY_FEATURES = ("animal", "place", "refers back", "tiredness", "width", "grammar")
TOY_EMBEDDINGS = {
    "the": [0, 0, 0, 0, 0, 0.6],
    "chicken": [1.0, 0, 0, 0.5, 0, 0],
    "didn't": [0, 0, 0, 0, 0, 0.5],
    "cross": [0.2, 0.3, 0, 0.2, 0, 0.3],
    "road": [0, 1.0, 0, 0, 0.5, 0],
    "because": [0, 0, 0, 0, 0, 0.6],
    "it": [0.5, 0.5, 1.0, 0, 0, 0.2],
    "was": [0, 0, 0, 0, 0, 0.5],
    "too": [0, 0, 0, 0, 0, 0.4],
    "tired": [0.6, 0, 0, 1.0, 0, 0],
    "wide": [0, 0.6, 0, 0, 1.0, 0],
}


def toy_sentence(sentence: str) -> tuple[list[str], np.ndarray]:
    """``(tokens, X [N, 6])`` for a sentence made of the words of ``TOY_EMBEDDINGS``."""
    tokens = sentence.split()
    unknown = [t for t in tokens if t.lower() not in TOY_EMBEDDINGS]
    if unknown:
        raise ValueError(f"no toy embedding for {unknown}; known: {sorted(TOY_EMBEDDINGS)}")
    return tokens, np.array([TOY_EMBEDDINGS[t.lower()] for t in tokens], dtype=float)


def simple_attention_weights(X) -> np.ndarray:
    """``softmax(X X^T / sqrt(d))``, the weights inside :func:`simple_self_attention`."""
    X = np.asarray(X, dtype=float)                               # [N, d]
    return ref.softmax(ref.pairwise_scores(X) / np.sqrt(X.shape[-1]), axis=-1)


def attention_focus(weights, tokens: Sequence[str], query: int, *, title: str = "",
                    width: float = 10.0):
    """Notebooks 03-04: all attention weights, and what one query attends to.

    weights: ``[N_q, N_k]`` (rows = queries, sum to 1). Left: the matrix, the query's
    row outlined; right: that row as bars.
    """
    weights = np.asarray(weights, dtype=float)
    fig, axes = new_figure(width, 3.9, ncols=2)
    heatmap(axes[0], weights, tokens, tokens, vmin=0, vmax=1, xlabel="key (attended to)",
            ylabel="query (attending)", highlight_row=query, colorbar=False,
            annotate=len(tokens) <= 8, title=title or "attention weights")
    bars(axes[1], weights[query], tokens, ylim=(0, 1.12), highlight=query, ylabel="weight",
         title=f"what {tokens[query]!r} attends to", fmt="{:.2f}",
         annotate=len(tokens) <= 8)
    return fig


def contextual_sentence(tokens: Sequence[str], X, query: int, vector_scale: float = 1.0,
                        other: tuple[str, np.ndarray] | None = None,
                        feature_names: Sequence[str] = TOY_FEATURES):
    """Notebook 03 explorer: simple self-attention on one sentence, seen from one token.

    X: ``[N, d]`` (multiplied by ``vector_scale`` first). Panels: the weights, the
    chosen token's row, and its features before attention (the static embedding) and
    after (the contextual one). ``other = (label, X_other)``: a second sentence of the
    same length whose output at the same position is drawn too, for comparison.
    """
    X = vector_scale * np.asarray(X, dtype=float)                # [N, d]
    weights = simple_attention_weights(X)                        # [N, N]
    out = weights @ X                                            # [N, d]
    fig, axes = new_figure(14.0, 4.3, ncols=3)
    heatmap(axes[0], weights, tokens, tokens, vmin=0, vmax=1, xlabel="key",
            ylabel="query", highlight_row=query, colorbar=False, annotate=False,
            title="weights softmax(X Xᵀ / √d)")
    bars(axes[1], weights[query], tokens, ylim=(0, 1.05), highlight=query,
         annotate=False, ylabel="weight", title=f"what {tokens[query]!r} attends to")
    k = np.arange(len(feature_names))
    series = [(X[query], "static embedding", "0.6"),
              (out[query], "after attention, this sentence", ACCENT_COLOR)]
    if other is not None:
        X_other = vector_scale * np.asarray(other[1], dtype=float)
        out_other = simple_attention_weights(X_other) @ X_other
        series.append((out_other[query], f"after attention, {other[0]}", BASE_COLOR))
    width = 0.8 / len(series)
    for n, (values, label, color) in enumerate(series):
        axes[2].bar(k + (n - (len(series) - 1) / 2) * width, values / vector_scale, width,
                    color=color, label=label)
    axes[2].set_xticks(k, feature_names)
    axes[2].tick_params(axis="x", labelrotation=45)
    axes[2].spines[["top", "right"]].set_visible(False)
    axes[2].legend(fontsize=8, frameon=False)
    axes[2].set_title(f"features of {tokens[query]!r} (divided by the length factor)")
    return fig


def attention_comparison(weight_sets: Sequence, titles: Sequence[str],
                         tokens: Sequence[str]):
    """Notebook 04: several attention-weight matrices of one sentence, side by side."""
    fig, axes = new_figure(4.3 * len(weight_sets), 3.9, ncols=len(weight_sets))
    axes = np.atleast_1d(axes)
    image = None
    for ax, weights, title in zip(axes, weight_sets, titles):
        image = heatmap(ax, weights, tokens, tokens, vmin=0, vmax=1, title=title,
                        xlabel="key", ylabel="query", colorbar=False)
    fig.colorbar(image, ax=axes.tolist(), shrink=0.8, label="attention weight")
    return fig


def soft_lookup(key_scale: float, query=(0.0, 1.0)):
    """Notebook 04: attention as a soft lookup, on the "A A B A" example.

    Keys are ``key_scale`` times the one-hot embeddings (A = [1, 0], B = [0, 1]); one
    query (default "find B" = [0, 1]); no 1/sqrt(d_k) scaling, as in the example.
    Left: the weights of a hard lookup (a dictionary: all weight on the matching key)
    next to attention's soft weights. Right: the weight on the best key as the keys grow.
    """
    from helpers.examples import AABA_E, AABA_IDS, AABA_TOKENS

    E = AABA_E[AABA_IDS]                                         # [4, 2] one-hot rows
    q = np.asarray(query, dtype=float)                           # [2]
    weights = ref.softmax(key_scale * E @ q)                     # [4]
    raw = E @ q                                                  # [4] scores at scale 1
    hard = (raw == raw.max()).astype(float)
    hard /= hard.sum()                                           # ties share the weight
    fig, axes = new_figure(9.5, 3.6, ncols=2)
    k = np.arange(len(AABA_TOKENS))
    axes[0].bar(k - 0.2, hard, 0.4, color="0.6", label="hard lookup (dictionary)")
    axes[0].bar(k + 0.2, weights, 0.4, color=ACCENT_COLOR, label="attention (softmax)")
    for x, w in zip(k + 0.2, weights):
        axes[0].text(x, w + 0.02, f"{w:.3f}", ha="center", fontsize=8)
    axes[0].set_xticks(k, AABA_TOKENS)
    axes[0].set_ylim(0, 1.2)
    axes[0].legend(fontsize=8, frameon=False, loc="upper left")
    axes[0].spines[["top", "right"]].set_visible(False)
    axes[0].set_title(f"query {q.tolist()}, keys = {key_scale:g} x embeddings")
    scales = np.linspace(0, 20, 201)
    best = int(np.argmax(raw))
    curve = ref.softmax(scales[:, None] * raw, axis=-1)[:, best]  # [201]
    axes[1].plot(scales, curve, color=BASE_COLOR)
    axes[1].plot([key_scale], [weights[best]], "o", color=ACCENT_COLOR)
    axes[1].set_ylim(0, 1.05)
    axes[1].set_xlabel("size of the keys (scale)")
    axes[1].set_ylabel(f"weight on position {best + 1} ({AABA_TOKENS[best]})")
    axes[1].set_title("bigger keys, sharper lookup")
    axes[1].spines[["top", "right"]].set_visible(False)
    return fig
