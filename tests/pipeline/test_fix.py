"""Regenerating a file that exists (issue 19 items 3 and 7): a repair or a revision sees
the file as it stands and the one instruction block, the repair keeps what the defects
do not touch and says how much it kept, and a design file or plan is checked at the
write, so a FAIL goes back to the model before the gate, and what remains is listed."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pytest

from stay.artefacts import LessonContent, load
from stay.models import ModelAnswer, ModelRequest, request_params
from stay.pipeline import build_course, revise
from stay.pipeline._run import CURRENT, DEFECTS, Change, fenced
from stay.stages import REGENERATE, Prompts, offline_answer
from stay.testing import RiggedBackend
from stay.validate import validate_course
from tests.conftest import ROOT
from tests.models.fake_api import inputs_of
from tests.pipeline.test_build import quiet

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SLUG = "how-http-requests-travel"
BLOCK = Prompts.load().template(REGENERATE).strip()


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_REPAIR_ROUNDS", raising=False)


class Recording(RiggedBackend):
    """The offline backend, keeping every request it was sent."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.seen: list[ModelRequest] = []

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        self.seen.append(request)
        return super().complete(request, model)

    def fixes(self, stage: str) -> list[ModelRequest]:
        return [r for r in self.seen if r.stage == stage and DEFECTS in r.inputs]


def _sections(request: ModelRequest) -> list[str]:
    """The named inputs of a request's user message, in order."""
    return [line[3:] for line in request.user.splitlines() if line.startswith("## ") and "\n" not in line[3:]
            and line[3:] in request.inputs]


# -- item 3: a repair sees the file and is told what to do ---------------------------------------


def test_a_repair_request_carries_the_file_and_the_instruction_and_keeps_what_the_defect_does_not_touch(
        tmp_path: Path) -> None:
    backend = Recording(defects={"banned-phrase": 1})  # one lesson's first answer says "simply"
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    (request,) = backend.fixes("content")
    stood = request.inputs[CURRENT]
    path = request.artefact
    assert isinstance(stood, str) and not stood.startswith("---")  # the body, without front matter
    inner = max(map(len, re.findall("`+", stood)), default=0)
    fence = "`" * max(3, inner + 1)  # longer than the lesson's own code fences: they cannot close it
    assert "simply" in stood and f"{fence}markdown\n{stood}{fence}" in request.user
    assert [d["code"] for d in request.inputs[DEFECTS]] == ["les009"]
    assert BLOCK in request.user  # the one instruction block, in the user message
    assert _sections(request)[-3:] == [CURRENT, DEFECTS, REGENERATE]  # the file, what to do, how

    now = load(result.course_dir / path, LessonContent).body
    old, new = stood.splitlines(), now.splitlines()
    changed = [line for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
               if tag != "equal" for line in old[i1:i2]]
    assert changed and all("simply" in line for line in changed) and "simply" not in now

    assert result.repair is not None and result.repair.stop == "nothing remains"
    (change,) = result.repair.rounds[0].changes
    whole = (result.course_dir / path).read_text().splitlines()
    assert change.path == path and change.lines == len(whole) and change.kept == len(whole) - len(changed)
    assert f"{path}: {change.describe()}" in result.summary()
    log = (result.course_dir / ".state" / "run-log.md").read_text()
    assert f"- fixed {path}: {change.describe()}" in log and "\n".join(change.log_lines()) in log
    assert "diff\n" + change.diff + "\n```" in log
    assert all(f"\n-{line}\n" in change.diff for line in changed)


def test_a_revision_of_a_lesson_sees_its_body_without_front_matter_and_the_instruction(courses: Path) -> None:
    lesson = next((courses / SLUG).glob("modules/*/m01-l02.md"))
    body = load(lesson, LessonContent).body
    backend = Recording()
    revise(SLUG, ["m01-l02"], note="Name the resolver.", courses_dir=courses, backend=backend, progress=quiet)
    (request,) = (r for r in backend.seen if r.stage == "content")
    assert request.inputs[CURRENT] == body
    assert not str(request.inputs[CURRENT]).startswith("---")
    assert _sections(request)[-3:] == [CURRENT, "reviewer_note", REGENERATE] and BLOCK in request.user


def test_the_offline_repair_keeps_the_file_it_is_shown_not_a_fresh_one() -> None:
    # a sentence the generator would never write survives; only the line the defect names changes
    inputs = {"plan": _sample_plan(), "outcomes": [], "audience": {}}
    fresh = offline_answer("content", inputs)["body"]
    lines = fresh.splitlines(keepends=True)
    prose = next(i for i, line in enumerate(lines) if "This section" in line)
    lines[prose] = lines[prose].replace("This section", "This section simply", 1)
    lines.insert(1, "A reviewer's own sentence.\n")
    stood = "".join(lines)
    defect = {"code": "les009", "path": "x.md", "subject": "prose", "message": "banned phrases: 'simply'"}
    body = offline_answer("content", {**inputs, CURRENT: stood, DEFECTS: [defect]})["body"]
    assert body == stood.replace("This section simply", "This section", 1)


def test_the_offline_repair_of_yaml_replaces_only_the_items_the_defects_name() -> None:
    from stay.stages._offline import keep_file

    fresh = {"outcomes": [{"id": "o1", "verb": "explain"}, {"id": "o2", "verb": "list"}]}
    stood = {"outcomes": [{"id": "o1", "verb": "understand"}, {"id": "o2", "verb": "name"}]}
    named = [{"code": "out005", "subject": "o1", "message": "verb 'understand'"}]
    assert keep_file("outcomes", fresh, stood, named) == {
        "outcomes": [{"id": "o1", "verb": "explain"}, {"id": "o2", "verb": "name"}]}  # o2 as it stood
    plans = {"plans": [{"lesson": "l1", "sections": [{"id": "s1", "x": 1}, {"id": "s2", "x": 2}]},
                       {"lesson": "l2", "sections": []}]}
    one = {"lesson": "l1", "sections": [{"id": "s1", "x": 9}, {"id": "s2", "x": 8}]}
    answer = keep_file("plan", plans, one, [{"code": "pln", "subject": "s2 heading", "message": "m"}])
    assert answer["plans"] == [{"lesson": "l1", "sections": [{"id": "s1", "x": 9}, {"id": "s2", "x": 2}]},
                               plans["plans"][1]]
    assert keep_file("outcomes", fresh, stood, [{"code": "x", "subject": "-", "message": "m"}]) == fresh


def _sample_plan() -> dict[str, Any]:
    from stay.artefacts import LessonPlan, to_data

    plan = next((ROOT / "courses" / SLUG).glob("modules/*/m01-l01.plan.yaml"))
    data = to_data(load(plan, LessonPlan))
    assert isinstance(data, dict)
    return data


def test_a_change_counts_the_lines_kept_and_bounds_its_diff() -> None:
    before = "".join(f"line {n}\n" for n in range(10))
    change = Change.of("a.yaml", before, before.replace("line 3", "LINE 3"))
    assert (change.kept, change.lines) == (9, 10) and change.describe() == "9 of 10 lines kept (90%)"
    rewritten = Change.of("a.yaml", before * 20, "other\n" * 200)
    assert rewritten.kept == 0 and "more diff lines" in rewritten.diff.splitlines()[-1]
    fenced = Change.of("a.md", "```bash\nls\n```\nold\n", "```bash\nls\n```\nnew\n").log_lines()
    assert fenced[2] == "````diff" and fenced[-2] == "````"  # the lesson's " ```" cannot close it


# -- item 7: the check at the write -------------------------------------------------------------


def test_a_fail_at_the_write_is_asked_again_with_the_defects_and_the_file_before_the_gate(tmp_path: Path) -> None:
    backend = Recording(defects={"banned-verb": 1})  # the first outcomes answer "understands"
    result = build_course(HTTP, courses_dir=tmp_path, backend=backend, progress=quiet)
    assert result.stopped_at == "design gate" and backend.calls["outcomes"] == 2
    (request,) = backend.fixes("outcomes")
    assert [(d["code"], d["path"]) for d in request.inputs[DEFECTS]] == [("out005", "outcomes.yaml")]
    assert request.inputs[CURRENT]["outcomes"][0]["verb"] == "understand" and BLOCK in request.user
    assert result.unresolved == ()
    assert not [d for d in validate_course(result.course_dir).defects if d.path == "outcomes.yaml"]


def test_a_fail_the_model_does_not_fix_remains_and_the_result_lists_it(tmp_path: Path) -> None:
    backend = Recording(defects={"banned-verb": None})  # every outcomes answer, the second one too
    result = build_course(HTTP, courses_dir=tmp_path, backend=backend, progress=quiet)
    assert result.stopped_at == "design gate" and backend.calls["outcomes"] == 2  # once more, never again
    assert [(d.path, d.code) for d in result.unresolved] == [("outcomes.yaml", "out005")]
    assert result.unresolved_by_file() == {"outcomes.yaml": ("out005",)}
    assert "unresolved at the write: outcomes.yaml: out005" in result.summary()


class DamagedPlan(Recording):
    """Its first planning answer gives one plan a title the curriculum does not have."""

    damaged = False

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        answer = super().complete(request, model)
        if request.stage == "plan" and not self.damaged:
            self.damaged = True
            answer.data["plans"][0]["title"] += " (draft)"
        return answer


def test_a_plan_with_a_fail_at_the_write_is_asked_again_alone_before_the_plan_gate(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, yes=False, progress=quiet)
    from stay.pipeline import approve

    approve(SLUG, "design", courses_dir=tmp_path)
    backend = DamagedPlan()
    result = build_course(HTTP, courses_dir=tmp_path, backend=backend, progress=quiet)
    assert result.stopped_at == "plan gate" and result.unresolved == ()
    (request,) = backend.fixes("plan")
    assert {d["code"] for d in request.inputs[DEFECTS]} == {"pln003"}
    assert request.inputs[CURRENT]["title"].endswith(" (draft)") and BLOCK in request.user
    modules = len({r.artefact for r in backend.seen if r.stage == "plan"})
    assert backend.calls["plan"] == modules + 1  # one call per module, and the one fix
    assert not [d for d in validate_course(result.course_dir).defects if d.code == "pln003"]


def test_a_prompts_directory_without_the_instruction_block_is_refused_when_loaded(tmp_path: Path) -> None:
    import shutil

    from stay.errors import UsageError

    target = tmp_path / "prompts"
    shutil.copytree(Prompts.load().directory, target)
    (target / f"{REGENERATE}.md").unlink()
    with pytest.raises(UsageError, match=f"has no {REGENERATE}.md; copy it from stay's prompts/"):
        Prompts.load(target)


def test_a_revised_design_file_is_checked_at_the_write_too(courses: Path) -> None:
    backend = Recording(defects={"banned-verb": 1})  # the revision's answer "understands"
    result = revise(SLUG, ["outcomes"], note="Shorter texts.", courses_dir=courses, backend=backend, progress=quiet)
    assert backend.calls == {"outcomes": 2} and result.unresolved == ()
    (request,) = backend.fixes("outcomes")
    assert [d["code"] for d in request.inputs[DEFECTS]] == ["out005"]
    assert not [d for d in validate_course(courses / SLUG).defects if d.path == "outcomes.yaml"]


def test_a_repair_request_on_the_wire_reads_back_as_the_offline_backend_sees_it(tmp_path: Path) -> None:
    """The fake Messages API answers from the request's text: a lesson's body in a fence
    longer than its own code fences, and the defects' lines, read back as the inputs the
    offline backend repairs from, so a repair over HTTP keeps the file as it does offline."""
    backend = Recording(defects={"banned-phrase": 1, "banned-verb": 1})
    build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    fixes = backend.fixes("content") + backend.fixes("outcomes")
    assert {r.stage for r in fixes} == {"content", "outcomes"}
    for request in fixes:
        seen = inputs_of(request_params(request, "claude-sonnet-5-5"))
        assert seen[CURRENT] == request.inputs[CURRENT]
        wanted = [{k: v for k, v in d.items() if k not in ("severity", "owner")} for d in request.inputs[DEFECTS]]
        assert seen[DEFECTS] == wanted


def test_a_body_holding_code_fences_is_fenced_longer() -> None:
    body = "# T\n\n````text\n```nested```\n````\n"
    shown = fenced(body, "markdown")
    assert shown.startswith("`````markdown\n") and shown.endswith("\n`````") and body in shown
    assert fenced("plain\n", "diff") == "```diff\nplain\n```"
