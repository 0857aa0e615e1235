"""SmolLM2's tokenizer (byte-level BPE, built from the GGUF file's metadata) and its chat
template."""

from __future__ import annotations

from pathlib import Path

from helpers.llama.weights import MODEL_CACHE, cache_file, gguf_field, gguf_reader, smollm2_path

# ---------------------------------------------------------------------------------------
# Tokenizer and chat template
# ---------------------------------------------------------------------------------------


def load_tokenizer(path=None):
    """The model's tokenizer as a ``tokenizers.Tokenizer``, built from the GGUF metadata.

    The file stores a byte-level BPE (GPT-2 style): the vocabulary (``tokenizer.ggml.
    tokens``, already spelled in the byte alphabet where a space is ``Ġ``), the merge
    rules in priority order (``tokenizer.ggml.merges``), which tokens are control tokens
    (type 3: ``<|im_start|>``, ``<|im_end|>``, ...) and the pre-tokenizer's name,
    ``smollm``: digits are split one by one, then the GPT-2 split into words. That is
    what SmolLM2's own ``tokenizer.json`` does; the tests compare with it through
    ``transformers`` (on text without digits: its GGUF converter does not split them).

    ``tokenizer.encode(text).ids`` gives ids, ``tokenizer.decode(ids)`` text. Control
    tokens written in the text (as :func:`chat_prompt` does) become one id each.
    """
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        raise ImportError(
            "the tokenizer needs the `tokenizers` package (a course dependency):\n"
            "    python -m pip install tokenizers"
        ) from None
    path = Path(smollm2_path() if path is None else path)
    key = ("tokenizer", str(path.resolve()))
    if key in MODEL_CACHE:
        return MODEL_CACHE[key]
    saved = cache_file(path, "tokenizer.json")
    if saved.is_file():                                           # written by an earlier session
        try:
            MODEL_CACHE[key] = Tokenizer.from_file(str(saved))
            return MODEL_CACHE[key]
        except Exception:                                         # noqa: BLE001 - rebuild it
            pass
    reader = gguf_reader(path)
    if gguf_field(reader, "tokenizer.ggml.model") != "gpt2":
        raise ValueError("expected a byte-level BPE ('gpt2') tokenizer in the file")
    tokens = gguf_field(reader, "tokenizer.ggml.tokens")
    types = gguf_field(reader, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in gguf_field(reader, "tokenizer.ggml.merges")]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    control = [tok for tok, kind in zip(tokens, types) if kind == 3]   # 3 = control
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t in control])
    try:
        saved.parent.mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(saved))
    except Exception:                                             # noqa: BLE001 - only speed
        pass
    MODEL_CACHE[key] = tokenizer
    return tokenizer


#: A question, and the 20 tokens that greedy decoding answers it with according to
#: ``transformers`` (PyTorch, float32) reading the same GGUF file
#: (``tests/data/smollm2_reference.npz``, ``tools/make_smollm2_reference.py``):
#: "The sea is a vast and mysterious realm, teeming with life and unending in its own way,"
REFERENCE_QUESTION = "Write one sentence about the sea."
REFERENCE_GREEDY_IDS = (504, 3426, 314, 253, 4749, 284, 11965, 7815, 28, 30055, 351, 1029,
                        284, 551, 1719, 281, 624, 1038, 970, 28)

#: The system message the chat template adds when a conversation has none.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chat_prompt(messages, add_generation_prompt: bool = True) -> str:
    """The model's chat template (stored in the GGUF file as Jinja), written in Python.

    messages: a list of ``{"role": "system" | "user" | "assistant", "content": str}``,
    or a single string (one user message). Each message becomes
    ``<|im_start|>{role}\\n{content}<|im_end|>\\n``; a conversation that does not start
    with a system message gets :data:`DEFAULT_SYSTEM` first; ``add_generation_prompt``
    ends with ``<|im_start|>assistant\\n``, where the model's answer begins. The answer
    ends with the token ``<|im_end|>`` (the end-of-sequence id of the config).
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    messages = list(messages)
    parts = []
    if messages and messages[0]["role"] != "system":
        parts.append(f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n")
    for m in messages:
        parts.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)

