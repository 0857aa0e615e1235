"""Command line: ``python -m autograder {release,normalize} ...``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR, notebook_format


def cmd_release(args: argparse.Namespace) -> int:
    from autograder.release import release

    changed = release(Path(args.dest), args.assignment or None)
    for path in changed:
        print(f"updated {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")
    print(f"release: {len(changed)} file(s) changed in {args.dest}")
    return 0


def cmd_normalize(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths] or sorted(SOLUTIONS_DIR.rglob("*.ipynb"))
    n = 0
    for path in paths:
        if ".ipynb_checkpoints" in path.parts:
            continue
        if notebook_format.write(notebook_format.read(path), path):
            print(f"normalized {path}")
            n += 1
    print(f"normalize: {n} notebook(s) changed")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("release", help="regenerate the student notebooks from solutions/")
    p.add_argument("assignment", nargs="*", help="assignments to release (default: all)")
    p.add_argument("--dest", default=str(NOTEBOOKS_DIR), help="where to write (default: notebooks/)")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("normalize", help="strip outputs and volatile metadata from notebooks")
    p.add_argument("paths", nargs="*", help="notebooks (default: every notebook in solutions/)")
    p.set_defaults(func=cmd_normalize)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
