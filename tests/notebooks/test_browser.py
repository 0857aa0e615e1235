"""The explorers render as live widgets in JupyterLab, driven in headless Chromium.

A JupyterLab from this environment serves a temporary copy of ``notebooks/`` on a free
loopback port with a token. For student notebooks with explorers (cells calling
:mod:`helpers.widgets`: by default the softmax notebook and the one with the most
explorers; ``COURSE_BROWSER_ALL=1`` for all), the test opens the notebook, runs
"Run > Run All Cells" from Lab's menu, waits for every cell, and checks that each explorer
shows a widget view (controls and picture, no "Error displaying widget" in any output),
and that moving a slider (or picking another menu option) redraws its picture through
the kernel. A screenshot of each notebook is saved in
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
import re
import shutil
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
from notebook_helpers import (CHROMIUM, CHROMIUM_ARGS, browser_requirements_missing,
                              stop_process_group,
                              explorer_cells, is_answer, is_test, nb_id, nbgrader, read,
                              student_notebooks, wait_until)

pytestmark = pytest.mark.browser

#: Where screenshots go; by default the test's own temporary folder (conftest gives every
#: test its own TMPDIR), read when the screenshot is taken.
ARTIFACTS = os.environ.get("COURSE_BROWSER_ARTIFACTS")
#: Notebook paths are relative to the server's root (a copy of notebooks/).
ALL_EXPLORER_NOTEBOOKS = [p for p in student_notebooks() if explorer_cells(read(p))]


def chosen_notebooks() -> list[Path]:
    """By default the softmax notebook and the one with the most explorers (about 15 s
    each); ``COURSE_BROWSER_ALL=1`` checks every notebook with explorers."""
    if os.environ.get("COURSE_BROWSER_ALL") == "1" or len(ALL_EXPLORER_NOTEBOOKS) <= 2:
        return ALL_EXPLORER_NOTEBOOKS
    chosen = [p for p in ALL_EXPLORER_NOTEBOOKS if "softmax" in p.name][:1]
    by_count = sorted(ALL_EXPLORER_NOTEBOOKS, key=lambda p: -len(explorer_cells(read(p))))
    chosen += [p for p in by_count if p not in chosen][:2 - len(chosen)]
    # and the first notebook that draws a diagram (issue 14), so that a screenshot shows one
    chosen += [p for p in ALL_EXPLORER_NOTEBOOKS if diagram_cells(read(p))][:1]
    return sorted(set(chosen))


def diagram_cells(nb) -> list[int]:
    """Indices of the code cells that draw a diagram (``plots.diagram_...(``)."""
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and "plots.diagram_" in c.source]


EXPLORER_NOTEBOOKS = chosen_notebooks()
WIDGET_ERRORS = ("Error displaying widget", "Model not found", "Failed to load model class")

SERVER_START_TIMEOUT = 90
RUN_ALL_TIMEOUT = 120  # s for every cell of a notebook to finish in the browser


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

    def shutdown_kernels(self) -> None:
        """End every session (and its kernel), so that notebooks do not pile up."""
        for session in json.loads(http_get(self.api("sessions"))):
            request = urllib.request.Request(self.api(f"sessions/{session['id']}"), method="DELETE")
            urllib.request.urlopen(request, timeout=10).close()

    def log_tail(self, n: int = 4000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            stop_process_group(self.proc, timeout=20)       # the server shuts its kernels down
        self.log.close()


@pytest.fixture(scope="module")
def lab():
    missing = browser_requirements_missing()
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


#: The notebook on show (Lab keeps other documents in hidden panels).
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def cells_of(page):
    return page.locator(f"{PANEL} .jp-Notebook .jp-Cell")


def run_all_cells(page, lab: LabServer, notebook: str, n_code_cells: int) -> None:
    # ?reset: start from an empty workspace (no notebook left open by an earlier test)
    page.goto(f"{lab.base}/lab/tree/{notebook}?reset&token={lab.token}")
    page.wait_for_selector(f"{PANEL} .jp-Notebook .jp-Cell", timeout=60_000)
    wait_until(lambda: lab.kernel_state(notebook) == "idle", 60, f"the kernel of {notebook} to start")
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

    def all_done() -> bool:
        prompts = page.locator(f"{PANEL} .jp-Notebook .jp-CodeCell .jp-InputPrompt").all_inner_texts()
        done = [p for p in prompts if p.strip().startswith("[") and p.strip()[1:2].isdigit()]
        return len(done) == n_code_cells and lab.kernel_state(notebook) == "idle"

    wait_until(all_done, RUN_ALL_TIMEOUT, f"every cell of {notebook} to run")


def check_explorers(page, notebook: str, indices: list[int], wait_ms: int = 20_000) -> list[str]:
    """What is wrong with the explorers in cells ``indices`` of the open notebook."""
    problems = []
    cells = cells_of(page)
    for index in indices:
        out = cells.nth(index).locator(".jp-OutputArea")
        views = out.locator(".jupyter-widgets")
        try:
            views.first.wait_for(timeout=wait_ms)
        except Exception:
            text = " ".join(out.all_inner_texts())[:300]
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
        problems += [f"cell {index}: {e!r} shown" for e in WIDGET_ERRORS if e in " ".join(out.all_inner_texts())]
    for index in range(cells.count()):        # any other output showing a widget error
        if index in indices:
            continue
        outputs = cells.nth(index).locator(".jp-OutputArea-output")
        text = "\n".join(outputs.all_inner_texts())
        for e in WIDGET_ERRORS:
            if e in text:
                at = text.index(e)
                problems.append(f"cell {index}: output shows {e!r}: "
                                f"...{text[max(0, at - 200):at + 100]!r}...")
    return problems


def control_redraws(page, index: int) -> str | None:
    """Move the explorer's first slider (arrow keys) or, without sliders, pick another
    option of its first menu; None when the picture changed (a round trip to the kernel)."""
    out = cells_of(page).nth(index).locator(".jp-OutputArea")
    image = out.locator(".jupyter-widgets img").first
    before = image.get_attribute("src")
    handle = out.locator(".widget-slider .noUi-handle, .widget-hslider .noUi-handle")
    menus = out.locator(".widget-dropdown select")
    if handle.count():
        what = "moving its slider"
        handle.first.focus()
        for _ in range(3):
            handle.first.press("ArrowRight")
    elif menus.count() and len(menus.first.locator("option").all()) > 1:
        what = "choosing another option"
        options = menus.first.locator("option").all()
        current = menus.first.input_value()
        other = next(o.get_attribute("value") for o in options if o.get_attribute("value") != current)
        menus.first.select_option(value=other)
    else:
        return f"cell {index}: the explorer has no slider and no menu with two options"
    try:
        wait_until(lambda: image.get_attribute("src") != before, 20, "the picture to redraw")
    except AssertionError:
        return f"cell {index}: {what} did not redraw the picture"
    return None


def screenshot(page, notebook: str, first_index: int | None, suffix: str = "") -> Path:
    folder = Path(ARTIFACTS or Path(tempfile.gettempdir()) / "course-browser-test")
    folder.mkdir(parents=True, exist_ok=True)
    if first_index is not None:
        cells_of(page).nth(first_index).scroll_into_view_if_needed()
    path = folder / (notebook.replace("/", "__").removesuffix(".ipynb") + suffix + ".png")
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
            problems += [p for p in (control_redraws(page, i) for i in indices) if p]
            # let the kernel finish the redraws, so the screenshot shows the final state
            wait_until(lambda: lab.kernel_state(notebook) == "idle", 60, "the redraws to finish")
            page.wait_for_timeout(500)
        shot = screenshot(page, notebook, indices[0] if indices else None)
        for index in diagram_cells(nb)[:1]:      # a diagram drawn from code shows as a PNG
            image = cells_of(page).nth(index).locator(".jp-OutputArea-output img")
            if image.count() == 0:
                problems.append(f"cell {index}: the diagram shows no picture")
            shot = screenshot(page, notebook, index, "__diagram")
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
        lab.shutdown_kernels()


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", EXPLORER_NOTEBOOKS, ids=nb_id)
def test_course_explorers_render_in_lab(lab, browser_context, path: Path, capsys):
    notebook = str(path.relative_to(NOTEBOOKS_DIR))
    nb = read(path)
    plain = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")

    def the_check_can_fail(page):
        # a markdown cell has no widget view: the check reports it
        problems = check_explorers(page, notebook, [plain], wait_ms=1_000)
        assert problems and "no widget view rendered" in problems[0], problems

    check_notebook(lab, browser_context, notebook, nb, capsys, extra_check=the_check_can_fail)
