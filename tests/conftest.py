from __future__ import annotations

import atexit
import gc
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_SOURCE = ROOT / "courses" / "how-http-requests-travel"


def _pristine_sample() -> Path:
    """The committed sample, copied without anything a user's run left beside it (.state,
    .runs, temporary files) into a directory of its own: tests never depend on what is
    under courses/ besides the committed course."""
    target = Path(tempfile.mkdtemp(prefix="stay-sample-")) / SAMPLE_SOURCE.name
    shutil.copytree(SAMPLE_SOURCE, target, ignore=shutil.ignore_patterns(".*"))
    atexit.register(shutil.rmtree, target.parent, True)
    _complete(target)
    return target


def _complete(course: Path) -> None:
    """Each file of a stage added since the sample was written, made by that stage's offline
    answer and listed in the manifest: the sample is then a whole course for the registry."""
    from stay.artefacts import CourseManifest, dump, load, write
    from stay.models import OfflineBackend
    from stay.pipeline._layout import RunReader, Unit, stage_inputs
    from stay.stages import REGISTRY, Prompts

    manifest = load(course / "course.yaml", CourseManifest)
    reader, prompts, added = RunReader(course, brief=manifest.brief), Prompts.load(), {}
    for stage in (stage for stage in REGISTRY if stage.phase != "review"):
        for path, place in reader.layout.outputs(stage):
            if (course / path).is_file():
                continue
            unit: Unit = place
            paths = [path]
            if stage.scope == "module" and place is not None:  # one call answers for the module's lessons
                unit = place.module
                paths = [lesson.path(stage.output) for lesson in reader.layout.lessons_of(place.module)]
            inputs = stage_inputs(stage, unit, reader)
            answer = OfflineBackend().complete(stage.request(inputs, prompts, path), "offline")
            for where, made in zip(paths, stage.artefacts(answer, inputs, path), strict=True):
                write(course / where, made)
                added[where] = "current"
            reader.wrote(paths)
    if added:
        whole = manifest.model_copy(update={"artefacts": {**manifest.artefacts, **added}})
        (course / "course.yaml").write_text(dump(whole))


SAMPLE = _pristine_sample()

# CI runs the parity fuzzing at its contract size (at least 500 examples in all);
# a developer's default run is lighter. HYPOTHESIS_PROFILE=ci selects it explicitly.
settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", deadline=None, max_examples=40, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tier takes every test that drives a real browser, whichever file it is in,
    and every case of a ``sweep`` but its first (the first of each parameter)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        swept = item.get_closest_marker("sweep") and callspec is not None and any(callspec.indices.values())
        if swept or "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (the anthropic SDK's thousands of classes among it) lives
    for the whole session: frozen out of the cycle collector's way, so each full collection
    walks only what the tests make (about 0.8 s less garbage collection per worker)."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of the sample course, named like the original."""
    target = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, target)
    return target


def run_stay(*args: str, env: dict[str, str] | None = None, only_env: bool = False) -> subprocess.CompletedProcess[str]:
    """The ``stay`` command line, run in this process (``stay.cli.main`` with these
    arguments), with ANTHROPIC_API_KEY unset unless ``env`` sets it (``only_env``: with exactly
    ``env`` as its environment): its exit code, stdout and stderr, as a process would give them.
    The environment and the secrets the run keeps (process-wide) are put back after. Tests that
    need a process of their own (a signal, a second writer, a closed pipe, a memory limit) start one."""
    import contextlib
    import io

    from stay import _secrets
    from stay.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved, kept = dict(os.environ), set(_secrets._known)
    if only_env:
        os.environ.clear()
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.environ.clear()
        os.environ.update(saved)
        with _secrets._lock:
            _secrets._known.clear()
            _secrets._known.update(kept)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
