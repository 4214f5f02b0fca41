"""``stay build BRIEF --yes --backend openai`` against a fake OpenAI-compatible server over
real HTTP (``tests/models/fake_openai.py``, which enforces the strict schema): the course
passes the frozen reference validator --strict; usage, cost, replay and the cache hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stay._version import DISTRIBUTION
from stay.errors import EXIT_CODES, ModelUnavailable, UsageError
from stay.settings import ROLES
from stay.stages import REGISTRY
from tests.conftest import ROOT
from tests.models.fake_openai import FakeOpenAI
from tests.models.helpers import HTTP, in_process
from tests.parity.harness import reference_report


def stay(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The command with exactly ``env``, in this process; the tests about the process itself
    (Ctrl-C, the SDK not installed) start one."""
    return in_process(env, *args)


def environment(fake: FakeOpenAI, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "OTEL_", "STAY_"))}
    env.update({"PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": "1780000000", "OPENAI_BASE_URL": fake.url,
                "STAY_MAX_RETRIES": "1"})
    env.update(extra)
    return env


def test_a_build_through_the_openai_backend_passes_the_frozen_reference_strict(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:  # one model served and no key: the local-server case
        done = stay(environment(fake), "build", str(HTTP), "--yes", "--backend", "openai",
                    "--courses-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    course = next(p for p in tmp_path.iterdir() if p.is_dir())
    report = reference_report(course, strict=True)
    assert report["courses"][0]["defects"] == [] and report["summary"]["fail"] == 0
    # every stage was asked, with strict json_schema, under the one served model, stable parts first
    stages = {b["response_format"]["json_schema"]["name"] for b in fake.bodies}
    assert {stage.answer.__name__ for stage in REGISTRY} <= stages
    assert {b["model"] for b in fake.bodies} == {"fake-model"}
    assert all([m["role"] for m in b["messages"]] == ["system", "user"] for b in fake.bodies)
    assert set(fake.seen_keys) == {"not-needed"}  # a placeholder key, no real one needed
    # usage: the fake's cached tokens arrive as cache reads, and the cost is unknown, never $0
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in fake.usages)
    assert cached > 0
    said = done.stderr + done.stdout
    assert "unknown" in said and "$0.00" not in said
    # the model really asked is the one the run says, and the one its records are keyed on
    assert "backend: openai (analysis fake-model, planning fake-model, writing fake-model, judging fake-model)" in said
    records = [p.read_text() for p in (course / ".state").rglob("*") if p.is_file()]
    assert records and all("claude" not in text for text in records)
    assert any("fake-model" in text for text in records)


def test_replay_builds_the_same_course_without_a_call(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        env = environment(fake, STAY_MODEL="fake-model")
        first = stay(env, "build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path))
        assert first.returncode == 0, first.stderr
        asked = len(fake.bodies)
        course = next(p for p in tmp_path.iterdir() if p.is_dir())
        before = {p: p.read_bytes() for p in course.glob("modules/*/*.md")}  # the lessons
        assert before
        for p in before:
            p.unlink()
        again = stay(env, "build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path),
                     "--replay")
    assert again.returncode == 0, again.stderr
    assert len(fake.bodies) == asked  # every answer came from the request cache
    assert {p: p.read_bytes() for p in course.glob("modules/*/*.md")} == before


def test_a_rejected_key_and_an_unknown_model_are_one_usage_line_each(tmp_path: Path) -> None:
    with FakeOpenAI(keys=("sk-right",)) as fake:
        wrong = stay(environment(fake, OPENAI_API_KEY="sk-wrong", STAY_MODEL="fake-model"), "build", str(HTTP),
                     "--yes", "--backend", "openai", "--courses-dir", str(tmp_path))
        unknown = stay(environment(fake, OPENAI_API_KEY="sk-right", STAY_MODEL="gpt-nonesuch"), "build",
                       str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path / "b"))
    for done, named in ((wrong, "OPENAI_API_KEY"), (unknown, "STAY_MODEL")):
        assert done.returncode == EXIT_CODES[UsageError], done.stderr
        assert named in done.stderr and "Traceback" not in done.stderr
    assert "sk-wrong" not in wrong.stderr


def test_a_server_serving_several_models_with_none_set_is_one_line_naming_stay_model(tmp_path: Path) -> None:
    with FakeOpenAI(models=("a", "b")) as fake:
        done = stay(environment(fake), "build", str(HTTP), "--yes", "--backend", "openai",
                    "--courses-dir", str(tmp_path))
    assert done.returncode == EXIT_CODES[UsageError], done.stderr
    assert "serves 2 models" in done.stderr and "STAY_MODEL" in done.stderr and "Traceback" not in done.stderr


def test_a_stall_ends_at_the_call_deadline_as_unavailable(tmp_path: Path) -> None:
    from tests.models.fake_openai import Stall

    with FakeOpenAI(faults=[Stall()] * 4) as fake:
        done = stay(environment(fake, STAY_MODEL="fake-model", STAY_CALL_DEADLINE="2", STAY_REQUEST_TIMEOUT="1"),
                    "build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path))
    assert done.returncode == EXIT_CODES[ModelUnavailable], done.stderr
    assert "deadline" in done.stderr or "not answering" in done.stderr


def test_a_cost_cap_over_an_unpriced_model_is_refused_before_any_call(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        done = stay(environment(fake, STAY_MODEL="fake-model"), "build", str(HTTP), "--yes", "--backend", "openai",
                    "--courses-dir", str(tmp_path), "--max-cost", "1")
    assert done.returncode == EXIT_CODES[UsageError], done.stderr
    assert "no price on file" in done.stderr and fake.bodies == []


def test_ctrl_c_during_a_call_to_the_server_ends_with_130_and_one_line(tmp_path: Path) -> None:
    import signal
    import time

    from stay.errors import EXIT_INTERRUPTED
    from tests.models.fake_openai import Stall

    with FakeOpenAI(faults=[Stall()]) as fake:
        child = subprocess.Popen([sys.executable, "-m", "stay.cli", "build", str(HTTP), "--yes", "--backend", "openai",
                                  "--courses-dir", str(tmp_path)], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=environment(fake, STAY_MODEL="fake-model"))
        ends = time.monotonic() + 60
        while not fake.bodies and time.monotonic() < ends and child.poll() is None:
            time.sleep(0.05)
        assert fake.bodies, "the build never called the server"
        child.send_signal(signal.SIGINT)  # the child this test started, by its own pid
        _out, err = child.communicate(timeout=60)
    assert child.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err


def test_a_server_that_only_does_json_mode_builds_the_course_and_says_so_once(tmp_path: Path) -> None:
    with FakeOpenAI(json_schema=False) as fake:
        done = stay(environment(fake), "build", str(HTTP), "--yes", "--backend", "openai",
                    "--courses-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("using JSON mode") == 1
    kinds = [b["response_format"]["type"] for b in fake.bodies]
    assert kinds[0] == "json_schema" and set(kinds[1:]) == {"json_object"}
    course = next(p for p in tmp_path.iterdir() if p.is_dir())
    report = reference_report(course, strict=True)
    assert report["courses"][0]["defects"] == [] and report["summary"]["fail"] == 0


def test_without_the_openai_sdk_a_build_is_one_line_naming_the_extra_and_version_still_lists_it(
        tmp_path: Path) -> None:
    """The SDK hidden (``sys.modules["openai"] = None``, as if not installed): the build ends
    with the usage error's code and one line naming the extra, which pyproject declares with
    the SDK in it, and nothing is written; ``--version`` and ``--help`` still list openai."""
    import tomllib

    from stay.models._openai import install_hint

    hint = str(install_hint())
    extra = hint.split("'.[", 1)[1].split("]'", 1)[0]
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("openai") for dep in declared[extra])
    hidden = "import sys; sys.modules['openai'] = None; from stay.cli import main; sys.exit(main(sys.argv[1:]))"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "STAY_"))}
        return subprocess.run([sys.executable, "-c", hidden, *args], capture_output=True, text=True, timeout=120,
                              env={**env, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test"}, cwd=ROOT,
                              check=False)

    done = run("build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path))
    assert done.returncode == EXIT_CODES[UsageError], done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {hint}"] and "Traceback" not in done.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
    assert f"backend openai: {DISTRIBUTION} " in run("--version").stdout
    assert "openai" in run("build", "--help").stdout


@pytest.mark.slow
def test_a_cost_cap_stops_an_openai_build_before_the_call_that_would_pass_it_and_a_rerun_goes_on(
        tmp_path: Path) -> None:
    """The cap is the gateway's, priced at the backend's own table: the same stop and the same
    nothing-paid-twice rerun as on Claude."""
    from stay.errors import EXIT_REFUSED

    model = "gpt-6.2-sol"  # the one OpenAI id with a price row
    with FakeOpenAI(models=(model,)) as fake:
        env = environment(fake, STAY_MODEL=model)
        whole = stay(env, "build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path / "a"))
        assert whole.returncode == 0, whole.stderr
        uncapped = len(fake.bodies)
        fake.bodies.clear()
        capped = stay(env, "build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path / "b"),
                      "--max-cost", "0.05")
        first = len(fake.bodies)
        rerun = stay(env, "build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path / "b"))
    assert capped.returncode == EXIT_REFUSED, capped.stderr  # exit 5, as on Claude
    assert "cost cap" in capped.stderr and "usage:" in capped.stdout + capped.stderr
    assert 0 < first < uncapped
    assert rerun.returncode == 0, rerun.stderr
    assert len(fake.bodies) == uncapped  # the capped run and its rerun asked what one build asks


def test_status_in_the_same_shell_finds_an_openai_build_current(tmp_path: Path) -> None:
    """Issue 34: after a clean build through a local OpenAI-compatible server, ``stay status``
    (with or without STAY_BACKEND) called every model-made file ``stale <- model``, judging
    it by Claude's ids; the ledger now records the backend and the model it served."""
    from tests.conftest import run_stay

    with FakeOpenAI() as fake:
        env = {"OPENAI_BASE_URL": fake.url}
        built = run_stay("build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path), env=env)
        assert built.returncode == 0, built.stderr
        (course,) = [path for path in tmp_path.iterdir() if path.is_dir()]
        for extra in ({}, {"STAY_BACKEND": "openai"}):
            done = run_stay("status", course.name, "--courses-dir", str(tmp_path), env={**env, **extra})
            assert done.returncode == 0, done.stderr
            states = [line.split()[0] for line in done.stdout.splitlines() if not line.startswith("gate")]
            assert states and set(states) == {"current"}, done.stdout
        asked = len(fake.bodies)
        again = run_stay("build", course.name, "--backend", "openai", "--courses-dir", str(tmp_path), env=env)
    assert again.returncode == 0 and len(fake.bodies) == asked  # and the build agrees: nothing to do
    ledger = json.loads((course / ".state" / "hashes.json").read_text())
    assert ledger["built"] == {"backend": "openai", "models": {role: "fake-model" for role in ROLES}}
