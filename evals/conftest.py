"""The evals suite: ``pytest evals/`` builds each brief ``--stay-epochs`` times with the
prompt directory under test, scores every build, and writes one JSON report.

Options (all optional):
  --stay-prompts DIR       the prompt directory under test (default: the packaged prompts/)
  --stay-label NAME        the report's label (default: candidate)
  --stay-backend NAME      offline or anthropic (default: anthropic when ANTHROPIC_API_KEY is set)
  --stay-epochs N          independent builds per brief (default: stay.suite.DEFAULT_EPOCHS; see docs/evals.md)
  --stay-seed N            the run's seed (default 0): offline, the quality knob's build-to-build noise;
                           with a model, the request cache's salt, so another seed is a fresh set of builds
  --stay-judge-model ID    the judge's model (default: the judging role's); set it apart from the writer's
  --stay-output PATH       where the report goes (default: evals/out/<label>.json)
  --stay-courses DIR       where courses are built or loaded (default: evals/out/courses/<label>), one
                           directory per epoch: <courses>/e01/<slug>, ...
  --stay-rescore           score the courses already in --stay-courses; build nothing
  --stay-quality K=V       offline only: degrade generation, e.g. distractors=0.2 (harness tests);
                           knobs: distractors, untaught, exercises, rubrics

Under pytest-xdist each worker writes its builds' results beside the report; the
controller merges them into the one report when the session ends.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BRIEFS = sorted((HERE / "briefs").glob("*.yaml"))


@dataclass(frozen=True)
class EvalConfig:
    prompts_dir: Path | None
    label: str
    backend: str
    output: Path
    courses: Path
    rescore: bool
    quality: dict[str, float]
    epochs: int
    seed: int
    judge_model: str | None = None
    briefs: tuple[Path, ...] = field(default=tuple(BRIEFS))

    @property
    def parts(self) -> Path:
        return self.output.with_name(self.output.name + ".parts")


def pytest_addoption(parser: pytest.Parser) -> None:
    from stay.suite import DEFAULT_EPOCHS

    group = parser.getgroup("stay evals")
    group.addoption("--stay-prompts", default=None)
    group.addoption("--stay-label", default="candidate")
    group.addoption("--stay-backend", default=None, choices=("offline", "anthropic"))
    group.addoption("--stay-epochs", type=int, default=DEFAULT_EPOCHS)
    group.addoption("--stay-seed", type=int, default=0)
    group.addoption("--stay-judge-model", default=None)
    group.addoption("--stay-output", default=None)
    group.addoption("--stay-courses", default=None)
    group.addoption("--stay-rescore", action="store_true")
    group.addoption("--stay-quality", action="append", default=[])


def _quality(pairs: list[str]) -> dict[str, float]:
    quality = {}
    for text in pairs:
        for pair in text.split(","):
            key, sep, value = pair.partition("=")
            try:
                quality[key.strip()] = float(value)
            except ValueError:
                raise pytest.UsageError(f"--stay-quality {pair!r}: expected KNOB=SHARE, e.g. distractors=0.2") from None
            if not sep:
                raise pytest.UsageError(f"--stay-quality {pair!r}: expected KNOB=SHARE, e.g. distractors=0.2")
    return quality


def _config(config: pytest.Config) -> EvalConfig:
    from stay.suite import backend_name

    label = config.getoption("--stay-label")
    output = Path(config.getoption("--stay-output") or HERE / "out" / f"{label}.json")
    epochs = config.getoption("--stay-epochs")
    if epochs < 1:
        raise pytest.UsageError(f"--stay-epochs {epochs}: at least one build per brief")
    prompts = config.getoption("--stay-prompts")
    return EvalConfig(Path(prompts) if prompts else None, label, backend_name(config.getoption("--stay-backend")),
                      output.resolve(), Path(config.getoption("--stay-courses") or HERE / "out" / "courses" / label),
                      config.getoption("--stay-rescore"), _quality(config.getoption("--stay-quality")), epochs,
                      config.getoption("--stay-seed"), config.getoption("--stay-judge-model"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"brief", "epoch"} <= set(metafunc.fixturenames):
        epochs = range(1, _config(metafunc.config).epochs + 1)
        cases = [(brief, epoch) for brief in BRIEFS for epoch in epochs]
        metafunc.parametrize(("brief", "epoch"), cases, ids=[f"{b.stem}-e{e:02d}" for b, e in cases])


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _is_worker(session.config):
        shutil.rmtree(_config(session.config).parts, ignore_errors=True)


@pytest.fixture(scope="session")
def eval_config(request: pytest.FixtureRequest) -> EvalConfig:
    return _config(request.config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config):
        return
    cfg = _config(session.config)
    if not cfg.parts.is_dir():
        return
    from stay.suite import finish_run

    _document, line = finish_run(cfg)  # an interrupted or partly failed run writes no report
    session.config.pluginmanager.get_plugin("terminalreporter").write_line(line)  # type: ignore[union-attr]
