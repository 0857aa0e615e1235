"""Figures for the notebooks: one function per picture, each returning a matplotlib Figure.

Figures are built with :class:`matplotlib.figure.Figure` rather than ``pyplot``, so a
figure appears exactly once (when a notebook cell returns it), never leaks into a later
cell, and drawing one in a loop (as the explorers in :mod:`helpers.widgets` do) leaves
nothing open. :func:`figure_to_png` turns a figure into PNG bytes.

The building blocks (:func:`new_figure`, :func:`heatmap`, :func:`bars`) keep every
picture of the course in one style: attention weights, which live in ``[0, 1]``, are
drawn with ``WEIGHTS_CMAP``; raw scores, which can have any sign, with ``SCORES_CMAP``
centred on zero. The pictures of each notebook follow, in course order.

One module per part of the course: :mod:`~helpers.plots.base` (the building blocks),
:mod:`~helpers.plots.attention` (notebooks 01-04), :mod:`~helpers.plots.model` (05-08),
:mod:`~helpers.plots.capstones` (09-10), :mod:`~helpers.plots.diagrams` (diagrams drawn
from code), :mod:`~helpers.plots.tokenizer` (11) and :mod:`~helpers.plots.interpretability`
(14); every picture is a name of this package (``helpers.plots.attention_heatmap``).
"""

from helpers.plots.base import (  # noqa: F401
    WEIGHTS_CMAP, SCORES_CMAP, BASE_COLOR, ACCENT_COLOR, PNG_DPI, new_figure, figure_to_png, heatmap, bars)
from helpers.plots.attention import (  # noqa: F401
    vectors_2d, similarity_matrices, softmax_temperatures, softmax_temperature, TOY_FEATURES, TOY_EMBEDDINGS, toy_sentence, simple_attention_weights, attention_focus, contextual_sentence, attention_comparison, soft_lookup)
from helpers.plots.model import (  # noqa: F401
    hatch_masked, masked_vs_unmasked, masking_explorer_figure, heads_side_by_side, residual_stream_lengths, residual_stream_figure, layer_norm_figure, next_token_figure, surprise_figure)
from helpers.plots.capstones import (  # noqa: F401
    gelu_figure, it_context_figure, encoder_heads_figure, rope_figure, generation_times_figure)
from helpers.plots.diagrams import (  # noqa: F401
    PART_COLORS, diagram_causal_mask, diagram_heads, diagram_prenorm_block, diagram_language_model, diagram_kv_cache, diagram_rope, diagram_mean_pool, diagram_postnorm_layer)
from helpers.plots.tokenizer import (  # noqa: F401
    TOKEN_COLORS, bpe_merges_figure, token_strip_figure)
from helpers.plots.interpretability import (  # noqa: F401
    induction_heads_figure, lens_ranks_figure)
