"""What changed since the last answer at a gate, as a diff (issue 25, item 6): every answer
keeps the bytes of the files its gate covers under ``.state/answered/<digest>``, the review
page diffs a changed file against them, the store holds only what the latest answers
reference, a damaged blob is never shown as history, and the gate-stop line names the
review page. Every expected line is derived from the bytes before and after."""

from __future__ import annotations

import difflib
import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest

import stay.artefacts as artefacts
from stay.artefacts import Curriculum
from stay.cli import main
from stay.errors import StayError
from stay.pipeline import _state, approve, build_course
from stay.pipeline._state import digest
from tests.view.conftest import HTTP_BRIEF, page_text, quiet
from tests.view.test_review import EPOCH, _review, _snapshot


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The HTTP course built offline without --yes (it stops at the design gate), and the
    reason the build gave."""
    courses = tmp_path_factory.mktemp("history")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        result = build_course(HTTP_BRIEF, courses_dir=courses, backend="offline", progress=quiet)
    assert result.stopped_at == "design gate"
    return result.course_dir, result.reason


@pytest.fixture
def course(stopped: tuple[Path, str], tmp_path: Path) -> Path:
    target = tmp_path / "courses" / stopped[0].name
    shutil.copytree(stopped[0], target)
    return target


def _answers(course: Path) -> dict[str, dict[str, object]]:
    gates: dict[str, dict[str, object]] = json.loads((course / ".state" / "gates.json").read_text())["gates"]
    return gates


def _store(course: Path) -> dict[str, bytes]:
    store = course / _state.ANSWERED
    return {entry.name: entry.read_bytes() for entry in store.iterdir()} if store.is_dir() else {}


def _diffs(page: str) -> list[list[str]]:
    """Each diff block's lines, as a reader sees them."""
    blocks = re.findall(r'<pre class="review-diff">(.*?)</pre>', page, re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines() for block in blocks]


def _hand_edit(course: Path) -> tuple[str, bytes, bytes]:
    """Retitle the curriculum's second lesson by hand: (the file, its bytes before, after)."""
    curriculum = course / "curriculum.yaml"
    before = curriculum.read_bytes()
    title = artefacts.load(curriculum, Curriculum).modules[0].lessons[1].title
    curriculum.write_text(before.decode().replace(f"title: {title}", "title: A <plainer> title", 1))
    return "curriculum.yaml", before, curriculum.read_bytes()


def _changed_lines(before: bytes, after: bytes) -> list[str]:
    return [line for line in difflib.unified_diff(before.decode().splitlines(), after.decode().splitlines(),
                                                   lineterm="")
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_an_answer_keeps_the_bytes_of_every_covered_file_under_its_digest(course: Path) -> None:
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="shorter")
    covered = _answers(course)["design"]["covered"]
    assert isinstance(covered, dict) and covered
    assert _store(course) == {digest((course / path).read_bytes()): (course / path).read_bytes()
                              for path in covered}
    assert "not_kept" not in _answers(course)["design"]


def test_a_hand_edit_after_a_decline_is_shown_as_a_diff_of_exactly_that_file(course: Path) -> None:
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="say it plainer")
    path, before, after = _hand_edit(course)
    page = _review(course)
    text = page_text(page)
    assert "with the note: say it plainer" in text
    assert f"{path} (changed)" in text and "The earlier text is not kept" not in text
    assert f"kept in {_state.ANSWERED}/{digest(before)}" in text
    (diff,) = _diffs(page)  # one block: the one file that changed
    assert diff[0].startswith(f"--- {path}") and diff[1].startswith(f"+++ {path}")
    changed = [line for line in diff[2:] if line[:1] in "+-"]
    assert changed == _changed_lines(before, after) and changed  # each line marked - (was) or + (now)


def test_a_forced_revision_after_a_decline_is_diffed_against_the_answered_bytes(course: Path) -> None:
    """Edited by hand, declined, revised with --force (the offline revision writes the
    template again): the page diffs the declined bytes against the revised file."""
    slug, courses = course.name, course.parent
    path, _generated, declined = _hand_edit(course)
    approve(slug, "design", courses_dir=courses, decline=True, note="undo that")
    assert main(["revise", slug, path, "--force", "--note", "undo", "--courses-dir", str(courses)]) == 0
    revised = (course / path).read_bytes()
    assert revised != declined
    page = _review(course)
    assert f"kept in {_state.ANSWERED}/{digest(declined)}" in page_text(page)
    (diff,) = _diffs(page)
    assert [line for line in diff[2:] if line[:1] in "+-"] == _changed_lines(declined, revised)


def test_a_second_answer_prunes_the_bytes_no_answer_references(course: Path) -> None:
    slug, courses = course.name, course.parent
    approve(slug, "design", courses_dir=courses, decline=True, note="first")
    _path, before, after = _hand_edit(course)
    (course / _state.ANSWERED / ".tmp-left-by-a-crash").write_bytes(b"half")
    approve(slug, "design", courses_dir=courses, decline=True, note="second")
    referenced = {value for entry in _answers(course).values()
                  for value in dict(entry["covered"]).values()}  # type: ignore[call-overload]
    assert set(_store(course)) == referenced
    assert digest(before) not in _store(course) and _store(course)[digest(after)] == after


@pytest.mark.parametrize("damage", ["other bytes", "a link to the file"])
def test_a_damaged_blob_is_not_shown_as_history(course: Path, damage: str) -> None:
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="shorter")
    path, before, _after = _hand_edit(course)
    assert len(_diffs(_review(course))) == 1  # intact, it is diffed
    blob = course / _state.ANSWERED / digest(before)
    blob.unlink()
    if damage == "other bytes":
        blob.write_bytes(before + b"# planted\n")
    else:
        blob.symlink_to(course / path)
    text = page_text(_review(course))
    assert _diffs(_review(course)) == [] and "The earlier text is not kept" in text


def test_the_answer_writes_nothing_else_than_it_did_without_the_store(
        course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What an answer changes outside .state/answered/ is what it changes with the store
    switched off (the answer as it was before the store)."""
    plain = tmp_path / "plain" / course.name
    shutil.copytree(course, plain)

    def changed(root: Path) -> set[str]:
        before = _snapshot(root)
        approve(root.name, "design", courses_dir=root.parent, decline=True, note="why")
        after = _snapshot(root)
        return {path for path in set(before) | set(after) if before.get(path) != after.get(path)}

    with_store = changed(course)
    monkeypatch.setattr(_state, "keep_answered", lambda _root, _covered: {})
    without = changed(plain)
    assert {path for path in with_store if not path.startswith(f"{_state.ANSWERED}/")} == without
    assert with_store - without == {f"{_state.ANSWERED}/{name}" for name in _store(course)}


def test_a_file_over_the_readers_limit_is_not_kept_and_the_answer_says_so(
        course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = {path: (course / path).stat().st_size for path in ("curriculum.yaml", "assessment.yaml")}
    limit = min(sizes.values()) - 1
    monkeypatch.setattr(_state, "MAX_FILE_BYTES", limit)
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="big")
    covered = dict(_answers(course)["design"]["covered"])  # type: ignore[call-overload]
    too_big = {path for path in covered if (course / path).stat().st_size > limit}
    assert too_big >= set(sizes)
    not_kept = dict(_answers(course)["design"]["not_kept"])  # type: ignore[call-overload]
    assert set(not_kept) == too_big and all("larger than" in why for why in not_kept.values())
    assert set(_store(course)) == {covered[path] for path in covered if path not in too_big}


def test_a_store_that_is_a_link_is_not_written_through(course: Path, tmp_path: Path) -> None:
    """Out of the course, the answer is refused in one line (the course opener's check);
    to a directory inside it, the bytes are not kept there and the answer says so."""
    outside, elsewhere = tmp_path / "outside", course / "elsewhere"
    outside.mkdir()
    elsewhere.mkdir()
    store = course / _state.ANSWERED
    store.symlink_to(outside, target_is_directory=True)
    with pytest.raises(StayError, match="a symlink leads outside the course"):
        approve(course.name, "design", courses_dir=course.parent, decline=True, note="why")
    store.unlink()
    store.symlink_to(elsewhere, target_is_directory=True)
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="why")
    assert os.listdir(outside) == [] and os.listdir(elsewhere) == []
    not_kept = dict(_answers(course)["design"]["not_kept"])  # type: ignore[call-overload]
    assert set(not_kept) == set(dict(_answers(course)["design"]["covered"]))  # type: ignore[call-overload]


def test_the_gate_stop_line_names_the_review_page(stopped: tuple[Path, str], course: Path) -> None:
    slug, courses = course.name, course.parent
    # a Python caller is named the viewer's Python call (the command line's text: test_build)
    view = f"`stay.view.render_course({str(stopped[0])!r})`"
    assert f"review .state/design-gate.md (or {view} for a review page)" in stopped[1]
    approve(slug, "design", courses_dir=courses, decline=True, note="why")
    again = build_course(slug, courses_dir=courses, backend="offline", progress=quiet)
    assert again.stopped_at == "design gate"
    assert f"(or `stay.view.render_course({str(courses / slug)!r})` for a review page)" in again.reason
    assert "\n" not in again.reason


@pytest.mark.parametrize("name", ["absolute", "dotdot"])
def test_a_recorded_name_outside_the_course_is_never_read_or_shown(course: Path, tmp_path: Path, name: str) -> None:
    """gates.json comes from disk (a course from someone else, .state/ committed): a covered
    name that is not a file of the course (an absolute path, a "..") with a planted blob of
    its digest must not put another file's text on the review page."""
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="why")
    secret = tmp_path / "SECRET.txt"
    secret.write_text("TOP-SECRET-LINE\n", encoding="utf-8")
    path = str(secret) if name == "absolute" else os.path.relpath(secret, course)
    gates_file = course / ".state" / "gates.json"
    ledger = json.loads(gates_file.read_text())
    planted = digest(b"something else\n")
    ledger["gates"]["design"]["covered"][path] = planted
    gates_file.write_text(json.dumps(ledger), encoding="utf-8")
    (course / _state.ANSWERED / planted).write_bytes(b"something else\n")
    page = _review(course)
    assert "TOP-SECRET-LINE" not in page and "SECRET.txt" not in page
