"""A reference is a file you drop in: its front matter says where it applies, and a
stage's set is derived from it before the run (docs/pipeline.md, 'How references attach').
The shipped documents reach exactly what the stages read before; a dropped one reaches
exactly the stages it names and stales exactly their files; a front matter that does not
fit is one line; the data files a stage is sent are the validator's own, one copy."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.errors import UsageError
from stay.pipeline import build_course, graph, run_command, status
from stay.settings import Settings
from stay.stages import REGISTRY, STAGES, Prompts, Stage
from stay.stages._stage import Applies, build_request, glob_match, reaches, split_front_matter
from stay.validate._course import BLOOM_FILE, HOUSE_FILE
from tests.conftest import ROOT, run_stay
from tests.parity.harness import examples
from tests.pipeline.conftest import HTTP

SLUG = "how-http-requests-travel"
PACKAGED = ROOT / "prompts"

OLD_SETS = {
    "audience": ("backward-design.md", "course-state.md", "house-style.yaml", "bloom-verbs.yaml"),
    "curriculum": ("backward-design.md", "cognitive-load.md", "house-style.yaml", "course-state.md",
                   "bloom-verbs.yaml"),
    "outcomes": ("blooms-taxonomy.md", "bloom-verbs.yaml", "course-state.md", "house-style.yaml"),
    "assessment": ("assessment-design.md", "blooms-taxonomy.md", "course-state.md", "house-style.yaml",
                   "bloom-verbs.yaml"),
    "plan": ("cognitive-load.md", "retrieval-and-spacing.md", "example-design.md", "house-style.yaml",
             "course-state.md", "bloom-verbs.yaml"),
    "content": ("house-style.yaml", "example-design.md", "cognitive-load.md", "course-state.md",
                "bloom-verbs.yaml"),
    "exercises": ("assessment-design.md", "blooms-taxonomy.md", "example-design.md", "course-state.md",
                  "house-style.yaml", "bloom-verbs.yaml"),
    "quiz": ("house-style.yaml", "assessment-design.md", "blooms-taxonomy.md", "retrieval-and-spacing.md",
             "bloom-verbs.yaml", "course-state.md"),
    "capstone": ("capstone-design.md", "assessment-design.md", "house-style.yaml", "course-state.md",
                 "bloom-verbs.yaml"),
}
"""Each stage's pinned reference_set(...) as the stage modules declared it at 23b9272,
written down once, for the differential test: the derived sets must send the same."""


@pytest.fixture(autouse=True)
def _packaged_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_PROMPTS_DIR", raising=False)


def copy_prompts(tmp_path: Path) -> Path:
    target = tmp_path / "prompts"
    shutil.copytree(PACKAGED, target)
    return target


# -- the shipped documents: the same requests as the pinned sets ---------------------------


@pytest.mark.parametrize("stage", list(OLD_SETS))  # a stage added since (example) has no pinned set to match
def test_the_derived_set_sends_exactly_what_the_pinned_set_sent(stage: str) -> None:
    """Same documents, and the same system prompt byte for byte (the order of a stage's
    own documents is its floor's, then by name: it reproduces every pinned order)."""
    prompts = Prompts.load()
    declared = STAGES[stage]
    derived = prompts.reference_set(declared)
    assert sorted(derived) == sorted(OLD_SETS[stage]) and len(derived) == len(set(derived))

    def system(references: tuple[str, ...]) -> list[str]:
        request = build_request(stage=stage, role=declared.role, references=references, prompts=prompts,
                                artefact="x", output=declared.answer, inputs={})
        return [block.text for block in request.system]

    assert system(derived) == system(OLD_SETS[stage])


def test_front_matter_is_not_sent_and_the_data_files_are_the_validators() -> None:
    prompts = Prompts.load()
    for name, text in prompts.references.items():
        if name in (BLOOM_FILE, HOUSE_FILE):  # the data directory's, the one copy, sent to every stage
            assert text == (ROOT / "data" / name).read_text() and prompts.applies[name] == Applies(always=True)
            assert not (PACKAGED / "reference" / name).exists()
            continue
        raw = (PACKAGED / "reference" / name).read_text()
        assert raw.startswith("---\n") and raw.endswith(text) and not text.startswith("---")
    assert {BLOOM_FILE, HOUSE_FILE} <= set(prompts.references)


# -- a dropped document ------------------------------------------------------------------

DROPPED = '---\nstages: [quiz]\nfiles: ["modules/**/*.md"]\n---\n# Accessibility\n\nEvery image has alt text.\n'


def _stage_of(path: str) -> Stage | None:
    """The stage that writes ``path``, from its declared output (``{lesson}`` any lesson)."""
    for stage in REGISTRY:
        pattern = re.escape(stage.output).replace(re.escape("{lesson}"), "[^/]+")
        if re.fullmatch(pattern if stage.scope == "course" else rf"modules/[^/]+/{pattern}", path):
            return stage
    return None


def test_a_dropped_reference_reaches_exactly_its_stages_and_stales_exactly_their_files(
        courses: Path, tmp_path: Path) -> None:
    prompts_dir = copy_prompts(tmp_path)
    (prompts_dir / "reference" / "accessibility.md").write_text(DROPPED)
    for junk in (".DS_Store", "accessibility.md~", ".accessibility.md.swp"):  # hidden and backups: passed over
        (prompts_dir / "reference" / junk).write_text("not a document")
    where, _text = split_front_matter(Path("accessibility.md"), DROPPED)
    expected = {stage.name for stage in REGISTRY if reaches(where, stage)}
    assert expected and expected != set(STAGES)  # the fixture names some stages, not all

    prompts = Prompts.load(prompts_dir)
    assert {stage.name for stage in REGISTRY if "accessibility.md" in prompts.reference_set(stage)} == expected
    shown = {stage for _n, attrs in graph(prompts).nodes(data=True)
             for stage, refs in attrs["references"].items() if "accessibility.md" in refs}
    assert shown == expected

    found = status(SLUG, courses_dir=courses, settings=Settings.from_env(prompts_dir=prompts_dir))
    stale = {path: why for path, (state, why) in found.items() if state == "stale"}
    written = {path for path in found if _stage_of(path) is not None}
    assert set(stale) == {path for path in written if _stage_of(path).name in expected}  # type: ignore[union-attr]
    assert all(why == ["prompts/reference/accessibility.md"] for why in stale.values())
    said = run_stay("status", SLUG, "--courses-dir", str(courses), "--prompts-dir", str(prompts_dir)).stdout
    assert said.count("<- prompts/reference/accessibility.md") == len(stale)

    graphed = run_stay("graph", "--prompts-dir", str(prompts_dir)).stdout
    assert {line.split(":")[0].split()[-1] for line in graphed.splitlines() if "accessibility.md" in line} == expected


def test_the_gate_page_shows_what_each_of_its_stages_read(tmp_path: Path) -> None:
    prompts_dir = copy_prompts(tmp_path)
    (prompts_dir / "reference" / "accessibility.md").write_text("---\nstages: [outcomes]\n---\n# A\n")
    result = run_command("new", HTTP, courses_dir=tmp_path / "c", prompts_dir=prompts_dir,
                         progress=lambda _line: None)
    page = (result.course_dir / ".state" / "design-gate.md").read_text()
    section = page.split("## References each stage read\n\n")[1].split("\n\n")[0].splitlines()
    prompts = Prompts.load(prompts_dir)
    assert section == [f"- {s.name}: {', '.join(prompts.reference_set(s))}" for s in REGISTRY if s.phase == "design"]
    assert [line.split(":")[0] for line in section if "accessibility.md" in line] == ["- outcomes"]


# -- front matter that does not fit: one line each, all at once ---------------------------

BAD = {
    "no-front-matter": ("x.md", "# A document\n", "x.md: has no front matter"),
    "unknown-stage": ("x.md", "---\nstages: [outcome]\n---\n# A\n", "there is no stage 'outcome' (did you mean 'outcomes'?)"),
    "bad-key": ("x.md", "---\nstage: [outcomes]\n---\n# A\n", "unknown front matter key 'stage' (did you mean 'stages'?)"),
    "glob-matches-nothing": ("x.md", '---\nfiles: ["lessons/*.md"]\n---\n# A\n', "files: 'lessons/*.md' matches no file"),
    "never-closed": ("x.md", "---\nstages: [outcomes]\n# A\n", "its front matter is never closed"),
    "not-a-list": ("x.md", "---\nstages: outcomes\n---\n# A\n", "front matter stages should be a list"),
    "applies-nowhere": ("x.md", "---\nalways: false\n---\n# A\n", "applies nowhere"),
    "not-yaml": ("x.md", "---\nstages: [outcomes\n---\n# A\n", "its front matter is not YAML"),
    "yaml-without-sidecar": ("x.yaml", "a: 1\n", "x.yaml: has no front matter; a YAML document says where it applies in x.applies.yaml"),
    "not-a-document": ("notes.txt", "x\n", "notes.txt: is not a reference document"),
    "nested-1000-deep": ("x.md", "---\nstages: " + "[" * 1000 + "]" * 1000 + "\n---\n# A\n",
                         "its front matter nests deeper than 20 levels"),
    "glob-too-long": ("x.md", '---\nfiles: ["' + "*/" * 100_000 + 'x.md"]\n---\n# A\n', "longer than 500"),
    "28-star-glob": ("x.md", '---\nfiles: ["modules/' + "*" * 28 + 'x.md"]\n---\n# A\n', "matches no file"),
}
"""Each refused in one line; the last two once broke the loader (RecursionError, exit 3) and
spun it (a backtracking regex, for hours): ``Prompts.load`` below takes milliseconds."""


@pytest.mark.parametrize("kind", list(BAD))
def test_bad_front_matter_is_refused_in_one_line_naming_the_file_and_the_fix(kind: str, tmp_path: Path) -> None:
    name, text, said = BAD[kind]
    prompts_dir = copy_prompts(tmp_path)
    (prompts_dir / "reference" / name).write_text(text)
    with pytest.raises(UsageError) as caught:
        Prompts.load(prompts_dir)
    assert "\n" not in str(caught.value) and said in str(caught.value)
    assert str(caught.value).startswith(f"{prompts_dir}/reference/{name}")


def test_a_floor_no_front_matter_reaches_any_longer_is_refused_naming_every_stage_and_document_at_once(
        tmp_path: Path) -> None:
    prompts_dir = copy_prompts(tmp_path)
    document = prompts_dir / "reference" / "assessment-design.md"
    document.write_text(document.read_text().replace("assessment, exercises, quiz, capstone", "capstone", 1))
    (prompts_dir / "reference" / "course-state.md").unlink()
    losing = [s.name for s in REGISTRY if "assessment-design.md" in s.needs and s.name != "capstone"]
    with pytest.raises(UsageError) as caught:
        Prompts.load(prompts_dir)
    lines = str(caught.value).splitlines()
    assert lines[0] == "2 problems with the reference documents:" and len(lines) == 3
    assert lines[1] == (f"(1) {prompts_dir}/reference/course-state.md: missing, and stages "
                        f"{', '.join(STAGES)} cannot do without it; copy it from stay's prompts/reference/")
    assert lines[2] == (f"(2) {prompts_dir}/reference/assessment-design.md: its front matter no longer reaches "
                        f"stages {', '.join(losing)}, which cannot do without it; add {', '.join(losing)} to its "
                        "stages:")


def test_every_problem_of_every_document_is_one_refusal_and_the_cli_prints_one_line(
        courses: Path, tmp_path: Path) -> None:
    prompts_dir = copy_prompts(tmp_path)
    for kind in ("no-front-matter", "unknown-stage", "not-a-document"):
        name, text, _said = BAD[kind]
        (prompts_dir / "reference" / f"{kind}-{name}").write_text(text)
    result = run_stay("status", SLUG, "--courses-dir", str(courses), "--prompts-dir", str(prompts_dir))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert all(f"({n}) " in result.stderr for n in (1, 2, 3))
    assert all(BAD[kind][2].split(": ", 1)[-1] in result.stderr for kind in BAD if kind in (
        "no-front-matter", "unknown-stage", "not-a-document"))


def test_globs_keep_their_meaning_matched_in_linear_time() -> None:
    lesson = "modules/m01-module/m01-l01.md"
    assert glob_match("modules/**/*.md", lesson) and glob_match("modules/**/*.md", "modules/x.md")
    assert glob_match("**/*.md", "audience.md") and glob_match("modules/**", lesson)
    assert not glob_match("modules/*.md", lesson) and not glob_match("*", "a/b")
    assert glob_match("modules/m0?-module/*-l01.md", lesson) and not glob_match("m?dules", "m/dules")
    assert not glob_match("modules/" + "**" * 500 + "x.md", lesson)  # a regex backtracked for hours here


def _regex(pattern: str) -> re.Pattern[str]:
    """The glob as the regular expression it was compiled to before the table (the slow path:
    right, but exponential in stars), the reference the table is held to."""
    out, i = [], 0
    while i < len(pattern):
        token = "**/" if pattern.startswith("**/", i) else "**" if pattern.startswith("**", i) else pattern[i]
        out.append({"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token)))
        i += len(token)
    return re.compile("".join(out))


_GLOB = st.text(alphabet="ab/*?.", max_size=10)
"""Short globs (few stars, so the regex stays fast) over the characters that matter."""


@st.composite
def _glob_and_path(draw: st.DrawFn) -> tuple[str, str]:
    """A glob and a path filled in from it, each wildcard by any run of characters, a '/'
    included (so a path near the glob, matching or just not), or now and then any path."""
    pattern = draw(_GLOB)
    if draw(st.booleans()):
        return pattern, draw(st.text(alphabet="ab/.", max_size=10))
    fill = st.text(alphabet="ab/", max_size=3)
    parts, i = [], 0
    while i < len(pattern):
        step = 3 if pattern.startswith("**/", i) else 2 if pattern.startswith("**", i) else 1
        parts.append(draw(fill) if pattern[i] in "*?" else pattern[i])
        i += step
    return pattern, "".join(parts)


@settings(max_examples=examples(600, dev=100), deadline=None)
@given(_glob_and_path())
def test_the_glob_table_agrees_with_the_regex_it_replaced(case: tuple[str, str]) -> None:
    pattern, path = case
    assert glob_match(pattern, path) == bool(_regex(pattern).fullmatch(path))


def test_applies_needs_somewhere() -> None:
    assert Applies(always=True).always and Applies(stages=("quiz",)).stages == ("quiz",)
    with pytest.raises(ValueError, match="applies nowhere"):
        Applies()


# -- the shared data files ---------------------------------------------------------------


def _recorded(course: Path, path: str = "audience.yaml") -> str:
    ledger = json.loads((course / ".state" / "hashes.json").read_text())["artefacts"]
    sources: dict[str, str] = ledger[path]["sources"]
    return next(v for k, v in sources.items() if k.endswith(f"reference/{BLOOM_FILE}"))


def test_a_prompts_copy_of_a_data_file_is_refused_naming_both(tmp_path: Path) -> None:
    prompts_dir = copy_prompts(tmp_path)
    (prompts_dir / "reference" / BLOOM_FILE).write_text((ROOT / "data" / BLOOM_FILE).read_text())
    (prompts_dir / "reference" / "bloom-verbs.applies.yaml").write_text("always: true\n")  # as copies had
    refused = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path / "c"), "--prompts-dir", str(prompts_dir))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"{prompts_dir}/reference/{BLOOM_FILE}: a stage is sent the data directory's {BLOOM_FILE}" in refused.stderr
    assert not (tmp_path / "c").exists()  # refused before anything is written


def test_a_stage_is_sent_the_data_directorys_bloom_verbs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data", data)
    text = (data / BLOOM_FILE).read_text() + "# this house's own\n"
    (data / BLOOM_FILE).write_text(text)
    build_course(HTTP, courses_dir=tmp_path / "c", settings=Settings.from_env(data_dir=data),
                 progress=lambda _line: None)
    assert _recorded(tmp_path / "c" / SLUG) == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert Prompts.load(data_dir=data).references[BLOOM_FILE] == text
