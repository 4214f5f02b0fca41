"""Acting on a review: a decline stands, a note reaches the model, one artefact can be
revised on request, and nothing else is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stay
from stay.errors import PipelineError, UsageError
from stay.pipeline import approve, build_course, gate_status, revise, status
from stay.pipeline._graph import build, declare, problems
from stay.stages import REGISTRY
from stay.testing import RiggedBackend
from tests.conftest import ROOT, run_stay
from tests.expected import LESSON_WRITERS
from tests.pipeline.test_build import quiet, tree

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SLUG = "how-http-requests-travel"
NOTE = "fewer modules; the audience already knows SQL"




cli = run_stay


# -- a decline stands --------------------------------------------------------------------


def test_a_decline_stands_against_yes_while_nothing_it_covers_changed(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, progress=quiet)  # stops at the design gate
    approve(SLUG, "design", courses_dir=tmp_path, decline=True, note=NOTE, by="reviewer")
    backend = RiggedBackend()
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.stopped_at == "design gate" and backend.total_calls == 0
    assert "was declined ('fewer modules; the audience already knows SQL')" in result.reason
    assert "stay.revise(" in result.reason and "stay.approve(" in result.reason  # called from Python
    assert gate_status(SLUG, courses_dir=tmp_path)["design"] == "the design gate was declined"
    done = cli("build", SLUG, "--yes", "--courses-dir", str(tmp_path))
    assert done.returncode == 4 and "was declined" in done.stdout


def test_yes_still_answers_a_gate_nobody_answered_and_one_whose_files_changed_since_the_decline(
        tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, progress=quiet)
    approve(SLUG, "design", courses_dir=tmp_path, decline=True, note=NOTE)
    # the note of the decline is used; a rigged backend writes it in, as a model would act on it
    revise(SLUG, ["curriculum"], courses_dir=tmp_path, backend=RiggedBackend(), progress=quiet)
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    assert result.complete  # the decline was about the old curriculum; --yes answers the new one


def test_a_revision_after_a_decline_retires_no_approval_that_never_held(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, progress=quiet)
    approve(SLUG, "design", courses_dir=tmp_path, decline=True, note=NOTE)
    result = revise(SLUG, ["curriculum"], courses_dir=tmp_path, backend=RiggedBackend(), progress=quiet)
    assert "approval" not in result.reason  # declined, and the plan gate never answered
    readers = [stage for stage in REGISTRY if stage.phase == "design"  # what is written so far
               and any(getattr(source, "FILE", None) == "curriculum.yaml" for _name, source in stage.inputs)]
    assert result.reason.startswith(f"revised curriculum.yaml; {len(readers)} files now stale: run "
                                    "`stay.build_course(")  # revise was called from Python


# -- revising a design artefact --------------------------------------------------------------


def test_revising_a_design_artefact_retires_its_gate_and_makes_its_dependents_stale(courses: Path) -> None:
    root = courses / SLUG
    before = tree(root)
    backend = RiggedBackend()
    result = revise(SLUG, ["curriculum"], note=NOTE, courses_dir=courses, backend=backend, progress=quiet)
    assert backend.calls == {"curriculum": 1}
    assert result.written == ("curriculum.yaml",) and result.complete
    assert "Revised on review: fewer modules; the audience already knows SQL." in (root / "curriculum.yaml").read_text()
    gates = gate_status(SLUG, courses_dir=courses)
    assert gates["design"].startswith("curriculum.yaml changed since the design gate was approved")
    statuses = status(SLUG, courses_dir=courses)
    assert statuses["curriculum.yaml"] == ("current", [])
    assert statuses["outcomes.yaml"] == ("stale", ["curriculum.yaml"])  # dependents: stale, not rewritten
    changed = {p for p in tree(root) if tree(root)[p] != before.get(p)}
    assert changed <= {"curriculum.yaml", "course.yaml", ".state/hashes.json", ".state/run-log.md"}
    assert "the design and plan approvals no longer hold" in result.reason


@pytest.mark.parametrize("targets", [["curriculum"], ["m01-l02"]])
def test_a_revision_that_changes_no_byte_says_so_and_counts_no_file_written(courses: Path,
                                                                            targets: list[str]) -> None:
    """Offline the answer is the file from its template again, byte for byte: the count of
    files written is the files whose bytes changed (the ledger's own files aside), and no
    file is called revised; the note is recorded, so it is not sent again. --show and
    --keep of such a proposal say the same."""
    import re

    root = courses / SLUG
    ledger = {".state/hashes.json", ".state/run-log.md"}
    for step in (["--note", NOTE], ["--note", "Say more.", "--show"], ["--keep"]):
        before = tree(root)
        done = cli("revise", SLUG, *targets, *step, "--courses-dir", str(courses))
        assert done.returncode == 0, done.stderr
        after = tree(root)
        changed = sorted(p for p in after if after[p] != before.get(p)  # a proposal is not a course file
                         and p not in ledger and not p.startswith(".state/proposals/"))
        assert changed == [] and "revised " not in done.stdout, done.stdout
        counted = re.findall(r"(\d+) files? written in ", done.stderr)
        assert counted in ([], [str(len(changed))]), done.stderr  # --keep makes no call and prints no count
        assert step == ["--note", "Say more.", "--show"] or "unchanged: " in done.stdout, done.stdout
    repeat = cli("revise", SLUG, *targets, "--note", "Say more.", "--courses-dir", str(courses))  # the last kept
    assert "already has this note" in repeat.stdout + repeat.stderr


def test_the_note_is_in_the_request_as_reviewer_guidance_beside_the_current_file(courses: Path) -> None:
    seen = []

    class Recording(RiggedBackend):
        def complete(self, request, model):  # type: ignore[no-untyped-def]
            seen.append(request)
            return super().complete(request, model)

    quiz = next((courses / SLUG).glob("modules/*/m01-l02.quiz.yaml"))
    current = quiz.read_text()
    revise(SLUG, ["m01-l02"], note="Ask about TTLs.", courses_dir=courses, backend=Recording(), progress=quiet)
    asked = {r.stage: r for r in seen}
    assert set(asked) == set(LESSON_WRITERS)  # a lesson id: its lesson files
    request = asked["quiz"]
    assert request.inputs["reviewer_note"] == "Ask about TTLs."
    assert "## reviewer_note\n\nAsk about TTLs.\n" in request.user
    assert "## current_version" in request.user and current.splitlines()[1] in request.user


# -- revising one lesson's quiz -------------------------------------------------------------------


def test_revising_one_quiz_makes_exactly_one_call_and_touches_nothing_else(courses: Path) -> None:
    root = courses / SLUG
    quiz = next(root.glob("modules/*/m01-l02.quiz.yaml")).relative_to(root).as_posix()
    before = tree(root)
    backend = RiggedBackend()
    result = revise(SLUG, [quiz], note="Ask about TTLs.", courses_dir=courses, backend=backend, progress=quiet)
    assert backend.calls == {"quiz": 1} and result.written == (quiz,)
    after = tree(root)
    assert {p for p in after if after[p] != before.get(p)} == {quiz, ".state/hashes.json", ".state/run-log.md"}
    assert gate_status(SLUG, courses_dir=courses) == {"design": "approved", "plan": "approved"}
    ledger = json.loads((root / ".state" / "hashes.json").read_text())["artefacts"][quiz]
    assert ledger["revision"]["note"] == "Ask about TTLs." and len(ledger["revision"]["sha"]) == 16
    assert f"- revised {quiz} with note {ledger['revision']['sha']}: 'Ask about TTLs.'" in \
        (root / ".state" / "run-log.md").read_text()

    rebuild = RiggedBackend()
    build_course(SLUG, courses_dir=courses, yes=True, backend=rebuild, progress=quiet)
    assert rebuild.total_calls == 0  # a rebuild keeps the revision
    assert "Revised on review: Ask about TTLs." in (root / quiz).read_text()
    again = RiggedBackend()
    repeat = revise(SLUG, [quiz], note="Ask about TTLs.", courses_dir=courses, backend=again, progress=quiet)
    assert again.total_calls == 0 and "already has this note" in repeat.reason  # never sent twice


def test_a_wave_revision_needs_both_approvals_and_a_design_one_none(courses: Path) -> None:
    approve(SLUG, "plan", courses_dir=courses, decline=True)
    backend = RiggedBackend()
    with pytest.raises(PipelineError, match="needs the plan approval to hold: the plan gate was declined"):
        revise(SLUG, ["quiz"], note="x y z", courses_dir=courses, backend=backend, progress=quiet)
    assert backend.total_calls == 0
    revise(SLUG, ["assessment"], note="Weigh the capstone more.", courses_dir=courses, backend=backend,
           progress=quiet)
    assert backend.calls == {"assessment": 1}


# -- edited files ---------------------------------------------------------------------------------


def test_an_edited_file_is_revised_only_with_force_and_its_bytes_are_kept(courses: Path) -> None:
    root = courses / SLUG
    lesson = next(root.glob("modules/*/m02-l01.md"))
    rel = lesson.relative_to(root).as_posix()
    edited = lesson.read_text() + "\nA person's paragraph.\n"
    lesson.write_text(edited)
    backend = RiggedBackend()
    with pytest.raises(PipelineError, match=r"was edited by hand: revise it with --force"):
        revise(SLUG, [rel], note="Tighter.", courses_dir=courses, backend=backend, progress=quiet)
    assert backend.total_calls == 0 and lesson.read_text() == edited
    refused = cli("revise", SLUG, rel, "--note", "Tighter.", "--courses-dir", str(courses))
    assert refused.returncode == 5 and "--force" in refused.stderr
    revise(SLUG, [rel], note="Tighter.", courses_dir=courses, force=True, backend=backend, progress=quiet)
    (kept,) = root.glob(f".state/retired/run-*/{rel}")
    assert kept.read_text() == edited and "Revised on review: Tighter." in lesson.read_text()
    assert status(SLUG, courses_dir=courses)[rel].state == "current"


# -- targets and notes ----------------------------------------------------------------------------


def test_targets_are_paths_lesson_ids_or_stage_names_and_anything_else_is_one_line(courses: Path) -> None:
    with pytest.raises(UsageError, match=r"'m09-l09' names no artefact of course"):
        revise(SLUG, ["m09-l09"], note="x", courses_dir=courses, progress=quiet)
    with pytest.raises(UsageError, match=r"glossary\.yaml is not written by a stage"):
        revise(SLUG, ["glossary.yaml"], note="x", courses_dir=courses, progress=quiet)
    with pytest.raises(UsageError, match="no note to revise"):
        revise(SLUG, ["quiz"], courses_dir=courses, progress=quiet)
    result = cli("revise", SLUG, "capstone", "--note", "Shorter milestones.", "--courses-dir", str(courses))
    assert result.returncode == 0 and "unchanged: project.yaml" in result.stdout  # offline: its template again


def test_the_python_api_returns_the_same_result_type_as_build_course(courses: Path) -> None:
    result = stay.revise(SLUG, ["capstone"], note="Name the audience.", courses_dir=courses, progress=quiet)
    assert isinstance(result, stay.BuildResult) and result.command == "revise" and result.calls == 1


# -- the graph ---------------------------------------------------------------------------------------


def test_revise_enters_through_a_guard_that_declares_the_gates_each_phase_needs() -> None:
    graph = build(declare())
    assert graph.graph["commands"]["revise"].entry == "revise_seed"
    assert graph.nodes["revise_seed"]["requires_by_phase"] == {"design": (), "plan": ("design",),
                                                               "wave": ("design", "plan"), "review": ("design", "plan")}
    broken = build(declare())
    broken.nodes["revise_seed"]["requires_by_phase"] = {"design": (), "plan": (), "wave": ("design",)}
    found = problems(broken)
    assert any("requires [] for a plan file" in p for p in found)
    assert any("requires ['design'] for a wave file" in p for p in found)


def test_revise_walks_its_own_nodes_and_asks_in_stage_order_whatever_order_it_was_given(courses: Path) -> None:
    """The runner follows choose_work to revise's nodes: the trace has a span for each node
    of revise's walk and none for a stage node or a gate; the targets are asked in stage
    order (curriculum before outcomes, which reads it), not in the order they were named."""
    from stay.pipeline._graph import command_walk

    backend = RiggedBackend()
    result = revise(SLUG, ["outcomes", "curriculum"], note="Shorter.", courses_dir=courses, backend=backend,
                    progress=quiet)
    assert list(backend.calls) == ["curriculum", "outcomes"]
    trace = courses / SLUG / ".runs" / "traces" / f"{result.trace_id}.jsonl"
    spans = [r["name"] for r in map(json.loads, trace.read_text().splitlines()) if r["type"] == "span"]
    graph = build(declare())
    assert spans == command_walk(graph, "revise")
    assert "revise_files" in spans and not [n for n in spans if graph.nodes[n]["kind"] in ("stage", "gate-ask")]
