"""Words that help (issue 26, item 6): a mistyped command, course slug, gate or revise
target is refused in one line (exit 2) that names the nearest real one. Every typo here is
made from a name the registry, the parser or the course on disk declares (its second letter
dropped), so a new gate or command is covered without editing the test."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from stay.errors import EXIT_USAGE
from tests.conftest import run_stay


def _typo(name: str) -> str:
    return name[:1] + name[2:]


def _one_line_refusal(args: tuple[str, ...], meant: str) -> str:
    done = run_stay(*args)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"(did you mean '{meant}'?)" in done.stderr, done.stderr
    return done.stderr


def _commands() -> list[str]:
    from stay.cli import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


@pytest.mark.parametrize("command", _commands())
def test_a_mistyped_command_is_named(command: str) -> None:
    _one_line_refusal((_typo(command), "x"), command)


def test_a_mistyped_slug_is_named(sample_copy: Path) -> None:
    slug = sample_copy.name
    courses = str(sample_copy.parent)
    for args in (("approve", _typo(slug), "design"), ("status", _typo(slug)), ("adopt", _typo(slug)),
                 ("build", _typo(slug), "--backend", "offline"), ("revise", _typo(slug), "curriculum"), ("view", _typo(slug))):
        _one_line_refusal((*args, "--courses-dir", courses), slug)


def test_a_slug_with_nothing_near_names_nothing(sample_copy: Path) -> None:
    done = run_stay("approve", "zzzz", "design", "--courses-dir", str(sample_copy.parent))
    assert done.returncode == EXIT_USAGE and "no course 'zzzz'" in done.stderr
    assert "did you mean" not in done.stderr


def test_a_mistyped_gate_is_named(sample_copy: Path) -> None:
    from stay.pipeline._graph import GATE_NAMES

    for gate in GATE_NAMES:
        _one_line_refusal(("approve", sample_copy.name, _typo(gate), "--courses-dir", str(sample_copy.parent)), gate)


def test_a_mistyped_revise_target_is_named(sample_copy: Path) -> None:
    from stay.stages import REGISTRY

    file = next(p.name for p in sample_copy.glob("*.yaml") if p.stem in {s.name for s in REGISTRY})
    lesson = next(sample_copy.rglob("*.plan.yaml")).name.split(".")[0]
    for meant in (file, lesson, REGISTRY[0].name):
        _one_line_refusal(("revise", sample_copy.name, _typo(meant), "--backend", "offline",
                           "--courses-dir", str(sample_copy.parent)), meant)


def test_an_offline_title_never_ends_inside_an_aside() -> None:
    """A subject cut to fit a title drops an aside the cut would leave open (the example
    brief's "messages (methods, status codes, headers)"), and keeps one that fits whole."""
    import yaml

    from stay.stages._offline import subtopics
    from stay.stages.design import curriculum_offline as curriculum
    from tests.conftest import ROOT

    brief = yaml.safe_load((ROOT / "examples/briefs/how-http-requests-travel.yaml").read_text(encoding="utf-8"))
    subjects = subtopics(brief["topic"])
    assert any("(" in subject for subject in subjects)  # the brief still holds an aside to cut
    short = "a topic: one (short aside), two"  # an aside that fits stays whole
    for topic in (brief["topic"], short):
        lessons = [lesson for module in curriculum({"brief": {"topic": topic},
                                                    "audience": {"time_budget_minutes": 600}})["modules"]
                   for lesson in module["lessons"]]
        for lesson in lessons:
            title = lesson["title"]
            assert title.count("(") == title.count(")"), title
    assert any(lesson["title"] == "One (short aside)" for module in curriculum(
        {"brief": {"topic": short}, "audience": {"time_budget_minutes": 600}})["modules"] for lesson in module["lessons"])


def test_every_evals_option_has_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest evals/ --help`` explains each ``--stay-*`` option evals/conftest.py declares,
    and declaring them twice (pytest may) gives the same declarations."""
    import importlib.util
    import sys
    from types import SimpleNamespace
    from typing import Any

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("stay_evals_conftest_words", ROOT / "evals" / "conftest.py")
    assert spec is not None and spec.loader is not None
    suite = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, suite)
    spec.loader.exec_module(suite)

    def declared() -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        group = SimpleNamespace(addoption=lambda name, **kw: found.__setitem__(name, kw))
        suite.pytest_addoption(SimpleNamespace(getgroup=lambda _name: group))
        return found

    first = declared()
    assert first and all(name.startswith("--stay-") for name in first)
    missing = [name for name, kw in first.items() if len(str(kw.get("help") or "").split()) < 3]
    assert missing == []
    assert declared() == first


def test_a_title_with_no_latin_letters_asks_for_a_slug(tmp_path: Path) -> None:
    """Two non-Latin titles no longer share the generic slug ``course``: the brief is
    refused in one line asking for --slug (stay has no transliteration library), and given
    one it builds there."""
    import yaml

    from tests.conftest import ROOT

    brief = yaml.safe_load((ROOT / "examples/briefs/how-http-requests-travel.yaml").read_text(encoding="utf-8"))
    brief["title"] = "日本語の講座"
    path = tmp_path / "brief.yaml"
    path.write_text(yaml.safe_dump(brief, allow_unicode=True), encoding="utf-8")
    courses = tmp_path / "courses"
    done = run_stay("new", str(path), "--backend", "offline", "--courses-dir", str(courses))
    assert done.returncode == EXIT_USAGE and done.stderr.count("\n") == 1, done.stderr
    assert "--slug" in done.stderr and "日本語の講座" in done.stderr
    assert not courses.exists() or not any(courses.iterdir())  # nothing written under a made-up name
    given = run_stay("new", str(path), "--slug", "nihongo", "--backend", "offline", "--courses-dir", str(courses))
    assert given.returncode == 0, given.stderr
    assert [p.name for p in courses.iterdir()] == ["nihongo"]


def test_offline_revise_says_it_cannot_act_on_a_note(tmp_path: Path) -> None:
    """The offline backend's answers are templates: `stay revise --note` says so in one line
    and leaves the note out of the file, where it appended it to a summary as if acted on."""
    from tests.conftest import ROOT

    brief = ROOT / "examples/briefs/how-http-requests-travel.yaml"
    courses = str(tmp_path)
    assert run_stay("new", str(brief), "--backend", "offline", "--courses-dir", courses).returncode == 0
    (root,) = tmp_path.iterdir()
    note = "Give TLS a lesson of its own."
    done = run_stay("revise", root.name, "curriculum.yaml", "--note", note, "--backend", "offline",
                    "--courses-dir", courses)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "cannot act on a note" in line]
    assert len(said) == 1 and "offline" in said[0]
    assert "TLS a lesson of its own" not in (root / "curriculum.yaml").read_text(encoding="utf-8")
