"""The evals suite: ``pytest evals/`` builds (or loads) a course per brief with the
prompt directory under test, scores it, and writes one JSON report.

Options (all optional):
  --stay-prompts DIR   the prompt directory under test (default: the packaged prompts/)
  --stay-label NAME    the report's label (default: candidate)
  --stay-backend NAME  offline or anthropic (default: anthropic when ANTHROPIC_API_KEY is set)
  --stay-output PATH   where the report goes (default: evals/out/<label>.json)
  --stay-courses DIR   where courses are built or loaded (default: evals/out/courses/<label>)
  --stay-rescore       score the courses already in --stay-courses; build nothing
  --stay-quality K=V   offline only: degrade generation, e.g. distractors=0.2 (harness tests)

Under pytest-xdist each worker writes its briefs' results beside the report; the
controller merges them into the one report when the session ends.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class EvalConfig:
    prompts_dir: Path | None
    label: str
    backend: str
    output: Path
    courses: Path
    rescore: bool
    quality: dict[str, float]

    @property
    def parts(self) -> Path:
        return self.output.with_name(self.output.name + ".parts")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stay evals")
    group.addoption("--stay-prompts", default=None)
    group.addoption("--stay-label", default="candidate")
    group.addoption("--stay-backend", default=None, choices=("offline", "anthropic"))
    group.addoption("--stay-output", default=None)
    group.addoption("--stay-courses", default=None)
    group.addoption("--stay-rescore", action="store_true")
    group.addoption("--stay-quality", action="append", default=[])


def _config(config: pytest.Config) -> EvalConfig:
    from stay.scoring._suite import backend_name

    label = config.getoption("--stay-label")
    output = Path(config.getoption("--stay-output") or HERE / "out" / f"{label}.json")
    quality = {}
    for pair in config.getoption("--stay-quality"):
        key, _, value = pair.partition("=")
        quality[key] = float(value)
    prompts = config.getoption("--stay-prompts")
    return EvalConfig(Path(prompts) if prompts else None, label, backend_name(config.getoption("--stay-backend")),
                      output.resolve(), Path(config.getoption("--stay-courses") or HERE / "out" / "courses" / label),
                      config.getoption("--stay-rescore"), quality)


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
    from stay.scoring._report import report, write_report
    from stay.scoring._suite import OFFLINE
    from stay.stages import Prompts

    parts = {p.stem: json.loads(p.read_text()) for p in sorted(cfg.parts.glob("*.json"))}
    prompts = Prompts.load(cfg.prompts_dir)
    judges = sorted({r["judge"] for part in parts.values() for r in part["scorers"].values()})
    document = report(label=cfg.label, backend=cfg.backend if cfg.backend != OFFLINE else "offline",
                      judge=", ".join(judges), prompts_dir=str(cfg.prompts_dir or "prompts (packaged)"),
                      prompt_hashes=prompts.hashes(), briefs=parts)
    write_report(cfg.output, document)
    shutil.rmtree(cfg.parts, ignore_errors=True)
    session.config.pluginmanager.get_plugin("terminalreporter").write_line(  # type: ignore[union-attr]
        f"stay evals: wrote {cfg.output} ({len(parts)} briefs; means: "
        + ", ".join(f"{k} {v:.3f}" for k, v in document["means"].items() if v is not None) + ")")
