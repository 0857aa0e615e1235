"""Grading on submit: the course graded by the system that received the submission.

``gradescope`` builds the autograder zip of Gradescope's "Autograder" assignment type,
whose ``run_autograder`` grades each submission with this grader's own engine and sandbox
the moment it arrives, and takes the submission's time and owner from Gradescope's
metadata, never from a download. It builds on ``run`` (the same grading as ``python -m
autograder grade``), ``results`` (the late policy, the feedback text) and ``intake``
(matching a file to a course notebook).
"""
