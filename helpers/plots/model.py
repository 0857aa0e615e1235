"""The pictures of notebooks 05-08: masking, multi-head attention, the block, the
language model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.patches import Rectangle

import helpers.reference as ref
from helpers.plots.base import (ACCENT_COLOR, BASE_COLOR, 
                                bars, heatmap, new_figure)


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
