"""The instructor's side of the course: nbgrader configuration and command line.

``python -m autograder --help`` lists the commands.
"""

from pathlib import Path

#: The repository root (this package lives in ``<root>/autograder``).
REPO_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
#: The grader's version, stamped on every grading record (``merge`` and ``--resume``
#: refuse to mix records of different versions or solutions).
__version__ = "0.4.0"
