"""The pictures of notebook 11: the tokenizer (byte-level BPE)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from helpers.plots.base import (BASE_COLOR, 
                                new_figure)


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
