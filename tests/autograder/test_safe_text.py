"""Displayed text (issue 23, item 3; autograder/safe_text.py): a file name cannot spoof
the instructor's terminal, and a cell cannot run as a spreadsheet formula."""

from __future__ import annotations

import csv
import io

import pytest

from autograder import safe_text

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
        "\u2069", "\u200e", "\u200f", "\u061c"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]


@pytest.mark.parametrize("char", BIDI + ZERO_WIDTH)
def test_terminal_escapes_bidi_and_zero_width_characters(char):
    shown = safe_text.terminal(f"report{char}fdp.exe")
    assert char not in shown
    assert shown == f"report\\u{ord(char):04x}fdp.exe"


def test_terminal_shows_a_spoofed_name_in_the_order_it_is_stored():
    name = "alice_\u202eexe.fdp\u202c_notebook.ipynb\x1b[2J\r"
    shown = safe_text.terminal(name)
    assert shown == "alice_\\u202eexe.fdp\\u202c_notebook.ipynb\\x1b[2J\\x0d"
    assert safe_text.terminal("émile Ünal 名前") == "émile Ünal 名前"   # letters stay


@pytest.mark.parametrize("cell", [
    "=HYPERLINK(\"http://x\")", "+1", "-1+2", "@SUM(A1)", "\t=1", "\r=1", "\n=1", "\nplain",
    "\rplain", " =1", "  +cmd", " \t@x", "\n =1", "\u3000=1", "＝cmd|' /C calc'!A0",
    "＋1", "－1", "＠SUM(A1)", " ＝1", "\u200b=1", "\u202e=1", "\ufeff+1",
])
def test_csv_cell_neutralises_formulas(cell):
    assert safe_text.csv_cell(cell) == "'" + cell
    buf = io.StringIO()
    safe_text.writer(buf).writerow([cell, 3])
    assert next(csv.reader(io.StringIO(buf.getvalue())))[0].startswith("'")


@pytest.mark.parametrize("cell", ["plain", "a=b", "alice@example.org", " name", "", 3, 2.5,
                                  None])
def test_csv_cell_leaves_other_cells(cell):
    assert safe_text.csv_cell(cell) == cell
