"""Grading on submit: the JupyterHub service (service/) and the Gradescope zip."""
