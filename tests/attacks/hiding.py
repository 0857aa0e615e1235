"""Answers that only call what the course keeps beside an exercise's reference (issue 36,
finding 2): a private table, a fast path written as a class, a helper built from the
reference's own steps. Whatever in ``helpers`` computes an exercise's answer (a function,
a class and its methods, a module-level value) is named in that exercise's ``refuse``
and is a stub in every grading child and in the student bundle
(``autograder/isolation/student_helpers.py``). Each answer below earned its exercise's
points before.
"""

from attacks import Attack


def _tokenizer_attack(key: str, target: str, code: str, why: str) -> Attack:
    return Attack(key, "11_tokenizer", target, code, why, expect="honest",
                  answers="solutions", lose=(f"test_{target}",))


ATTACKS = [
    _tokenizer_attack("byte_table", "byte_symbols", """
from helpers import tokenizer as _tk

def byte_symbols(text):
    table = _tk._byte_table()
    return "".join(table[b] for b in text.encode("utf-8"))
""", "byte_symbols from the tokenizer's private byte table"),
    _tokenizer_attack("byte_table_inverted", "decode", """
from helpers import tokenizer as _tk

def decode(ids, vocab):
    token_of = {i: t for t, i in vocab.items()}
    back = {c: b for b, c in _tk._byte_table().items()}
    return bytes(back[c] for i in ids for c in token_of[int(i)]).decode("utf-8", errors="replace")
""", "decode from the inverse of the tokenizer's private byte table"),
    _tokenizer_attack("fast_bpe_word", "encode_word", """
from helpers import tokenizer as _tk

def encode_word(word, merges):
    back = {c: b for b, c in _tk._byte_table().items()}
    vocab = {t: t for t in set(word) | {x for a, b in merges for x in (a, b, a + b)}}
    return _tk._FastBPE(vocab, merges).word(bytes(back[c] for c in word).decode("utf-8"))
""", "encode_word from the method of the fast encoder's class, with a vocabulary of "
     "tokens to themselves"),
    _tokenizer_attack("fast_bpe_ids", "encode", """
from helpers import tokenizer as _tk

def encode(text, merges, vocab):
    return _tk._FastBPE(vocab, merges).ids_of(text)
""", "encode from an instance of the fast encoder's class"),
    _tokenizer_attack("words_of_pieces", "pretokenize", """
import re
from helpers import tokenizer as _tk

def pretokenize(text):
    back = {c: b for b, c in _tk._byte_table().items()}
    controls = re.compile("(" + "|".join(re.escape(t) for t in _tk.CONTROL_TOKENS) + ")")
    out = []
    for part in controls.split(text):
        if part in _tk.CONTROL_TOKENS:
            out.append(part)
        elif part:
            out += [bytes(back[c] for c in w).decode("utf-8") for w in _tk.words_of(part)]
    return out
""", "pretokenize from the training split words_of, mapped back to text"),
]
