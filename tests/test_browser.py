"""The explorers render as live widgets in JupyterLab, driven in headless Chromium.

A JupyterLab from this environment serves a temporary copy of ``notebooks/`` on a free
loopback port with a token. For each student notebook with explorers (cells calling
:mod:`helpers.widgets`), and for one small synthetic explorer notebook that checks the
JupyterLab + ipywidgets stack itself, the test opens the notebook, runs "Run > Run All
Cells" from Lab's menu, waits for every cell, and checks that each explorer shows a widget
view (controls and picture, no "Error displaying widget"), and that moving a slider
redraws its picture through the kernel. A screenshot of each notebook is saved in
``$COURSE_BROWSER_ARTIFACTS`` (default: ``<tmp>/course-browser-test``) and its path printed.

Needs Debian's ``chromium`` (``/usr/bin/chromium``, or ``$CHROMIUM``) and the Python
package ``playwright`` (the ``test`` extra); Playwright never downloads a browser here.
Skips with a message when either is missing; under CI (``CI=true``), where ``.ci/run``
installs both, a missing one fails instead, so that CI never passes without running it.

In the copies, the nbgrader cells (answers, tests) get the ``raises-exception`` tag, so
that "Run All" goes on past the tests of unanswered exercises, which fail by design.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder import NOTEBOOKS_DIR, REPO_ROOT
from notebook_helpers import explorer_cells, is_answer, is_test, nb_id, nbgrader, read, student_notebooks

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("COURSE_BROWSER_ARTIFACTS")
                 or Path(tempfile.gettempdir()) / "course-browser-test")
#: Notebook paths are relative to the server's root (a copy of notebooks/).
EXPLORER_NOTEBOOKS = [p for p in student_notebooks() if explorer_cells(read(p))]
SYNTHETIC = "99_browser_check/99_browser_check.ipynb"
WIDGET_ERRORS = ("Error displaying widget", "Model not found", "Failed to load model class")

SERVER_START_TIMEOUT = 90
RUN_ALL_TIMEOUT = 120  # s for every cell of a notebook to finish in the browser


def _requirements_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]' with constraints.txt)"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set $CHROMIUM)"
    return None


# ---------------------------------------------------------------------------------------
# The served copy and the server
# ---------------------------------------------------------------------------------------


def tag_nbgrader_cells(path: Path) -> None:
    """Tag the copy's answer and test cells ``raises-exception`` (Run All continues)."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if is_answer(cell) or is_test(cell) or nbgrader(cell).get("grade"):
            tags = cell.metadata.setdefault("tags", [])
            if "raises-exception" not in tags:
                tags.append("raises-exception")
    nbformat.write(nb, str(path))


SYNTHETIC_CELLS = [
    "from helpers import widgets\nfrom helpers.plots import new_figure",
    "def draw(level, side):\n"
    "    fig, ax = new_figure(3, 2)\n"
    "    ax.bar([0, 1], [level, 1 - level], color='#4c72b0' if side == 'left' else '#dd8452')\n"
    "    ax.set_ylim(0, 1)\n"
    "    return fig",
    "widgets.Explorer(draw, {'level': widgets.Slider('level', 0.0, 1.0, 0.1, 0.3),\n"
    "                        'side': widgets.Choice('side', ['left', 'right'], 'left')},\n"
    "                 title='browser check')",
]


def write_synthetic(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in SYNTHETIC_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    target = root / SYNTHETIC
    target.parent.mkdir(parents=True)
    nbformat.write(nb, str(target))


def lab_settings(settings_dir: Path) -> None:
    """Fresh user settings: every cell in the DOM, no news or update checks."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
            {"fetchNews": "false", "checkForUpdates": False},
    }
    for name, value in files.items():
        path = settings_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


class LabServer:
    def __init__(self, workdir: Path):
        self.root = workdir / "root"
        shutil.copytree(NOTEBOOKS_DIR, self.root,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        for path in self.root.glob("*/*.ipynb"):
            tag_nbgrader_cells(path)
        write_synthetic(self.root)
        lab_settings(workdir / "settings")
        self.port, self.token = free_port(), "browser-test-" + os.urandom(8).hex()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p),
            "MPLBACKEND": "Agg",
            "JUPYTER_CONFIG_DIR": str(workdir / "config"),
            "JUPYTER_RUNTIME_DIR": str(workdir / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(workdir / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(workdir / "workspaces"),
            "BROWSER": "true",
        })
        self.log = (workdir / "lab.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={self.port}",
             "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1", "--allow-root",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
             "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=self.root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.log_path = workdir / "lab.log"

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                http_get(self.api("status"))
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start on port {self.port}:\n"
                                       + self.log_tail())
                time.sleep(0.3)

    def api(self, what: str) -> str:
        return f"{self.base}/api/{what}?token={self.token}"

    def kernel_state(self, notebook: str) -> str | None:
        for session in json.loads(http_get(self.api("sessions"))):
            if session.get("path") == notebook:
                return session["kernel"]["execution_state"]
        return None

    def log_tail(self, n: int = 4000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)       # the server shuts its kernels down
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def lab():
    missing = _requirements_missing()
    if missing and os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {missing}: .ci/run installs Chromium and make test playwright")
    if missing:
        pytest.skip(f"browser test skipped: {missing}")
    with tempfile.TemporaryDirectory(prefix="course-lab-") as tmp:
        server = LabServer(Path(tmp))
        try:
            server.wait_ready()
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def browser_context(lab):
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="course-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 1400}, ignore_https_errors=False,
        )
        try:
            yield context
        finally:
            context.close()


# ---------------------------------------------------------------------------------------
# Driving JupyterLab
# ---------------------------------------------------------------------------------------


def wait_until(predicate, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def run_all_cells(page, lab: LabServer, notebook: str, n_code_cells: int) -> None:
    page.goto(f"{lab.base}/lab/tree/{notebook}?token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=60_000)
    wait_until(lambda: lab.kernel_state(notebook) == "idle", 60, f"the kernel of {notebook} to start")
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

    def all_done() -> bool:
        prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").all_inner_texts()
        done = [p for p in prompts if p.strip().startswith("[") and p.strip()[1:2].isdigit()]
        return len(done) == n_code_cells and lab.kernel_state(notebook) == "idle"

    wait_until(all_done, RUN_ALL_TIMEOUT, f"every cell of {notebook} to run")


def check_explorers(page, notebook: str, indices: list[int], wait_ms: int = 20_000) -> list[str]:
    """What is wrong with the explorers in cells ``indices`` of the open notebook."""
    problems = []
    cells = page.locator(".jp-Notebook .jp-Cell")
    for index in indices:
        out = cells.nth(index).locator(".jp-OutputArea")
        views = out.locator(".jupyter-widgets")
        try:
            views.first.wait_for(timeout=wait_ms)
        except Exception:
            text = out.inner_text()[:300]
            problems.append(f"cell {index}: no widget view rendered (output text: {text!r})")
            continue
        controls = out.locator(".widget-slider, .widget-hslider, .widget-dropdown, .widget-toggle-buttons")
        images = out.locator(".widget-image, img.widget-image, .jupyter-widgets img")
        if controls.count() == 0:
            problems.append(f"cell {index}: widget view has no controls")
        if images.count() == 0:
            problems.append(f"cell {index}: widget view has no picture")
        else:
            box = images.first.bounding_box()
            if not box or box["width"] < 50 or box["height"] < 50:
                problems.append(f"cell {index}: the explorer's picture is not visible ({box})")
        problems += [f"cell {index}: {e!r} shown" for e in WIDGET_ERRORS if e in out.inner_text()]
    text = page.locator(".jp-Notebook").inner_text()
    problems += [f"{notebook}: {e!r} shown" for e in WIDGET_ERRORS if e in text]
    return problems


def slider_redraws(page, index: int) -> str | None:
    """Press the right arrow on the cell's first slider; None when the picture changed."""
    out = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")
    handle = out.locator(".widget-slider .noUi-handle, .widget-hslider .noUi-handle")
    if handle.count() == 0:
        return None  # no slider in this explorer (dropdowns only)
    image = out.locator(".jupyter-widgets img").first
    before = image.get_attribute("src")
    handle.first.focus()
    for _ in range(3):
        handle.first.press("ArrowRight")
    try:
        wait_until(lambda: image.get_attribute("src") != before, 20, "the picture to redraw")
    except AssertionError:
        return f"cell {index}: moving the slider did not redraw the picture"
    return None


def screenshot(page, notebook: str, first_index: int | None) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if first_index is not None:
        page.locator(".jp-Notebook .jp-Cell").nth(first_index).scroll_into_view_if_needed()
    path = ARTIFACTS / (notebook.replace("/", "__").removesuffix(".ipynb") + ".png")
    page.screenshot(path=str(path))
    return path


def check_notebook(lab, browser_context, notebook: str, nb, capsys, extra_check=None) -> None:
    indices = [index for index, _, _ in explorer_cells(nb)]
    n_code = sum(cell.cell_type == "code" for cell in nb.cells)
    page = browser_context.new_page()
    console_errors: list[str] = []
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    try:
        start = time.monotonic()
        run_all_cells(page, lab, notebook, n_code)
        problems = check_explorers(page, notebook, indices)
        if not problems:
            problems += [p for p in (slider_redraws(page, i) for i in indices) if p]
        shot = screenshot(page, notebook, indices[0] if indices else None)
        if extra_check is not None:
            extra_check(page)
        seconds = time.monotonic() - start
        with capsys.disabled():
            print(f"\n  {notebook}: {len(indices)} explorer(s) checked in {seconds:.1f} s; "
                  f"screenshot {shot}")
        widget_js = [e for e in console_errors if "widget" in e.lower()]
        problems += [f"page error: {e[:300]}" for e in widget_js]
        assert not problems, (f"{notebook} in JupyterLab (screenshot {shot}):\n" + "\n".join(problems))
    finally:
        page.close()


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_explorer_renders_in_lab_synthetic(lab, browser_context, capsys):
    """The JupyterLab + ipywidgets stack of this environment shows helpers.widgets' explorers."""
    nb = nbformat.read(str(lab.root / SYNTHETIC), as_version=4)
    assert [i for i, _, _ in explorer_cells(nb)] == [2]

    def the_check_can_fail(page):
        # cell 1 defines a function and shows nothing: reported as an explorer without view
        problems = check_explorers(page, SYNTHETIC, [1], wait_ms=1_000)
        assert problems and "no widget view rendered" in problems[0], problems

    check_notebook(lab, browser_context, SYNTHETIC, nb, capsys, extra_check=the_check_can_fail)


@pytest.mark.slow
@pytest.mark.parametrize("path", EXPLORER_NOTEBOOKS, ids=nb_id)
def test_course_explorers_render_in_lab(lab, browser_context, path: Path, capsys):
    notebook = str(path.relative_to(NOTEBOOKS_DIR))
    check_notebook(lab, browser_context, notebook, read(path), capsys)
