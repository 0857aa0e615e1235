"""formgrader's grading page typesets LaTeX with the MathJax its own server serves
(``jupyter-server-mathjax``), never a CDN's: nbgrader's page calls nbconvert's
``mathjax`` macro with no URL, whose default is a CDN (issue 21, finding 11). Checked for
both formgrader configurations of the course, ``make lab``'s
(``autograder/nbgrader_config.py``) and ``gradebook push``'s course folder, by rendering
the page the way formgrader does (its template over nbconvert's, the configuration file
loaded on top); tests/autograder/results/test_gradebook.py fetches that script from a running server and
tests/autograder/results/test_browser_formgrader.py watches it typeset the page offline."""

from __future__ import annotations

import io
import re
import urllib.parse
from pathlib import Path

import jupyter_server_mathjax
import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbgrader.server_extensions.formgrader import handlers
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder import REPO_ROOT
from autograder.cli import main
from autograder.run import pool as grade
from fake_class import fake_engine, make_class, make_course

#: Where formgrader serves a submission (it redirects there): the page's relative URLs
#: are resolved against it.
PAGE = "http://127.0.0.1:8899/base/formgrader/submissions/0123abcd/"
STATIC = "http://127.0.0.1:8899/base/static/jupyter_server_mathjax/"


def formgrade_page(config_dir: Path) -> str:
    """The grading page of a one-cell notebook with math, as formgrader renders it with
    the ``nbgrader_config.py`` of ``config_dir`` (loaded after formgrader's own
    settings, as nbgrader does)."""
    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(config_dir)).load_config())
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        r"Scores are $QK^\top / \sqrt{d_k}$.")])
    resources = dict(assignment_id="a", notebook_id="n", submission_id="0123abcd", index=0,
                     total=1, base_url="/base", student="s", last_name=None, first_name=None,
                     notebook_path="p")
    html, _ = HTMLExporter(config=config).from_notebook_node(notebook, resources=resources)
    return html


def check_local_mathjax(html: str) -> None:
    scripts = re.findall(r'<script src="([^"]*)"', html)
    mathjax = [urllib.parse.urljoin(PAGE, s) for s in scripts if "mathjax" in s.lower()]
    assert len(mathjax) == 1, scripts
    url = urllib.parse.urlsplit(mathjax[0])
    assert mathjax[0].startswith(STATIC + "MathJax.js?"), mathjax
    # the files it asks for are in the package the server serves them from
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    assert (static / url.path.removeprefix(urllib.parse.urlsplit(STATIC).path)).is_file()
    for name in urllib.parse.parse_qs(url.query)["config"][0].split(","):
        assert (static / "config" / f"{name}.js").is_file(), name
    # MathJax is told to use the fonts that package has (it lacks the TeX ones)
    assert '"STIX-Web"' in html and (static / "fonts" / "HTML-CSS" / "STIX-Web").is_dir()
    assert "cdnjs" not in html and "cdn.jsdelivr" not in html


def test_make_labs_formgrader_serves_mathjax_itself():
    check_local_mathjax(formgrade_page(REPO_ROOT / "autograder"))


def test_a_pushed_gradebooks_formgrader_serves_mathjax_itself(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "good"}})
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    assert main(["gradebook", "push", str(out), "--solutions", str(solutions)]) == 0
    check_local_mathjax(formgrade_page(out / "nbgrader"))


def test_without_the_course_configuration_the_page_asks_a_cdn(tmp_path):
    """The check above can fail: nbgrader's page as it comes asks a CDN."""
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    html = formgrade_page(tmp_path)
    with pytest.raises(AssertionError):
        check_local_mathjax(html)
    assert "cdnjs.cloudflare.com" in html
