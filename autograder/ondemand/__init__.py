"""Grading on submit: the course graded by the system that received the submission.

``service/`` is the JupyterHub service ``grader`` (``python -m autograder serve``): the
hub's students hand in, it stamps the receipt time, grades with the ``grade`` command
and shows each student their own page. ``gradescope`` builds the autograder zip of a
Gradescope programming assignment, whose ``run_autograder`` grades each submission with
the same engine and sandbox, taking its time and owner from Gradescope's metadata. Both
build on ``run`` (the grading of ``grade``), ``results`` (the late policy, the feedback)
and ``intake`` (matching a file to a course notebook), never on a download's file times.
"""
