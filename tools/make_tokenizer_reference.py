"""Write tests/data/tokenizer_reference.json.gz: varied texts and the ids SmolLM2's
tokenizer gives them according to the ``tokenizers`` library.

The texts (about 3,000 lines, in about 1,000 documents) are assembled from what the
repository ships and from sentences written here, so the file is reproducible offline:

* the Shakespeare excerpt of notebook 11 (helpers/data/shakespeare_hamlet_act1.txt);
* Python code and Markdown prose of the course itself (helpers/, docs/);
* sentences in French, German, Spanish, Greek, Russian, Chinese, Japanese, Korean,
  Arabic and Hindi; emoji (with skin tones and joiners); numbers, dates, prices;
  runs of spaces, tabs and newlines; chat prompts with control tokens;
* the same pieces shuffled together by a seeded generator (seed 11).

The ids come from ``helpers.llama.tokenizer.load_tokenizer()`` (``tokenizers``, built
from the GGUF file), never from the course's own encoder, which the tests then compare
with them (tests/helpers/test_tokenizer.py).

    .venv/bin/python tools/make_tokenizer_reference.py
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "tests" / "data" / "tokenizer_reference.json.gz"

SENTENCES = [
    "Le café est très bon à Montréal, n'est-ce pas ? Où est l'hôtel « Bellevue » ?",
    "L'été dernier, nous sommes allés à Besançon ; c'était génial… vraiment !",
    "Die Größe der Übung überrascht: Straße, Mädchen, Fußgängerzone.",
    "¿Dónde está la estación? ¡Mañana será otro día, señor Muñoz!",
    "Η γλώσσα είναι όμορφη. Καλημέρα σας!",
    "Привет, как дела? Москва — столица России.",
    "我们今天学习分词器。这是一个中文句子，包含标点符号！",
    "日本語のテキストもトークン化できます。東京は大きい都市です。",
    "한국어 문장도 있습니다. 안녕하세요, 세계!",
    "مرحبا بالعالم، هذه جملة عربية.",
    "नमस्ते दुनिया, यह हिंदी का वाक्य है।",
    "Emoji: 😀 😂 👍🏽 👩‍💻 🇫🇷 ❤️ 🎉🎉🎉 and a family 👨‍👩‍👧‍👦.",
    "Math: ∑ᵢ xᵢ² ≤ ∞, α+β=γ, ½ + ¼ = ¾, 10⁻⁶ m, x₁ ⊗ x₂ → y.",
    "Prices: $1,299.99, €45, £3.50, ¥1000; 12% off on 2024-03-15 at 09:30:00.",
    "Phone +1 (555) 010-9999, ZIP 90210, version 3.11.4, IPv4 192.168.0.1.",
    "The year 1603, act 1 scene 3; 49152 tokens and 48900 merges.",
    "Thanks for all the fish! So long, and thanks for all the fish.",
    "I'm sure you'll see they're right: we've done it, he'd say, it's 'quoted'.",
    "SHOUTING IN CAPITALS, camelCaseWords, snake_case_words, kebab-case-words.",
    "URL: https://example.org/path?query=1&b=two#frag and mail a.b@example.com",
    "Tabs\tand\ttabs\t\there, trailing spaces   ",
    "    indented by four, then eight:        and a final space ",
    "Mixed\r\nline endings\rand\u00a0no-break\u2009thin\u3000ideographic spaces.",
    "Zero\u200bwidth\u200dand soft\u00adhyphen, combining e\u0301 vs é.",
    "<html><body class=\"x\">&nbsp;&lt;tag&gt;</body></html>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "x = np.array([[1.0, -2.5e-3], [3e10, 4]])  # shape (2, 2)",
    "----- ===== ***** ..... ,,,,, ;;;;; !!!?? ''' \"\"\" ```",
]

CHATS = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nTraduis « bonjour » en anglais.<|im_end|>\n<|im_start|>assistant\n"
    "Hello!<|im_end|>\n",
    "<|endoftext|>Once upon a time<|endoftext|><repo_name>course<file_sep>helpers/x.py\n",
    "<jupyter_start><jupyter_code>print(1)<jupyter_output>1<empty_output>",
    "text<|im_start|>glued<|im_end|>to words <|im_start |> not a control token",
]


def _files(pattern: str, limit: int) -> list[str]:
    lines = []
    for path in sorted(ROOT.glob(pattern)):
        lines += path.read_text(encoding="utf-8").splitlines(keepends=True)
    return lines[:limit]


def documents() -> list[str]:
    """The texts: each a few consecutive lines of one source, or a shuffled mix."""
    rng = random.Random(11)
    sources = {
        "shakespeare": (ROOT / "helpers/data/shakespeare_hamlet_act1.txt").read_text(
            encoding="utf-8").splitlines(keepends=True),
        "code": _files("helpers/*.py", 900),
        "prose": _files("docs/*.md", 500),
    }
    docs = []
    for lines in sources.values():
        i = 0
        while i < len(lines):
            k = rng.randint(1, 5)
            docs.append("".join(lines[i:i + k]))
            i += k
    pieces = SENTENCES + CHATS
    docs += pieces
    for _ in range(300):                                            # shuffled mixtures
        parts = rng.sample(pieces, 3)
        glue = rng.choice([" ", "\n", "  ", "\t", "", "\n\n   ", " 42 "])
        docs.append(glue.join(parts))
    docs += [" " * n for n in range(1, 9)] + ["\n" * n for n in range(1, 5)]
    docs += [str(rng.randint(0, 10 ** rng.randint(1, 12))) for _ in range(30)]
    return docs


def main() -> None:
    import tokenizers

    from helpers.llama.tokenizer import load_tokenizer

    tokenizer = load_tokenizer()
    docs = documents()
    ids = [tokenizer.encode(d).ids for d in docs]
    data = {"tokenizers_version": tokenizers.__version__, "texts": docs, "ids": ids}
    OUT.write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"),
                                  mtime=0))
    n_lines = sum(d.count("\n") + 1 for d in docs)
    print(f"{OUT.relative_to(ROOT)}: {len(docs)} texts, {n_lines} lines, "
          f"{sum(map(len, ids))} ids, {OUT.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
