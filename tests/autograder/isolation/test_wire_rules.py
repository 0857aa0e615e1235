"""A reply is hostile bytes (issue 23, item 1): ``wire.decode`` and the reply lines'
parser hold an exact schema per wire type and check every size before anything is
allocated (autograder/isolation/wire.py, client.parse_lines). Fast: no sandbox."""

from __future__ import annotations

import base64
import io
import json
import resource
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.isolation import answers, client, course_calls, wire


def _npy(descr: str, shape: tuple, data: bytes, fortran: bool = False) -> bytes:
    """An .npy member with a header of our own (what a forged reply can write)."""
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


def _forged(structure, members: dict[str, bytes] | None = None, *, raw_structure=None,
            compression=zipfile.ZIP_STORED) -> bytes:
    text = raw_structure if raw_structure is not None else json.dumps(structure).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        zf.writestr("__structure__.npy", _npy("|u1", (len(text),), text))
        for name, data in (members or {}).items():
            zf.writestr(name + ".npy", data)
    return buf.getvalue()


def _refused(data: bytes, match: str = ""):
    with pytest.raises(wire.DecodeError, match=match):
        wire.decode(data)


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# -- honest values still cross ----------------------------------------------------------


class _Text(str):
    pass


#: Leaves of every kind a sequence may hold: the plain ones that cross as they are
#: (strings, floats, booleans, None, small ints) and those that need their own form (big
#: ints, NumPy scalars, a str subclass, small arrays).
_LEAF = st.one_of(st.text(max_size=4), st.floats(allow_nan=False), st.booleans(), st.none(),
                  st.integers(-2**60, 2**60), st.integers(-10, 10).map(np.int64),
                  st.floats(-1e3, 1e3).map(np.float64), st.text(max_size=3).map(_Text),
                  st.lists(st.floats(-9, 9), max_size=20).map(np.array))
_VALUE = st.recursive(_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.lists(inner, max_size=6).map(tuple),
    st.dictionaries(st.text(max_size=3), inner, max_size=4)), max_leaves=30)


def _same(a, b) -> bool:
    """Equal values of the same types, all the way down (a str subclass reads as str)."""
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and np.array_equal(a, b)
    if type(a) is _Text:
        return type(b) is str and a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=200, deadline=None)
@given(_VALUE)
def test_every_value_round_trips_with_its_types_whatever_its_sequences_hold(value):
    """The sequences of plain leaves take a quick path in encode and decode: what
    crosses is the same value, of the same types, in either form."""
    for short in (False, True):
        back = wire.decode(wire.encode(value, short=short))
        assert _same(value, back), (value, back)


def test_plain_sequences_are_written_and_counted_as_their_items_one_by_one():
    """The quick path's form is the general one's: a flat list is its JSON items, a list
    with anything else in it its items' own forms; decoding counts every item."""
    flat = ["ab", 1.5, True, None]
    assert json.loads(wire.encode(flat, short=True)[1:]) == {"__seq__": "list", "items": flat}
    mixed = ["ab", 2**60, np.float64(1.0)]
    items = json.loads(wire.encode(mixed, short=True)[1:])["items"]
    assert items[0] == "ab" and items[1] == {"__int__": str(2**60)} and "__ndb__" in items[2]
    cap = wire.item_cap(wire.MAX_VALUE_BYTES)
    exact = b'{"__seq__": "list", "items": [' + b"0," * (cap - 2) + b"0]}"
    assert len(wire.decode(wire.SHORT + exact)) == cap - 1       # the list and its items
    over = b'{"__seq__": "list", "items": [' + b"0," * (cap - 1) + b"0]}"
    _refused(wire.SHORT + over, "too many items")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=5), st.integers(0, 260),
       st.sampled_from(["<f8", "<f4", "<i8", "<u2", "|b1"]))
def test_a_short_array_is_taken_exactly_when_its_shape_counts_its_bytes(shape, n, descr):
    """The short form's shape is checked against its bytes' length (without NumPy's
    product, which a forged shape could overflow): taken iff every size is at most
    SHORT_ARRAY and their product times the dtype's size is the length."""
    dtype = np.dtype(descr)
    raw = np.ones(n, dtype=dtype).tobytes()
    form = {"__ndb__": base64.b64encode(raw).decode(), "dtype": descr, "shape": shape,
            "scalar": False}
    fits = all(k <= wire.SHORT_ARRAY for k in shape) and int(np.prod(shape, dtype=object)) == n
    if fits:
        got = wire._short_array(form)
        assert got.shape == tuple(shape) and got.dtype == dtype and bool(np.all(got == 1))
    else:
        with pytest.raises(wire.DecodeError, match="bad short array"):
            wire._short_array(form)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40), st.sampled_from(["<f8", "<i4", "|b1", "|u1", ">c16", "|O"]),
       st.booleans())
def test_a_short_array_of_any_bytes_is_its_dtype_exactly_or_refused(raw, descr, scalar):
    """Whatever bytes a child writes in a short array: the value is those bytes as an
    array of an allowlisted real dtype (a boolean's bytes 0 or 1), or DecodeError."""
    count = len(raw) // max(1, np.dtype(descr).itemsize) if descr != "|O" else len(raw)
    form = {"__ndb__": base64.b64encode(raw).decode(), "dtype": descr,
            "shape": [] if scalar else [count], "scalar": scalar}
    dtype = np.dtype(descr)
    ok = (dtype.kind in "biuf" and len(raw) == (1 if scalar else count) * dtype.itemsize
          and (dtype.kind != "b" or set(raw) <= {0, 1}))
    if not ok:
        with pytest.raises(wire.DecodeError):
            wire._short_array(form)
        return
    got = wire._short_array(form)
    assert np.asarray(got).tobytes() == raw and np.asarray(got).dtype == dtype


def test_the_trusted_calls_name_every_large_array_however_deep():
    """The child names each large array of a request by its digest and the worker puts
    the array back: lists of plain values pass as they are, lists holding arrays do not."""
    big = np.arange(float(course_calls.BLOB_SIZE + 1))
    trusted = object.__new__(course_calls.Trusted)
    trusted.sent = set()
    args = {"tokens": ["a", "b", 3, None], "mixed": ["a", big, [big, 1.0]], "t": (1, 2.0)}
    new: dict = {}
    named = trusted._named(args, new)
    key = course_calls.blob_key(big)
    assert named["tokens"] == ["a", "b", 3, None] and named["t"] == (1, 2.0)
    assert named["mixed"] == ["a", {course_calls.BLOB: key}, [{course_calls.BLOB: key}, 1.0]]
    assert list(new) == [key]
    back = answers._unnamed(wire.decode(wire.encode(named, short=True)), dict(new))
    assert back["tokens"] == ["a", "b", 3, None] and back["t"] == (1, 2.0)
    assert np.array_equal(back["mixed"][1], big) and np.array_equal(back["mixed"][2][0], big)


#: Values Python's == (and hash) takes for one another, and arrays of equal values or
#: equal bytes: a call key must tell apart every two whose requests differ.
_BIG = np.arange(float(course_calls.BLOB_SIZE + 1))
_LOOKALIKES = [0, 0.0, -0.0, False, 1, 1.0, True, 2**60, float(2**60), None, "0", "",
               float("nan"), float("inf"), np.float64(0), np.float32(0), np.int64(0),
               np.bool_(False), np.array(0.0), np.array([0.0]), np.array([0]),
               np.array([0.0], dtype=">f8"), np.array([0.0], dtype=np.float32),
               np.zeros((1, 1)), np.zeros((2, 1)).T, np.zeros(2)[::-1], np.array([False]),
               np.array([1.0, 2.0]), np.array([[1.0], [2.0]]), np.array([1.0, 2.0])[::-1],
               _BIG, _BIG + 0, _BIG * 2, _BIG.astype(np.float32), _BIG.reshape(5, 13)]
_CALL_VALUE = st.recursive(
    st.sampled_from(range(len(_LOOKALIKES))).map(lambda i: _LOOKALIKES[i]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["a", "b", "x"]), inner, max_size=3)),
    max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["x", "params", "n"]), _CALL_VALUE,
                                max_size=3), min_size=2, max_size=8))
def test_equal_call_keys_are_equal_requests(calls):
    """The child looks a call up in its memory by ``wire.call_key`` before encoding it: two
    calls with the same key must make the same request, whatever Python takes for equal
    (0, 0.0, -0.0, False, np.float64(0)), and arrays of equal values in other dtypes,
    byte orders, shapes or layouts. A key of None (not described) is never looked up."""
    trusted = object.__new__(course_calls.Trusted)
    trusted.sent = set()
    seen: dict = {}
    for args in calls:
        names: dict = {}
        key = wire.call_key("helpers.reference:f", args, names, course_calls.BLOB_SIZE)
        assert key is not None                      # every value here is described
        request = wire.encode({"fn": "f", "args": trusted._named(args, {}, 0, names)},
                              short=True)
        assert request == wire.encode({"fn": "f", "args": trusted._named(args, {})},
                                      short=True)   # a name known already is the same
        assert seen.setdefault(key, request) == request


@pytest.mark.parametrize("wrap", [lambda v: v, lambda v: [v], lambda v: (v, 1),
                                  lambda v: {"a": v}, lambda v: [{"a": (v,)}]],
                         ids=["leaf", "list", "tuple", "dict", "nested"])
def test_every_two_lookalikes_with_one_call_key_make_one_request(wrap):
    trusted = object.__new__(course_calls.Trusted)
    trusted.sent = set()
    by_key: dict = {}
    for value in _LOOKALIKES:
        args = {"x": wrap(value)}
        key = wire.call_key("helpers.reference:f", args, {}, course_calls.BLOB_SIZE)
        request = wire.encode({"fn": "f", "args": trusted._named(args, {})}, short=True)
        assert by_key.setdefault(key, request) == request, value
    assert len(by_key) >= len(_LOOKALIKES) - 2    # _BIG and _BIG + 0 (and nan's one key)


def test_a_call_key_is_not_made_for_what_it_cannot_describe():
    for args in ({"rng": np.random.default_rng(0)}, {"x": {1: 2.0}}, {"s": {1, 2}},
                 {"x": np.array(["a"])}, {"x": np.zeros(2, dtype=complex)}, {"o": object()}):
        assert wire.call_key("helpers.reference:f", args, {}, course_calls.BLOB_SIZE) is None


@pytest.mark.parametrize("name", ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"])
def test_every_bit_generator_round_trips(name):
    rng = np.random.Generator(getattr(np.random, name)(7))
    rng.random(3)
    back = wire.decode(wire.encode(rng))
    assert type(back.bit_generator).__name__ == name
    assert back.random(5).tolist() == rng.random(5).tolist()


def test_every_allowed_dtype_round_trips_and_others_are_cast():
    values = [(np.arange(6) % 2).astype(t).reshape(2, 3) for t in
              (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
               np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
               np.complex128)]
    values += [np.arange(6.0).reshape(2, 3).T, np.array(3, dtype=">i4"), np.float32(2.5)]
    back = wire.decode(wire.encode(values))
    for a, b in zip(values, back):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(a, b)
    assert back[-1] == np.float32(2.5) and isinstance(back[-1], np.float32)
    assert back[0].flags.writeable
    # long double is not on the wire: the child casts it
    assert wire.decode(wire.encode(np.ones(2, np.longdouble))).dtype == np.float64


def test_a_long_honest_list_and_deep_honest_nesting_cross():
    assert wire.decode(wire.encode(list(range(200_000)))) == list(range(200_000))
    nested: list = [1]
    for _ in range(9):                     # 18 levels: encode keeps 20
        nested = [{"k": nested}]
    assert wire.decode(wire.encode(nested)) == nested


# -- forged replies ----------------------------------------------------------------------


def test_the_dtype_string_bomb_is_refused_before_any_allocation():
    """The review's 300-byte reply: a generator state whose dtype text made NumPy
    allocate 1.2 GB. The dtype text is compared, never parsed."""
    before = _peak_kb()
    for dtype in ("(15000,10000)f8", "uint32", "<u4", "O"):
        state = {"bit_generator": "MT19937",
                 "state": {"key": {"__list__": [1] * 624, "dtype": dtype}, "pos": 0}}
        data = _forged({"__rng__": "MT19937", "state": state})
        assert len(data) < 4000
        if dtype == "uint32":
            assert type(wire.decode(data).bit_generator).__name__ == "MT19937"
        else:
            _refused(data, "bad MT19937 state")
    # the same text as an array's descr
    _refused(_forged({"__nd__": "a0", "scalar": False},
                     {"a0": _npy("(15000,10000)f8", (1,), b"\0" * 8)}), "cannot cross")
    _refused(_forged({"__nd__": "a0", "scalar": False},
                     {"a0": _npy("O", (1,), b"\0" * 8)}), "cannot cross")
    assert _peak_kb() - before < 100_000               # not 1.2 GB: under 100 MB


@pytest.mark.parametrize("name,state,why", [
    ("PCG64", {"bit_generator": "PCG64", "state": {"state": 1, "inc": 1}, "has_uint32": 0},
     "fields"),
    ("PCG64", {"bit_generator": "PCG64", "state": {"state": 2**128, "inc": 1},
               "has_uint32": 0, "uinteger": 0}, "state"),
    ("PCG64", {"bit_generator": "PCG64", "state": {"state": "1", "inc": 1},
               "has_uint32": 0, "uinteger": 0}, "state"),
    ("PCG64", {"bit_generator": "SFC64", "state": {"state": 1, "inc": 1},
               "has_uint32": 0, "uinteger": 0}, "PCG64 state"),
    ("SFC64", {"bit_generator": "SFC64", "state": {"state": {"__list__": [1, 2, 3],
               "dtype": "uint64"}}, "has_uint32": 0, "uinteger": 0}, "state"),
    ("Philox", {"bit_generator": "Philox", "state": {"counter": {"__list__": [0] * 4,
                "dtype": "uint64"}, "key": {"__list__": [-1, 0], "dtype": "uint64"}},
                "buffer": {"__list__": [0] * 4, "dtype": "uint64"}, "buffer_pos": 4,
                "has_uint32": 0, "uinteger": 0}, "key"),
    ("MT19937", {"bit_generator": "MT19937", "state": {"key": {"__list__": [1] * 624,
                 "dtype": "uint32"}, "pos": 625}}, "pos"),
    ("MT19937", {"bit_generator": "MT19937", "state": {"key": {"__list__": [1] * 10**5,
                 "dtype": "uint32"}, "pos": 0}}, "key"),
    ("BitGenerator", {}, "unknown bit generator"),
])
def test_a_wrong_generator_state_is_refused(name, state, why):
    _refused(_forged({"__rng__": name, "state": state}), why)


def test_deep_nesting_is_refused_without_recursion():
    deep = b'{"__seq__": "list", "items": [' * 200_000 + b"1" + b"]}" * 200_000
    _refused(_forged(None, raw_structure=deep), "nested deeper")
    line = '{"case": 0, "value": ' + "[" * 200_000 + "]" * 200_000 + "}"
    with pytest.raises(wire.DecodeError, match="nested deeper"):
        wire.loads(line, max_chars=10**7)
    assert client.parse_lines(line + "\n" + '{"case": 1}') == [{"case": 1}]
    # brackets inside strings are text, not nesting
    assert wire.loads('{"stdout": "' + "[" * 500 + '"}', 10**6) == {"stdout": "[" * 500}
    # values nested deeper than MAX_DEPTH within the bracket cap
    value: dict = {"__repr__": "x"}
    for _ in range(wire.MAX_DEPTH + 2):
        value = {"__seq__": "list", "items": [value]}
    _refused(_forged(value), "nested too deeply")


def test_the_quick_bounds_decide_as_the_exact_scan():
    """``loads`` skips the exact scan when the counts of brackets and separators (strings
    included) are within the caps: for texts at and around the caps, with brackets and
    separators inside strings or not, it decides as the exact scan alone would."""
    def exact(text, max_depth, max_items):
        depth, separators = wire.json_shape(text)
        if depth > max_depth or separators > max_items:
            return False
        try:
            json.loads(text)
        except ValueError:
            return False
        return True

    rng = np.random.default_rng(0)
    texts = []
    for depth in (0, 1, 5, 6, 7, 127, 128, 129):
        texts.append("[" * depth + "]" * depth)
        texts.append('{"k": ' + "[" * depth + '"a,b:c"' + "]" * depth + "}")
        texts.append('["' + "[{,:" * depth + '"]')             # only strings hold them
    for _ in range(300):
        items = [json.dumps("[" * int(rng.integers(0, 4)) + "," * int(rng.integers(0, 4)))
                 if rng.random() < 0.5 else "[1, 2]" for _ in range(int(rng.integers(1, 8)))]
        nest = int(rng.integers(0, 9))
        texts.append("[" * nest + ", ".join(items) + "]" * nest)
    for text in texts:
        for max_depth, max_items in ((6, 5), (128, 10**6), (3, 2), (8, 9)):
            try:
                wire.loads(text, 10**6, max_depth=max_depth, max_items=max_items)
                accepted = True
            except wire.DecodeError:
                accepted = False
            assert accepted == exact(text, max_depth, max_items), (text, max_depth, max_items)


def test_a_huge_item_count_is_refused():
    cap = wire.item_cap(wire.MAX_VALUE_BYTES)
    items = b"[" + b"0," * (cap + 10) + b"0]"
    structure = b'{"__seq__": "list", "items": ' + items + b"}"
    _refused(_forged(None, raw_structure=structure), "too many items")
    pairs = b"[" + b'["k",0],' * (cap + 10) + b'["k",0]]'
    _refused(_forged(None, raw_structure=b'{"__dict__": ' + pairs + b"}"), "too many items")
    # one small array named a million times
    refs = {"__seq__": "list", "items": [{"__nd__": "a0", "scalar": False}] * 1000}
    _refused(_forged(refs, {"a0": _npy("<f8", (1000,), b"\0" * 8000)}), "bad array reference")
    # many members
    members = {f"a{k}": _npy("|u1", (0,), b"") for k in range(wire.MAX_ARRAYS + 5)}
    _refused(_forged({"__repr__": "x"}, members), "arrays")


def test_a_larger_trusted_file_may_hold_more_arrays_in_proportion():
    """A child's reply (32 MB) holds at most MAX_ARRAYS arrays; a bundle's recorded calls
    (read with a cap of hundreds of MB) hold more, in proportion to the byte cap."""
    n = wire.MAX_ARRAYS + 5
    value = [np.full(1, float(k)) for k in range(n)]
    data = wire.encode(value)
    with pytest.raises(wire.DecodeError, match="more than 10000 arrays"):
        wire.decode(data)
    assert wire.array_cap(wire.MAX_VALUE_BYTES) == wire.MAX_ARRAYS
    back = wire.decode(data, max_bytes=256 * 1024 * 1024)
    assert len(back) == n and all(float(a[0]) == k for k, a in enumerate(back))


@pytest.mark.parametrize("descr,shape,nbytes,why", [
    ("<f8", (15000, 10000), 8, "does not match"),
    ("<f8", (3,), 16, "does not match"),
    ("<f8", (2**62, 2**62), 0, "does not match"),
    ("<f8", (-1,), 8, "bad .npy header"),
    ("<f8", (1,) * 40, 8, "bad .npy header"),
    ("<f8", (True,), 8, "bad .npy header"),
    ("<U4", (1,), 16, "cannot cross"),
    ("|V8", (1,), 8, "cannot cross"),
])
def test_a_shape_that_does_not_match_its_bytes_is_refused(descr, shape, nbytes, why):
    before = _peak_kb()
    _refused(_forged({"__nd__": "a0", "scalar": False},
                     {"a0": _npy(descr, shape, b"\0" * nbytes)}), why)
    assert _peak_kb() - before < 100_000


def test_members_and_tags_are_exact():
    ok = {"a0": _npy("<f8", (1,), b"\0" * 8)}
    assert wire.decode(_forged({"__nd__": "a0", "scalar": False}, ok)).tolist() == [0.0]
    for structure, members, why in [
        ({"__nd__": "a0", "scalar": False, "extra": 1}, ok, "bad structure"),
        ({"__nd__": "a0"}, ok, "bad structure"),
        ({"__nd__": "a0", "scalar": True}, ok, "scalar with a shape"),
        ({"__nd__": "a1", "scalar": False}, ok, "bad array reference"),
        ({"__repr__": "x"}, ok, "does not refer"),
        ({"__nd__": "a0", "scalar": False}, {"a0": b"junk"}, "not an .npy"),
        ({"__nd__": "a0", "scalar": False}, {"../a0": ok["a0"]}, "unknown or repeated"),
        ({"__int__": "9" * 5000}, None, "bad integer"),
        ({"__seq__": "tuple", "items": {"a": 1}}, None, "bad sequence"),
        ({"__seq__": "deque", "items": []}, None, "bad sequence"),
        ({"__dict__": [["k", 1, 2]]}, None, "bad structure"),
        ({"__dict__": [[1, 1]]}, None, "bad structure"),
        ({"__obj__": "shutil:rmtree", "state": []}, None, "cannot cross"),
        ({"__file__": "0" * 32}, None, "bad structure"),
        ([1, 2], None, "bad structure"),
    ]:
        _refused(_forged(structure, members), why)
    _refused(_forged({"__nd__": "a0", "scalar": False}, ok,
                     compression=zipfile.ZIP_DEFLATED), "compressed")


def test_decode_runs_in_bounded_memory_on_a_big_forged_reply():
    """A forged reply at the size cap decodes (or is refused) in memory of the order of
    the cap, never more."""
    before = _peak_kb()
    big = list(range(wire.MAX_ITEMS - 10))
    data = wire.encode(big)
    assert len(data) < wire.MAX_VALUE_BYTES
    assert len(wire.decode(data)) == len(big)
    assert _peak_kb() - before < 400_000


def test_parse_lines_caps_length_and_keeps_good_lines():
    long = '{"case": 0, "value": "' + "A" * (client.LINE_CAP + 10) + '"}'
    good = '{"case": 2, "value": "x"}'
    assert client.parse_lines("\n".join([long, "not json", "[1]", good])) == [
        {"case": 2, "value": "x"}]


def _decode_under_address_limit(values: list[bytes], headroom_mb: int = 300) -> list[str]:
    """Decode each of ``values`` in a forked child whose address space may grow by only
    ``headroom_mb``: what each gave (``DecodeError: why``, ``MemoryError``, ``decoded``)."""
    import os

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover - runs in the child
        try:
            os.close(r)
            with open("/proc/self/statm") as f:
                size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            limit = size + headroom_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            got = []
            for data in values:
                try:
                    wire.decode(data)
                    got.append("decoded")
                except wire.DecodeError as exc:
                    got.append(f"DecodeError: {exc}")
                except MemoryError:
                    got.append("MemoryError")
            os.write(w, json.dumps(got).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = os.read(r, 65536)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data)


def test_decoding_the_bombs_needs_no_more_than_a_little_memory():
    """Under an address-space limit of 300 MB more than the process holds, every bomb
    is refused by a rule, before it asks for the memory it claims (the decoder of
    issue 23 refused the first two only after NumPy ran out of memory)."""
    mt = {"bit_generator": "MT19937",
          "state": {"key": {"__list__": [0], "dtype": "(15000,10000)f8"}, "pos": 0}}
    bombs = [
        _forged({"__rng__": "MT19937", "state": mt}),
        _forged({"__nd__": "a0", "scalar": False},
                {"a0": _npy("<f8", (15000, 10000), b"\0" * 8)}),
        _forged({"__seq__": "list", "items": [{"__nd__": "a0", "scalar": False}] * 50_000},
                {"a0": _npy("<f8", (1000,), b"\0" * 8000)}),
        _forged(None, raw_structure=b"[" * 200_000 + b"]" * 200_000),
    ]
    got = _decode_under_address_limit(bombs)
    assert [g.split(":")[0] for g in got] == ["DecodeError"] * len(bombs), got
    assert not [g for g in got if "MemoryError" in g], got
    for g, why in zip(got, ["bad MT19937 state", "does not match", "bad array reference",
                            "nested deeper"]):
        assert why in g, got


@pytest.mark.parametrize("text", [
    '"' + '\\"' * 200_000,                  # an unterminated string of escaped quotes
    '\\' * 400_000, '"' * 400_000, '"[\\"{' * 100_000, "[" * 400_000,
])
def test_the_nesting_pre_scan_is_linear(text):
    """The scan that runs before json.loads must not backtrack: a pattern for strings
    that handles escapes itself takes quadratic time on escaped quotes (20,000 of them
    took 19 s; 200,000 would take half an hour)."""
    import time

    t0 = time.perf_counter()
    wire.json_depth(text)
    with pytest.raises(wire.DecodeError):
        wire.loads(text, max_chars=10**7, max_depth=16)
    assert time.perf_counter() - t0 < 5


def test_the_nesting_pre_scan_reads_strings_and_escapes():
    assert wire.json_depth('{"a": "[[[\\"[[", "b": [[1]]}') == 3
    assert wire.json_depth('["\\\\", [1]]') == 2
    assert wire.json_depth('["\\\\\\"]", [1]]') == 2
    assert wire.json_depth("1") == 0


def test_reply_lines_are_capped_in_number_and_size_before_parsing():
    many = '{"case": 0}\n' * (client.MAX_LINES + 5)
    lines, refused = client.parse_reply(many)
    assert len(lines) == client.MAX_LINES and refused == [
        f"more than {client.MAX_LINES} lines"]
    wide = "{" + ",".join(f'"k{i}": 0' for i in range(client.LINE_ITEMS)) + "}\n"
    lines, refused = client.parse_reply(wide + '{"case": 1, "value": "x"}\n')
    assert lines == [{"case": 1, "value": "x"}] and "too many items" in refused[0]
    # a million empty lines cost no list of a million strings, and are not refused
    assert client.parse_reply("\n" * 1_000_000 + '{"done": true}\n') == ([{"done": True}], [])
    # the last line, cut without its newline, is dropped without being refused
    assert client.parse_reply('{"case": 0}\n{"case": 1, "val') == ([{"case": 0}], [])


def test_a_structure_of_many_small_objects_is_refused_before_parsing():
    """Parsing would build a dict per object (over 200 bytes each): the separators are
    counted first."""
    cap = wire.item_cap(wire.MAX_VALUE_BYTES)
    items = b",".join([b'{"__repr__": "x"}'] * (2 * cap + 10))
    raw = b'{"__seq__": "list", "items": [' + items + b"]}"
    _refused(_forged(None, raw_structure=raw), "separators")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["<f8", "<f4", ">f8", "<i8", "<i4", ">i2", "|u1", "|i1", "|b1"]),
       st.lists(st.integers(1, 5), min_size=0, max_size=3),
       st.sampled_from(["c", "T", "step", "neg"]), st.integers(0, 2**31 - 1))
def test_a_short_arrays_form_holds_exactly_its_values_whatever_its_layout(descr, shape, layout,
                                                                          seed):
    """The short form (the exact-type fast path of ``encode`` and the general one) gives
    back every array of the short sizes exactly: its values, dtype (or its native
    equivalent) and shape, whether it is C-ordered, transposed, strided or reversed, bare
    or inside the dicts and lists of a trusted call."""
    rng = np.random.default_rng(seed)
    a = (rng.normal(size=shape) * 50).astype(descr) if shape else \
        np.asarray(rng.normal() * 50).astype(descr)
    if layout == "T":
        a = a.T
    elif layout == "step" and a.ndim:
        a = a[::2]
    elif layout == "neg" and a.ndim:
        a = a[::-1]
    for value in (a, {"x": a, "params": {"W": a}}, [a, (a, 1.0)]):
        back = wire.decode(wire.encode(value, short=True))
        got = back if isinstance(back, np.ndarray) else (
            back["params"]["W"] if isinstance(back, dict) else back[1][0])
        assert got.shape == a.shape and got.dtype.kind == a.dtype.kind
        assert got.dtype.itemsize == a.dtype.itemsize
        np.testing.assert_array_equal(got, a)
