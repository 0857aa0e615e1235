"""Diagrams drawn from code, so they cannot go stale (notebooks 05-10)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.patches import Circle, Rectangle

import helpers.reference as ref
from helpers.plots.base import (ACCENT_COLOR, 
                                new_figure)


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
