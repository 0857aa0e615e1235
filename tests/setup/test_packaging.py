"""pyproject.toml and environment.yml pin the same packages to the same versions."""

from __future__ import annotations

import re
import tomllib

from autograder import REPO_ROOT


def pyproject_pins() -> dict[str, str]:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    reqs = list(data["project"]["dependencies"])
    for extra in data["project"].get("optional-dependencies", {}).values():
        reqs += extra
    pins = {}
    for req in reqs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)", req.strip())
        assert m, f"pyproject.toml: {req!r} is not pinned with =="
        pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def environment_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO_ROOT / "environment.yml").read_text().splitlines():
        m = (re.fullmatch(r"\s*-\s*([A-Za-z0-9_.-]+)=([^=\s]+)\s*", line)
             or re.fullmatch(r"\s*-\s*([A-Za-z0-9_.-]+)==([^=\s]+)\s*", line))  # pip: section
        if m and m.group(1) != "python":
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def test_environment_yml_matches_pyproject():
    assert pyproject_pins() == environment_pins()


def test_constraints_agree_with_pins():
    lines = (REPO_ROOT / "constraints.txt").read_text().splitlines()
    locked = {}
    for line in lines:
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            locked[name.strip().lower().replace("_", "-")] = version.strip()
    for name, version in pyproject_pins().items():
        assert locked.get(name) == version, f"constraints.txt has {name}=={locked.get(name)}, pyproject {version}"


def test_python_requirement():
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert data["project"]["requires-python"] == ">=3.11"


def test_every_data_file_of_the_packages_ships_in_a_wheel():
    """A file the packages read at run time (``helpers/data``: the trained model, the
    training texts, the contracts' edge table) matches a package-data pattern of
    pyproject.toml, so a non-editable install holds it too; and the student bundle's
    pyproject (autograder/release/bundle.py) ships the same kinds."""
    import fnmatch
    import subprocess

    from autograder.release import bundle

    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]
    tracked = subprocess.run(["git", "ls-files", "helpers/data", "autograder"], cwd=REPO_ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    for rel in tracked:
        if rel.endswith((".py", "README.md")) and rel.startswith("autograder"):
            continue
        if rel.endswith(".py"):
            continue
        package = rel.rsplit("/", 1)[0].replace("/", ".")
        owner = next((p for p in patterns if package == p or package.startswith(p + ".")),
                     None)
        assert owner is not None, f"{rel}: no package-data entry covers {package}"
        inside = rel[len(owner.replace(".", "/")) + 1:]
        assert any(fnmatch.fnmatch(inside, pat) for pat in patterns[owner]), rel
    kinds = {pat for pat in patterns["helpers.data"]}
    assert all(f'"{k}"' in bundle._PYPROJECT for k in kinds), kinds
