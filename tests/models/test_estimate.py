"""``stay estimate``: the calls a build would make and a cost range, made offline, checked
against what a build over HTTP against the fake (which bills realistically) really costs."""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path

from stay.errors import EXIT_USAGE
from stay.models import SCREEN_STAGE, AnthropicBackend, Usage, cost
from stay.pipeline import build_course, estimate
from stay.settings import Settings
from tests.conftest import ROOT, run_stay
from tests.expected import calls, curriculum_of
from tests.models.fake_api import FakeMessagesAPI
from tests.models.helpers import HTTP, KEY, quiet

EDITED = "quiz"  # the stage whose prompt the rebuild test edits


def _tree(root: Path) -> str:
    """A digest of every file under ``root``: its paths and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_the_range_holds_what_the_build_over_http_costs(tmp_path: Path) -> None:
    guess = estimate(HTTP, courses_dir=tmp_path / "unused", settings=Settings())
    assert not (tmp_path / "unused").exists()  # the estimate's build ran in a scratch copy
    with FakeMessagesAPI() as api:
        result = build_course(HTTP, courses_dir=tmp_path / "real", yes=True, progress=quiet,
                              backend=AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None))
    billed = math.fsum(cost(b.model, Usage(**b.usage)) or 0.0 for b in api.accounting.billed)
    assert guess.low is not None and guess.high is not None and result.cost is not None
    assert billed <= result.cost  # what stay reports is what the fake billed, and the screen
    # the low end is a floor (every prefix any call could share is read): this fake shares
    # exactly that much here, so the floor is met to the last rounding of a float sum
    assert guess.low <= result.cost + 1e-9 and result.cost <= guess.high
    made = calls(curriculum_of(result.course_dir))
    assert {s.stage: s.calls for s in guess.stages} == {**made, SCREEN_STAGE: 1}
    assert guess.counted_by == "characters/4" and "characters/4" in guess.lines()[-1]


def test_a_rebuild_after_a_prompt_edit_estimates_only_that_stages_calls(tmp_path: Path) -> None:
    courses, prompts = tmp_path / "courses", tmp_path / "prompts"
    built = build_course(HTTP, courses_dir=courses, yes=True, progress=quiet, settings=Settings())
    shutil.copytree(ROOT / "prompts", prompts)
    (prompts / f"{EDITED}.md").write_text((prompts / f"{EDITED}.md").read_text() + "\nBe brief.\n")
    before = _tree(courses)
    guess = estimate(built.slug, courses_dir=courses, settings=Settings(prompts_dir=prompts))
    assert _tree(courses) == before  # the user's course is never written
    assert [(s.stage, s.calls) for s in guess.stages] == [(EDITED, calls(curriculum_of(built.course_dir))[EDITED])]
    unedited = estimate(built.slug, courses_dir=courses, settings=Settings())
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
    with FakeMessagesAPI(credentials={"another-key"}) as api:
        done = run_stay("estimate", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY})
    assert done.returncode == EXIT_USAGE and done.stdout == "" and not api.requests
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: the token-counting endpoint answered 401 for model ")
    assert "check ANTHROPIC_API_KEY" in line and KEY not in line
