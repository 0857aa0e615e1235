"""The security boundary of the grader, all in this folder (see README.md here and
``docs/threat_model.md``):

* :mod:`~autograder.isolation.confine`: the confined child (namespaces or the fallback
  mode, rlimits, privileges dropped);
* :mod:`~autograder.isolation.executor`: the pre-warmed worker that forks one confined
  child per job and the jobs themselves (the notebook run, an exercise's calls);
* :mod:`~autograder.isolation.answers`: in the worker, the course functions a child may
  use, computed on the plain data the child sends;
* :mod:`~autograder.isolation.client`: the grader's side: starts the worker, sends it
  jobs, reads the replies defensively;
* :mod:`~autograder.isolation.wire`: the plain-data format every value crosses in;
* :mod:`~autograder.isolation.helpers_copy`: the copies of ``helpers`` a child imports
  (an exercise's answer stubbed out).

Only the :mod:`autograder.engine` package uses this package.
"""
