"""Backends as plug-ins (issue 24): the ``stay.backends`` entry points, the public
``stay.Backend`` protocol, prices and the cap through the backend, and the screen rule.

A plug-in here is a real distribution: a ``*.dist-info`` directory with its
``entry_points.txt`` on ``sys.path`` (what an install leaves), found by
``importlib.metadata`` as any installed package is; the last test installs one with
``pip install -e`` into a throwaway venv and builds a course through it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

import stay
from stay.errors import UsageError
from stay.models import FEATURES, PRICES, Backend, backend_from, backends, make_backend
from stay.pipeline import build_course
from stay.settings import BACKEND_GROUP, BUILTIN_BACKENDS, Settings
from tests.conftest import ROOT
from tests.models.helpers import HTTP, KEY, quiet
from tests.parity.harness import reference_report

SAMPLE_HEADING = "## A minimal one"
"""The section of docs/plugins.md whose code block is the plug-in these tests install."""


def _doc_sample() -> str:
    """The Python block under ``SAMPLE_HEADING`` in docs/plugins.md: the page's sample is
    the plug-in installed here, so it cannot drift from what works."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split(f"\n{SAMPLE_HEADING}\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


ECHO = _doc_sample()
SCREENS = 'features = frozenset({"screen"})'


def echo(features: str) -> str:
    """The documented plug-in, declaring ``features`` (a set literal's body) instead."""
    assert ECHO.count(SCREENS) == 1, f"docs/plugins.md's sample no longer declares {SCREENS}"
    return ECHO.replace(SCREENS, f"features = frozenset({features})")


def _plugin(root: Path, dist: str, modules: dict[str, str], points: dict[str, str]) -> Path:
    """A distribution as an install leaves it: its modules, and its dist-info with its
    ``stay.backends`` entry points."""
    root.mkdir(parents=True, exist_ok=True)
    for module, text in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(text))
    info = root / f"{dist.replace('-', '_')}-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text(f"[{BACKEND_GROUP}]\n" + "".join(f"{n} = {v}\n" for n, v in points.items()))
    return root


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Install a plug-in distribution for this test alone (its modules are forgotten after)."""
    def install(dist: str, modules: dict[str, str], points: dict[str, str]) -> None:
        monkeypatch.syspath_prepend(str(_plugin(tmp_path / dist, dist, modules, points)))
        for module in modules:
            monkeypatch.delitem(sys.modules, module, raising=False)
    return install


def test_pyproject_declares_exactly_stays_own_backends() -> None:
    """The built-ins are declared once for a checkout (stay.settings.BUILTIN_BACKENDS) and
    once for an install: the two are held equal."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"][BACKEND_GROUP] == dict(BUILTIN_BACKENDS)


def test_the_built_ins_are_found_even_where_the_installed_metadata_lacks_them() -> None:
    assert set(BUILTIN_BACKENDS) <= set(backends())


@pytest.mark.parametrize("dist", ["stay", "stay-course", "Stay_Course"])
def test_only_stays_own_distribution_declares_the_built_ins(installed: Callable[..., None], dist: str) -> None:
    """stay is installed as DISTRIBUTION (pyproject's name): its entry points for the built-ins
    are stay's own, with its version; PyPI's unrelated ``stay`` declaring the same names is not
    taken for stay (the table's built-in stands), as no other package's is."""
    from stay._version import DISTRIBUTION
    from stay.models import distribution

    def built_ins() -> dict[str, tuple[str, str | None]]:
        return {name: distribution(point) for name, point in backends().items() if name in BUILTIN_BACKENDS}

    before = built_ins()  # stay's own install (its version), or the table alone in a bare checkout
    assert {dist_name for dist_name, _ in before.values()} == {DISTRIBUTION}
    installed(dist, {}, dict(BUILTIN_BACKENDS))
    ours = dist.lower().replace("_", "-") == DISTRIBUTION
    # the fake, prepended to the path, is found first: taken when it is stay's own name, passed over when not
    assert built_ins() == ({name: (dist, "1.2") for name in BUILTIN_BACKENDS} if ours else before)


def test_offline_and_anthropic_are_backends_made_by_their_factories() -> None:
    offline = make_backend("offline", Settings())
    claude = make_backend("anthropic", Settings(api_key=KEY))
    assert isinstance(offline, Backend) and isinstance(claude, Backend) and isinstance(offline, stay.Backend)
    assert claude.prices is PRICES and claude.features <= FEATURES and "screen" in claude.features
    assert "screen" in offline.features and offline.prices and all(
        p.rates.input == p.rates.output == 0 for p in offline.prices.values())  # its rule: free
    assert backend_from(Settings(backend="anthropic", api_key=KEY)).name == "anthropic"


def test_an_unknown_backend_is_one_line_with_the_closest_and_the_installed_names() -> None:
    for make in (lambda: Settings(backend="antropic"), lambda: Settings.from_env({"STAY_BACKEND": "antropic"})):
        with pytest.raises(UsageError) as caught:
            make()
        said = str(caught.value)
        assert "did you mean anthropic?" in said and "\n" not in said
        assert all(name in said for name in backends())
    with pytest.raises(UsageError, match="STAY_BACKEND"):
        Settings.from_env({"STAY_BACKEND": "antropic"})


def test_a_plug_in_that_fails_to_import_or_makes_no_backend_is_one_line_naming_it(
        installed: Callable[..., None], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    installed("broken-plugin", {"broken_backend": "raise RuntimeError('the SDK is missing')",
                                "odd_backend": "def make(settings, *, progress=None):\n    return object()\n"},
              {"broken": "broken_backend:make", "odd": "odd_backend:make"})
    with pytest.raises(UsageError, match=r"^backend 'broken' \(entry point broken_backend:make of broken-plugin "
                                         r"1\.2\) cannot be loaded: RuntimeError: the SDK is missing"):
        make_backend("broken", Settings())
    with pytest.raises(UsageError, match=r"^backend 'odd' .* of broken-plugin 1\.2\) made a object, not a "
                                         r"stay\.Backend \(it has no name, complete, screen, prices, features\)"):
        make_backend("odd", Settings())
    from stay.cli import main

    assert main(["build", str(HTTP), "--yes", "--backend", "broken", "--courses-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "broken-plugin" in err and "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "c").exists()


FAULTY = """
from stay.models import OfflineBackend

class Faulty:  # no screening of its own: its screen is what is asked
    name = "faulty"
    prices = {}
    features = frozenset({"screen"})

    def __init__(self, where, error):
        self.where, self.error = where, error

    def complete(self, request, model):
        if self.where == "complete":
            raise self.error
        return self.error if self.where == "complete returns" else OfflineBackend().complete(request, model)

    def screen(self, text):
        if self.where == "screen":
            raise self.error
        return self.error if self.where == "screen returns" else None

    async def acomplete(self, request, model):
        raise self.error

def make(settings, *, progress=None):
    import os

    where, _, error = os.environ["FAULTY"].partition(":")  # the test says where to fail, and with what
    return Faulty(where, eval(error))
"""
"""A plug-in whose ``where`` (complete or screen) raises ``error``, neither a stay error, or
(``complete returns``, ``screen returns``) returns it."""


@pytest.mark.parametrize("where, error, kind", [
    ("complete", "RuntimeError('the plug-in server said no')", "ModelError"),
    ("complete", "KeyError('choices')", "ModelError"),
    ("screen", "ValueError('screen exploded')", "ModelError"),
    ("complete", "ConnectionError('the plug-in lost its socket')", "ModelUnavailable"),
])
def test_what_a_plug_in_raises_is_that_plug_ins_failure_never_a_bug_in_stay(
        installed: Callable[..., None], capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, where: str, error: str, kind: str) -> None:
    """A plug-in's own exception is its failure: one line naming the entry point, the
    distribution and what it raised, at the model-error exit code (a ``ConnectionError`` or
    ``TimeoutError``: no reply came, the unavailable one), never exit 3."""
    import asyncio

    from stay import errors
    from stay.cli import main

    installed("faulty-plugin", {"faulty_backend": FAULTY}, {"faulty": "faulty_backend:make"})
    monkeypatch.setenv("FAULTY", f"{where}:{error}")
    raised = eval(error)
    expected = errors.exit_code(getattr(errors, kind)("x"))
    said = str(raised)
    backend = make_backend("faulty", Settings())
    with pytest.raises(getattr(errors, kind), match=rf"^backend 'faulty' \(entry point faulty_backend:make of "
                                                    rf"faulty-plugin 1\.2\) failed: {type(raised).__name__}: "):
        asyncio.run(backend.acomplete(None, "m"))  # type: ignore[attr-defined]  # the plug-in's own member
    code = main(["build", str(HTTP), "--yes", "--backend", "faulty", "--courses-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == expected != errors.EXIT_BUG, err
    assert "faulty-plugin 1.2" in last and f"{type(raised).__name__}: {said}" in last and "Traceback" not in err
    assert "a bug in stay" not in err
    assert where != "complete" or ": stage " in last.split("backend 'faulty'")[0]  # the stage asked is named


@pytest.mark.parametrize("where, value, protocol", [("complete returns", "{'data': {}}", "ModelAnswer"),
                                                    ("screen returns", "42", "str or NoneType")])
def test_what_a_plug_in_returns_that_is_not_the_protocols_is_that_plug_ins_failure(
        installed: Callable[..., None], capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, where: str, value: str, protocol: str) -> None:
    """Not a traceback from deep in stay when the answer is read: the boundary names it."""
    from stay.cli import main
    from stay.errors import EXIT_BUG, ModelError, exit_code

    installed("faulty-plugin", {"faulty_backend": FAULTY}, {"faulty": "faulty_backend:make"})
    monkeypatch.setenv("FAULTY", f"{where}:{value}")
    code = main(["build", str(HTTP), "--yes", "--backend", "faulty", "--courses-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == exit_code(ModelError("x")) != EXIT_BUG, err
    method = where.split()[0]
    assert (f"faulty-plugin 1.2) failed: TypeError: {method}() returned a {type(eval(value)).__name__}, not a "
            f"{protocol}") in last and "Traceback" not in err


def test_stays_own_backends_are_not_wrapped_so_their_bugs_stay_bugs() -> None:
    """The boundary is a plug-in's: what stay's own backend raises unplanned is stay's bug."""
    from stay.models import OfflineBackend

    assert type(make_backend("offline", Settings())) is OfflineBackend


def test_a_plug_in_whose_backend_breaks_when_read_is_one_line_naming_it(
        installed: Callable[..., None]) -> None:
    broken = ECHO.replace(SCREENS, "@property\n    def features(self):\n        raise RuntimeError('features unknown')")
    installed("shaky-plugin", {"shaky_backend": broken}, {"shaky": "shaky_backend:make"})
    with pytest.raises(UsageError, match=r"^backend 'shaky' \(entry point shaky_backend:make of shaky-plugin 1\.2\) "
                                         r"failed to make its backend: RuntimeError: features unknown"):
        make_backend("shaky", Settings())


def test_only_the_chosen_backend_is_imported(installed: Callable[..., None], tmp_path: Path) -> None:
    """An offline or Claude run never imports another backend's module (nor the openai SDK)."""
    installed("echo-plugin", {"echo_backend": echo('{"screen"}')}, {"echo": "echo_backend:make"})
    code = textwrap.dedent(f"""
        import sys
        from stay.pipeline import build_course
        from stay.settings import Settings
        from stay.models import backend_from
        build_course({str(HTTP)!r}, courses_dir={str(tmp_path / "c")!r}, yes=True, backend="offline",
                     progress=lambda _l: None)
        backend_from(Settings(backend="anthropic", api_key="{KEY}"))
        assert not {{"openai", "stay.models._openai", "echo_backend"}} & set(sys.modules), sys.modules.keys()
        backend_from(Settings(backend="echo"))
        assert "echo_backend" in sys.modules
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "echo-plugin")])}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_backend_without_prices_costs_unknown_and_cannot_be_capped(
        installed: Callable[..., None], tmp_path: Path) -> None:
    """Its answers name the model "offline", which Claude's table prices at $0: priced at
    the backend's own (empty) table, the cost is unknown, never $0."""
    installed("echo-plugin", {"echo_backend": echo('{"screen"}')}, {"echo": "echo_backend:make"})
    result = build_course(HTTP, courses_dir=tmp_path / "c", yes=True, backend="echo", progress=quiet)
    assert result.complete and result.calls > 0
    assert result.cost is None and result.unpriced and "cost unknown" in result.summary()
    with pytest.raises(UsageError, match=r"--max-cost .* no price on file"):
        build_course(HTTP, courses_dir=tmp_path / "capped", yes=True, backend="echo", progress=quiet,
                     settings=Settings(max_cost=5.0))
    assert not (tmp_path / "capped").exists()


def test_a_backend_that_cannot_screen_needs_no_screen_and_the_run_log_records_it(
        installed: Callable[..., None], tmp_path: Path) -> None:
    installed("mute-plugin", {"mute_backend": echo("")}, {"mute": "mute_backend:make"})
    courses = tmp_path / "courses"
    with pytest.raises(UsageError, match=r"the echo backend cannot screen a brief .* --no-screen"):
        build_course(HTTP, courses_dir=courses, yes=True, backend="mute", progress=quiet)
    assert not courses.exists()  # refused before anything was written
    said: list[str] = []
    result = build_course(HTTP, courses_dir=courses, yes=True, backend="mute", progress=said.append, screen=False)
    assert result.complete
    assert any("screened by nothing (--no-screen was given)" in line for line in said)
    log = (result.course_dir / ".state" / "run-log.md").read_text()
    assert "- the brief was screened by nothing: --no-screen was given" in log
    from stay.cli import main

    cli = tmp_path / "cli"
    assert main(["build", str(HTTP), "--yes", "--backend", "mute", "--courses-dir", str(cli)]) == 2
    assert not cli.exists()
    assert main(["build", str(HTTP), "--yes", "--backend", "mute", "--no-screen", "--courses-dir", str(cli)]) == 0
    assert "screened by nothing: --no-screen" in next(cli.glob("*/.state/run-log.md")).read_text()


def test_no_screen_is_recorded_on_a_backend_that_screens_too(tmp_path: Path) -> None:
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet, screen=False)
    assert "screened by nothing: --no-screen" in (result.course_dir / ".state" / "run-log.md").read_text()
    screened = build_course(HTTP, courses_dir=tmp_path / "s", yes=True, progress=quiet)
    assert "screened by nothing" not in (screened.course_dir / ".state" / "run-log.md").read_text()


PYPROJECT = """
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "echo-backend"
version = "0.0.1"

[project.entry-points."stay.backends"]
echo = "echo_backend:make"

[tool.hatch.build.targets.wheel]
include = ["echo_backend.py"]
dev-mode-dirs = ["."]
"""
"""Hatchling, not setuptools: setuptools 65.5 (this environment's) builds an editable
install through ``bdist_wheel``, which needs the ``wheel`` package, not installed and not
installable offline. Hatchling is one of stay's dev dependencies; ``dev-mode-dirs`` makes
its editable install a ``.pth`` file, with no ``editables`` package needed."""


@pytest.mark.slow
def test_a_throwaway_package_installed_with_pip_builds_a_course_by_name(tmp_path: Path) -> None:
    package = tmp_path / "echo-backend"
    package.mkdir()
    (package / "pyproject.toml").write_text(PYPROJECT)
    (package / "echo_backend.py").write_text(echo('{"screen"}'))
    venv = tmp_path / "venv"
    # the venv sees the installed packages (pydantic, the SDK, pip, hatchling); no pip of
    # its own is copied in, which takes seconds and nothing here needs
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    # and the packages of the interpreter running the tests, should that be a venv itself (whose
    # --system-site-packages would be the base interpreter's, without stay's dependencies)
    import site
    import sysconfig

    ours = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    parent = dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])
    (ours / "_tests_parent.pth").write_text("".join(f"{path}\n" for path in parent))
    python = str(venv / "bin" / "python")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PIP_NO_INDEX": "1"}  # this checkout's stay; no network
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("STAY_BACKEND", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, *args], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)

    pip = run("-m", "pip", "install", "--no-build-isolation", "--no-deps", "-e", str(package))
    assert pip.returncode == 0, pip.stdout + pip.stderr
    version = run("-m", "stay.cli", "--version")
    assert version.returncode == 0 and "backend echo: echo-backend 0.0.1 (echo_backend:make)" in version.stdout
    from stay._version import DISTRIBUTION

    assert all(f"backend {name}: {DISTRIBUTION} " in version.stdout for name in BUILTIN_BACKENDS)
    choices = "{" + ",".join(sorted({*BUILTIN_BACKENDS, "echo"})) + "}"
    assert choices in run("-m", "stay.cli", "build", "--help").stdout  # argparse wraps between words only
    courses = tmp_path / "courses"
    built = run("-m", "stay.cli", "build", str(HTTP), "--yes", "--backend", "echo", "--courses-dir", str(courses))
    assert built.returncode == 0, built.stderr
    assert "backend: echo" in built.stderr and "cost unknown" in built.stdout
    (course,) = [path for path in courses.iterdir() if path.is_dir()]
    summary = reference_report(course, strict=True)["summary"]
    assert (summary["fail"], summary["warn"]) == (0, 0), summary
    assert "## run 1: build (echo)" in (course / ".state" / "run-log.md").read_text()


def test_a_replay_with_no_recorded_verdict_says_the_brief_was_not_screened(tmp_path: Path) -> None:
    """Replay makes no call, so a brief whose verdict is not in the request cache is
    screened by nothing: said, in the run log, and not marked screened in the ledger."""
    import shutil

    first = build_course(HTTP, courses_dir=tmp_path / "a", yes=True, cache=True, progress=quiet)
    again = tmp_path / "b" / first.slug / ".runs"
    shutil.copytree(first.course_dir / ".runs" / "cache", again / "cache")  # the offline screen left no verdict
    said: list[str] = []
    replayed = build_course(HTTP, courses_dir=tmp_path / "b", yes=True, replay=True, progress=said.append)
    assert replayed.complete
    assert any("screened by nothing (a replay with no recorded verdict" in line for line in said)
    assert "screened by nothing: a replay with no recorded verdict" in (
        replayed.course_dir / ".state" / "run-log.md").read_text()
    assert '"screened"' not in (replayed.course_dir / ".state" / "hashes.json").read_text()
    assert '"screened"' in (first.course_dir / ".state" / "hashes.json").read_text()


def test_a_screen_that_failed_open_is_in_the_run_log(tmp_path: Path) -> None:
    from stay.errors import ModelUnavailable
    from stay.models import OfflineBackend

    class Down(OfflineBackend):
        def screen(self, text: str) -> str | None:
            raise ModelUnavailable("the service is unreachable")

    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=Down(), progress=quiet)
    assert result.complete
    assert "- the brief was screened by nothing: input moderation failed (ModelUnavailable)" in (
        result.course_dir / ".state" / "run-log.md").read_text()


def test_status_and_the_viewer_judge_a_course_by_the_backend_and_models_it_was_built_with(
        installed: Callable[..., None], tmp_path: Path) -> None:
    """Issue 34: a plug-in naming its own models (``default_models``) built the course; status
    and the viewer, in a shell that names no backend, judged it by Claude's ids and called
    every file stale. The ledger records the backend and models; they are read back, and
    another backend or model, named, still makes exactly the files it would change stale."""
    from stay.settings import ROLES
    from stay.view import build_site
    from stay.view._load import read_ledger
    from tests.conftest import run_stay

    own = SCREENS + "\n    default_models = {role: 'echo-' + role for role in " + repr(ROLES) + "}"
    installed("echo-plugin", {"echo_backend": ECHO.replace(SCREENS, own)}, {"echo": "echo_backend:make"})
    courses = tmp_path / "courses"
    built = run_stay("build", str(HTTP), "--yes", "--backend", "echo", "--courses-dir", str(courses))
    assert built.returncode == 0, built.stderr
    (course,) = [path for path in courses.iterdir() if path.is_dir()]
    entries = json.loads((course / ".state" / "hashes.json").read_text())["artefacts"]
    made = {path: entry["sources"]["model"] for path, entry in entries.items() if "sources" in entry}
    assert made and set(made.values()) <= {f"echo-{role}" for role in ROLES}

    def stale(*args: str, env: dict[str, str] | None = None) -> dict[str, str]:
        done = run_stay("status", course.name, "--courses-dir", str(courses), *args, env=env)
        assert done.returncode == 0, done.stderr
        return {line.split()[1]: line.split(None, 2)[2] for line in done.stdout.splitlines()
                if line.startswith("stale")}

    assert stale() == {} and stale(env={"STAY_BACKEND": "echo"}) == {}
    # Claude's ids: every model-made file but the reviews, which an offline build never makes
    offline_made = {path for path in made if "/.review/" not in path}
    assert stale("--backend", "offline") == dict.fromkeys(offline_made, "<- model")
    writing = {path for path, model in made.items() if model == "echo-writing"}
    assert writing and set(stale(env={"STAY_MODEL_WRITING": "another"})) == writing
    # the viewer: the same statuses, read back the same way, and --backend names another
    assert "stale" not in read_ledger(course).counts()
    judged = read_ledger(course, Settings(backend="offline")).statuses
    assert {path for path, (state, _why) in judged.items() if state == "stale"} == offline_made
    badge = b'class="badge status-stale"'
    assert badge not in build_site(course)["status.html"]
    shown = run_stay("view", course.name, "--courses-dir", str(courses), "--out", str(tmp_path / "site"),
                     "--backend", "offline")
    assert shown.returncode == 0, shown.stderr
    page = (tmp_path / "site" / "status.html").read_bytes()
    assert badge in page and page == build_site(course, backend="offline")["status.html"]
