"""The JupyterHub service ``grader``: grade a student's notebook when it is handed in.

A managed JupyterHub service (``docs/jupyterhub/jupyterhub_config.py``) started as
``python -m autograder serve``. It takes a submission from nbgrader's exchange (the
course's ``inbound`` folder, watched) or from the upload form at ``/services/grader/``,
stamps its own receipt time (never the file's), queues it (one worker per core, a
per-student rate limit, a size cap) and grades it with ``python -m autograder grade``
itself, into the course's OUT folder: ``report``, ``export``, ``feedback-package`` and
``gradebook`` read the service's records as they read ``grade``'s.

* :mod:`.settings` the service's settings (one frozen dataclass);
* :mod:`.intake` receipt, rate limit, size cap, the submissions folder;
* :mod:`.jobs` how one job runs (locally, on Slurm with ``sbatch``, as a Kubernetes Job)
  and how its records join OUT;
* :mod:`.queue` the workers;
* :mod:`.pages` what a student sees (visible cases until the instructor releases);
* :mod:`.web` the tornado application behind HubOAuth; :mod:`.app` the command.
"""
