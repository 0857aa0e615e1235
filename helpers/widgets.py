"""Interactive explorers for the notebooks, each with a static picture as fallback.

An :class:`Explorer` is a picture with controls: a function ``draw(**values) -> Figure``
(usually from :mod:`helpers.plots`) and a few named controls (:class:`Slider`,
:class:`Choice`). Displaying it gives one output that carries two views:

* an ipywidgets view (controls above the picture, redrawn when a control moves), which
  JupyterLab and Notebook show when the widgets front end is available;
* a PNG of the current state, which everything else shows: an HTML export without
  widget state, GitHub's viewer, a front end without the widgets extension.

So the picture is never missing, and a notebook cell that builds an explorer stays one
line long: ``widgets.softmax_temperature_explorer()``.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers import plots

try:  # ipywidgets is a course dependency; without it explorers still show their picture
    import ipywidgets
except ImportError:  # pragma: no cover - exercised only in a broken environment
    ipywidgets = None

#: Whether explorers show controls: ``None`` decides per display (see
#: :func:`frontend_can_interact`); ``True`` or ``False`` forces one way.
INTERACTIVE: bool | None = None


# ---------------------------------------------------------------------------------------
# Shared machinery
# ---------------------------------------------------------------------------------------


def frontend_can_interact() -> bool:
    """Whether the code runs in a kernel driven by a person, who can move a slider.

    A notebook front end (JupyterLab, Notebook, VS Code) lets the kernel ask for input;
    a headless executor (``nbconvert --execute``, nbclient, nbgrader, papermill) does
    not. In the headless case an explorer shows only its picture: no one can move its
    controls, and a stored widget would hide the picture in an HTML export.
    ``INTERACTIVE = True/False`` overrides the guess.
    """
    if INTERACTIVE is not None:
        return INTERACTIVE and ipywidgets is not None
    if ipywidgets is None:
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    return bool(getattr(kernel, "_allow_stdin", False))


@dataclass(frozen=True)
class Slider:
    """A numeric control: a slider from ``min`` to ``max`` in steps of ``step``.

    The picture is redrawn when the slider is released (or moved with the arrow keys),
    not while it is dragged: a drawing takes a few tenths of a second, and redrawing on
    every intermediate value would queue up frames and lag behind the hand.
    """

    label: str
    min: float
    max: float
    step: float
    value: float
    readout_format: str = ".2f"

    def widget(self):
        return ipywidgets.FloatSlider(
            value=self.value, min=self.min, max=self.max, step=self.step,
            description=self.label, readout_format=self.readout_format,
            continuous_update=False, style={"description_width": "initial"},
            layout=ipywidgets.Layout(width="360px"),
        )


@dataclass(frozen=True)
class Choice:
    """A choice among ``options``: values, or ``(label, value)`` pairs."""

    label: str
    options: Sequence[Any]
    value: Any

    def widget(self):
        return ipywidgets.Dropdown(
            options=list(self.options), value=self.value, description=self.label,
            style={"description_width": "initial"},
        )


class Explorer:
    """A picture that redraws when its controls change, with a PNG fallback.

    draw: ``draw(**values) -> matplotlib Figure``, called with one keyword per control.
    controls: ``{keyword: Slider | Choice}``, in display order.
    title: one line shown above the controls (and in the plain-text view).

    ``explorer.update(name=value, ...)`` sets controls from code (the widget view
    follows); ``explorer.png()`` is the current picture as PNG bytes.
    """

    def __init__(self, draw: Callable[..., Any], controls: dict[str, Slider | Choice],
                 title: str = "explorer"):
        self.draw = draw
        self.controls = dict(controls)
        self.title = title
        self.values = {name: c.value for name, c in self.controls.items()}
        self._png = self._render()
        self._widgets: dict[str, Any] = {}
        self.view = None            # the ipywidgets view, built when first displayed live

    # -- state -----------------------------------------------------------------------
    def _render(self) -> bytes:
        return plots.figure_to_png(self.draw(**self.values))

    def png(self) -> bytes:
        """The current picture, as PNG bytes."""
        return self._png

    def update(self, **values) -> Explorer:
        """Set some controls (by keyword) and redraw. Returns the explorer."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; "
                             f"this explorer has {list(self.controls)}")
        self.values.update(values)
        self._png = self._render()
        for name, value in values.items():
            if name in self._widgets and self._widgets[name].value != value:
                self._widgets[name].value = value         # fires _on_change: no-op redraw
        if self.view is not None:
            self._image.value = self._png
        return self

    # -- widget view -----------------------------------------------------------------
    def _build_view(self):
        self._widgets = {name: c.widget() for name, c in self.controls.items()}
        self._image = ipywidgets.Image(value=self._png, format="png")
        self._status = ipywidgets.HTML("")
        for name, w in self._widgets.items():
            w.observe(self._on_change(name), names="value")
        header = ipywidgets.HTML(f"<b>{html.escape(self.title)}</b>")
        controls = ipywidgets.HBox(list(self._widgets.values()),
                                   layout=ipywidgets.Layout(flex_flow="row wrap"))
        return ipywidgets.VBox([header, controls, self._image, self._status])

    def _on_change(self, name: str):
        def handler(change):
            if self.values.get(name) == change["new"]:
                return
            self.values[name] = change["new"]
            try:
                self._png = self._render()
            except Exception as exc:  # show the problem next to the picture, keep going
                self._status.value = (f"<span style='color:#b00'>could not draw: "
                                      f"{type(exc).__name__}: {exc}</span>")
                return
            self._status.value = ""
            self._image.value = self._png
        return handler

    # -- display -----------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None):
        values = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        data = {
            "text/plain": f"{self.title} ({values})",
            "image/png": base64.b64encode(self._png).decode("ascii"),
        }
        if frontend_can_interact():
            if self.view is None:
                self.view = self._build_view()
            view = self.view._repr_mimebundle_()
            data.update({k: v for k, v in view.items() if k != "text/plain"})
        return data


# ---------------------------------------------------------------------------------------
# Notebooks 00-04 (start, dot products, softmax, simple self-attention, Q/K/V)
# ---------------------------------------------------------------------------------------


def dot_product_explorer() -> Explorer:
    """Notebook 01: turn and stretch ``b``; watch the dot product and the cosine."""
    import numpy as np

    a = np.array([2.0, 1.0])

    def draw(angle, length):
        rad = np.radians(angle)
        return plots.vectors_2d(a, length * np.array([np.cos(rad), np.sin(rad)]))

    return Explorer(draw, {
        "angle": Slider("direction of b (degrees)", -180, 180, 5, 60, ".0f"),
        "length": Slider("length of b", 0.25, 3.0, 0.25, 1.5),
    }, title="Dot product vs cosine: a = [2, 1]")


def _cat_scores_the():
    import numpy as np

    from helpers.examples import CAT_X
    from helpers.reference import pairwise_scores

    return pairwise_scores(CAT_X)[0] / np.sqrt(CAT_X.shape[1])   # [4], "The" vs all


def softmax_temperature_explorer() -> Explorer:
    """Notebook 02: ``softmax(z / T)`` for a few score vectors and any temperature."""
    from helpers.examples import CAT_TOKENS

    score_sets = {
        "The cat sat <end>: scores of 'The'": (list(CAT_TOKENS), _cat_scores_the()),
        "A A B A: 'find B' with keys x10": (["A", "A", "B", "A"], [0.0, 0.0, 10.0, 0.0]),
        "two favourites and two outsiders": (["w", "x", "y", "z"], [2.0, 1.8, -0.5, -1.0]),
    }

    def draw(scores, temperature):
        labels, z = score_sets[scores]
        return plots.softmax_temperature(z, labels, temperature)

    return Explorer(draw, {
        "scores": Choice("scores", list(score_sets), next(iter(score_sets))),
        "temperature": Slider("temperature T", 0.05, 5.0, 0.05, 1.0),
    }, title="Softmax temperature: divide the scores by T, then softmax")


def contextual_embedding_explorer() -> Explorer:
    """Notebook 03: simple self-attention on "... because it was too tired / too wide"."""
    from helpers.examples import IT_SENTENCES

    sentences = {key: plots.toy_sentence(text) for key, text in IT_SENTENCES.items()}
    tokens = sentences["tired"][0]
    positions = [(f"{t} ({i})" if tokens.count(t) > 1 else t, i)
                 for i, t in enumerate(tokens[:-1])] + [("tired / wide", len(tokens) - 1)]

    def draw(sentence, token, scale):
        words, X = sentences[sentence]
        other = next(key for key in sentences if key != sentence)
        return plots.contextual_sentence(words, X, token, scale,
                                         other=(f"'too {other}'", sentences[other][1]))

    return Explorer(draw, {
        "sentence": Choice("sentence ends with", list(sentences), "tired"),
        "token": Choice("token", positions, tokens.index("it")),
        "scale": Slider("vector length x", 0.5, 4.0, 0.25, 2.0),
    }, title="Simple self-attention on hand-made features: pick a token")


def qkv_attention_explorer() -> Explorer:
    """Notebook 04: "The cat sat <end>", attention with and without W_Q and W_K."""
    import numpy as np

    from helpers.examples import CAT_TOKENS, CAT_W_K, CAT_W_Q, CAT_W_V, CAT_X
    from helpers.reference import project_qkv, scaled_dot_product_attention

    tokens = list(CAT_TOKENS)
    Q, K, V = project_qkv(CAT_X, CAT_W_Q, CAT_W_K, CAT_W_V)
    versions = {
        "with W_Q, W_K (notebook 04)": scaled_dot_product_attention(Q, K, V)[1],
        "without weights (notebook 03)": plots.simple_attention_weights(CAT_X),
        "W_Q, W_K, queries 5x larger": scaled_dot_product_attention(5 * Q, K, V)[1],
    }

    def draw(version, query):
        return plots.attention_focus(np.asarray(versions[version]), tokens, query,
                                     title=version)

    return Explorer(draw, {
        "version": Choice("attention", list(versions), next(iter(versions))),
        "query": Choice("query token", [(t, i) for i, t in enumerate(tokens)], 0),
    }, title="The cat sat <end>: choose a token to see what it attends to")


def soft_lookup_explorer() -> Explorer:
    """Notebook 04: "A A B A": grow the keys and watch the soft lookup become hard."""
    queries = {"find B  [0, 1]": (0.0, 1.0), "find A  [1, 0]": (1.0, 0.0),
               "either  [1, 1]": (1.0, 1.0)}

    def draw(query, key_scale):
        return plots.soft_lookup(key_scale, queries[query])

    return Explorer(draw, {
        "query": Choice("query", list(queries), next(iter(queries))),
        "key_scale": Slider("key scale", 0.0, 20.0, 0.5, 10.0, ".1f"),
    }, title="A A B A: attention as a soft lookup table")


# ---------------------------------------------------------------------------------------
# Notebooks 05-08 (masking, multi-head attention, the block, the language model)
# ---------------------------------------------------------------------------------------


def masking_explorer() -> Explorer:
    """Notebook 05: "The cat sat <end>" with and without the causal mask."""
    from helpers.examples import CAT_TOKENS, CAT_W_K, CAT_W_Q, CAT_W_V, CAT_X

    tokens = list(CAT_TOKENS)

    def draw(query, causal, sharpness):
        return plots.masking_explorer_figure(CAT_X, CAT_W_Q, CAT_W_K, CAT_W_V, tokens,
                                             query, causal, sharpness)

    return Explorer(draw, {
        "query": Choice("query token", [(t, i) for i, t in enumerate(tokens)], 1),
        "causal": Choice("mask", [("causal (decoder)", True), ("none (encoder)", False)],
                         True),
        "sharpness": Slider("sharpness (x scores)", 0.5, 10.0, 0.5, 1.0, ".1f"),
    }, title="Masked vs unmasked attention: The cat sat <end>")


#: Lines for :func:`heads_explorer` (every character is in the model's vocabulary).
HEAD_EXPLORER_TEXTS = (
    "ROMEO:\nBut soft, what light breaks?",
    "To be, or not to be: that is it.",
    "the cat sat. the cat sat. the cat",
)


def heads_explorer() -> Explorer:
    """Notebook 06: the heads of one layer side by side.

    With the pretrained character model (:mod:`helpers.pretrained`): choose a line and a
    layer. Without it: the hand-made heads of :func:`helpers.demos_model.pattern_heads`,
    with a slider for how sharp they are.
    """
    from helpers import demos_model

    try:
        from helpers.pretrained import load_char_lm
        model = load_char_lm()
    except (FileNotFoundError, ValueError):
        model = None

    if model is None:
        def draw_pattern(strength):
            layer = demos_model.pattern_heads(strength)
            weights = demos_model.head_weights(layer["X"], layer["W_Q"], layer["W_K"],
                                               layer["n_heads"])
            return plots.heads_side_by_side(weights, layer["tokens"], layer["head_names"])

        return Explorer(draw_pattern, {
            "strength": Slider("strength of queries and keys", 0.0, 6.0, 0.5, 4.0, ".1f"),
        }, title="Hand-made heads (the pretrained model is not installed)")

    n_layers = len(model[0]["blocks"])

    def draw(text, layer):
        weights = demos_model.char_lm_head_weights(text, layer, model)
        return plots.heads_side_by_side(weights, list(text),
                                        title=f"layer {layer + 1} of {n_layers}")

    return Explorer(draw, {
        "text": Choice("text", list(HEAD_EXPLORER_TEXTS), HEAD_EXPLORER_TEXTS[0]),
        "layer": Choice("layer", [(str(i + 1), i) for i in range(n_layers)],
                        min(1, n_layers - 1)),
    }, title="The heads of the pretrained character model")


def layer_norm_explorer() -> Explorer:
    """Notebook 07: layer norm ignores the input's scale and shift; gamma and beta set
    the output's."""
    import numpy as np

    x = np.array([1.0, 0.5, 0.2, 0.1, -0.4, 0.8, -1.0, 0.3])      # a fixed 8-d vector

    def draw(scale, shift, gamma, beta):
        return plots.layer_norm_figure(x, scale, shift, gamma, beta)

    return Explorer(draw, {
        "scale": Slider("input x scale", 0.1, 5.0, 0.1, 1.0, ".1f"),
        "shift": Slider("input + shift", -3.0, 3.0, 0.25, 0.0, ".2f"),
        "gamma": Slider("gamma", 0.0, 2.0, 0.1, 1.0, ".1f"),
        "beta": Slider("beta", -2.0, 2.0, 0.25, 0.0, ".2f"),
    }, title="Layer norm: scale and shift of the input vs gamma and beta")


#: Prompts for :func:`next_token_temperature_explorer`.
NEXT_TOKEN_PROMPTS = (
    "First Citizen:\nWe are accounted poor ",
    "ROMEO:\nWhat light through yonder wi",
    "To be, or not to be: that is the q",
    "KING HENRY:\nOnce more unto the ",
)


def next_token_temperature_explorer() -> Explorer:
    """Notebook 08: the next-character distribution of the pretrained model (or of an
    untrained stand-in when it is missing) for a prompt, at a chosen temperature."""
    import numpy as np

    from helpers import demos_model, reference

    params, n_heads, encode, decode = demos_model.load_demo_lm()
    vocab = [decode(np.array([i])) for i in range(params["E"].shape[0])]
    n_ctx = params["P"].shape[0]
    cache = {}

    def logits_for(prompt):
        if prompt not in cache:
            ids = encode(prompt)[-n_ctx:]
            cache[prompt] = reference.language_model_forward(ids, params, n_heads)[-1]
        return cache[prompt]

    def draw(prompt, temperature):
        logits = logits_for(prompt)                                # [V]
        probs = reference.softmax((logits - logits.max()) / temperature)
        entropy = -(probs * np.log(np.where(probs > 0, probs, 1.0))).sum()
        shown = prompt.replace("\n", "\\n")
        return plots.next_token_figure(
            probs, vocab, chosen=int(np.argmax(logits)),
            title=f"after '...{shown[-28:]}'   (T = {temperature:.2f})",
            note=f"as uncertain as {np.exp(entropy):.1f} equally likely characters")

    return Explorer(draw, {
        "prompt": Choice("prompt", list(NEXT_TOKEN_PROMPTS), NEXT_TOKEN_PROMPTS[0]),
        "temperature": Slider("temperature T", 0.05, 3.0, 0.05, 1.0, ".2f"),
    }, title="The next-character distribution under temperature")


# ---------------------------------------------------------------------------------------
# Notebook 09: a real sentence encoder (all-MiniLM-L6-v2)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextBox:
    """A free-text control; the picture is redrawn when Enter is pressed or the box
    loses focus."""

    label: str
    value: str

    def widget(self):
        return ipywidgets.Text(
            value=self.value, description=self.label, continuous_update=False,
            style={"description_width": "initial"}, layout=ipywidgets.Layout(width="560px"),
        )


#: The first sentence shown by :func:`encoder_heads_explorer`.
ENCODER_EXPLORER_SENTENCE = "The cat sat on the mat because it was warm."
#: Longest sentence (in tokens, [CLS] and [SEP] included) the explorer draws.
ENCODER_EXPLORER_MAX_TOKENS = 32


def encoder_heads_explorer(sentence: str = ENCODER_EXPLORER_SENTENCE, layer: int = 0,
                           head: int | None = None) -> Explorer:
    """Notebook 09: the attention heads of all-MiniLM-L6-v2 (:mod:`helpers.bert`), in
    the manner of BertViz: type a sentence, choose a layer and one head or all of them.

    ``layer`` and ``head`` are 0-based; ``head=None`` shows all heads.
    """
    from helpers import bert, demos_model

    demos_model.use_one_blas_thread()
    params, tokenizer = bert.load_encoder()
    n_layers, n_heads = len(params["layers"]), params["n_heads"]
    cache: dict[str, tuple] = {}

    def attention(text):
        if text not in cache:
            tokens, _, weights = bert.token_vectors(text, params, tokenizer,
                                                    return_attention=True)
            if len(tokens) > ENCODER_EXPLORER_MAX_TOKENS:
                raise ValueError(f"the sentence has {len(tokens)} tokens; this picture "
                                 f"draws at most {ENCODER_EXPLORER_MAX_TOKENS}")
            cache.clear()
            cache[text] = (tokens, weights)
        return cache[text]

    def draw(sentence, layer, head):
        tokens, weights = attention(sentence)
        return plots.encoder_heads_figure(weights[layer], tokens, layer,
                                          None if head < 0 else head)

    return Explorer(draw, {
        "sentence": TextBox("sentence (press Enter)", sentence),
        "layer": Choice("layer", [(str(i + 1), i) for i in range(n_layers)], layer),
        "head": Choice("head", [("all", -1)] + [(str(c + 1), c) for c in range(n_heads)],
                       -1 if head is None else head),
    }, title="The attention heads of all-MiniLM-L6-v2")


#: The rotary bases the explorer of notebook 10 offers (SmolLM2 uses 100000).
ROPE_THETAS = (100.0, 10000.0, 100000.0, 1000000.0)


def rope_explorer(theta: float = 100000.0, pair: int = 0) -> Explorer:
    """Notebook 10: rotary position embeddings, for a chosen base ``theta`` and feature
    pair ``m`` of a 64-wide head (see :func:`helpers.plots.rope_figure`)."""

    def draw(theta, pair):
        return plots.rope_figure(theta=theta, pair=int(pair))

    return Explorer(draw, {
        "theta": Choice("base theta", [(f"{t:g}", t) for t in ROPE_THETAS], theta),
        "pair": Slider("pair m", 0, 31, 1, pair, ".0f"),
    }, title="Rotary position embeddings: one pair turning, and what it does to scores")


# ---------------------------------------------------------------------------------------
# Notebook 11: the tokenizer
# ---------------------------------------------------------------------------------------


def bpe_merges_explorer(merges, encode_word, texts: dict[str, str] | None = None,
                        n_merges: int = 20) -> Explorer:
    """Notebook 11: a text as tokens under the first ``n`` of ``merges`` (learned by
    ``train_bpe``), encoded with ``encode_word`` (the learner's or the reference)."""
    from helpers.tokenizer import words_of

    texts = texts or {
        "Hamlet": "Who's there? Nay, answer me: stand, and unfold yourself.",
        "modern English": "The tokenizer turns this sentence into numbers.",
        "French": "Le café est très bon, merci beaucoup.",
        "digits and emoji": "In 2024 we wrote 12 notebooks 😀",
    }

    def draw(text, n):
        n = int(n)
        tokens = [t for w in words_of(texts[text]) for t in encode_word(w, merges[:n])]
        n_bytes = len(texts[text].encode("utf-8"))
        return plots.token_strip_figure(
            tokens, f"{n} merges: {len(tokens)} tokens for {n_bytes} bytes "
                    f"({n_bytes / max(len(tokens), 1):.2f} bytes per token)")

    return Explorer(draw, {
        "text": Choice("text", list(texts), next(iter(texts))),
        "n": Slider("merges applied", 0, len(merges), 1, min(n_merges, len(merges)), ".0f"),
    }, title="BPE: the same text under more and more merges")
