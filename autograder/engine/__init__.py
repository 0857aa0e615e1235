"""Grade one submitted notebook: merge it with the source, run it, decide the points.

``grade_notebook(submission, assignment)`` returns a :class:`NotebookResult` and never
raises for a bad submission (unreadable file, stripped metadata, deleted or edited test
cells, duplicated answers, hangs, memory blow-ups, killed processes, floods of output).

Source of truth
    The solution notebook ``solutions/<assignment>/<notebook>.ipynb`` is read directly:
    its nbgrader metadata gives the answer cells (by ``grade_id``), the test cells with
    their hidden tests and points, and the manually graded cells. We do not use
    nbgrader's gradebook: it would only hold a copy of the same facts (checksums and
    points taken from this notebook at release time), creating it costs a
    ``generate_assignment`` run per assignment, and a SQLite file shared by parallel
    grading processes is one more thing to lock. Reading the notebook keeps the grader
    stateless, so shards can run anywhere.

Merge (:func:`merge`)
    * answer cells come from the student, matched by ``grade_id`` (the first one wins
      when a student duplicated a cell; flagged). A cell whose nbgrader metadata was
      stripped is matched by ``def <function>(`` (flagged);
    * test cells always come from the source: edited ones are restored, deleted ones
      re-inserted after the nearest graded cell before them, hidden tests included;
    * every other code cell comes from the student (they may define helpers there).
      Copies of test cells that lost their metadata are dropped (the source's run).

Execution (:mod:`autograder.isolation`, :mod:`autograder.notebook.slicing`)
    Every graded exercise is declared once, in ``helpers/exercises/<name>.py`` (its
    reference, visible and hidden cases, known mistakes, the earlier course functions it
    uses, the references it refuses), and every test cell is the one line
    ``check("<name>", <name>)`` (plus ``hidden=True`` in its hidden block).

    1. The *notebook run*: the merged notebook in a confined child of a pre-warmed
       worker, cell by cell: every answer and test cell, and of the other cells the
       statements those depend on (demonstrations that grading does not need, such as
       text generation or explorers, are skipped). A test cell passes iff it raised
       nothing and wrote nothing to stderr (nbgrader's rule). Hidden tests are not run
       here (step 2 judges them), so their source never enters the learner's process.
    2. The *authoritative verdict* for every exercise with a test cell: a separate
       confined child whose ``helpers`` is a student's (no exercise's reference, no
       case; the earlier course functions it may use are computed by the trusted
       worker) runs its answer cell and, from the other cells before its first test,
       the statements its function needs (slow top-level work of other answer cells is
       not run again), then calls the function on every case of the registry
       (visible and hidden; a *scenario* case runs a small script around it: two calls
       sharing a KV cache, the same seed twice) and returns only the outputs. This
       process (trusted) compares them with ``helpers.course.judge.compare``. When a failing
       case called the learner's own earlier functions, the exercise is judged again
       with the course's (a mistake in the learner's ``layer_norm`` costs points in
       ``layer_norm``'s test only, not again in ``transformer_block``'s).
    The points of every test cell come from step 2, never from step 1: a correct answer
    keeps its points even if the notebook run failed (a warning on stderr, a crash or a
    time-out in an unrelated cell), and a test that passed in the notebook but fails its
    authoritative run on the same visible cases scores 0 and is flagged "tampering
    suspected". Step 1 is the learner's feedback (what their notebook does) and the
    witness for those flags.

Budget per notebook: the notebook run has ``notebook_timeout`` seconds (default 120,
``--timeout``) of its child's own time (the wall clock less the time it waited for a
CPU: :mod:`autograder.isolation.clock`) and each cell ``cell_timeout`` (default 30,
``--cell-timeout``) of CPU time; each exercise's isolated runs have the same, each call
of the learner's function at most ``cell_timeout`` of CPU. A busy machine spends none
of it; a run the wall-clock backstop stops before it spent its own time is run again,
then raises ``WorkerError`` (a ``grader_error``, never a grade). A notebook run that
runs out of time costs nothing by itself (its status says ``timeout``; the verdicts
decide the points); an exercise whose calls run out of time loses that exercise's
points (judged again with the course's earlier functions when it called the learner's).
A child that sends nothing for ``cell_timeout`` plus 5 s of its own time (its timer
blocked, a sleep, or a spin outside any cell or call) is stopped by the worker then,
not at the end of the budget. Every request to the worker carries an id
that its reply repeats: a late reply is dropped, never taken for the next request's.

Feedback never contains the source of hidden tests: tracebacks name test cells without
quoting them, and captured output is scrubbed of every hidden-test line.
"""


from autograder.engine.grading import (FEEDBACK_CHARS, MESSAGE_CHARS, WALL_FACTOR,  # noqa: F401
                                       CellResult, NotebookResult, grade_notebook)
from autograder.engine.resources import (PLAIN_DATA_CODEC, _resources,  # noqa: F401
                                         check_safe_to_grade, close_worker, from_plain_data,
                                         plain_data)
# What the grading command needs of the boundary, through this package only.
from autograder.isolation.confine import UnsafeToGrade  # noqa: F401
# The one builder of a student's helpers (the bundle's and every child's), and the
# runtime of its stubs.
from autograder.isolation import course_calls, student_helpers  # noqa: F401
