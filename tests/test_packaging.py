"""stay behaves like a Python package: ``python -m stay`` is the program, the wheel is
typed (PEP 561) and licensed, the metadata says only what is true, and the version is
written once."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from trove_classifiers import classifiers as KNOWN_CLASSIFIERS

import stay
from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BRIEF = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


def _run(module: str, *args: str, cwd: Path) -> tuple[int, str, str]:
    environment = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    environment["PYTHONPATH"] = str(ROOT)  # this checkout, not the installed one
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=120, check=False)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.sweep
@pytest.mark.parametrize("args", [
    ["--version"],
    ["no-such-command"],  # a usage error: exit 2
    ["status", "no-such-course", "--courses-dir", "courses"],  # a refusal naming the course
    ["build", str(BRIEF), "--courses-dir", "courses"],  # stops at the design gate
])
def test_python_m_stay_is_the_stay_program(tmp_path: Path, args: list[str]) -> None:
    """Same exit code, same output, same files as ``python -m stay.cli`` (what the ``stay``
    script runs), each in a directory of its own."""
    runs = {}
    for module in ("stay", "stay.cli"):
        cwd = tmp_path / module
        cwd.mkdir()
        code, out, err = _run(module, *args, cwd=cwd)
        # the same run but for where it ran and how long it took
        runs[module] = tuple(re.sub(r"\d+\.\d+ s\b", "N s", text.replace(str(cwd), "."))
                             for text in (str(code), out, err))
    assert runs["stay"] == runs["stay.cli"], runs
    assert "Traceback" not in runs["stay"][2]
    made = [sorted(re.sub(r"[0-9a-f]{32}", "TRACE-ID", p.relative_to(tmp_path / m).as_posix())  # a run's own id
                   for p in (tmp_path / m).rglob("*")) for m in runs]
    assert made[0] == made[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel hatchling builds from this checkout (offline: the build backend is installed)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)], cwd=ROOT,
                   check=True, capture_output=True, timeout=300)
    (built,) = out.glob("*.whl")
    return built


def _metadata(wheel: Path) -> tuple[list[str], dict[str, list[str]]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        message = HeaderParser().parsestr(archive.read(meta).decode())
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return names, fields


def test_the_wheel_is_typed_runnable_and_licensed(wheel: Path) -> None:
    names, fields = _metadata(wheel)
    assert "stay/py.typed" in names
    assert "stay/__main__.py" in names
    (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(license_file) == (ROOT / "LICENSE").read_bytes()
    assert fields["License-Expression"] == ["MIT"]
    assert fields["Version"] == [stay.__version__]


@pytest.mark.slow
def test_mypy_checks_user_code_against_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    """Installed (unpacked onto the path, outside the checkout), stay is a typed package:
    mypy --strict reads its annotations, so a wrong use of ``build_course`` is an error.
    Without py.typed mypy says the module is missing its marker and treats stay as Any."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    user = tmp_path / "user"
    user.mkdir()
    (user / "use.py").write_text("import stay\n\nwrong: int = stay.build_course\n")
    environment = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
                           "use.py"], cwd=user, env=environment, capture_output=True, text=True, timeout=600,
                          check=False)
    assert "py.typed" not in done.stdout, done.stdout
    assert re.search(r"use\.py:3: error: Incompatible types in assignment .*build_course", done.stdout), done.stdout


def test_the_license_and_classifiers_say_only_what_is_true(wheel: Path) -> None:
    project = PYPROJECT["project"]
    text = (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT" and text.startswith("MIT License")
    assert "Copyright (c) 2026 the stay maintainers" in text
    assert project["license-files"] == ["LICENSE"]
    _, fields = _metadata(wheel)
    classifiers = fields["Classifier"]
    assert classifiers == sorted(project["classifiers"])
    assert set(classifiers) <= KNOWN_CLASSIFIERS, set(classifiers) - KNOWN_CLASSIFIERS
    assert "Typing :: Typed" in classifiers
    # a license classifier beside the expression is what PEP 639 deprecates
    assert not [c for c in classifiers if c.startswith("License ::")]
    # every Python version named is one requires-python allows
    supported = SpecifierSet(project["requires-python"])
    versions = [c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert versions and all(v in supported for v in versions)
    # POSIX only: stay/_lock.py takes an fcntl lock, which Windows has not
    assert [c for c in classifiers if c.startswith("Operating System ::")] == ["Operating System :: POSIX :: Linux"]
    assert fields["Author"] == [author["name"] for author in project["authors"]]
    assert fields["Keywords"] == [",".join(sorted(project["keywords"]))]


def test_the_version_is_written_once() -> None:
    """pyproject reads it from stay/_version.py; no other tracked file spells it."""
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    source = PYPROJECT["tool"]["hatch"]["version"]["path"]
    assert (ROOT / source).read_text().count(f'"{stay.__version__}"') == 1
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    spelled = []
    for name in tracked.decode().split("\0"):
        path = ROOT / name
        if name == "package-lock.json":  # npm's record of the test packages: theirs are the versions it spells
            continue
        if name and path.is_file() and stay.__version__.encode() in path.read_bytes():
            spelled.append(name)
    assert spelled == [source]


def test_the_distribution_is_named_once_and_every_install_hint_uses_it(wheel: Path) -> None:
    """``stay`` on PyPI is an unrelated package: stay is installed as DISTRIBUTION, which
    pyproject's name and the wheel's metadata spell, and no install instruction or hint, in
    the docs or in what stay prints, names ``stay`` itself (``pip install 'stay[otel]'`` once
    resolved to that other package and warned that it had no such extra)."""
    from stay._version import DISTRIBUTION

    assert PYPROJECT["project"]["name"] == DISTRIBUTION
    _, fields = _metadata(wheel)
    assert fields["Name"] == [DISTRIBUTION]
    assert wheel.name.startswith(DISTRIBUTION.replace("-", "_") + "-")
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "stay").rglob("*.py")),
             ROOT / ".ci" / "run", *sorted((ROOT / "tools").glob("*.py"))]
    wrong = re.compile(r"pip install\s+(?:-U\s+)?['\"]?stay(?:\[|['\"\s]|$)|`stay\[")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in texts
             for number, line in enumerate(path.read_text().splitlines(), 1) if wrong.search(line)]
    assert not found, found


def test_the_wheel_carries_the_example_briefs(wheel: Path) -> None:
    """``stay init`` and ``stay new --example`` work from an install: the wheel holds
    examples/briefs/ (the one copy) as stay/_examples, byte for byte, and nothing else there."""
    from stay._init import example_names

    briefs = ROOT / "examples" / "briefs"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n.removeprefix("stay/_examples/"): archive.read(n) for n in archive.namelist()
                   if n.startswith("stay/_examples/")}
    assert shipped == {p.name: p.read_bytes() for p in briefs.glob("*.yaml")}
    assert sorted(Path(name).stem for name in shipped) == example_names()
