"""The exercise framework: what an exercise is, how it is declared, checked and judged.

From the ground up: :mod:`~helpers.course.draw` (every random input),
:mod:`~helpers.course.contract` (an exercise's arguments and result as data),
:mod:`~helpers.course.registry` (which exercises there are, by notebook),
:mod:`~helpers.course.exercise` (the exercise, its cases and mistakes),
:mod:`~helpers.course.edge` (the reference as learners call it, checked),
:mod:`~helpers.course.judge` (is an output right, and why not) and
:mod:`~helpers.course.candidates` (which known mistake, told apart by the other cases), with
:mod:`~helpers.course.text` (how values are written), :mod:`~helpers.course.render`
(the exercise's cell in the notebook) and :mod:`~helpers.course.scenarios` (scripts that
run around a learner's function). The exercises themselves are ``helpers/exercises/``.
"""

from helpers.course.contract import Arg, Contract, checked_call, contract_problems, dtype_problem
from helpers.course.draw import draw_cases, ids_below
from helpers.course.exercise import (ATOL, HIDDEN_SEED, RTOL, SEEDS_KEPT, VISIBLE_SEED, Case,
                                     Exercise, Mistake, case, quiet)
from helpers.course.registry import (NOTEBOOKS, PREPARE, answer_functions, decide, get,
                                     module_file, names, notebook_of, of_notebook, qualified,
                                     resolve)

__all__ = ["Arg", "Contract", "checked_call", "contract_problems", "dtype_problem", "draw_cases", "ids_below",
           "ATOL", "HIDDEN_SEED", "RTOL", "SEEDS_KEPT", "VISIBLE_SEED", "Case", "Exercise",
           "Mistake", "case", "quiet", "NOTEBOOKS", "PREPARE", "answer_functions", "decide",
           "get", "module_file", "names", "notebook_of", "of_notebook", "qualified", "resolve"]
