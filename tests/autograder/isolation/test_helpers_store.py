"""The store the copies of ``helpers`` are hard links into (``helpers_copy.Store``): one per
grading process, shared by every copy it makes. Sharing it must not change a copy, and
replacing a file of one copy must never write through the link into the store (every
other copy holding that content would change with it)."""

from __future__ import annotations

import os
from pathlib import Path

from autograder.isolation import helpers_copy
from helpers import course


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_replaced_file_is_a_new_link_never_written_through(tmp_path):
    store = helpers_copy.Store(tmp_path / "store")
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    store.put(a, b"x = 1\n")
    store.put(b, b"x = 1\n")
    assert os.stat(a).st_ino == os.stat(b).st_ino              # one file, two links
    store.put(a, b"x = 2\n")                                   # a replaced...
    assert a.read_bytes() == b"x = 2\n"
    assert b.read_bytes() == b"x = 1\n"                        # ...b and the store are not
    assert sorted(p.read_bytes() for p in (tmp_path / "store").iterdir()) == \
        [b"x = 1\n", b"x = 2\n"]
    assert store.content(str(b)) == b"x = 1\n"
    own = tmp_path / "own.py"                                  # not a link into the store
    own.write_bytes(b"y = 3\n")
    assert store.content(str(own)) == b"y = 3\n"


def test_copies_made_with_one_shared_store_are_those_made_alone(tmp_path):
    """Every exercise of a sample across the course (and a notebook run's copy): the
    copy made after many others in one store holds, file for file, what a copy made
    with a store of its own holds."""
    names = list(course.names())
    sample = names[::6] + [names[-1]]
    (tmp_path / "shared").mkdir()
    shared = helpers_copy.Store(tmp_path / "shared" / ".helpers-store")
    for name in names:                                          # the grader's order
        helpers_copy.prepare_helpers(tmp_path / "shared" / name, strip=name, store=shared)
    helpers_copy.prepare_helpers(tmp_path / "shared" / "nb", notebook_run=True,
                                 assignment="08_language_model", store=shared)
    for name in sample + ["nb"]:
        alone = tmp_path / "alone" / name
        if name == "nb":
            helpers_copy.prepare_helpers(alone, notebook_run=True,
                                         assignment="08_language_model")
        else:
            helpers_copy.prepare_helpers(alone, strip=name)
        mine, theirs = _tree(tmp_path / "shared" / name), _tree(alone)
        assert mine.keys() == theirs.keys(), name
        assert mine == theirs, name
    # each exercise's own reference raises in its own copy only
    ref = "helpers/reference.py"
    raising = {n: _tree(tmp_path / "shared" / n).get(ref) for n in ("softmax", "dot")}
    assert raising["softmax"] != raising["dot"]
