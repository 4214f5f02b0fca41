"""The evals suite: ``pytest evals/`` builds each brief ``--stay-epochs`` times with the
prompt directory under test, scores every build, and writes one JSON report.

Options (all optional): OPTIONS below declares each with its help, which
``pytest evals/ --help`` prints under "stay evals".

Under pytest-xdist each worker writes its builds' results beside the report; the
controller merges them into the one report when the session ends. A build that fails is
recorded as failed (``stay.suite.run_build``); a run with a failed build, or one that did
not run, writes no report (the last one is kept) and lists them in
``<output>.incomplete.json`` instead (``stay.suite.finish_run``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    judge_backend: str | None = None
    """The judge's backend (``--stay-judge-backend``); None: the one that builds."""
    briefs: tuple[Path, ...] = field(default=tuple(BRIEFS))
    session: str = ""
    """The judging session every build of the run is judged in (``stay.suite.suite_session``)."""
    baseline: EvalConfig | None = None
    """A two-arm run's baseline arm (``--stay-baseline-prompts``), judged in the same session."""

    @property
    def parts(self) -> Path:
        return self.output.with_name(self.output.name + ".parts")

    @property
    def judging(self) -> str:
        """The backend the judge answers through."""
        return self.judge_backend or self.backend

    @property
    def arms(self) -> tuple[EvalConfig, ...]:
        return (self.baseline, self) if self.baseline else (self,)

    def arm(self, label: str | None) -> EvalConfig:
        return next(arm for arm in self.arms if label in (None, arm.label))


# Each option once: its metavar, what argparse needs beyond the help, and the help that
# ``pytest evals/ --help`` prints (--stay-epochs' default is stay.suite's, read when pytest asks).
OPTIONS: dict[str, tuple[str | None, dict[str, Any], str]] = {
    "--stay-prompts": ("DIR", {}, "the prompt directory under test (default: the packaged prompts/)"),
    "--stay-label": ("NAME", {"default": "candidate"}, "the report's label (default: candidate)"),
    "--stay-backend": ("NAME", {}, "the backend that builds: offline, anthropic, ... (default: anthropic when "
                       "ANTHROPIC_API_KEY is set); a name that is none is one line naming the choices"),
    "--stay-judge-backend": ("NAME", {}, "the judge's backend (default: --stay-backend's): build with one "
                             "provider, judge with another; the judge's name records it (model:ID via NAME)"),
    "--stay-epochs": ("N", {"type": int}, "independent builds per brief (default: stay.suite.DEFAULT_EPOCHS; "
                      "see docs/evals.md)"),
    "--stay-seed": ("N", {"type": int, "default": 0}, "the run's seed (default 0): offline, the quality knob's "
                    "build-to-build noise; with a model, the request cache's salt, so another seed is a fresh "
                    "set of builds"),
    "--stay-judge-model": ("ID", {}, "the judge's model (default: the judging role's); set it apart from the "
                           "writer's"),
    "--stay-output": ("PATH", {}, "where the report goes (default: evals/out/<label>.json)"),
    "--stay-courses": ("DIR", {}, "where courses are built or loaded (default: evals/out/courses/<label>), one "
                       "directory per epoch: <courses>/e01/<slug>, ..."),
    "--stay-rescore": (None, {"action": "store_true", "default": False},
                       "score the courses already in --stay-courses; build nothing"),
    "--stay-quality": ("K=V", {"action": "append", "default": []}, "offline only: degrade generation, e.g. "
                       "distractors=0.2 (harness tests); knobs: distractors, untaught, exercises, rubrics"),
    "--stay-baseline-prompts": ("DIR", {}, "build and judge a baseline arm too, with DIR's prompts, in the same "
                                "session: builds are parametrized by (brief, epoch, arm) so the arms "
                                "interleave, and both reports record one judging session (docs/evals.md, "
                                "\"Drift between sessions\")"),
    "--stay-baseline-label": ("NAME", {"default": "baseline"}, "the baseline arm's label (default: baseline); "
                              "its report and courses go beside the candidate's, under that name"),
    "--stay-baseline-seed": ("N", {"type": int}, "the baseline arm's seed (default: --stay-seed + 1000: its own "
                             "fresh builds)"),
    "--stay-plan-from": ("PATH", {}, "plan the epochs from this baseline report (default: the previous report at "
                         "--stay-output, when there is one): a run with fewer epochs than `stay evals plan` says "
                         "some scorer needs starts with a `warning:` line"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    from stay.suite import DEFAULT_EPOCHS

    group = parser.getgroup("stay evals")
    for name, (metavar, declared, text) in OPTIONS.items():
        given = {"default": DEFAULT_EPOCHS} if name == "--stay-epochs" else {"default": None}
        given |= declared  # a copy: OPTIONS is read again by each pytest_addoption call
        if metavar:
            given["metavar"] = metavar
        group.addoption(name, help=text, **given)


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
    from dataclasses import replace

    from stay.errors import UsageError
    from stay.scoring._judges import backend_name
    from stay.suite import suite_session

    label = config.getoption("--stay-label")
    output = Path(config.getoption("--stay-output") or HERE / "out" / f"{label}.json")
    epochs = config.getoption("--stay-epochs")
    if epochs < 1:
        raise pytest.UsageError(f"--stay-epochs {epochs}: at least one build per brief")
    prompts = config.getoption("--stay-prompts")
    courses = Path(config.getoption("--stay-courses") or HERE / "out" / "courses" / label)
    try:
        backend = backend_name(config.getoption("--stay-backend"))
        judged = config.getoption("--stay-judge-backend")
        judge_backend = backend_name(judged, flag="--stay-judge-backend") if judged else None
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    cfg = EvalConfig(Path(prompts) if prompts else None, label, backend,
                     output.resolve(), courses, config.getoption("--stay-rescore"),
                     _quality(config.getoption("--stay-quality")), epochs, config.getoption("--stay-seed"),
                     config.getoption("--stay-judge-model"), judge_backend)
    base_prompts = config.getoption("--stay-baseline-prompts")
    if base_prompts:
        base_label = config.getoption("--stay-baseline-label")
        if base_label == label:
            raise pytest.UsageError(f"--stay-baseline-label {base_label}: the candidate's label too; give the arms "
                                    "different labels (--stay-label)")
        seed = config.getoption("--stay-baseline-seed")
        cfg = replace(cfg, baseline=replace(cfg, prompts_dir=Path(base_prompts), label=base_label,
                                            output=cfg.output.with_name(f"{base_label}.json"),
                                            courses=courses.with_name(base_label),
                                            seed=cfg.seed + 1000 if seed is None else seed))
    try:  # a prompts directory that cannot be used, said before any build or rescore
        session = suite_session(cfg.arms)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    return replace(cfg, session=session, baseline=cfg.baseline and replace(cfg.baseline, session=session))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"brief", "epoch", "arm"} <= set(metafunc.fixturenames):
        cfg = _config(metafunc.config)
        # per brief and epoch, the baseline arm's build and then the candidate's: the arms interleave
        labels = [arm.label for arm in cfg.arms] if cfg.baseline else [None]
        cases = [(brief, epoch, label) for brief in BRIEFS for epoch in range(1, cfg.epochs + 1) for label in labels]
        metafunc.parametrize(("brief", "epoch", "arm"), cases,
                             ids=[f"{b.stem}-e{e:02d}" + (f"-{a}" if a else "") for b, e, a in cases])


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _is_worker(session.config):
        for arm in _config(session.config).arms:
            shutil.rmtree(arm.parts, ignore_errors=True)
        line = epochs_warning(session.config)
        if line is not None:  # scorer names come from the baseline file: shown, never obeyed
            from stay._display import terminal_text

            session.config.pluginmanager.get_plugin("terminalreporter").write_line(  # type: ignore[union-attr]
                terminal_text(line))


def epochs_warning(config: pytest.Config) -> str | None:
    """The run's ``warning:`` line when its epochs are below the plan from a baseline: the one
    ``--stay-plan-from`` names, else the report this run is about to replace."""
    from stay.errors import UsageError
    from stay.scoring import epochs_warning as planned

    cfg, asked = _config(config), config.getoption("--stay-plan-from")
    try:
        return planned(asked or cfg.output, cfg.epochs, asked=asked is not None)
    except UsageError as exc:
        raise pytest.UsageError(f"--stay-plan-from: {exc}") from None


@pytest.fixture(scope="session")
def eval_config(request: pytest.FixtureRequest) -> EvalConfig:
    return _config(request.config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config):
        return
    arms = _config(session.config).arms
    if not any(arm.parts.is_dir() for arm in arms):
        return
    from stay.suite import finish_runs

    for line in finish_runs(arms):  # an interrupted or partly failed run writes no report (nor its other arm's)
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(line)  # type: ignore[union-attr]
