"""A reviewer's redirect, with context: ``stay revise --show`` proposes and writes
nothing, ``--keep`` writes the last proposal with no model call, and the notes on one
file make a thread that each new revision is given and the ledger records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stay.errors import UsageError
from stay.models import ModelRequest
from stay.pipeline import adopt, approve, build_course, revise
from stay.pipeline._state import PROPOSALS, THREAD, THREAD_CHARS, THREAD_NOTES, ThreadNote, bounded, note_sha
from stay.testing import RiggedBackend
from tests.conftest import run_stay
from tests.pipeline.test_build import quiet, tree

SLUG = "how-http-requests-travel"
NOTES = ("Ask about TTLs.", "Name the resolver in the stem.", "Keep it to one sentence.")


class Recording(RiggedBackend):
    """The rigged backend (it writes a revision's note into the answer, as a model would act
    on it), keeping every request it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[ModelRequest] = []

    def complete(self, request: ModelRequest, model: str) -> Any:
        self.seen.append(request)
        return super().complete(request, model)


def _quiz(courses: Path) -> str:
    root = courses / SLUG
    return next(root.glob("modules/*/m01-l02.quiz.yaml")).relative_to(root).as_posix()


def _proposal(courses: Path) -> dict[str, Any]:
    found = list((courses / SLUG / PROPOSALS).iterdir())
    assert len(found) == 1
    return dict(json.loads(found[0].read_text()))


def _entry(courses: Path, path: str) -> dict[str, Any]:
    return dict(json.loads((courses / SLUG / ".state" / "hashes.json").read_text())["artefacts"][path])


def test_a_three_round_show_thread_is_sent_each_round_and_recorded_when_kept(courses: Path) -> None:
    quiz = _quiz(courses)
    file = courses / SLUG / quiz
    sent: list[list[dict[str, Any]]] = []
    for n, note in enumerate(NOTES):
        backend = Recording()
        result = revise(SLUG, [quiz], note=note, show=True, courses_dir=courses, backend=backend, progress=quiet)
        (request,) = backend.seen
        assert request.inputs["reviewer_note"] == note
        sent.append(list(request.inputs.get(THREAD, [])))
        # every earlier note, in order, each set aside by the round after it; the earlier text in the prompt
        assert [item["note"] for item in sent[-1]] == list(NOTES[:n])
        assert all(item["outcome"] == "set aside" for item in sent[-1])
        assert all(earlier in request.user for earlier in NOTES[:n])
        assert f"--- a/{quiz}" in result.diff and f"+++ b/{quiz}" in result.diff
        assert f"Revised on review: {note.rstrip('.')}." in result.diff and result.written == ()
        assert result.diff.rstrip("\n") in result.summary() and "shown, not written" in result.summary()
    proposal = _proposal(courses)
    shown = proposal["text"]
    assert proposal["note"] == NOTES[-1] and [item["note"] for item in proposal["set_aside"]] == list(NOTES[:-1])

    keeper = Recording()
    kept = revise(SLUG, [quiz], keep=True, courses_dir=courses, backend=keeper, progress=quiet)
    assert keeper.seen == [] and kept.calls == 0 and kept.written == (quiz,)
    assert file.read_text() == shown  # the kept file is the last shown proposal
    assert not (courses / SLUG / PROPOSALS).exists() or not any((courses / SLUG / PROPOSALS).iterdir())
    revision = _entry(courses, quiz)["revision"]
    assert revision["note"] == NOTES[-1] and revision["sha"] == note_sha(NOTES[-1])
    outcomes = ["set aside"] * (len(NOTES) - 1) + ["kept"]
    assert revision["thread"] == [{"note": note, "sha": note_sha(note), "outcome": outcome}
                                  for note, outcome in zip(NOTES, outcomes, strict=True)]
    assert f"- revised {quiz} with note {note_sha(NOTES[-1])}" in (courses / SLUG / ".state" / "run-log.md").read_text()

    # the thread goes on: the next revision of the file is given all of it, the kept note marked kept
    later = Recording()
    revise(SLUG, [quiz], note="Add a second distractor.", courses_dir=courses, backend=later, progress=quiet)
    (request,) = later.seen
    assert [(item["note"], item["outcome"]) for item in request.inputs[THREAD]] == list(zip(NOTES, outcomes,
                                                                                          strict=True))


def test_show_writes_nothing_to_the_course_file(courses: Path) -> None:
    root = courses / SLUG
    quiz = _quiz(courses)
    before, stamp = tree(root), (root / quiz).stat().st_mtime_ns
    result = revise(SLUG, [quiz], note=NOTES[0], show=True, courses_dir=courses, backend=RiggedBackend(),
                    progress=quiet)
    assert result.diff and (root / quiz).stat().st_mtime_ns == stamp
    after = tree(root)
    changed = {p for p in after if after[p] != before.get(p)}
    assert {p for p in before if p not in after} == set()
    assert len(changed) == 1 and changed.pop().startswith(f"{PROPOSALS}/")  # the proposal, and nothing else


def test_the_same_note_is_not_sent_twice_for_the_same_proposal(courses: Path) -> None:
    quiz = _quiz(courses)
    revise(SLUG, [quiz], note=NOTES[0], show=True, courses_dir=courses, backend=RiggedBackend(), progress=quiet)
    again = RiggedBackend()
    repeat = revise(SLUG, [quiz], note=NOTES[0], show=True, courses_dir=courses, backend=again, progress=quiet)
    assert again.total_calls == 0 and "Revised on review: Ask about TTLs." in repeat.diff  # shown again, not asked


def test_keep_with_no_proposal_is_refused_in_one_line(courses: Path) -> None:
    quiz = _quiz(courses)
    before = tree(courses / SLUG)
    done = run_stay("revise", SLUG, quiz, "--keep", "--courses-dir", str(courses))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: no proposal to keep for {quiz}: show one first with "
                                        f"`stay revise {SLUG} {quiz} --note '...' --show --courses-dir {courses}`"]
    assert tree(courses / SLUG) == before


def test_keep_of_a_stale_proposal_is_refused_in_one_line(courses: Path) -> None:
    quiz = _quiz(courses)
    file = courses / SLUG / quiz
    revise(SLUG, [quiz], note=NOTES[0], show=True, courses_dir=courses, backend=RiggedBackend(), progress=quiet)
    file.write_text(file.read_text() + "# a person's edit\n")
    edited = file.read_bytes()
    done = run_stay("revise", SLUG, quiz, "--keep", "--courses-dir", str(courses))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert f"the proposal for {quiz} is stale: the file changed since it was shown" in done.stderr
    assert file.read_bytes() == edited


def test_show_and_keep_together_or_keep_with_a_note_are_refused(courses: Path) -> None:
    quiz = _quiz(courses)
    with pytest.raises(UsageError, match="two steps"):
        revise(SLUG, [quiz], note="x", show=True, keep=True, courses_dir=courses, progress=quiet)
    with pytest.raises(UsageError, match="give no --note"):
        revise(SLUG, [quiz], note="x", keep=True, courses_dir=courses, progress=quiet)
    done = run_stay("revise", SLUG, quiz, "--show", "--keep", "--courses-dir", str(courses))
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_a_thread_ends_when_the_file_is_accepted_without_its_revision(courses: Path) -> None:
    quiz = _quiz(courses)
    revise(SLUG, [quiz], note=NOTES[0], courses_dir=courses, backend=RiggedBackend(), progress=quiet)
    adopt(SLUG, courses_dir=courses)  # the file recorded as it is: no revision, so no thread
    backend = Recording()
    revise(SLUG, [quiz], note=NOTES[1], courses_dir=courses, backend=backend, progress=quiet)
    (request,) = backend.seen
    assert THREAD not in request.inputs


def test_approving_the_gate_that_covers_a_file_ends_its_kept_notes(courses: Path) -> None:
    revise(SLUG, ["curriculum"], note=NOTES[0], courses_dir=courses, backend=RiggedBackend(), progress=quiet)

    def thread_sent(note: str) -> list[tuple[str, str]]:
        backend = Recording()
        revise(SLUG, ["curriculum"], note=note, show=True, courses_dir=courses, backend=backend, progress=quiet)
        (request,) = backend.seen
        return [(item["note"], item["outcome"]) for item in request.inputs.get(THREAD, [])]

    assert thread_sent(NOTES[1]) == [(NOTES[0], "kept")]
    build_course(SLUG, courses_dir=courses, progress=quiet)  # its dependents again; it stops at the design gate
    approve(SLUG, "design", courses_dir=courses, by="reviewer")  # the revised curriculum accepted as it is
    assert thread_sent(NOTES[2]) == [(NOTES[1], "set aside")]  # the open proposal's note only


def test_a_first_kept_note_is_recorded_as_before_threads(courses: Path) -> None:
    quiz = _quiz(courses)
    revise(SLUG, [quiz], note=NOTES[0], show=True, courses_dir=courses, backend=RiggedBackend(), progress=quiet)
    revise(SLUG, [quiz], keep=True, courses_dir=courses, progress=quiet)
    assert _entry(courses, quiz)["revision"] == {"note": NOTES[0], "sha": note_sha(NOTES[0])}


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_proposals_are_never_kept_through_a_link(courses: Path, tmp_path: Path, where: str) -> None:
    quiz = _quiz(courses)
    root = courses / SLUG
    target = tmp_path / "outside" if where == "outside" else root / ".state" / "elsewhere"
    target.mkdir()
    (root / PROPOSALS).symlink_to(target, target_is_directory=True)
    done = run_stay("revise", SLUG, quiz, "--note", NOTES[0], "--show", "--courses-dir", str(courses))
    assert done.returncode != 0 and list(target.iterdir()) == []
    (line,) = [text for text in done.stderr.splitlines() if text.startswith("error")]
    # a link out of the course is refused as every such link is; one inside it, by the proposals' own check
    said = "a symlink leads outside the course" if where == "outside" else "is a symbolic link"
    assert said in line and PROPOSALS in line


def test_the_thread_is_bounded_by_count_and_by_characters() -> None:
    many = [ThreadNote(note=f"note {n}", sha=note_sha(f"note {n}"), outcome="set aside")
            for n in range(THREAD_NOTES + 3)]
    assert bounded(many) == many[-THREAD_NOTES:]
    long = [ThreadNote(note="x" * (THREAD_CHARS // 2), sha="0" * 16, outcome="kept") for _ in range(3)]
    assert bounded(long) == long[-2:]  # two fit the budget, the third would pass it


def test_offline_the_loop_runs_and_says_it_proposes_no_change(courses: Path) -> None:
    quiz = _quiz(courses)
    before = (courses / SLUG / quiz).read_bytes()
    shown = run_stay("revise", SLUG, quiz, "--note", NOTES[0], "--show", "--courses-dir", str(courses))
    assert shown.returncode == 0, shown.stderr
    assert "each file is proposed as its template again" in shown.stderr
    assert f"(the proposal for {quiz} changes nothing in it)" in shown.stdout and "shown, not written" in shown.stdout
    kept = run_stay("revise", SLUG, quiz, "--keep", "--courses-dir", str(courses))
    assert kept.returncode == 0 and f"unchanged: {quiz}" in kept.stdout and "revised" not in kept.stdout
    assert (courses / SLUG / quiz).read_bytes() == before
    assert _entry(courses, quiz)["revision"]["note"] == NOTES[0]


def test_the_file_a_proposal_is_diffed_against_is_read_through_the_bounded_reader(tmp_path: Path) -> None:
    """A course file that is not UTF-8, a link, or missing is text to diff against (the
    course's own checks report it), never a traceback, and a link is never followed."""
    from types import SimpleNamespace

    from stay.pipeline._state import current_text

    (tmp_path / "latin.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (tmp_path / "secret.md").write_text("outside\n", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(tmp_path / "secret.md")
    course: Any = SimpleNamespace(root=tmp_path)
    assert current_text(course, "latin.md") == "caf\ufffd\n"
    assert current_text(course, "link.md") == "" and current_text(course, "gone.md") == ""
