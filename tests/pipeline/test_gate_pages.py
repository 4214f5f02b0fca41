"""The gate pages show what a reviewer reviews, and a gate whose files hold a FAIL is
refused by ``--yes`` (never by a person): issue 19 item 7."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

import stay
from stay._display import markdown_text
from stay.artefacts import Assessment, Audience, Curriculum, LessonPlan, Outcomes, load
from stay.errors import exit_code
from stay.pipeline import _graph as page
from stay.pipeline import approve, build_course
from stay.pipeline._commands import open_course_named
from stay.pipeline._state import AUTO_APPROVED, digest, plans_on_disk
from stay.testing import RiggedBackend
from stay.validate import Severity
from tests.conftest import ROOT, run_stay
from tests.pipeline.test_build import quiet

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SLUG = "how-http-requests-travel"
BANNED = {"banned-verb": None}  # every outcomes answer opens an outcome with "understand" (out005)
MARKDOWN = MarkdownIt("commonmark").enable("table")  # raw HTML on, as GitHub renders a committed page


def gate_page(courses: Path, gate: str) -> str:
    return (courses / SLUG / ".state" / f"{gate}-gate.md").read_text(encoding="utf-8")


def section(text: str, heading: str) -> list[str]:
    """The lines of one ``## `` section of a page, blank lines left out."""
    lines = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    return [line for line in lines if line.strip()]


def covered_defects(courses: Path, gate: str) -> tuple[stay.Defect, ...]:
    covered = set(open_course_named(SLUG, courses).covered(gate))
    return tuple(d for d in stay.validate_course(courses / SLUG).defects if d.path in covered)


# -- a FAIL under a gate: --yes refuses, a person may sign -----------------------------------


def test_yes_refuses_a_design_gate_whose_files_hold_a_fail_and_names_the_approve_command(tmp_path: Path) -> None:
    with pytest.raises(stay.PipelineError) as refused:
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=RiggedBackend(defects=BANNED), progress=quiet)
    fails = [d for d in covered_defects(tmp_path, "design") if d.severity == Severity.FAIL]
    assert [d.code for d in fails] == ["out005"]  # the injected defect, and nothing else
    message = str(refused.value)
    assert exit_code(refused.value) == 5
    assert f"its files hold {len(fails)} FAIL" in message and fails[0].line() in message
    # the call comes last, in Python: build_course was called from Python
    assert message.endswith(f"`stay.approve({SLUG!r}, 'design', courses_dir={str(tmp_path)!r})`")
    assert not (tmp_path / SLUG / "modules").exists()  # nothing past the gate was paid for
    assert "design" not in open_course_named(SLUG, tmp_path).gates()  # nobody signed
    last_run = (tmp_path / SLUG / ".state" / "run-log.md").read_text().rsplit("## run ", 1)[1]
    assert "- completed" not in last_run and "- failed: PipelineError: " in last_run  # the log says it was refused

    listed = section(gate_page(tmp_path, "design"), "Defects")
    assert f"- {markdown_text(fails[0].line())}" in listed


def test_a_persons_approval_signs_the_fail_and_the_build_goes_on(tmp_path: Path) -> None:
    backend = RiggedBackend(defects=BANNED)
    with pytest.raises(stay.PipelineError):
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    signed = approve(SLUG, "design", courses_dir=tmp_path, by="reviewer")
    assert [d.code for d in signed] == ["out005"]
    # The plan gate covers the design files too; the person's approval already accepted
    # them as they are, so --yes signs the plans (which hold no FAIL) and the wave runs.
    done = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert done.complete and done.stopped_at is None
    gates = open_course_named(SLUG, tmp_path).gates()
    assert (gates["design"]["by"], gates["plan"]["by"]) == ("reviewer", "auto-approved (--yes)")
    listed = section(gate_page(tmp_path, "plan"), "Defects")  # still shown, but not as what stops --yes
    remaining = covered_defects(tmp_path, "plan")  # the wave has written since; the plan gate's files have not moved
    fails = sum(d.severity == Severity.FAIL for d in remaining)
    assert fails and listed[0] == f"{fails} FAIL, {len(remaining) - fails} WARN in the files this gate covers:"
    assert listed[1:] == [f"- {markdown_text(line)}" for line in page.bounded(remaining)]


@pytest.mark.parametrize("signer", ["reviewer", AUTO_APPROVED])
def test_only_a_persons_design_approval_lets_yes_pass_the_plan_gate_over_a_design_fail(
        tmp_path: Path, signer: str) -> None:
    """A design approval that still holds over a FAIL: a person's has accepted it, so the
    plan gate's --yes goes on; one --yes recorded (when the rules passed those bytes, say
    before a rule was added) has not, so the plan gate refuses it."""
    build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    root = tmp_path / SLUG
    outcomes = root / "outcomes.yaml"
    first = load(outcomes, Outcomes).outcomes[0]
    outcomes.write_text(outcomes.read_text().replace(f"verb: {first.verb}\n", "verb: understand\n", 1))
    gates_file = root / ".state" / "gates.json"
    gates = json.loads(gates_file.read_text())
    gates["gates"]["design"].update(by=signer)
    gates["gates"]["design"]["covered"]["outcomes.yaml"] = digest(outcomes.read_bytes())
    del gates["gates"]["plan"]  # the plan gate is asked again (the plans are stale anyway)
    gates_file.write_text(json.dumps(gates))
    assert open_course_named(SLUG, tmp_path).approval("design") == (True, "")
    if signer == AUTO_APPROVED:
        with pytest.raises(stay.PipelineError, match=r"yes=True does not approve the plan gate: .*out005"):
            build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    else:
        assert build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet).complete


def test_stay_approve_says_how_many_fails_the_person_signs(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, backend=RiggedBackend(defects=BANNED), progress=quiet)
    fails = [d for d in covered_defects(tmp_path, "design") if d.severity == Severity.FAIL]
    said = run_stay("approve", SLUG, "design", "--courses-dir", str(tmp_path))
    assert said.returncode == 0, said.stderr
    assert f"the design gate is approved; its files hold {len(fails)} FAIL" in said.stdout
    (command,) = re.findall(r"`(stay validate [^`]+)`", said.stdout)  # the command it names lists each
    listed = run_stay(*shlex.split(command)[1:]).stdout
    assert fails and all(f"{d.severity} {d.code} {d.path} {d.subject}: {d.message}" in listed for d in fails)
    clean = tmp_path / "clean"
    build_course(HTTP, courses_dir=clean, progress=quiet)
    said = run_stay("approve", SLUG, "design", "--courses-dir", str(clean))
    assert said.stdout == f"{SLUG}: the design gate is approved\n"


# -- what the pages show ----------------------------------------------------------------------


def test_the_design_gate_page_shows_the_curriculum_outcomes_strategy_and_capstone_outcomes(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, progress=quiet)  # stops at the design gate
    root = tmp_path / SLUG
    curriculum, audience = load(root / "curriculum.yaml", Curriculum), load(root / "audience.yaml", Audience)
    outcomes, assessment = load(root / "outcomes.yaml", Outcomes), load(root / "assessment.yaml", Assessment)
    text = gate_page(tmp_path, "design")

    table = section(text, "Curriculum")
    lessons = [lesson for module in curriculum.modules for lesson in module.lessons]
    total = sum(lesson.minutes for lesson in lessons)
    assert table[0] == (f"{len(curriculum.modules)} modules, {len(lessons)} lessons, {total} minutes against a "
                        f"budget of {audience.time_budget_minutes} ({round(100 * total / audience.time_budget_minutes)}%).")
    rows = [line for line in table if line.startswith("| ") and not line.startswith("| Module")]
    assert [row.split(" | ")[1:] for row in rows] == [[lesson.id, markdown_text(lesson.title), f"{lesson.minutes} |"]
                                                      for lesson in lessons]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [  # a module named on its first row
        f"{module.id} {markdown_text(module.title)}" if index == 0 else ""
        for module in curriculum.modules for index in range(len(module.lessons))]

    listed = section(text, "Outcomes")
    assert len(listed) == len(outcomes.outcomes)
    for line, outcome in zip(listed, outcomes.outcomes, strict=True):
        assert line.startswith(f"- {outcome.id} ({outcome.bloom}, verb {outcome.verb}")
        assert line.endswith(f"): {markdown_text(outcome.text)}")

    strategy = section(text, "Assessment")
    assert f"Strategy: {markdown_text(assessment.strategy)}" in strategy
    capstone = [e.outcome for e in assessment.evidence if "capstone" in e.methods]
    assert capstone  # the sample design assesses some outcomes in the capstone
    texts = {outcome.id: outcome.text for outcome in outcomes.outcomes}
    assert strategy[strategy.index(f"Capstone outcomes ({len(capstone)}):") + 1:] == [
        f"- {o}: {markdown_text(texts[o])}" for o in capstone]
    assert section(text, "Defects") == ["The validator finds no defect in the files this gate covers."]
    assert "outcomes.yaml: current" not in text  # what a reviewer reviews, not file names


def test_the_plan_gate_page_shows_each_lessons_sections_terms_and_minutes(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, progress=quiet)
    approve(SLUG, "design", courses_dir=tmp_path, by="reviewer")
    assert build_course(HTTP, courses_dir=tmp_path, progress=quiet).stopped_at == "plan gate"
    curriculum = load(tmp_path / SLUG / "curriculum.yaml", Curriculum)
    plans = plans_on_disk(tmp_path / SLUG, curriculum)
    text = gate_page(tmp_path, "plan")
    lessons = text.split("\n### ")[1:]
    assert len(lessons) == len(plans) == sum(len(module.lessons) for module in curriculum.modules)
    for block, (lesson, plan) in zip(lessons, plans.items(), strict=True):
        lines = block.split("\n## ", 1)[0].splitlines()
        assert lines[0] == f"{lesson}: {markdown_text(plan.title)}"
        assert f"{plan.minutes} minutes; outcomes: {', '.join(plan.outcomes)}." in lines
        rows = [line for line in lines if line.startswith("| ") and not line.startswith("| Section")]
        assert rows == [f"| {markdown_text(s.heading)} | {s.kind} | {s.minutes} |" for s in plan.sections]
        terms = [line for line in lines if line.startswith("- ")]
        assert terms == [f"- {markdown_text(t.term)}: {markdown_text(t.definition)}" for t in plan.new_terms]
    assert "Approve with `stay approve how-http-requests-travel plan`" in text
    assert "This gate has not been answered before." in section(text, "Since the previous answer")


def test_a_gate_page_lists_warns_too_fails_first_and_bounds_the_list() -> None:
    one = stay.Defect("outcomes.yaml", "out005", "x", "a message", Severity.WARN, "outcomes")
    many = [one, *(stay.Defect("outcomes.yaml", "out005", f"o{n}", "m", Severity.FAIL, "outcomes")
                   for n in range(page.LISTED + 2))]
    lines = page.defect_lines(many, refused=True)
    assert lines[2] == f"{page.LISTED + 2} FAIL, 1 WARN in the files this gate covers " \
                       "(`--yes` does not approve the gate while one no person has signed remains):"
    assert page.defect_lines(many, refused=False)[2] == f"{page.LISTED + 2} FAIL, 1 WARN in the files this gate covers:"
    items = [line for line in lines if line.startswith("- ")]
    assert len(items) == page.LISTED + 1 and items[-1] == f"- and {len(many) - page.LISTED} more"  # the WARN too
    assert all("FAIL" in item for item in items[:-1])


# -- untrusted text stays text --------------------------------------------------------------

HOSTILE = "A | B <script>alert(1)</script> *em* [x](javascript:1) `c` ~~s~~ & C# #"


def _cells(tokens: list[Token]) -> list[list[str]]:
    rows: list[list[str]] = []
    for index, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and tokens[index - 1].type in ("td_open", "th_open"):
            rows[-1].append(_text(token))
    return rows


def _text(token: Token) -> str:
    assert {child.type for child in token.children or []} <= {"text"}, token.children  # no markup inside
    return "".join(child.content for child in token.children or [])


def test_model_text_on_a_gate_page_renders_as_the_text_it_is() -> None:
    curriculum = Curriculum.model_validate({"modules": [{"id": "m01", "slug": "a", "title": HOSTILE, "summary": "s",
        "lessons": [{"id": "m01-l01", "title": HOSTILE, "minutes": 5, "summary": "s"}]}]})
    outcomes = Outcomes.model_validate({"outcomes": [
        {"id": "1. sneaky", "lesson": "m01-l01", "bloom": "apply", "verb": "- x", "text": HOSTILE}]})
    assessment = Assessment.model_validate({"strategy": "# " + HOSTILE,
                                            "evidence": [{"outcome": "1. sneaky", "methods": ["capstone"]}]})
    plan = LessonPlan.model_validate({"lesson": "m01-l01", "title": HOSTILE + " ##", "minutes": 5, "outcomes": [],
        "sections": [{"heading": HOSTILE, "kind": "hook", "minutes": 5, "covers": []}],
        "new_terms": [{"term": "- term", "definition": HOSTILE}], "prerequisites": [], "revisits": []})
    source = "\n".join([*page.curriculum_lines(curriculum, None), "", *page.outcome_lines(outcomes, assessment), "",
                        *page.assessment_lines(assessment, outcomes), "", *page.plan_lines(curriculum, {"m01-l01": plan})])
    tokens = MARKDOWN.parse(source)
    assert "<script" not in MARKDOWN.render(source)
    visible = " ".join(HOSTILE.split())
    assert _cells(tokens) == [["Module", "Lesson", "Title", "Minutes"], [f"m01 {visible}", "m01-l01", visible, "5"],
                              ["Section", "Kind", "Minutes"], [visible, "hook", "5"]]
    headings = [_text(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert f"m01-l01: {visible} ##" in headings and not any(h.startswith(("A ", visible)) for h in headings)
    items = [_text(tokens[i + 2]) for i, t in enumerate(tokens) if t.type == "list_item_open"]
    assert items == [f"1. sneaky (apply, verb - x; evidence: capstone): {visible}", f"1. sneaky: {visible}",
                     f"- term: {visible}"]
    assert not [t for t in tokens if t.type in ("ordered_list_open", "blockquote_open", "hr")]
    assert f"Strategy: # {visible}" in [_text(t) for t in tokens if t.type == "inline"]


def test_stay_build_yes_exits_5_on_a_hand_edited_fail_and_names_the_command_that_approves_anyway(
        tmp_path: Path) -> None:
    assert run_stay("new", str(HTTP), "--courses-dir", str(tmp_path)).returncode == 0
    outcomes = tmp_path / SLUG / "outcomes.yaml"
    first = load(outcomes, Outcomes).outcomes[0]
    outcomes.write_text(outcomes.read_text().replace(f"verb: {first.verb}\n", "verb: understand\n", 1))
    built = run_stay("build", SLUG, "--yes", "--courses-dir", str(tmp_path))
    assert built.returncode == 5
    (refusal,) = [line for line in built.stderr.splitlines() if line.startswith("refused: ")]
    assert "--yes does not approve the design gate" in refusal and " out005 outcomes.yaml " in refusal
    assert refusal.endswith(f"`stay approve {SLUG} design --courses-dir {tmp_path}`")
