"""The review page (issue 25, item 6): for a course stopped at a gate, ``stay view`` writes
review.html with what the reviewer must judge, every figure derived here from the
course's own files; the commands it prints parse with stay's own parser (and work);
rendering it writes nothing into the course; a course past every gate says nothing
awaits review."""

from __future__ import annotations

import html
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import stay.artefacts as artefacts
from stay.artefacts import Assessment, Audience, Curriculum, LessonPlan, Outcomes
from stay.cli import _parser, main
from stay.pipeline import approve, build_course, gate_status
from stay.stages import REGISTRY
from stay.validate import validate_course
from stay.view import build_site
from tests.view.conftest import HTTP_BRIEF, authors_nav, page_text, quiet

EPOCH = "1780000000"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def _stopped(courses: Path, *gates: str) -> Path:
    """The HTTP course built offline without --yes, each of ``gates`` approved in turn:
    it stops at the next gate."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        result = build_course(HTTP_BRIEF, courses_dir=courses, backend="offline", progress=quiet)
        for gate in gates:
            approve(result.course_dir.name, gate, courses_dir=courses)
            result = build_course(result.course_dir.name, courses_dir=courses, backend="offline", progress=quiet)
        assert not result.complete
        return result.course_dir


@pytest.fixture(scope="module")
def at_design(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _stopped(tmp_path_factory.mktemp("design"))


@pytest.fixture(scope="module")
def at_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _stopped(tmp_path_factory.mktemp("plan"), "design")


@pytest.fixture
def design_copy(at_design: Path, tmp_path: Path) -> Path:
    target = tmp_path / "courses" / at_design.name
    shutil.copytree(at_design, target)
    return target


def _review(course: Path) -> str:
    return build_site(course)["review.html"].decode()


def _commands(page: str) -> list[str]:
    blocks = re.findall(r'<pre class="command"><code>(.*?)</code></pre>', page, re.DOTALL)
    return [line for block in blocks for line in html.unescape(block).splitlines() if line.strip()]


def test_the_design_gate_lists_every_outcome_with_its_level_and_verb(at_design: Path) -> None:
    page = _review(at_design)
    outcomes = artefacts.load(at_design / "outcomes.yaml", Outcomes).outcomes
    assert outcomes
    rows = {re.sub(r"<[^>]+>", " ", row) for row in re.findall(r"<tr>(.*?)</tr>", page, re.DOTALL)}
    shown = {" ".join(html.unescape(row).split()) for row in rows}
    for outcome in outcomes:
        assert f"{outcome.id} {outcome.bloom} {outcome.verb} {outcome.text}" in shown, outcome.id
    assert "<h1>Review: the design gate</h1>" in page


def test_the_design_gate_sums_the_lessons_minutes_against_the_budget(at_design: Path) -> None:
    text = page_text(_review(at_design))
    curriculum = artefacts.load(at_design / "curriculum.yaml", Curriculum)
    budget = artefacts.load(at_design / "audience.yaml", Audience).time_budget_minutes
    lessons = [lesson for module in curriculum.modules for lesson in module.lessons]
    total = sum(lesson.minutes for lesson in lessons)
    assert f"Total against the budget {total} of {budget}" in text
    assert f"Lessons add up to {total} minutes against a budget of {budget} minutes ({round(100 * total / budget)}%" \
        in text
    for lesson in lessons:
        assert f"{lesson.id} {lesson.title} {lesson.minutes}" in text


def test_the_design_gate_shows_the_strategy_and_the_capstone_outcomes(at_design: Path) -> None:
    text = page_text(_review(at_design))
    assessment = artefacts.load(at_design / "assessment.yaml", Assessment)
    texts = {o.id: o.text for o in artefacts.load(at_design / "outcomes.yaml", Outcomes).outcomes}
    capstone = [e.outcome for e in assessment.evidence if "capstone" in e.methods]
    assert capstone  # the offline assessment names the capstone for each module's last applied outcome
    assert f"Strategy: {' '.join(assessment.strategy.split())}" in text
    assert f"Capstone outcomes ({len(capstone)})" in text
    for outcome in capstone:
        assert f"{outcome}: {texts[outcome]}" in text


def test_the_plan_gate_shows_each_lessons_sections_terms_revisits_and_minutes(at_plan: Path) -> None:
    page = _review(at_plan)
    text = page_text(page)
    assert "<h1>Review: the plan gate</h1>" in page
    plans = sorted(at_plan.glob("modules/*/*.plan.yaml"))
    curriculum = artefacts.load(at_plan / "curriculum.yaml", Curriculum)
    assert len(plans) == sum(len(module.lessons) for module in curriculum.modules)
    for path in plans:
        plan = artefacts.load(path, LessonPlan)
        section = re.search(rf'aria-labelledby="plan-{plan.lesson}">(.*?)</section>', page, re.DOTALL)
        assert section, plan.lesson
        shown = page_text(section.group(1))
        assert f"{plan.minutes} minutes; outcomes: {', '.join(plan.outcomes)}." in shown
        for part in plan.sections:
            assert f"{part.heading} {part.kind} {part.minutes}" in shown
        for term in plan.new_terms:
            assert f"{term.term} {term.definition}" in shown
        assert plan.revisits or "Revisits None." in shown
        for revisit in plan.revisits:
            assert revisit in shown
    assert "Curriculum" not in re.findall(r"<h2[^>]*>(.*?)</h2>", page)  # the design is behind the first gate
    assert text.count("Lessons add up to") == 1


def _parsed(line: str) -> tuple[list[str], object]:
    words = shlex.split(line)
    assert words[0] == "stay", line
    return words[1:], _parser().parse_args(words[1:])


@pytest.mark.parametrize("gate", ["design", "plan"])
def test_the_commands_parse_and_name_the_gate_the_course_and_its_courses_dir(
        gate: str, at_design: Path, at_plan: Path) -> None:
    course = at_design if gate == "design" else at_plan
    lines = _commands(_review(course))
    parsed = [_parsed(line)[1] for line in lines]
    approves = [ns for ns in parsed if ns.command == "approve"]  # type: ignore[attr-defined]
    assert [ns.decline for ns in approves] == [False, True]  # type: ignore[attr-defined]
    assert approves[1].note == "..."  # type: ignore[attr-defined]
    for ns in parsed:
        assert ns.slug == course.name  # type: ignore[attr-defined]
        assert Path(ns.courses_dir).resolve() == course.parent.resolve()  # type: ignore[attr-defined]
    assert {ns.gate for ns in approves} == {gate}  # type: ignore[attr-defined]
    revised = [target for ns in parsed if ns.command == "revise" for target in ns.targets]  # type: ignore[attr-defined]
    assert all(ns.note == "..." for ns in parsed if ns.command == "revise")  # type: ignore[attr-defined]
    # each file a stage of the gate's phase writes (a lesson's by its pattern); not the files
    # written from one (example.yaml's data files), which are revised through it
    own = {path.relative_to(course).as_posix() for stage in REGISTRY if stage.phase == gate
           for path in course.glob(stage.output if stage.scope == "course" else f"modules/*/{stage.output}"
                                   .format(lesson="*"))}
    assert own and sorted(revised) == sorted(own)


def test_the_printed_decline_declines_the_gate(design_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    decline = next(line for line in _commands(_review(design_copy)) if "--decline" in line)
    assert main(shlex.split(decline)[1:]) == 0
    verdict = gate_status(design_copy.name, courses_dir=design_copy.parent)["design"]
    assert verdict == "the design gate was declined"


def test_under_the_default_courses_dir_the_commands_carry_no_flag(
        at_design: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(at_design, tmp_path / "courses" / at_design.name)
    monkeypatch.chdir(tmp_path)
    lines = _commands(_review(Path("courses") / at_design.name))
    assert lines and all("--courses-dir" not in line for line in lines)
    assert f"stay approve {at_design.name} design" in lines


def test_the_defects_listed_are_the_validators_in_the_covered_files(design_copy: Path) -> None:
    outcomes = design_copy / "outcomes.yaml"
    first = artefacts.load(outcomes, Outcomes).outcomes[0]
    outcomes.write_text(outcomes.read_text().replace(f"verb: {first.verb}", "verb: ponder", 1))
    report = validate_course(design_copy)
    covered = {"audience.yaml", "curriculum.yaml", "outcomes.yaml", "assessment.yaml"}
    found = [d for d in report.defects if d.path in covered]
    assert any(d.path == "outcomes.yaml" for d in found)
    page = _review(design_copy)
    table = re.search(r'<h2 id="review-defects">.*?</section>', page, re.DOTALL)
    assert table
    rows = [html.unescape(row) for row in re.findall(r'<tr class="severity-[a-z]+">(.*?)</tr>', table.group(0),
                                                     re.DOTALL)]
    assert len(rows) == len(found)
    for defect in found:
        assert any(f"<code>{defect.code}</code>" in row and f"<td>{defect.message}</td>" in row for row in rows), defect


def test_the_first_answer_has_nothing_to_compare(at_design: Path) -> None:
    assert "First answer: nothing to compare" in page_text(_review(at_design))


def test_a_change_since_a_decline_is_named_and_the_text_said_not_kept(design_copy: Path) -> None:
    """An answer given before the answered store existed: its bytes are not kept."""
    slug, courses = design_copy.name, design_copy.parent
    approve(slug, "design", courses_dir=courses, decline=True, note="<b>shorter</b>")
    shutil.rmtree(design_copy / ".state" / "answered")
    assessment = design_copy / "assessment.yaml"
    assessment.write_text(assessment.read_text() + "\n")
    page = _review(design_copy)
    text = page_text(page)
    assert "Last declined at" in text and "with the note: <b>shorter</b>" in text  # escaped: shown as text
    assert "&lt;b&gt;shorter&lt;/b&gt;" in page
    assert "assessment.yaml (changed)" in text
    assert "The earlier text is not kept" in text
    assert "curriculum.yaml (changed)" not in text


def test_a_forced_revision_keeps_the_declined_bytes_and_the_page_diffs_them(design_copy: Path) -> None:
    """A file edited by hand and declined, then revised with --force: its declined bytes
    are kept in .state/retired/ too, so without the answered store (an answer given before
    it existed) the page diffs those against the revised file."""
    slug, courses = design_copy.name, design_copy.parent
    curriculum = design_copy / "curriculum.yaml"
    title = artefacts.load(curriculum, Curriculum).modules[0].lessons[1].title
    curriculum.write_text(curriculum.read_text().replace(f"title: {title}", "title: A <hand> edit", 1))
    approve(slug, "design", courses_dir=courses, decline=True, note="say it plainer")
    shutil.rmtree(design_copy / ".state" / "answered")
    assert main(["revise", slug, "curriculum.yaml", "--force", "--note", "plainer", "--courses-dir",
                 str(courses)]) == 0
    page = _review(design_copy)
    diff = re.search(r'<pre class="review-diff">(.*?)</pre>', page, re.DOTALL)
    assert diff
    lines = html.unescape(re.sub(r"<[^>]+>", "", diff.group(1))).splitlines()
    assert [line.split()[0] for line in lines if line.endswith("title: A <hand> edit")] == ["-"]
    assert [line.split()[0] for line in lines if line.endswith(f"title: {title}")] == ["+"]
    assert re.search(r'<span class="diff-del">-\s+title: A &lt;hand&gt; edit</span>', diff.group(1))
    assert "kept in .state/retired/" in page_text(page)


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    found = {}
    for current, _dirs, files in os.walk(root):
        for name in files:
            path = Path(current) / name
            found[path.relative_to(root).as_posix()] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found


def test_rendering_the_review_writes_nothing_into_the_course(design_copy: Path, tmp_path: Path) -> None:
    approve(design_copy.name, "design", courses_dir=design_copy.parent, decline=True, note="again")
    (design_copy / "outcomes.yaml").write_text((design_copy / "outcomes.yaml").read_text() + "\n")
    before = _snapshot(design_copy)
    assert main(["view", design_copy.name, "--courses-dir", str(design_copy.parent), "--out",
                 str(tmp_path / "site")]) == 0
    assert (tmp_path / "site" / "review.html").is_file()
    assert _snapshot(design_copy) == before


def test_the_index_and_nav_point_at_the_review_while_a_gate_waits(at_design: Path) -> None:
    site = build_site(at_design)
    assert build_site(at_design) == site  # same course, same bytes
    assert 'href="review.html">Review the design gate</a>' in site["index.html"].decode()
    for name, data in site.items():  # every page's "For authors" navigation offers it
        if name.endswith(".html"):
            assert 'href="review.html"' in (authors_nav(data) or ""), name


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    courses = tmp_path_factory.mktemp("finished")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        result = build_course(HTTP_BRIEF, courses_dir=courses, yes=True, backend="offline", progress=quiet)
    assert result.complete
    yield result.course_dir


def test_a_course_past_every_gate_says_nothing_awaits_review(finished: Path) -> None:
    site = build_site(finished)
    review = page_text(site["review.html"])
    assert "Nothing awaits review: every gate's approval holds." in review
    assert "stay approve" not in review
    assert "review.html" not in site["index.html"].decode()  # neither called out nor in the nav


@pytest.mark.parametrize("damaged", [".state/gates.json", "curriculum.yaml"])
def test_a_damaged_ledger_or_course_is_described_on_the_review_page(design_copy: Path, damaged: str) -> None:
    approve(design_copy.name, "design", courses_dir=design_copy.parent, decline=True, note="")
    (design_copy / damaged).write_text("{ not: [json or yaml")
    review = page_text(build_site(design_copy)["review.html"])
    assert "the gates cannot be read:" in review and "Traceback" not in review
