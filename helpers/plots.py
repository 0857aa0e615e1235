"""Figures for the notebooks: one function per picture, each returning a matplotlib Figure.

Figures are built with :class:`matplotlib.figure.Figure` rather than ``pyplot``, so a
figure appears exactly once (when a notebook cell returns it), never leaks into a later
cell, and drawing one in a loop (as the explorers in :mod:`helpers.widgets` do) leaves
nothing open. :func:`figure_to_png` turns a figure into PNG bytes.

The building blocks (:func:`new_figure`, :func:`heatmap`, :func:`bars`) keep every
picture of the course in one style: attention weights, which live in ``[0, 1]``, are
drawn with ``WEIGHTS_CMAP``; raw scores, which can have any sign, with ``SCORES_CMAP``
centred on zero. The pictures of each notebook follow, in course order.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle

import helpers.reference as ref

#: Colour map for attention weights (values in [0, 1]).
WEIGHTS_CMAP = "Blues"
#: Colour map for scores and other signed values (centred on 0 by :func:`heatmap`).
SCORES_CMAP = "RdBu_r"
#: The course's two line/bar colours: the default, and the one that marks "this one".
BASE_COLOR = "#4c72b0"
ACCENT_COLOR = "#dd8452"
#: PNG resolution used for explorers' images and :func:`figure_to_png`.
PNG_DPI = 90


# ---------------------------------------------------------------------------------------
# Building blocks shared by every notebook
# ---------------------------------------------------------------------------------------


def _show_figures_in_ipython() -> None:
    """Let IPython display a returned Figure as a PNG (pyplot would do this, but it also
    shows every figure it creates, which would draw explorers' figures twice)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, figure_to_png)


def new_figure(width: float = 6.4, height: float = 3.6, nrows: int = 1, ncols: int = 1,
               **subplot_kw):
    """A figure with a grid of axes and constrained layout.

    Returns ``(fig, ax)`` for a single panel, else ``(fig, axes)`` with ``axes`` a flat
    array in reading order.
    """
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, subplot_kw=subplot_kw or None)
    return fig, (axes[0, 0] if nrows * ncols == 1 else axes.ravel())


def figure_to_png(fig: Figure, dpi: int = PNG_DPI) -> bytes:
    """The figure rendered as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


_show_figures_in_ipython()


def heatmap(ax, values, row_labels: Sequence[str] | None = None,
            col_labels: Sequence[str] | None = None, *, title: str | None = None,
            cmap: str = WEIGHTS_CMAP, vmin: float | None = None, vmax: float | None = None,
            fmt: str = "{:.2f}", annotate: bool = True, xlabel: str | None = None,
            ylabel: str | None = None, highlight_row: int | None = None,
            colorbar: bool = True):
    """Draw a matrix as coloured cells, optionally with each value written in its cell.

    values: ``[R, C]``. With ``cmap=SCORES_CMAP`` and no ``vmin``/``vmax`` the colours
    are centred on zero. ``highlight_row`` outlines one row (the query being looked at).
    Returns the image (for a shared colour bar).
    """
    values = np.asarray(values, dtype=float)                     # [R, C]
    if cmap == SCORES_CMAP and vmin is None and vmax is None:
        limit = float(np.abs(values).max()) or 1.0
        vmin, vmax = -limit, limit
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    rows, cols = values.shape
    ax.set_xticks(range(cols), col_labels if col_labels is not None else range(cols))
    ax.set_yticks(range(rows), row_labels if row_labels is not None else range(rows))
    if col_labels is not None and max((len(str(s)) for s in col_labels), default=0) > 3:
        ax.tick_params(axis="x", labelrotation=45)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if annotate:
        lo, hi = image.get_clim()
        for i in range(rows):
            for j in range(cols):
                shade = (values[i, j] - lo) / ((hi - lo) or 1.0)
                dark = shade > 0.6 if cmap == WEIGHTS_CMAP else abs(shade - 0.5) > 0.3
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center",
                        fontsize=8, color="white" if dark else "black")
    if highlight_row is not None:
        ax.add_patch(Rectangle((-0.5, highlight_row - 0.5), cols, 1, fill=False,
                               edgecolor=ACCENT_COLOR, linewidth=2.5, clip_on=False))
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return image


def bars(ax, values, labels: Sequence[str], *, title: str | None = None,
         highlight: int | None = None, fmt: str = "{:.2f}", ylim=None,
         ylabel: str | None = None, color: str = BASE_COLOR, annotate: bool = True):
    """A bar chart of ``values`` (1-D) with one bar per label; ``highlight`` marks a bar."""
    values = np.asarray(values, dtype=float)                     # [n]
    colors = [ACCENT_COLOR if i == highlight else color for i in range(len(values))]
    rects = ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels)
    if max((len(str(s)) for s in labels), default=0) > 3 and len(labels) > 4:
        ax.tick_params(axis="x", labelrotation=45)
    if annotate:
        ax.bar_label(rects, labels=[fmt.format(v) for v in values], fontsize=8, padding=2)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.spines[["top", "right"]].set_visible(False)
    ax.axhline(0, color="black", linewidth=0.6)
    if title:
        ax.set_title(title)
    if ylabel:
        ax.set_ylabel(ylabel)
    return rects


# ---------------------------------------------------------------------------------------
# Notebooks 01-04 (dot products, softmax, simple self-attention, queries/keys/values)
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Notebooks 05-08 (masking, multi-head attention, the block, the language model)
# ---------------------------------------------------------------------------------------


def hatch_masked(ax, mask) -> None:
    """Grey out (hatched) the cells of a heatmap where ``mask`` is False."""
    for i, j in np.argwhere(~np.asarray(mask, dtype=bool)):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.88",
                               edgecolor="white", hatch="//", zorder=0.9))


def masked_vs_unmasked(weights_full, weights_causal, tokens: Sequence[str],
                       highlight_row: int | None = None):
    """Notebook 05: the same attention weights without and with the causal mask.

    weights_full, weights_causal: ``[N, N]`` (rows = queries, columns = keys).
    """
    fig, axes = new_figure(9.0, 3.8, ncols=2)
    heatmap(axes[0], weights_full, tokens, tokens, title="no mask (encoder)",
            xlabel="key", ylabel="query", vmin=0, vmax=1, colorbar=False,
            highlight_row=highlight_row)
    image = heatmap(axes[1], weights_causal, tokens, tokens,
                    title="causal mask (decoder)", xlabel="key", vmin=0, vmax=1,
                    colorbar=False, highlight_row=highlight_row)
    hatch_masked(axes[1], ref.causal_mask(len(tokens)))
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    return fig


def masking_explorer_figure(X, W_Q, W_K, W_V, tokens: Sequence[str], query: int,
                            causal: bool, sharpness: float):
    """Notebook 05 explorer: one query's weights with or without the causal mask.

    The scores ``Q K^T / sqrt(d_k)`` are multiplied by ``sharpness`` before the softmax.
    Left: the whole weight matrix, the chosen query outlined; right: its row as bars.
    """
    Q, K, V = ref.project_qkv(X, W_Q, W_K, W_V)
    n = len(tokens)
    mask = ref.causal_mask(n) if causal else np.ones((n, n), dtype=bool)
    # the exercise's own function computes the masked weights (issue 23: one name per
    # exercise's math); scaling Q by ``sharpness`` scales the scores
    _, weights = ref.scaled_dot_product_attention(sharpness * Q, K, V, mask)   # [N, N]
    fig, axes = new_figure(9.0, 3.6, ncols=2)
    heatmap(axes[0], weights, tokens, tokens, vmin=0, vmax=1, xlabel="key",
            ylabel="query", highlight_row=query, colorbar=False,
            title="causal mask" if causal else "no mask")
    hatch_masked(axes[0], mask)
    bars(axes[1], weights[query], tokens, ylim=(0, 1.1), ylabel="weight",
         title=f"what {tokens[query]!r} attends to", highlight=query)
    for j in np.flatnonzero(~mask[query]):
        axes[1].text(j, 0.12, "masked", ha="center", fontsize=8, color="0.4")
    return fig


def heads_side_by_side(weights, tokens: Sequence[str],
                       head_names: Sequence[str] | None = None, title: str | None = None):
    """Notebook 06: the attention weights of every head of one layer, side by side.

    weights: ``[n_heads, N, N]`` (rows = queries, columns = keys). Up to 4 heads per
    row of panels; cells are annotated only when the sequence is short.
    """
    weights = np.asarray(weights, dtype=float)                   # [h, N, N]
    n_heads, n = weights.shape[0], weights.shape[1]
    ncols = 2 if n_heads == 4 else min(n_heads, 4)
    nrows = -(-n_heads // ncols)
    side = 3.2 if n <= 12 else 3.8
    fig, axes = new_figure(side * ncols + 0.8, side * nrows + 0.4, nrows=nrows,
                           ncols=ncols)
    axes = np.atleast_1d(axes)
    labels = [_char_label(t) for t in tokens]                    # show "\n" as \n
    image = None
    for c, ax in enumerate(axes):
        if c >= n_heads:
            ax.axis("off")
            continue
        name = head_names[c] if head_names is not None else None
        image = heatmap(ax, weights[c], labels, labels, vmin=0, vmax=1,
                        annotate=n <= 6, fmt="{:.2f}", colorbar=False,
                        title=f"head {c}" + (f": {name}" if name else ""))
        ax.tick_params(axis="x", labelrotation=90 if n > 9 else 45, labelsize=7)
        ax.tick_params(axis="y", labelsize=7)
        if c % ncols:
            ax.set_yticklabels([])
    fig.colorbar(image, ax=axes.tolist(), shrink=0.7, label="attention weight")
    if title:
        fig.suptitle(title)
    return fig


def residual_stream_lengths(x, blocks, n_heads: int) -> dict:
    """The mean length over tokens of the residual stream and of its updates, block by
    block (pre-norm, causal), as :func:`residual_stream_figure` draws them.

    Returns ``{"steps", "stream", "attention", "feed_forward"}``: ``steps`` are 0 (the
    input), ``l - 0.5`` (after block ``l``'s attention, ``t3``) and ``l`` (after the
    whole block), ``stream`` the mean ``|.|`` there; ``attention`` and ``feed_forward``
    the mean ``|t2|`` and ``|t5|`` of each block.
    """
    h = np.asarray(x, dtype=float)                               # [N, d]
    steps, stream, attn, ffn = [0.0], [np.linalg.norm(h, axis=-1).mean()], [], []
    for layer, p in enumerate(blocks, start=1):
        t1 = ref.layer_norm(h, p["ln1_gamma"], p["ln1_beta"])
        t2 = ref.multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads)
        t3 = t2 + h
        t4 = ref.layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
        t5 = ref.feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"])
        h = t5 + t3
        attn.append(np.linalg.norm(t2, axis=-1).mean())
        ffn.append(np.linalg.norm(t5, axis=-1).mean())
        steps += [layer - 0.5, float(layer)]
        stream += [np.linalg.norm(t3, axis=-1).mean(), np.linalg.norm(h, axis=-1).mean()]
    return {"steps": np.array(steps), "stream": np.array(stream),
            "attention": np.array(attn), "feed_forward": np.array(ffn)}


def residual_stream_figure(x, blocks, n_heads: int, title: str | None = None):
    """Notebook 07: what each block of a stack writes into the residual stream.

    x: ``[N, d]``, the stream before the first block; blocks: a list of block parameter
    dicts. The picture shows, averaged over tokens, the length of the stream after each
    block's attention (``|t3|``, half a step) and after the whole block, and of the two
    updates ``|t2|`` and ``|t5|`` (:func:`residual_stream_lengths`): the stream is a
    running sum, and an update may lengthen it, turn it, or shorten it.
    """
    r = residual_stream_lengths(x, blocks, n_heads)
    steps, stream = r["steps"], r["stream"]
    L = len(blocks)
    fig, ax = new_figure(8.0, 3.4)
    ax.plot(steps, stream, "-", color=BASE_COLOR)
    ax.plot(steps[::2], stream[::2], "o", color=BASE_COLOR,
            label="stream |x| after block l")
    ax.plot(steps[1::2], stream[1::2], "o", color=BASE_COLOR, markerfacecolor="white",
            label="stream after the\nattention, |t3|")
    ax.plot(np.arange(1, L + 1) - 0.5, r["attention"], "s", color=ACCENT_COLOR,
            label="attention writes |t2|")
    ax.plot(np.arange(1, L + 1), r["feed_forward"], "^", color="#55a868",
            label="feed-forward writes |t5|")
    ax.set_xticks(range(L + 1), ["input"] + [str(i) for i in range(1, L + 1)])
    ax.set_xlabel("block (half steps: after its attention)")
    ax.set_ylabel("mean vector length")
    ax.set_ylim(0, None)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        ax.set_title(title)
    return fig


def layer_norm_figure(x, scale: float, shift: float, gamma: float, beta: float):
    """Notebook 07 explorer: a vector ``scale * x + shift`` before and after layer norm
    with a scalar ``gamma`` and ``beta`` (the same for every feature)."""
    x = np.asarray(x, dtype=float)                               # [d]
    d = x.shape[-1]
    z = scale * x + shift                                        # the input shown
    y = ref.layer_norm(z, np.full(d, gamma), np.full(d, beta))   # [d]
    labels = [str(i) for i in range(d)]
    fig, axes = new_figure(9.0, 3.2, ncols=2)
    limit = max(3.0, float(np.abs(z).max()) * 1.15)
    bars(axes[0], z, labels, ylim=(-limit, limit), fmt="{:.1f}",
         title=f"input: mean {z.mean():.2f}, std {z.std():.2f}".replace("-0.00", "0.00"))
    bars(axes[1], y, labels, ylim=(-4, 4), fmt="{:.2f}", color=ACCENT_COLOR,
         title=f"layer norm: mean {y.mean():.2f}, std {y.std():.2f}".replace("-0.00", "0.00"))
    for ax in axes:
        ax.set_xlabel("feature")
    return fig


def _char_label(token: str) -> str:
    """A visible label for a character token (newline and space spelled out)."""
    return {"\n": "\\n", " ": "\u2423", "\t": "\\t"}.get(token, token)


def next_token_figure(probs, vocab: Sequence[str], top_k: int = 12,
                      title: str | None = None, chosen: int | None = None,
                      note: str | None = None):
    """Notebook 08: the ``top_k`` most likely next tokens and their probabilities.

    probs: ``[V]``, a distribution over the vocabulary; vocab: the ``V`` token strings.
    ``chosen`` highlights one token id (e.g. the one greedy decoding picks); ``note`` is
    a line of text written in the top right corner.
    """
    probs = np.asarray(probs, dtype=float)                       # [V]
    top = np.argsort(-probs, kind="stable")[:top_k]              # ids, most likely first
    labels = [_char_label(vocab[i]) for i in top]
    fig, ax = new_figure(7.5, 3.2)
    highlight = int(np.flatnonzero(top == chosen)[0]) if chosen in top else None
    bars(ax, probs[top], labels, ylim=(0, 1.08), ylabel="probability", title=title,
         highlight=highlight)
    rest = 1.0 - probs[top].sum()
    lines = [f"other {len(probs) - len(top)} tokens: {rest:.2f}"] + ([note] if note else [])
    ax.text(0.99, 0.95, "\n".join(lines), transform=ax.transAxes, ha="right", va="top",
            fontsize=8, color="0.35")
    return fig


def surprise_figure(text: str, nll, title: str | None = None):
    """Notebook 08: the model's surprise ``-log p`` (nats) at each next character.

    text: the characters that were predicted (``len(text) == len(nll)``).
    """
    nll = np.asarray(nll, dtype=float)                           # [N]
    fig, ax = new_figure(max(6.4, 0.22 * len(nll) + 1.0), 3.0)
    ax.bar(range(len(nll)), nll, color=BASE_COLOR)
    ax.axhline(nll.mean(), color=ACCENT_COLOR, linewidth=1.5,
               label=f"mean = cross-entropy = {nll.mean():.2f} nats")
    ax.set_xticks(range(len(nll)), [_char_label(c) for c in text], fontsize=8)
    ax.set_xlim(-0.6, len(nll) - 0.4)
    ax.set_ylabel("-log p (nats)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, fontsize=8, loc="upper right")
    if title:
        ax.set_title(title)
    return fig


# ---------------------------------------------------------------------------------------
# Notebook 09: a real sentence encoder (all-MiniLM-L6-v2)
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Diagrams: drawn from code, so they cannot go stale (notebooks 05-10)
# ---------------------------------------------------------------------------------------

#: One colour per head (or per part of a diagram), in order.
PART_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def _box(ax, x, y, w, h, text, color="white", fontsize=9, edge="0.25", **text_kw):
    """A labelled rectangle with its lower-left corner at ``(x, y)``."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor=edge, linewidth=1.0))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize,
            **text_kw)


def _flow(ax, start, end, text="", color="0.2", side="right", rad=0.0, fontsize=8):
    """An arrow from ``start`` to ``end`` with an optional label beside its middle."""
    ax.annotate("", xy=end, xytext=start,
                arrowprops=dict(arrowstyle="-|>", color=color, linewidth=1.2,
                                shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={rad}"))
    if text:
        mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        dx = 0.12 if side == "right" else -0.12
        ax.text(mx + dx, my, text, ha="left" if side == "right" else "right", va="center",
                fontsize=fontsize, color=color)


def _blank(ax, xlim, ylim) -> None:
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")


def diagram_causal_mask(tokens: Sequence[str]):
    """Notebook 05: which key each query of a sentence may attend to (lower triangle)."""
    n = len(tokens)
    fig, ax = new_figure(4.2, 3.8)
    mask = ref.causal_mask(n)
    for i in range(n):
        for j in range(n):
            allowed = bool(mask[i, j])
            ax.add_patch(Rectangle((j, n - 1 - i), 1, 1, facecolor="#c6dbef" if allowed
                                   else "0.93", edgecolor="white", linewidth=2,
                                   hatch=None if allowed else "//"))
            ax.text(j + 0.5, n - 0.5 - i, "✓" if allowed else "×", ha="center",
                    va="center", fontsize=11, color="0.15" if allowed else "0.55")
    for k, tok in enumerate(tokens):
        ax.text(-0.1, n - 0.5 - k, tok, ha="right", va="center", fontsize=9)
        ax.text(k + 0.5, n + 0.1, tok, ha="center", va="bottom", fontsize=9, rotation=30)
    ax.text(n / 2, n + 0.9, "key j (what is read)", ha="center", fontsize=9)
    ax.text(-1.6, n / 2, "query i (who reads)", ha="center", va="center", fontsize=9,
            rotation=90)
    ax.text(n / 2, -0.25, "✓ True: may attend     × False: score set to -inf",
            ha="center", va="top", fontsize=8.5, color="0.3")
    ax.set_title("causal mask: query i may read keys j <= i", fontsize=10, pad=28)
    _blank(ax, (-2.0, n + 0.2), (-0.8, n + 1.3))
    return fig


def diagram_heads(n_tokens: int = 4, d_model: int = 8, n_heads: int = 2,
                  tokens: Sequence[str] | None = None):
    """Notebook 06: heads are column blocks of Q (and K, V); split_heads stacks them.

    Left: ``Q = X W_Q``, ``[N, d_model]``, its columns numbered and coloured by head.
    Right: the same numbers as ``[n_heads, N, d_h]``, head 0 in front. Heads are
    numbered from 0, like the columns and like the index of ``split_heads``' result.
    ``tokens`` (optional) label the rows.
    """
    d_h = d_model // n_heads
    if tokens is not None:
        n_tokens = len(tokens)
    cw, rh = (0.5 if d_h >= 3 else 0.8), 0.7               # cell width and height
    fig, ax = new_figure(8.4, 3.9)
    top = n_tokens
    bottom = top - 1 - (n_tokens - 1) * rh
    for c in range(n_heads):                               # Q as one matrix
        for col in range(c * d_h, (c + 1) * d_h):
            for row in range(n_tokens):
                ax.add_patch(Rectangle((col * cw, top - 1 - row * rh), cw, rh,
                                       facecolor=PART_COLORS[c % len(PART_COLORS)],
                                       alpha=0.75, edgecolor="white"))
            ax.text(col * cw + cw / 2, top - 1 + rh + 0.05, str(col), ha="center",
                    va="bottom", fontsize=7, color="0.35")
        ax.text((c * d_h + d_h / 2) * cw, top + 0.2,
                f"head {c}\ncolumns {c * d_h}-{(c + 1) * d_h - 1}", ha="center",
                va="bottom", fontsize=8)
    for row in range(n_tokens):
        label = tokens[row] if tokens is not None else f"token {row}"
        ax.text(-0.1, top - 1 - row * rh + rh / 2, label, ha="right", va="center",
                fontsize=8)
    ax.text(d_model * cw / 2, bottom - 0.15,
            f"Q = X W_Q: [N={n_tokens}, d_model={d_model}]", ha="center", va="top",
            fontsize=9)
    x0 = d_model * cw + 1.6
    mid = top - 1 - (n_tokens - 2) * rh / 2
    _flow(ax, (d_model * cw + 0.2, mid), (x0 - 0.2, mid))
    ax.text((d_model * cw + x0) / 2, mid + 0.15, "split_heads", ha="center", va="bottom",
            fontsize=8)
    step = 0.45
    for c in reversed(range(n_heads)):                     # the stack, head 0 in front
        off = c * step
        for col in range(d_h):
            for row in range(n_tokens):
                ax.add_patch(Rectangle((x0 + off + col * cw, top - 1 - row * rh + off),
                                       cw, rh, facecolor=PART_COLORS[c % len(PART_COLORS)],
                                       edgecolor="white"))
        ax.text(x0 + off + d_h * cw + 0.1, bottom + off + 0.2, f"head {c}",
                ha="left", va="center", fontsize=8)
    last = n_heads - 1
    ax.text(x0 + d_h * cw / 2 + 0.3, bottom - 0.15,
            f"[n_heads={n_heads}, N={n_tokens}, d_h={d_h}]\n"
            f"result[{last}] = Q[:, {last * d_h}:{(last + 1) * d_h}]",
            ha="center", va="top", fontsize=9)
    ax.set_title("heads are column blocks: head c owns columns c*d_h to (c+1)*d_h - 1",
                 fontsize=10)
    _blank(ax, (-1.4, x0 + d_h * cw + n_heads * step + 1.2),
           (bottom - 1.1, top + 1.2))
    return fig


def diagram_prenorm_block():
    """Notebook 07: the pre-norm block, its six lines ``t1..t5, h`` and two residual paths."""
    fig, ax = new_figure(5.6, 6.4)
    cx, w = 2.0, 2.7
    steps = [  # (y, label, colour, the line it computes)
        (1.0, "LayerNorm 1", "#eeeeee", "t1 = LN1(x)"),
        (2.4, "multi-head attention\n(reads every token's t1)", "#c6dbef", "t2 = MHA(t1)"),
        (4.6, "LayerNorm 2", "#eeeeee", "t4 = LN2(t3)"),
        (6.0, "feed-forward network\n(each token alone)", "#fdd0a2", "t5 = FFN(t4)"),
    ]
    ax.text(cx, -0.2, "x  [N, d]", ha="center", va="center", fontsize=10)
    prev = 0.05
    for y, label, color, line in steps:
        _flow(ax, (cx, prev), (cx, y))
        _box(ax, cx - w / 2, y, w, 0.8, label, color=color, fontsize=8.5)
        ax.text(cx + w / 2 + 0.25, y + 0.4, line, ha="left", va="center", fontsize=9,
                family="monospace")
        prev = y + 0.8
        if label.startswith("multi-head"):
            ax.add_patch(Circle(
                (cx, 3.95), 0.22, facecolor="white", edgecolor="0.2"))
            ax.text(cx, 3.95, "+", ha="center", va="center", fontsize=12)
            _flow(ax, (cx, prev), (cx, 3.73))
            ax.text(cx + w / 2 + 0.25, 3.95, "t3 = x + t2", ha="left", va="center",
                    fontsize=9, family="monospace")
            prev = 4.17
    ax.add_patch(Circle(
        (cx, 7.55), 0.22, facecolor="white", edgecolor="0.2"))
    ax.text(cx, 7.55, "+", ha="center", va="center", fontsize=12)
    _flow(ax, (cx, prev), (cx, 7.33))
    ax.text(cx + w / 2 + 0.25, 7.55, "h = t3 + t5", ha="left", va="center", fontsize=9,
            family="monospace")
    _flow(ax, (cx, 7.77), (cx, 8.5))
    ax.text(cx, 8.7, "h  [N, d]  (to the next block)", ha="center", va="center",
            fontsize=10)
    # the two residual paths: around attention (x) and around the FFN (t3)
    for y0, y1, name in ((0.4, 3.95, "residual: x"), (4.3, 7.55, "residual: t3")):
        xs = cx - w / 2 - 0.45
        ax.plot([cx, xs, xs], [y0, y0, y1], color=ACCENT_COLOR, linewidth=1.6)
        _flow(ax, (xs, y1), (cx - 0.22, y1), color=ACCENT_COLOR)
        ax.text(xs - 0.1, (y0 + y1) / 2, name, ha="right", va="center", fontsize=8.5,
                color=ACCENT_COLOR, rotation=90)
    ax.set_title("a pre-norm transformer block", fontsize=10)
    _blank(ax, (-0.6, 6.2), (-0.6, 9.1))
    return fig


def diagram_language_model(n_tokens: int = 6, d: int = 64, vocab: int = 65,
                           n_blocks: int = 4):
    """Notebook 08: token ids -> embeddings -> blocks -> logits, with every shape, and
    which exercise computes which part."""
    fig, ax = new_figure(9.6, 2.8)
    stages = [
        ("token ids\nw1 ... wN", f"[N={n_tokens}]", "white"),
        ("E[ids] + P[:N]\n(embed)", f"X: [N, d={d}]", "#eeeeee"),
        (f"{n_blocks} causal\nblocks\n(notebook 07)", "h: [N, d]", "#c6dbef"),
        ("final\nLayerNorm\n(if present)", "[N, d]", "#eeeeee"),
        ("h @ E.T\n(lm_head)", f"logits:\n[N, V={vocab}]", "#fdd0a2"),
        ("softmax of\nthe last row", "[V]: next-token\nprobabilities", "white"),
    ]
    w, gap = 1.25, 0.45
    for k, (label, shape, color) in enumerate(stages):
        x = k * (w + gap)
        _box(ax, x, 0.6, w, 1.0, label, color=color, fontsize=8)
        ax.text(x + w / 2, 0.45, shape, ha="center", va="top", fontsize=8, color="0.3")
        if k:
            _flow(ax, (x - gap + 0.02, 1.1), (x - 0.02, 1.1))
    x_end = 5 * (w + gap) - gap                            # stages 1-4: the forward pass
    ax.plot([w + gap, w + gap, x_end, x_end], [1.75, 1.85, 1.85, 1.75], color=ACCENT_COLOR,
            linewidth=1.2)
    ax.text((w + gap + x_end) / 2, 1.92, "language_model_forward(token_ids, params, n_heads)",
            ha="center", va="bottom", fontsize=8.5, color=ACCENT_COLOR, family="monospace")
    ax.set_title("a decoder-only language model, bottom to top (drawn left to right)",
                 fontsize=10)
    _blank(ax, (-0.2, len(stages) * (w + gap)), (-0.3, 2.35))
    return fig


def diagram_kv_cache(n_past: int = 5, n_new: int = 1):
    """Notebook 10: one generation step with a KV cache. Keys and values of the tokens
    already seen are kept; only the new token's row is computed and appended, and its
    query attends to every cached row and to itself."""
    fig, ax = new_figure(7.8, 3.4)
    for m, (name, x0) in enumerate((("K", 0.0), ("V", 3.2))):
        for r in range(n_past + n_new):
            new = r >= n_past
            ax.add_patch(Rectangle((x0, n_past + n_new - 1 - r), 2.2, 0.9,
                                   facecolor=ACCENT_COLOR if new else "#c6dbef",
                                   edgecolor="white"))
            ax.text(x0 + 1.1, n_past + n_new - 0.55 - r,
                    f"{name.lower()}{r}" + ("  (new)" if new else "  (cached)"),
                    ha="center", va="center", fontsize=8)
        ax.text(x0 + 1.1, n_past + n_new + 0.2, f"{name}: [positions, d_h]", ha="center",
                fontsize=9)
    qx = -2.6
    _box(ax, qx, 0.0, 1.2, 0.9, f"q{n_past}", color=ACCENT_COLOR, fontsize=9)
    ax.text(qx + 0.6, 1.1, "the new\ntoken's query", ha="center", va="bottom", fontsize=8)
    for r in range(n_past + n_new):
        _flow(ax, (qx + 1.2, 0.45), (-0.05, n_past + n_new - 0.55 - r), color="0.6")
    ax.text(5.5, (n_past + n_new) / 2, "its weights\nmix these\nrows", ha="left",
            va="center", fontsize=8)
    ax.set_title(f"a step with a KV cache: compute 1 row, reuse {n_past}", fontsize=10)
    _blank(ax, (qx - 0.2, 7.0), (-0.3, n_past + n_new + 0.8))
    return fig


def diagram_rope(d_head: int = 8, theta: float = 100.0, n_positions: int = 5):
    """Notebook 10: RoPE turns pair ``m = (x[m], x[m + d_h/2])`` of a query or key at
    position ``p`` by the angle ``p * omega_m``, ``omega_m = theta^(-2m/d_h)``.

    Top: the features of one head, coloured by pair (the first half pairs with the second
    half). Below: one row per pair, one column per position; in each circle the grey line
    is the pair before rotation (the same vector at every position), the arrow the pair
    after it, with the angle under it. Fast pairs (small ``m``) turn a lot per position,
    slow ones hardly move.
    """
    half = d_head // 2
    omegas = theta ** (-2.0 * np.arange(half) / d_head)              # [half]
    start = 0.35                                                       # the pair's direction
    cell, r = 1.5, 0.5
    fig, ax = new_figure(1.25 * (n_positions + 2.2), 1.2 * (half + 1.8))
    top = half * cell
    # the head's features, coloured by pair
    w = 0.55
    x_feat = (n_positions * cell - d_head * w - 0.3) / 2
    for j in range(d_head):
        m = j % half
        x = x_feat + j * w + (0.3 if j >= half else 0.0)
        ax.add_patch(Rectangle((x, top + 0.55), w, 0.45, alpha=0.35, edgecolor="white",
                               facecolor=PART_COLORS[m % len(PART_COLORS)]))
        ax.text(x + w / 2, top + 0.775, f"x{j}", ha="center", va="center", fontsize=8)
    ax.text(x_feat - 0.15, top + 0.775, f"one head, d_h = {d_head}:", ha="right",
            va="center", fontsize=8.5)
    ax.text(n_positions * cell / 2, top + 1.15,
            f"pair m = (x_m, x_(m+{half})): feature m turns together with feature m + {half}",
            ha="center", va="bottom", fontsize=8.5)
    for p in range(n_positions):
        ax.text(p * cell + cell / 2, top + 0.2, f"position p = {p}", ha="center",
                va="center", fontsize=8.5)
    circle = np.linspace(0, 2 * np.pi, 100)
    for m in range(half):
        color = PART_COLORS[m % len(PART_COLORS)]
        cy = top - m * cell - cell / 2
        ax.text(-0.15, cy, f"pair {m}: (x{m}, x{m + half})\nω{m} = {omegas[m]:.3g} rad",
                ha="right", va="center", fontsize=8.5)
        for p in range(n_positions):
            cx = p * cell + cell / 2
            angle = p * omegas[m]
            ax.plot(cx + r * np.cos(circle), cy + 0.1 + r * np.sin(circle), color="0.85",
                    linewidth=0.8)
            ax.plot([cx, cx + r * np.cos(start)], [cy + 0.1, cy + 0.1 + r * np.sin(start)],
                    color="0.6", linewidth=1.0, linestyle="--")
            tip = (cx + r * np.cos(start + angle), cy + 0.1 + r * np.sin(start + angle))
            ax.annotate("", xy=tip, xytext=(cx, cy + 0.1),
                        arrowprops=dict(arrowstyle="-|>", color=color, linewidth=1.6,
                                        shrinkA=0, shrinkB=0))
            ax.text(cx, cy - 0.6, f"{angle:.2f} rad", ha="center", va="center",
                    fontsize=7.5, color="0.3")
    ax.text(n_positions * cell / 2, -0.25, "dashed: the pair before rotation (the same at "
            "every position)    arrow: the pair after rotation", ha="center", va="top",
            fontsize=8, color="0.3")
    ax.set_title(f"RoPE: pair m at position p turns by p·ω_m, ω_m = θ^(-2m/d_h), "
                 f"θ = {theta:g}", fontsize=10)
    _blank(ax, (-2.4, n_positions * cell + 0.1), (-0.6, top + 1.6))
    return fig


def diagram_mean_pool(h=((1.0, 2.0), (3.0, 0.0), (9.0, 9.0)), key_mask=(True, True, False),
                      tokens=("token 1", "token 2", "[PAD]")):
    """Notebook 09: mean pooling with a padding mask, every number computed from ``h``
    ``[N, d]`` and ``key_mask`` ``[N]``: the mask zeroes the padding rows, the sum runs over
    the tokens, the count is the number of real tokens, and the unit vector follows."""
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask, dtype=float)
    n, d = h.shape
    masked = h * m[:, None]
    total = masked.sum(axis=0)
    s = total / m.sum()
    unit = s / np.linalg.norm(s)

    def num(v):
        return f"{v:.3g}"

    fig, ax = new_figure(9.6, 0.55 * n + 1.5)
    cw, rh = 0.75, 0.62                              # cell width, row height

    def row_y(i):
        return (n - 1 - i) * rh

    def matrix(x0, values, faded_rows=()):
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                faded = i in faded_rows
                ax.add_patch(Rectangle((x0 + j * cw, row_y(i)), cw, rh,
                                       facecolor="0.93" if faded else "#c6dbef",
                                       edgecolor="white", linewidth=2,
                                       hatch="//" if faded else None))
                ax.text(x0 + (j + 0.5) * cw, row_y(i) + rh / 2, num(values[i, j]),
                        ha="center", va="center", fontsize=9,
                        color="0.55" if faded else "0.1")
    pads = [i for i in range(n) if not m[i]]
    for i, tok in enumerate(tokens):
        ax.text(-0.1, row_y(i) + rh / 2, tok, ha="right", va="center", fontsize=9)
    x_h = 0.0
    matrix(x_h, h, pads)
    ax.text(x_h + d * cw / 2, n * rh + 0.12, f"h [N={n}, d={d}]", ha="center", va="bottom",
            fontsize=9)
    x_m = x_h + d * cw + 0.7
    for i in range(n):
        ax.add_patch(Rectangle((x_m, row_y(i)), cw, rh, edgecolor="white", linewidth=2,
                               facecolor=ACCENT_COLOR if m[i] else "0.93",
                               alpha=0.6 if m[i] else 1.0))
        ax.text(x_m + cw / 2, row_y(i) + rh / 2, f"{int(m[i])}", ha="center", va="center",
                fontsize=9)
    ax.text(x_h + d * cw + 0.35, n * rh / 2, "×", ha="center", va="center", fontsize=12)
    ax.text(x_m + cw / 2, n * rh + 0.12, "mask m", ha="center", va="bottom", fontsize=9)
    x_p = x_m + cw + 0.7
    ax.text(x_m + cw + 0.35, n * rh / 2, "=", ha="center", va="center", fontsize=12)
    matrix(x_p, masked, pads)
    ax.text(x_p + d * cw / 2, n * rh + 0.12, "m h (padding rows 0)", ha="center",
            va="bottom", fontsize=9)
    # the sum over the tokens, below the product
    for j in range(d):
        _box(ax, x_p + j * cw, -rh - 0.35, cw, rh, num(total[j]), color="white", fontsize=9)
    ax.text(x_p - 0.1, -rh / 2 - 0.35, "sum over tokens", ha="right", va="center",
            fontsize=8.5)
    _flow(ax, (x_p + d * cw / 2, -0.02), (x_p + d * cw / 2, -0.33))
    # s and its unit vector
    x_s = x_p + d * cw + 1.6
    y_res = -rh - 0.35
    for j in range(d):
        _box(ax, x_s + j * cw, y_res, cw, rh, num(s[j]), color="#c6dbef", fontsize=9)
    _flow(ax, (x_p + d * cw + 0.05, y_res + rh / 2), (x_s - 0.05, y_res + rh / 2))
    ax.text((x_p + d * cw + x_s) / 2, y_res + rh + 0.08, f"÷ {num(m.sum())} real\ntokens",
            ha="center", va="bottom", fontsize=8)
    ax.text(x_s + d * cw / 2, y_res - 0.08, "s: the mean", ha="center", va="top", fontsize=8.5)
    x_u = x_s + d * cw + 1.6
    for j in range(d):
        _box(ax, x_u + j * cw, y_res, cw, rh, num(unit[j]), color=ACCENT_COLOR, fontsize=9)
    _flow(ax, (x_s + d * cw + 0.05, y_res + rh / 2), (x_u - 0.05, y_res + rh / 2))
    ax.text((x_s + d * cw + x_u) / 2, y_res + rh + 0.08,
            f"÷ |s| =\n{num(np.linalg.norm(s))}", ha="center", va="bottom", fontsize=8)
    ax.text(x_u + d * cw / 2, y_res - 0.08, "ŝ: length 1", ha="center", va="top",
            fontsize=8.5)
    ax.set_title("mean pooling with a padding mask: s = Σ m_i h_i / Σ m_i", fontsize=10)
    _blank(ax, (-1.3, x_u + d * cw + 0.3), (y_res - 0.4, n * rh + 0.5))
    return fig


def diagram_postnorm_layer():
    """Notebook 09: BERT's post-norm encoder layer. Each sub-layer's output is added to
    its input first and the SUM is normalised (compare :func:`diagram_prenorm_block`,
    where the norm comes before the sub-layer and the residual path is never normalised)."""
    fig, ax = new_figure(5.8, 6.4)
    cx, w = 2.0, 2.9
    ax.text(cx, -0.2, "x  [N, d]  (+ key mask [N])", ha="center", va="center", fontsize=10)
    steps = [  # (y, label, colour, the line it computes), bottom to top
        (0.9, "multi-head attention\n(biases; only padding hidden)",
         "#c6dbef", "A = MHA(x)"),
        (3.3, "LayerNorm 1 (eps = 1e-12)", "#eeeeee", "H = LN1(x + A)"),
        (4.6, "feed-forward network\nGELU(H W1 + b1) W2 + b2", "#fdd0a2", "F = FFN(H)"),
        (7.0, "LayerNorm 2 (eps = 1e-12)", "#eeeeee", "out = LN2(H + F)"),
    ]
    prev, plus = 0.05, {}
    for k, (y, label, color, line) in enumerate(steps):
        if k in (1, 3):                                   # an addition below each norm
            py = y - 0.55
            ax.add_patch(Circle((cx, py), 0.22, facecolor="white", edgecolor="0.2"))
            ax.text(cx, py, "+", ha="center", va="center", fontsize=12)
            _flow(ax, (cx, prev), (cx, py - 0.22))
            plus[k] = py
            prev = py + 0.22
        _flow(ax, (cx, prev), (cx, y))
        _box(ax, cx - w / 2, y, w, 0.8, label, color=color, fontsize=8.5)
        ax.text(cx + w / 2 + 0.2, y + 0.4, line, ha="left", va="center", fontsize=9,
                family="monospace")
        prev = y + 0.8
    _flow(ax, (cx, prev), (cx, 8.4))
    ax.text(cx, 8.6, "out  [N, d]  (to the next layer)", ha="center", va="center",
            fontsize=10)
    # the residual paths: x around attention, H around the FFN; both end in a norm
    for y0, k, name in ((0.4, 1, "residual: x"), (4.35, 3, "residual: H")):
        xs = cx - w / 2 - 0.4
        ax.plot([cx, xs, xs], [y0, y0, plus[k]], color=ACCENT_COLOR, linewidth=1.6)
        _flow(ax, (xs, plus[k]), (cx - 0.22, plus[k]), color=ACCENT_COLOR)
        ax.text(xs - 0.1, (y0 + plus[k]) / 2, name, ha="right", va="center", fontsize=8.5,
                color=ACCENT_COLOR, rotation=90)
    ax.set_title("a post-norm encoder layer (BERT): add, then normalise", fontsize=10)
    _blank(ax, (-0.6, 6.6), (-0.6, 9.0))
    return fig


# ---------------------------------------------------------------------------------------
# Notebook 11: the tokenizer (byte-level BPE)
# ---------------------------------------------------------------------------------------

#: Token colours of notebook 11 (light, so the black text stays readable).
TOKEN_COLORS = ("#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9")


def _token_rows(ax, rows, labels, width: int = 64) -> None:
    """Draw each row of tokens as boxes, one colour per token, wrapped at ``width``
    characters (monospace); ``labels[i]`` is written at the left of row ``i``."""
    y = 0.0
    for tokens, label in zip(rows, labels):
        ax.text(-0.5, y, label, ha="right", va="center", fontsize=8)
        x = 0
        for k, tok in enumerate(tokens):
            n = max(len(tok), 1)
            if x + n > width and x > 0:                            # wrap to a new line
                x, y = 0, y - 1.0
            ax.add_patch(Rectangle((x, y - 0.4), n, 0.8, facecolor=TOKEN_COLORS[k % len(
                TOKEN_COLORS)], edgecolor="0.35", linewidth=0.6))
            ax.text(x + n / 2, y, tok, ha="center", va="center", fontsize=8,
                    family="DejaVu Sans Mono")
            x += n
        y -= 1.4
    ax.set_xlim(-0.5, width + 0.5)
    ax.set_ylim(y + 0.8, 0.7)
    ax.set_axis_off()


def bpe_merges_figure(text: str, merges, steps: Sequence[int], encode_word):
    """Notebook 11: ``text`` split into tokens under the first ``n`` merges, for each
    ``n`` in ``steps`` (one row each, with its compression in bytes per token), and the
    compression against the number of merges.

    encode_word: ``encode_word(word, merges) -> tokens`` (the learner's or the reference);
    ``text`` is pre-tokenised with :func:`helpers.tokenizer.words_of`."""
    from helpers.tokenizer import words_of

    words = words_of(text)                                          # byte-level words
    n_bytes = len(text.encode("utf-8"))

    def tokens_at(n):
        return [t for w in words for t in encode_word(w, merges[:n])]

    rows = [tokens_at(n) for n in steps]
    n_lines = sum(1 + sum(len(t) for t in r) // 64 for r in rows)
    fig = Figure(figsize=(9.0, 0.42 * n_lines + 3.4), layout="constrained")
    ax, ax2 = fig.subplots(2, 1, gridspec_kw={"height_ratios": (0.42 * n_lines + 0.6, 2.2)})
    _token_rows(ax, rows, [f"{n} merges\n{n_bytes / len(r):.2f} bytes/token"
                           for n, r in zip(steps, rows)])
    ax.set_title(f"{n_bytes} bytes of text, as tokens under more and more merges",
                 fontsize=10)
    grid = sorted(set(np.linspace(0, len(merges), 25).astype(int)) | set(steps))
    ratios = [n_bytes / len(tokens_at(n)) for n in grid]
    ax2.plot(grid, ratios, color=BASE_COLOR, marker="o", markersize=3)
    ax2.set_xlabel("number of merges applied")
    ax2.set_ylabel("bytes per token")
    ax2.spines[["top", "right"]].set_visible(False)
    return fig


def token_strip_figure(tokens: Sequence[str], title: str | None = None, width: int = 64):
    """Notebook 11: a text as its tokens (byte-level characters: ``Ġ`` is a space), one
    coloured box per token."""
    n_lines = 1 + sum(max(len(t), 1) for t in tokens) // width + sum(
        1 for t in tokens if len(t) > width)
    fig, ax = new_figure(9.0, 0.6 + 0.42 * n_lines)
    _token_rows(ax, [list(tokens)], [""], width=width)
    ax.set_title(title or f"{len(tokens)} tokens", fontsize=10)
    return fig
