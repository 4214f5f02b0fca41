"""Something to start from outside a checkout (issue 26): ``stay init``, the packaged example
briefs (``stay new --example``, ``--list-examples``), and refusals that never point at a
checkout's path or at the committed sample."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stay._init import BRIEF_FILE, INIT_EXAMPLE, example_names, examples_dir
from stay.briefs import load_brief, slugify
from tests.conftest import ROOT, SAMPLE_SOURCE, run_stay
from tests.pipeline.test_cli import refusal

BRIEFS = ROOT / "examples" / "briefs"


def test_the_examples_are_the_repositorys_one_copy() -> None:
    """In a checkout the packaged examples are examples/briefs/ itself (the wheel carries it:
    tests/test_packaging.py), so there is no second copy to drift."""
    assert examples_dir().resolve() == BRIEFS.resolve()
    assert example_names() == sorted(path.stem for path in BRIEFS.glob("*.yaml")) != []


def test_init_writes_the_example_brief_and_a_gitignore_and_names_the_next_command(tmp_path: Path) -> None:
    where = tmp_path / "start"
    done = run_stay("init", str(where))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in where.iterdir()) == sorted([BRIEF_FILE, ".gitignore"])
    # the brief is the example's, as stay reads it
    assert load_brief(where / BRIEF_FILE) == load_brief(BRIEFS / f"{INIT_EXAMPLE}.yaml")
    ignored = [line for line in (where / ".gitignore").read_text().splitlines() if not line.startswith("#")]
    assert ".runs/" in ignored and "/site/" in ignored
    # the command it prints runs, and builds the course it names
    (next_line,) = [line for line in done.stdout.splitlines() if line.startswith("next: ")]
    command = shlex.split(next_line.removeprefix("next: ").split("   (")[0])
    assert command[:2] == ["stay", "new"]
    courses = tmp_path / "courses"
    built = run_stay(*command[1:], "--courses-dir", str(courses))
    assert built.returncode == 0, built.stderr
    assert (courses / INIT_EXAMPLE / "course.yaml").is_file()


@pytest.mark.parametrize("present", [BRIEF_FILE, ".gitignore"])
def test_init_never_overwrites_a_file(tmp_path: Path, present: str) -> None:
    (tmp_path / present).write_text("mine\n")
    done = run_stay("init", str(tmp_path))
    assert done.returncode == 2
    assert str(tmp_path / present) in refusal(done.stderr) and "already exists" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [present]  # nothing else written
    assert (tmp_path / present).read_text() == "mine\n"


def test_init_takes_another_example_and_a_typo_gets_the_nearest(tmp_path: Path) -> None:
    other = next(name for name in example_names() if name != INIT_EXAMPLE)
    assert run_stay("init", str(tmp_path / "a"), "--example", other).returncode == 0
    assert load_brief(tmp_path / "a" / BRIEF_FILE) == load_brief(BRIEFS / f"{other}.yaml")
    typo = run_stay("init", str(tmp_path / "b"), "--example", other[:-1])
    assert typo.returncode == 2 and f"did you mean '{other}'?" in refusal(typo.stderr)
    assert not (tmp_path / "b").exists()


def test_list_examples_names_each_with_its_title() -> None:
    done = run_stay("new", "--list-examples")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name in example_names():
        title = yaml.safe_load((BRIEFS / f"{name}.yaml").read_text())["title"]
        (line,) = [line for line in lines if line.split()[0] == name]
        assert title in line


def test_new_example_builds_the_packaged_brief(tmp_path: Path) -> None:
    name = INIT_EXAMPLE
    done = run_stay("new", "--example", name, "--courses-dir", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    by_path = run_stay("new", str(BRIEFS / f"{name}.yaml"), "--courses-dir", str(tmp_path / "b"))
    assert by_path.returncode == 0, by_path.stderr
    slug = slugify(load_brief(BRIEFS / f"{name}.yaml").title)
    assert (tmp_path / "a" / slug / "course.yaml").read_bytes() == (tmp_path / "b" / slug / "course.yaml").read_bytes()


@pytest.mark.parametrize("args, says", [
    (["--example", INIT_EXAMPLE[:-1]], f"did you mean '{INIT_EXAMPLE}'?"),
    ([], "--list-examples"),  # nothing to build from: says how to find something
    (["brief.yaml", "--example", INIT_EXAMPLE], "not both"),
])
def test_new_without_one_brief_is_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    done = run_stay("new", *args, "--courses-dir", str(tmp_path))
    assert done.returncode == 2 and says in refusal(done.stderr)
    assert list(tmp_path.iterdir()) == []


def test_new_over_the_committed_sample_never_points_at_it() -> None:
    """A fresh clone's ``stay new examples/briefs/how-http-requests-travel.yaml`` meets the
    committed sample (same slug, no .state/): the refusal offers another directory or slug,
    never a build over the sample. Read-only: the refusal comes before anything is written."""
    before = sorted(p.relative_to(SAMPLE_SOURCE) for p in SAMPLE_SOURCE.rglob("*"))
    done = run_stay("new", str(BRIEFS / f"{SAMPLE_SOURCE.name}.yaml"), "--courses-dir", str(SAMPLE_SOURCE.parent))
    line = refusal(done.stderr)
    assert done.returncode == 2 and "--courses-dir DIR" in line and "--slug NAME" in line
    assert "stay build" not in line
    assert sorted(p.relative_to(SAMPLE_SOURCE) for p in SAMPLE_SOURCE.rglob("*")) == before


def test_new_over_a_course_stay_built_says_continue_it(tmp_path: Path) -> None:
    brief = str(BRIEFS / f"{INIT_EXAMPLE}.yaml")
    assert run_stay("new", brief, "--courses-dir", str(tmp_path)).returncode == 0
    again = run_stay("new", brief, "--courses-dir", str(tmp_path))
    assert again.returncode == 2 and "continue it with `stay build" in refusal(again.stderr)


@pytest.mark.parametrize("text", ["", "- a list\n", "title: T\n"])
def test_a_brief_refusal_points_at_stay_init_not_a_checkout_path(tmp_path: Path, text: str) -> None:
    brief = tmp_path / "b.yaml"
    brief.write_text(text)
    done = run_stay("new", str(brief), "--courses-dir", str(tmp_path / "c"))
    line = refusal(done.stderr)
    assert done.returncode == 2 and "stay init" in line and "examples/" not in line


def test_an_init_cut_short_leaves_nothing_that_blocks_a_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails part-way (here the .gitignore's: the disk full) removes what this
    init made, so running it again is not refused with "already exists"."""
    import stay._init as init_module

    real_link = os.link

    def failing(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if str(dst).endswith(".gitignore"):  # create_text_atomic links the whole temporary to its name
            raise OSError(28, "No space left on device", str(dst))
        real_link(src, dst)

    monkeypatch.setattr(os, "link", failing)
    with pytest.raises(OSError):
        init_module.init(tmp_path / "start")
    assert list((tmp_path / "start").iterdir()) == []
    monkeypatch.setattr(os, "link", real_link)
    init_module.init(tmp_path / "start")
    assert {p.name for p in (tmp_path / "start").iterdir()} == {BRIEF_FILE, ".gitignore"}


@pytest.mark.parametrize("left", [BRIEF_FILE, ".gitignore"])
def test_an_init_killed_between_its_files_is_simply_run_again(tmp_path: Path, left: str) -> None:
    """A kill (no cleanup runs) after one file was written whole: the retry keeps that file,
    whose bytes are exactly init's, and writes the other; a file with other bytes still stops it."""
    whole = tmp_path / "whole"
    assert run_stay("init", str(whole)).returncode == 0
    written = {path.name: path.read_bytes() for path in whole.iterdir()}
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / left).write_bytes(written[left])  # what the killed init had written
    again = run_stay("init", str(cut))
    assert again.returncode == 0, again.stderr
    assert {path.name: path.read_bytes() for path in cut.iterdir()} == written
    (cut / left).write_bytes(written[left] + b"# and a line of mine\n")
    (cut / ({BRIEF_FILE, ".gitignore"} - {left}).pop()).unlink()
    refused = run_stay("init", str(cut))
    assert refused.returncode == 2 and "already exists" in refused.stderr
    assert (cut / left).read_bytes() == written[left] + b"# and a line of mine\n"


@pytest.mark.parametrize("left", [(), (BRIEF_FILE,), (".gitignore",), (BRIEF_FILE, ".gitignore")])
def test_init_says_which_files_it_wrote_and_which_it_kept(tmp_path: Path, left: tuple[str, ...]) -> None:
    """A file already holding init's bytes is kept, and said to be: "wrote" names only
    the files this run wrote (an init run twice wrote nothing the second time)."""
    whole = tmp_path / "whole"
    assert run_stay("init", str(whole)).returncode == 0
    written = {path.name: path.read_bytes() for path in whole.iterdir()}
    again = tmp_path / "again"
    again.mkdir()
    for name in left:
        (again / name).write_bytes(written[name])
    done = run_stay("init", str(again))
    assert done.returncode == 0, done.stderr
    parts = {part.split(" ", 1)[0]: part for part in done.stdout.splitlines()[0].split("; ")}
    for verb, names in (("wrote", [n for n in written if n not in left]), ("kept", list(left))):
        assert (verb in parts) == bool(names), done.stdout
        assert all(str(again / name) in parts[verb] for name in names), done.stdout
    assert set(parts) <= {"wrote", "kept"}, done.stdout


def test_a_link_holding_inits_bytes_is_still_refused(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert run_stay("init", str(whole)).returncode == 0
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / BRIEF_FILE).symlink_to(whole / BRIEF_FILE)
    refused = run_stay("init", str(linked))
    assert refused.returncode == 2 and "already exists" in refused.stderr
    assert sorted(path.name for path in linked.iterdir()) == [BRIEF_FILE]


def test_with_both_files_taken_the_refusal_names_the_brief_every_run(tmp_path: Path) -> None:
    for name in (BRIEF_FILE, ".gitignore"):
        (tmp_path / name).write_text("mine\n")
    seen = set()
    for seed in ("1", "2", "3", "4"):  # the order must not hang on the hash seed
        done = subprocess.run([sys.executable, "-m", "stay", "init", str(tmp_path)], capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed}, timeout=120)
        assert done.returncode == 2
        seen.add(refusal(done.stderr))
    assert seen == {refusal(done.stderr)} and str(tmp_path / BRIEF_FILE) in seen.pop()
