"""``python -m autograder COMMAND ...``: the instructor's command line."""

from autograder.cli import main

raise SystemExit(main())
