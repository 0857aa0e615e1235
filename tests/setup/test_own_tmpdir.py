"""Every test has a temporary folder of its own (tests/conftest.py): nothing a test or a
process it starts writes to "the temp folder" lands in the machine's global one."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SEEN: list[str] = []


def _where() -> str:
    inner = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    assert inner == tempfile.gettempdir() == os.environ["TMPDIR"]
    return inner


def test_a_test_and_its_subprocesses_share_a_private_temp_folder(own_tmpdir):
    assert _where() == str(own_tmpdir)
    assert not os.path.samefile(own_tmpdir, "/tmp")
    SEEN.append(str(own_tmpdir))


def test_the_next_test_gets_another_one(own_tmpdir):
    assert _where() == str(own_tmpdir)
    assert SEEN and str(own_tmpdir) not in SEEN
