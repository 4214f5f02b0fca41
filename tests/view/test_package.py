"""The templates and stylesheets ship inside the package, so `stay view` works from a
plain (non-editable) install."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from stay._version import DISTRIBUTION
from tests.conftest import ROOT, SAMPLE

TEMPLATES = ("base.html.j2", "macros.html.j2", "index.html.j2", "lesson.html.j2", "glossary.html.j2",
             "capstone.html.j2", "outcomes.html.j2", "status.html.j2", "report_base.html.j2", "bars.html.j2",
             "compare.html.j2", "run.html.j2", "refused.html.j2", "library.html.j2",
             "review.html.j2")
STATIC = ("style.css", "progress.js", "quiz.js", "scorm.js")


def test_the_package_data_is_found_through_importlib_resources() -> None:
    package = resources.files("stay.view")
    for name in TEMPLATES:
        assert package.joinpath("templates", name).is_file(), name
    for name in STATIC:
        assert package.joinpath("static", name).read_text(encoding="utf-8").strip(), name
    shipped = {entry.name for entry in package.joinpath("templates").iterdir()}
    assert shipped == set(TEMPLATES)  # a template added without being listed here fails this test


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("hatchling") is None,
                    reason="hatchling is not installed (pip install -e '.[dev]'): cannot build a wheel offline")
def test_stay_view_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(ROOT)], env=env, capture_output=True, text=True,
                           check=False, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"stay/view/templates/{t}" for t in TEMPLATES} | {f"stay/view/static/{s}" for s in STATIC} <= names
    # the wheel unpacked is what a non-editable install puts in site-packages; with it
    # first on the path, and not this checkout, stay imports from it
    site = tmp_path / "site-packages"
    zipfile.ZipFile(wheel).extractall(site)
    env["PYTHONPATH"] = str(site)
    where = subprocess.run([sys.executable, "-c", "import stay.view; print(stay.view.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(site)), where.stdout
    done = subprocess.run([sys.executable, "-m", "stay.cli", "view", SAMPLE.name, "--courses-dir",
                           str(SAMPLE.parent), "--out", str(tmp_path / "site")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "11 pages" in done.stdout
    assert b"What a URL names" in (tmp_path / "site" / "m01-l01.html").read_bytes()
