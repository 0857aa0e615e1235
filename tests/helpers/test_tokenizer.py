"""helpers.tokenizer: byte-level BPE by hand, and SmolLM2's ids exactly.

* The exercise references on inputs worked out by hand (the byte table, overlapping
  pairs, merges by rank rather than by frequency, ties, partial UTF-8).
* ``encode_smollm2`` against ``tests/data/tokenizer_reference.json.gz`` (about 4,000
  lines of English, code, French, CJK, emoji, digits, whitespace runs and chat prompts,
  with the ids the ``tokenizers`` library gave them: tools/make_tokenizer_reference.py).
* Live, where ``tokenizers`` is installed: the whole stored text and the Shakespeare
  excerpt in one piece, and decoding.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from helpers import tokenizer as T
from notebook_helpers import require_smollm2 as require_model

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "tokenizer_reference.json.gz"
SHAKESPEARE = Path(T.__file__).parent / "data" / "shakespeare_hamlet_act1.txt"


@pytest.fixture(scope="module")
def stored():
    data = json.loads(gzip.decompress(DATA.read_bytes()))
    assert len(data["texts"]) == len(data["ids"]) > 1000
    assert sum(t.count("\n") + 1 for t in data["texts"]) > 3000
    return data


# ---------------------------------------------------------------------------------------
# The exercise references, by hand
# ---------------------------------------------------------------------------------------


def test_byte_alphabet_is_a_bijection_with_printable_characters():
    table = T._byte_table()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("\t")] == "ĉ"
    assert table[ord("A")] == "A" and table[0xE9] == "é" and table[0] == "Ā"
    assert table[0xAD] == "Ń" == chr(256 + 67)                   # the soft hyphen: 68th moved


def test_byte_symbols_of_multibyte_characters():
    assert T.byte_symbols(" café") == "ĠcafÃ©"                   # é = C3 A9
    assert T.byte_symbols("😀") == "ðŁĺĢ"                          # F0 9F 98 80
    assert len(T.byte_symbols("日本")) == 6


def test_count_pairs_counts_overlaps():
    assert T.count_pairs(list("aaa")) == {("a", "a"): 2}
    assert T.count_pairs(["Ġ", "t", "h", "e", "Ġ", "t"]) == {
        ("Ġ", "t"): 2, ("t", "h"): 1, ("h", "e"): 1, ("e", "Ġ"): 1}
    assert T.count_pairs(["x"]) == {}


def test_merge_pair_left_to_right_without_reusing_a_token():
    assert T.merge_pair(list("aaa"), ("a", "a")) == ["aa", "a"]
    assert T.merge_pair(list("aaaa"), ("a", "a")) == ["aa", "aa"]
    assert T.merge_pair(list("abcab"), ("a", "b")) == ["ab", "c", "ab"]
    assert T.merge_pair(list("ba"), ("a", "b")) == ["b", "a"]


def test_train_bpe_by_hand():
    # "ab" x3, "abc" x1, "bc" x2: (a,b) 4, (b,c) 3 -> (a,b); then (ab,c) 1, (b,c) 2 -> (b,c)
    words = ["ab", "abc", "bc", "ab", "ab", "bc"]
    assert T.train_bpe(words, 2) == [("a", "b"), ("b", "c")]
    # a tie, (x,y) 1 and (y,z) 1 in "xyz": the smaller tuple wins; then stop when done
    assert T.train_bpe(["xyz"], 5) == [("x", "y"), ("xy", "z")]
    assert T.train_bpe(["zy", "yx"], 1) == [("y", "x")]


def test_encode_word_applies_merges_by_rank_not_by_frequency():
    merges = [("c", "d"), ("a", "b"), ("b", "c")]
    # (b,c) is adjacent too, but (c,d) and (a,b) rank first: "abcd" -> ab, cd
    assert T.encode_word("abcd", merges) == ["ab", "cd"]
    # the pair found first from the left is not the lowest rank: "bcd" -> b, cd
    assert T.encode_word("bcd", merges) == ["b", "cd"]
    assert T.encode_word("aaa", [("a", "a")]) == ["aa", "a"]
    assert T.encode_word("", merges) == []


def test_pretokenize_smollm2_rules():
    assert T.pretokenize("Hello world") == ["Hello", " world"]
    assert T.pretokenize("a  b") == ["a", " ", " b"]              # the space goes to b
    assert T.pretokenize("year 2024!") == ["year", " ", "2", "0", "2", "4", "!"]
    assert T.pretokenize("<|im_start|>user\nhi<|im_end|>") == [
        "<|im_start|>", "user", "\n", "hi", "<|im_end|>"]
    assert T.pretokenize("I'm") == ["I", "'m"]
    text = "Ünïcode 😀 \t\n x  12 <|im_end|>"
    assert "".join(T.pretokenize(text)) == text


def test_letter_and_number_classes_are_the_unicode_categories():
    """The character classes standing in for ``\\p{L}`` and ``\\p{N}`` hold exactly the
    code points whose Unicode category is a letter (L*) or a number (N*), checked code
    point by code point against ``unicodedata.category``."""
    import re
    import sys
    import unicodedata

    letter = re.compile(f"[{T._LETTER}]")
    number = re.compile(f"[{T._NUMBER}]")
    wrong = [c for c in range(sys.maxunicode + 1)
             if bool(letter.fullmatch(chr(c))) != (unicodedata.category(chr(c))[0] == "L")
             or bool(number.fullmatch(chr(c))) != (unicodedata.category(chr(c))[0] == "N")]
    assert not wrong, [hex(c) for c in wrong[:10]]
    assert number.fullmatch("½") and number.fullmatch("Ⅻ") and not number.fullmatch("三")


def test_decode_joins_bytes_before_utf8():
    vocab = {"ðŁĺ": 0, "Ģ": 1, "Ġhi": 2, "<|im_end|>": 3}
    assert T.decode([2, 0, 1, 3], vocab) == " hi😀<|im_end|>"
    assert T.decode([0], vocab) == "\ufffd"                       # an incomplete character


# ---------------------------------------------------------------------------------------
# SmolLM2, id for id
# ---------------------------------------------------------------------------------------


def test_worked_example_of_the_lectures():
    require_model()
    vocab, merges = T.smollm2_vocab_and_merges()
    assert len(vocab) == 49152 and len(merges) == 48900
    assert T.encode_smollm2("Thanks for all the") == [16937, 327, 511, 260]
    assert T.encode("Thanks for all the", merges, vocab) == [16937, 327, 511, 260]
    inverse = {i: t for t, i in vocab.items()}
    assert [inverse[i] for i in [16937, 327, 511, 260]] == ["Thanks", "Ġfor", "Ġall", "Ġthe"]


def test_the_bytes_without_a_token_are_the_ones_notebook_11_names():
    """SmolLM2's vocabulary lacks 21 of the 256 byte symbols; notebook 11 tells learners
    which (their encode raises KeyError on them) and that the reference drops them."""
    require_model()
    vocab, _ = T.smollm2_vocab_and_merges()
    table = T._byte_table()
    missing = {b for b in range(256) if table[b] not in vocab}
    assert missing == {0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2,
                       *range(0xF5, 0x100)}
    text = "a\x04b"                                   # U+0004: one of them
    assert T.decode_smollm2(T.encode_smollm2(text)) == "ab"


def test_reference_matches_the_stored_ids(stored):
    require_model()
    wrong = [(t, ids) for t, ids in zip(stored["texts"], stored["ids"])
             if T.encode_smollm2(t) != ids]
    assert not wrong, f"{len(wrong)} texts differ, first: {wrong[0][0]!r}"
    assert all(T.decode_smollm2(ids) == t for t, ids in zip(stored["texts"], stored["ids"]))


def test_slow_exercise_encoder_matches_the_stored_ids_on_a_sample(stored):
    require_model()
    vocab, merges = T.smollm2_vocab_and_merges()
    for t, ids in list(zip(stored["texts"], stored["ids"]))[::97]:
        assert T.encode(t, merges, vocab) == ids, t
        assert T.decode(ids, vocab) == t


def test_live_against_tokenizers(stored):
    require_model()
    pytest.importorskip("tokenizers")
    from helpers.llama.tokenizer import load_tokenizer

    tok = load_tokenizer()
    whole = "".join(stored["texts"]) + SHAKESPEARE.read_text(encoding="utf-8")
    ids = T.encode_smollm2(whole)
    assert ids == tok.encode(whole).ids
    assert T.decode_smollm2(ids) == tok.decode(ids, skip_special_tokens=False) == whole
    odd = "a\x04b\x1d c\xff"                 # bytes SmolLM2's vocabulary lacks are left out
    assert T.encode_smollm2(odd) == tok.encode(odd).ids
    partial = T.encode_smollm2("é😀")[:-1]                           # a character cut in two
    assert T.decode_smollm2(partial) == tok.decode(partial)


def test_vocab_and_merges_cached_on_disk_equal_the_gguf_file(tmp_path, monkeypatch):
    require_model()
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(tmp_path))
    read = T.smollm2_vocab_and_merges.__wrapped__                 # past the session's memo
    first = read()                                                # from the GGUF file
    saved = list(tmp_path.glob("*-bpe.json"))
    assert len(saved) == 1
    assert read() == first                                        # from the saved file
    saved[0].write_text("not json")                               # a broken cache: reread
    assert read() == first and len(first[0]) == 49152 and first[1][0] == ("Ġ", "t")
