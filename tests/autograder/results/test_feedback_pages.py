"""What a student reads (issue 13, finding 9): on the feedback page of a real wrong answer
graded by ``python -m autograder grade`` with the real engine, a failing test says the
likely mistake first, shows each failing case once, and holds no traceback or file of
the grader or the course."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder.notebook import stored
import make_examples as examples


def with_mistake(assignment: str, function: str, key: str) -> str:
    """The assignment's notebook answered right, but ``function`` with the catalogue's
    wrong answer ``key``."""
    name = f"{assignment}/{assignment}.ipynb"
    perfect = examples.solved(stored.read(NOTEBOOKS_DIR / name), stored.read(SOLUTIONS_DIR / name))
    source = dict(examples.mistakes(function))[key]
    return stored.dumps(examples.with_answer(perfect, function, source))


def cell_blocks(page: str) -> dict[str, str]:
    """``{grade_id: the text of its cell block}`` of a feedback page (tags removed)."""
    blocks = {}
    for part in page.split('<div class="cell ')[1:]:
        inner = part.split('">', 1)[1].split("</div>")[0]
        text = html.unescape(re.sub(r"<[^>]+>", "", inner)).strip()
        blocks[text.split(":", 1)[0]] = text
    return blocks


@pytest.mark.slow
def test_a_softmax_without_the_max_shift(tmp_path):
    wrong = {"02_softmax": ("softmax", "no_max_shift"),      # exp without the max shift
             "03_simple_self_attention": ("simple_self_attention", "no_scale")}
    for assignment, (function, key) in wrong.items():
        path = tmp_path / "submissions" / "s1" / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(with_mistake(assignment, function, key))
    assert "z - " not in (tmp_path / "submissions/s1/02_softmax/02_softmax.ipynb").read_text(
        ).split("def softmax(")[1][:300]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "submissions",
                           "--out", "out", "--jobs", "1"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    failing = 0
    for assignment in ("02_softmax", "03_simple_self_attention"):
        page = (tmp_path / "out" / "feedback" / "s1" / assignment / f"{assignment}.html").read_text()
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        for bad in ("Traceback", 'File "', "checks.py", "/autograder/", "site-packages",
                    str(tmp_path)):
            assert bad not in text, (assignment, bad)
        for grade_id, block in cell_blocks(page).items():
            # every case the block tells of, once (the headline does not repeat it)
            named = re.findall(r"[Cc]ase '([^']+)'", block)
            assert len(named) == len(set(named)), (grade_id, block)
            if " — failed" not in block:
                continue
            failing += 1
            headline = block.split("\n")[1]            # the line after points and status
            assert headline.startswith("Likely mistake:"), (grade_id, block)
            assert block.index("Likely mistake:") < block.index("Case '")
    assert failing == 2        # test_softmax and test_simple_self_attention
    softmax = cell_blocks((tmp_path / "out" / "feedback" / "s1" / "02_softmax" /
                           "02_softmax.html").read_text())["test_softmax"]
    assert "max shift" in softmax.split("\n")[1]          # the mistake named, first
