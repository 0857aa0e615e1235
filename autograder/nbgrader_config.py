"""nbgrader configuration for this course (read by JupyterLab's nbgrader extensions).

`make lab` puts this folder on JUPYTER_CONFIG_PATH, so the Formgrader and "Validate"
see the course: solutions/ is nbgrader's source folder and notebooks/ its release folder.
The grading command line (`python -m autograder`) does not read this file: it passes every
setting explicitly and keeps its gradebooks in temporary folders (see autograder/release/notebooks.py).
"""

from pathlib import Path

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

ROOT = Path(__file__).resolve().parent.parent
c.CourseDirectory.course_id = "transformers"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "autograder/work/submitted"
c.CourseDirectory.autograded_directory = "autograder/work/autograded"
c.CourseDirectory.feedback_directory = "autograder/work/feedback"
c.CourseDirectory.db_url = f"sqlite:///{ROOT / 'autograder' / 'work' / 'gradebook.db'}"
# Feedback must never show hidden tests (nbgrader-notes.md).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# No nbgrader exchange (the course goes out and comes back through the LMS): formgrader
# logged "Unwritable directory" on every page and showed a warning
# (autograder/results/nbgrader_exchange.py). To use nbgrader's exchange with this lab
# (as on the JupyterHub of docs/jupyterhub/), remove the next two statements.
from autograder.results import nbgrader_exchange  # noqa: E402

nbgrader_exchange.configure(c)
# formgrader's grading page typesets LaTeX with the MathJax this server serves
# (jupyter-server-mathjax) instead of a CDN's; nbgrader's own templates stay second.
from nbgrader.server_extensions.formgrader import handlers as _formgrader  # noqa: E402

c.HTMLExporter.extra_template_basedirs = [str(ROOT / "autograder" / "nbgrader_templates"),
                                          _formgrader.template_path]
