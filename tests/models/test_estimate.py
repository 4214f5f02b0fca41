"""``stay estimate``: the calls a build would make, an expected cost and a range, made
offline, checked against what a build over HTTP against the fake really costs: the plain
fake (offline-sized answers) for the range, the realistic one (``tests/models/fake_realism.py``:
answers the length a real model writes, with thinking, by its own seeded rules) for the
expected figure, within the issue's ``TOLERANCE``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
from pathlib import Path

import pytest

from stay.errors import EXIT_USAGE, ModelError, UsageError, exit_code
from stay.models import PRICES, SCREEN_STAGE, THINKING, AnthropicBackend, Usage, cost
from stay.pipeline import BuildResult, Estimate, build_course, estimate
from stay.settings import Settings
from stay.stages import REGISTRY, STAGES
from stay.validate import validate_course
from tests.conftest import ROOT, run_stay
from tests.expected import calls, curriculum_of
from tests.models.fake_api import FakeMessagesAPI, stage_of, tokens
from tests.models.fake_realism import Realism
from tests.models.helpers import HTTP, KEY, quiet

EDITED = "quiz"  # the stage whose prompt the rebuild test edits
LARGE = ROOT / "tests" / "data" / "postgres-in-production.yaml"
"""A 24-lesson brief (4 modules of 6 asked; the offline curriculum makes 8 of 3): kept under
tests/, not examples/briefs/, which every example-brief test builds."""
LARGE_LESSONS = 24
TOLERANCE = 0.30
"""Issue 23: the estimate is within 30% of what a realistic build costs."""


def _tree(root: Path) -> str:
    """A digest of every file under ``root``: its paths and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def sample_guess(tmp_path_factory: pytest.TempPathFactory) -> Estimate:
    """The sample's estimate with the default settings, made once for the tests that only read it."""
    unused = tmp_path_factory.mktemp("estimate") / "unused"
    guess = estimate(HTTP, courses_dir=unused, settings=Settings())
    assert not unused.exists()  # the estimate's build ran in a scratch copy
    return guess


@pytest.fixture(scope="module")
def plain_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildResult, FakeMessagesAPI]:
    """One build of the sample over HTTP against the plain fake, read (never written) by the tests."""
    with FakeMessagesAPI() as api:
        result = build_course(HTTP, courses_dir=tmp_path_factory.mktemp("plain"), yes=True, progress=quiet,
                              backend=AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None))
    return result, api


def test_the_range_holds_what_the_build_over_http_costs(
        sample_guess: Estimate, plain_sample: tuple[BuildResult, FakeMessagesAPI]) -> None:
    guess = sample_guess
    result, api = plain_sample
    billed = math.fsum(cost(b.model, Usage(**b.usage)) or 0.0 for b in api.accounting.billed)
    assert guess.low is not None and guess.high is not None and result.cost is not None
    assert billed <= result.cost  # what stay reports is what the fake billed, and the screen
    # the low end is a floor (every prefix any call could share is read): this fake shares
    # exactly that much here, so the floor is met to the last rounding of a float sum
    assert guess.low <= result.cost + 1e-9 and result.cost <= guess.high
    made = calls(curriculum_of(result.course_dir), REGISTRY)  # a model build's: a review per lesson
    assert {s.stage: s.calls for s in guess.stages} == {**made, SCREEN_STAGE: 1}
    # the expected end keys the cache as the API does (model, thinking, format, effort, text):
    # with the same requests, it reads what the fake, which keys so, read, stage by stage
    read: dict[str, int] = {}
    for entry in api.accounting.billed:
        read[entry.stage] = read.get(entry.stage, 0) + entry.usage["cache_read_input_tokens"]
    assert {s.stage: s.expected_read for s in guess.stages if s.stage in read} == read
    assert sum(read.values()) > 0
    assert guess.counted_by == "characters/4" and "characters/4" in guess.lines()[-1]


def test_a_rebuild_after_a_prompt_edit_estimates_only_that_stages_calls(tmp_path: Path) -> None:
    courses, prompts = tmp_path / "courses", tmp_path / "prompts"
    built = build_course(HTTP, courses_dir=courses, yes=True, progress=quiet, settings=Settings())
    shutil.copytree(ROOT / "prompts", prompts)
    (prompts / f"{EDITED}.md").write_text((prompts / f"{EDITED}.md").read_text() + "\nBe brief.\n")
    before = _tree(courses)
    guess = estimate(built.slug, courses_dir=courses, settings=Settings(prompts_dir=prompts), review=False)
    assert _tree(courses) == before  # the user's course is never written
    assert [(s.stage, s.calls) for s in guess.stages] == [(EDITED, calls(curriculum_of(built.course_dir))[EDITED])]
    # built offline, it has no review: a model's rebuild would review every lesson, and says so
    reviewed = estimate(built.slug, courses_dir=courses, settings=Settings(prompts_dir=prompts))
    assert [(s.stage, s.calls) for s in reviewed.stages] == [
        (stage, calls(curriculum_of(built.course_dir), REGISTRY)[stage]) for stage in (EDITED, "review")]
    unedited = estimate(built.slug, courses_dir=courses, settings=Settings(), review=False)
    assert unedited.stages == () and unedited.low == 0.0 == unedited.high  # nothing stale: nothing to pay


def test_with_a_key_the_token_counting_endpoint_counts_every_request(tmp_path: Path) -> None:
    offline = estimate(HTTP, courses_dir=tmp_path, settings=Settings())
    with FakeMessagesAPI() as api:
        counted = estimate(HTTP, courses_dir=tmp_path, settings=Settings(api_key=KEY, base_url=api.url))
    assert counted.counted_by == "the token-counting endpoint"
    assert len(api.token_counts) == sum(s.calls for s in counted.stages) and not api.requests
    # the fake counts as characters/4 per text block: the endpoint's figures are the same
    assert [s.input_tokens for s in counted.stages] == [s.input_tokens for s in offline.stages]


def test_the_command_prints_each_stage_and_the_range(tmp_path: Path) -> None:
    done = run_stay("estimate", str(HTTP), "--courses-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    guess = estimate(HTTP, courses_dir=tmp_path, settings=Settings())
    assert done.stdout.splitlines() == guess.lines()
    assert not any(tmp_path.iterdir())


def test_an_unknown_slug_is_one_line_naming_the_courses_dir(tmp_path: Path) -> None:
    done = run_stay("estimate", "no-such-course", "--courses-dir", str(tmp_path))
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: there is no course 'no-such-course' in {tmp_path} and no brief "
                                        "file no-such-course; give a brief YAML file or a course's slug"]


def test_a_key_the_counting_endpoint_refuses_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    with FakeMessagesAPI(credentials=frozenset({"another-key"})) as api:
        done = run_stay("estimate", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY})
    assert done.returncode == EXIT_USAGE and done.stdout == "" and not api.requests
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: the token-counting endpoint answered 401 for model ")
    assert "check ANTHROPIC_API_KEY" in line and KEY not in line


# -- the expected figure against a realistic build ----------------------------------------------


def _realistic(target: Path | str, courses: Path, seed: int, settings: Settings | None = None,
               batch: bool = False) -> tuple[BuildResult, FakeMessagesAPI]:
    """A build over HTTP against the realistic fake: what stay reports it cost, and the fake."""
    with FakeMessagesAPI(realistic=Realism(seed=seed)) as api:
        result = build_course(target, courses_dir=courses, yes=True, progress=quiet, batch=batch,
                              settings=(settings or Settings()).replace(batch_poll_seconds=0),
                              backend=AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None))
    return result, api


SAMPLE_SEED = 6


@pytest.fixture(scope="module")
def realistic_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildResult, FakeMessagesAPI]:
    """One realistic build of the sample, read (never written) by the tests that need one."""
    return _realistic(HTTP, tmp_path_factory.mktemp("real"), seed=SAMPLE_SEED)


def _compared(what: str, guess: Estimate, result: BuildResult, api: FakeMessagesAPI) -> float:
    """The expected figure's error against the realistic build's cost, printed with the range."""
    assert guess.expected is not None and guess.low is not None and guess.high is not None
    assert result.cost is not None and result.complete
    # no repair round (the realistic answers pass the validator) and no call unforeseen
    assert len(api.requests) + len(api.screens) == sum(s.calls for s in guess.stages)
    error = guess.expected / result.cost - 1
    print(f"\n{what}: expected ${guess.expected:.4f} (low ${guess.low:.4f}, high ${guess.high:.4f}); "
          f"the realistic fake billed ${result.cost:.4f}; off by {error:+.1%}")
    return error


@pytest.mark.slow
def test_the_expected_cost_of_a_24_lesson_course_is_within_30_percent_of_a_realistic_build(
        tmp_path: Path) -> None:
    guess = estimate(LARGE, courses_dir=tmp_path / "unused", settings=Settings())
    result, api = _realistic(LARGE, tmp_path / "real", seed=24)
    curriculum = curriculum_of(result.course_dir)
    assert sum(len(module.lessons) for module in curriculum.modules) == LARGE_LESSONS
    assert abs(_compared("24-lesson brief", guess, result, api)) <= TOLERANCE
    assert guess.low is not None and guess.high is not None and result.cost is not None
    assert guess.low <= result.cost <= guess.high


@pytest.mark.sweep
@pytest.mark.parametrize("batch", [False, True], ids=["live", "batch"])
def test_the_expected_cost_of_the_sample_is_within_30_percent_of_a_realistic_build(
        tmp_path: Path, batch: bool, request: pytest.FixtureRequest) -> None:
    if batch:
        guess = estimate(HTTP, courses_dir=tmp_path / "unused", settings=Settings(), batch=batch)
        result, api = _realistic(HTTP, tmp_path / "real", seed=SAMPLE_SEED, batch=batch)
    else:
        guess = request.getfixturevalue("sample_guess")
        result, api = request.getfixturevalue("realistic_sample")
    assert bool(api.batches) is batch
    assert abs(_compared(f"sample brief{' --batch' if batch else ''}", guess, result, api)) <= TOLERANCE


def test_the_expected_cost_of_a_rebuild_after_a_prompt_edit_is_within_30_percent(
        tmp_path: Path, realistic_sample: tuple[BuildResult, FakeMessagesAPI]) -> None:
    courses, prompts = tmp_path / "courses", tmp_path / "prompts"
    built = realistic_sample[0]  # rebuilt in a copy of its own
    shutil.copytree(built.course_dir, courses / built.slug)
    shutil.copytree(ROOT / "prompts", prompts)
    (prompts / f"{EDITED}.md").write_text((prompts / f"{EDITED}.md").read_text() + "\nBe brief.\n")
    edited = Settings(prompts_dir=prompts)
    guess = estimate(built.slug, courses_dir=courses, settings=edited)
    assert [s.stage for s in guess.stages] == [EDITED, "review"]  # a rewritten quiz is reviewed again
    rebuilt, api = _realistic(built.slug, courses, seed=2, settings=edited)
    assert abs(_compared(f"rebuild after an edit of prompts/{EDITED}.md", guess, rebuilt, api)) <= TOLERANCE


@pytest.mark.sweep
@pytest.mark.parametrize("seed", [SAMPLE_SEED, 12, 13])
def test_low_and_high_hold_what_a_realistic_build_costs(tmp_path: Path, seed: int, sample_guess: Estimate,
                                                        request: pytest.FixtureRequest) -> None:
    guess = sample_guess
    if seed == SAMPLE_SEED:
        result, api = request.getfixturevalue("realistic_sample")
    else:
        result, api = _realistic(HTTP, tmp_path / "real", seed=seed)
    assert guess.low is not None and guess.high is not None and result.cost is not None
    assert guess.low <= result.cost <= guess.high
    assert api.accounting.total("output_tokens") > sum(s.typical_output for s in guess.stages)


def test_the_realistic_fake_writes_lessons_inside_house_style_and_thinks(
        tmp_path: Path, realistic_sample: tuple[BuildResult, FakeMessagesAPI]) -> None:
    """The fake the expected figure is checked against: its lessons are longer than the
    offline ones, yet the course passes the validator with no finding on their length."""
    plain = build_course(HTTP, courses_dir=tmp_path / "plain", yes=True, progress=quiet, settings=Settings())
    result, api = realistic_sample
    report = validate_course(result.course_dir, strict=True)
    assert report.fails == 0 and not [d for d in report.defects if d.code in ("les005", "les006", "les007", "les008")]
    # a lesson drawn shorter than its offline body keeps that body: longer over the course, not each
    lessons = sorted(path.relative_to(result.course_dir) for path in result.course_dir.rglob("*.md"))
    assert lessons and sum(len((result.course_dir / path).read_text().split()) for path in lessons) > sum(
        len((plain.course_dir / path).read_text().split()) for path in lessons)
    thinking = [body for body in api.requests + api.screens if body.get("thinking")]
    assert thinking and api.accounting.total("output_tokens") > sum(
        len(str(answer)) // 4 for answer in api.answers)  # the thinking is billed as output


def test_batch_prices_the_wave_at_the_batch_rate_and_its_high_end_keeps_a_live_retry(
        tmp_path: Path, sample_guess: Estimate) -> None:
    live = sample_guess
    batch = estimate(HTTP, courses_dir=tmp_path, settings=Settings(), batch=True)
    assert [s.calls for s in batch.stages] == [s.calls for s in live.stages]
    assert batch.expected is not None and live.expected is not None and batch.expected < live.expected
    assert batch.high is not None and live.high is not None and batch.high > live.high
    done = run_stay("estimate", str(HTTP), "--batch", "--courses-dir", str(tmp_path))
    assert done.returncode == 0 and done.stdout.splitlines() == batch.lines()
    assert "at the batch price for the wave" in batch.lines()[0]


def test_the_high_end_holds_a_build_whose_every_answer_is_cut_off_and_asked_again(
        tmp_path: Path, plain_sample: tuple[BuildResult, FakeMessagesAPI]) -> None:
    """Every call of the edited stage thinks its whole room and is cut off at max_tokens,
    then asked once more with twice the answer's room (``AnthropicBackend._retry``), both billed: a
    ceiling without that retry is passed by about one max_tokens of output a call."""
    courses, prompts = tmp_path / "courses", tmp_path / "prompts"
    shared, api = plain_sample
    shutil.copytree(shared.course_dir, courses / shared.slug)  # rebuilt in a copy of its own
    built = dataclasses.replace(shared, course_dir=courses / shared.slug)
    sizes = [tokens(json.dumps(answer)) for body, answer in zip(api.requests, api.answers, strict=True)
             if stage_of(body) == EDITED]
    room = max(sizes) // 2 + 1  # every answer is longer than this room, and fits in twice it
    assert min(sizes) > room
    shutil.copytree(ROOT / "prompts", prompts)
    (prompts / f"{EDITED}.md").write_text((prompts / f"{EDITED}.md").read_text() + "\nBe brief.\n")
    tight = Settings(prompts_dir=prompts, answer_tokens=room)
    guess = estimate(built.slug, courses_dir=courses, settings=tight)
    with FakeMessagesAPI(thinking=THINKING[STAGES[EDITED].role].room) as cut:
        rebuilt = build_course(built.slug, courses_dir=courses, yes=True, progress=quiet, settings=tight,
                               backend=AnthropicBackend(api_key=KEY, base_url=cut.url, sleep=lambda _s: None,
                                                        answer_tokens=room))
    assert len(cut.requests) == 2 * guess.stages[0].calls  # each call cut off once, then answered
    assert guess.stages[0].retries == guess.stages[0].calls  # and each was foreseen as likely cut off
    assert guess.high is not None and rebuilt.cost is not None and rebuilt.cost <= guess.high
    print(f"\nevery answer cut off once: billed ${rebuilt.cost:.4f}, high ${guess.high:.4f}")
    # the request cache now knows each of those requests needs twice the room: asked again
    # (its files gone), each is sent at that room at once, and the high end prices that room
    for path in built.course_dir.glob(f"modules/*/*.{EDITED}.yaml"):
        path.unlink()
    again = estimate(built.slug, courses_dir=courses, settings=tight)
    think = THINKING[STAGES[EDITED].role].room
    assert [(s.stage, s.max_output) for s in again.stages] == [(EDITED, guess.stages[0].calls * (2 * room + think))]


@pytest.mark.sweep
@pytest.mark.parametrize("reply", [{}, {"input_tokens": None}, {"input_tokens": "many"}, {"input_tokens": -1}],
                         ids=["absent", "null", "text", "negative"])
def test_a_token_count_without_input_tokens_is_the_models_error_in_one_line(tmp_path: Path,
                                                                            reply: dict[str, object]) -> None:
    """Issue 34: a counting endpoint (a gateway, a proxy) whose answer had no ``input_tokens``
    ended the estimate as a bug in stay (exit 3, a traceback); it is the service's answer that
    cannot be used: a model error, named, in one line."""
    with FakeMessagesAPI(counted=lambda _count: dict(reply)) as api:
        done = run_stay("estimate", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY})
    assert done.returncode == exit_code(ModelError("")) and done.stdout == "" and not api.requests
    (line,) = done.stderr.splitlines()
    assert "the token-counting endpoint answered no count of input_tokens" in line and KEY not in line


# -- another backend: its models, at its prices ----------------------------------------------------


def test_an_openai_estimate_prices_openais_model_and_holds_what_its_build_costs(tmp_path: Path) -> None:
    """Issue 34: ``stay estimate`` had no ``--backend`` and priced Claude's models whatever
    the build would use. With ``--backend openai`` it prices the calls that backend sends
    (its model, no thinking) at its own table, and the range holds what a build against an
    OpenAI-compatible server serving that model is billed."""
    from stay.models._openai import OpenAIBackend
    from tests.models.fake_openai import FakeOpenAI

    own = OpenAIBackend().default_models  # OpenAI's own ids: known without asking a server
    guess = estimate(HTTP, courses_dir=tmp_path / "unused", settings=Settings(backend="openai"))
    assert guess.unpriced == frozenset() and None not in (guess.low, guess.expected, guess.high)
    done = run_stay("estimate", str(HTTP), "--backend", "openai", "--courses-dir", str(tmp_path))
    assert done.returncode == 0 and done.stdout.splitlines() == guess.lines()
    with FakeOpenAI(models=tuple(sorted(set(own.values())))) as fake:
        result = build_course(HTTP, courses_dir=tmp_path / "real", yes=True, progress=quiet,
                              settings=Settings(backend="openai", openai_base_url=fake.url))
    assert {body["model"] for body in fake.bodies} == set(own.values())
    assert "thinking" not in json.dumps(fake.bodies) and result.cost is not None
    assert len(fake.bodies) == sum(s.calls for s in guess.stages)  # the screen's call too
    assert guess.low is not None and guess.high is not None and guess.low <= result.cost <= guess.high
    with pytest.raises(UsageError, match=r"^--batch needs the anthropic backend"):  # as the build refuses it
        estimate(HTTP, courses_dir=tmp_path, settings=Settings(backend="openai"), batch=True)


def test_an_estimate_for_a_model_with_no_price_says_unknown_for_every_stage_never_0(tmp_path: Path) -> None:
    from tests.models.fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:  # a local server: its one model, which no table prices
        done = run_stay("estimate", str(HTTP), "--backend", "openai", "--courses-dir", str(tmp_path),
                        env={"OPENAI_BASE_URL": fake.url})
        guess = estimate(HTTP, courses_dir=tmp_path, settings=Settings(backend="openai", openai_base_url=fake.url))
    assert done.returncode == 0, done.stderr
    assert guess.stages and all(s.low is None and s.expected is None and s.high is None for s in guess.stages)
    rows = done.stdout.splitlines()[2:-1]
    assert len(rows) == len(guess.stages) and all("cost unknown (no price on file for" in row for row in rows)
    assert "$0" not in done.stdout and done.stdout.splitlines() == guess.lines()


def test_the_high_end_sends_each_call_once_at_its_room_unless_its_answer_is_likely_cut_off(tmp_path: Path) -> None:
    """Issue 34: the high end asked every call once more at twice its room, cut off or not:
    49 times the expected figure for the 24-lesson brief. With the stages' own rooms no
    answer is likely cut off, so each call is paid once at the ``max_tokens`` it is sent
    with: under every input token at the cache-write rate and every output token of its
    room at the output rate, stage by stage."""
    settings = Settings()
    guess = estimate(LARGE, courses_dir=tmp_path, settings=settings)
    for stage in guess.stages:
        role = STAGES[stage.stage].role if stage.stage in STAGES else "analysis"  # the screen: analysis's model
        rates = PRICES[settings.models[role]].rates
        ceiling = (stage.input_tokens * rates.cache_write + stage.max_output * rates.output) / 1_000_000
        assert stage.high is not None and stage.high <= ceiling, stage
    assert [s.retries for s in guess.stages] == [0] * len(guess.stages)
    assert "likely cut off (0 calls)" in guess.lines()[-1]
