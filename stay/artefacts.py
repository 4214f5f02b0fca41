"""The course format (course-format.md) as pydantic models, with their exact on-disk form, atomic
writes and ``CourseReader``. Strict (a YAML "20" is not a 20) and keeping unknown fields; dumping is
deterministic, so a loaded file dumps back as it was and a regenerated artefact that says the same
thing is byte-identical. Stands on leaves alone (``tools/layers.py``), so anything may import it."""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import re
import secrets
import sys
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, cast, get_args, get_origin

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from stay._bounds import DATA_NAME, MAX_ASSET_BYTES, MAX_DEPTH, MAX_FILE_BYTES, TooLarge, read_bounded, yaml_shape
from stay._display import Table, html_block, markdown_block, terminal_text
from stay._duration import DEFAULT_LIMITS, DurationLimits, parse_duration
from stay._paths import at, parent_of, recheck
from stay._secrets import redact_bytes
from stay.errors import ArtefactError, BriefError, BriefNotFound

M = TypeVar("M", bound=BaseModel)
_L = DEFAULT_LIMITS

# -- ids, slugs and terms: the one check for every value that may become part of a path. An id
# read from disk is as untrusted as a model's: both must match the contract's pattern before any
# path is built. Terms never become paths, but are printed: no control character.

ID_MAX = 64
SLUG_MAX = 60
TERM_MAX = ID_MAX

SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MODULE_PATTERN = re.compile(r"m[0-9]{2}")
LESSON_PATTERN = re.compile(r"m[0-9]{2}-l[0-9]{2}")
ASSET_PATTERN = re.compile("assets/" + DATA_NAME.pattern)  # flat under assets/, a type the validator parses


def _unsafe(value: str) -> str | None:
    if "\x00" in value:
        return "holds a NUL byte"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        return "holds a control character"
    if "/" in value or "\\" in value:
        return "holds a path separator"
    if ".." in value:
        return "holds '..'"
    return None


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:37] + "...")


def _checker(kind: str, pattern: re.Pattern[str], limit: int, example: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        why = _unsafe(value)
        if why is not None:
            raise ValueError(f"{_shown(value)} is not a {kind}: it {why}; use the format {example}")
        if len(value) > limit:
            raise ValueError(f"{_shown(value)} is not a {kind}: it is {len(value)} characters long, "
                             f"at most {limit} are allowed")
        if pattern.fullmatch(value) is None:
            raise ValueError(f"{_shown(value)} is not a {kind}; use the format {example}")
        return value

    return check


check_module_id = _checker("module id", MODULE_PATTERN, ID_MAX, "m + two digits, e.g. m01")
check_lesson_id = _checker("lesson id", LESSON_PATTERN, ID_MAX,
                           "<module id>-l + two digits, e.g. m01-l02")
check_slug_value = _checker("slug", SLUG_PATTERN, SLUG_MAX,
                            "lowercase letters, digits and single hyphens, e.g. how-http-requests-travel")


def check_term(value: str) -> str:
    if "\x00" in value or any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        raise ValueError(f"{_shown(value)} is not a term: it holds a control character or line break")
    if len(value) > TERM_MAX:
        raise ValueError(f"{_shown(value)} is not a term: it is {len(value)} characters long, "
                         f"at most {TERM_MAX} are allowed")
    return value


def check_asset_path(value: str) -> str:
    if len(value) > ID_MAX + len("assets/.json") or ASSET_PATTERN.fullmatch(value) is None:
        raise ValueError(f"{_shown(value)} is not a data file path; use assets/<lowercase name>.csv "
                         "(or .txt, .json), e.g. assets/orders.csv")
    return value


ModuleId = Annotated[str, AfterValidator(check_module_id)]
LessonId = Annotated[str, AfterValidator(check_lesson_id)]
Slug = Annotated[str, AfterValidator(check_slug_value)]
AssetPath = Annotated[str, AfterValidator(check_asset_path)]
Term = Annotated[str, AfterValidator(check_term)]


class ArtefactLoadError(ArtefactError):
    """A file that cannot be read as its artefact: one line naming the file, the field, the fix."""


YamlFault = Literal["aliases", "deep", "syntax"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml, when built: ten times faster


def guarded_yaml(text: str, refuse: Callable[[YamlFault, int | None], Exception], loader: Any = _Loader) -> Any:
    """``text`` composed only once its event stream shows no anchors or aliases (an alias bomb expands as
    soon as pydantic walks it) and no nesting past MAX_DEPTH (libyaml composes recursively, in C).
    The brief, the artefacts and the references' front matter each say ``refuse``'s error their way."""
    try:
        shape = yaml_shape(text)
        if shape is None:
            return yaml.load(text, Loader=loader)
    except (yaml.YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        raise refuse("syntax", None if mark is None else mark.line + 1) from None
    raise refuse(shape, None)


def validate_as(model: type[M], data: Any, where: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        dotted = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ArtefactLoadError(
            f"{where}: field '{dotted or '(root)'}': {message}{more}; fix the field, "
            "or regenerate the file", field=dotted or None) from None


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


Text = Annotated[str, AfterValidator(_not_blank)]
TermText = Annotated[Term, AfterValidator(_not_blank)]

TextFormat = Literal["markdown", "plain"]


@dataclass(frozen=True)
class Format:
    """How a text field is written: the answer schema says it to the model, the viewer renders by it."""

    kind: TextFormat


FORMAT_NOTES: Mapping[TextFormat, str] = {"markdown": "Markdown.", "plain": "Plain text, no Markdown."}

Markdown = Annotated[Text, Format("markdown")]
Plain = Annotated[Text, Format("plain")]  # shown exactly as written: a "- x" stays a dash


def text_format(model: type[BaseModel], name: str) -> TextFormat | None:
    """The declared format of a field (of its items, for a list or a mapping), or None."""
    info = model.model_fields[name]
    return _declared(info.metadata) or _format_of(info.annotation)


def _declared(metadata: Any) -> TextFormat | None:
    return next((item.kind for item in metadata if isinstance(item, Format)), None)


def _format_of(annotation: Any) -> TextFormat | None:
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        return _declared(metadata) or _format_of(base)
    return next((kind for arg in get_args(annotation) if (kind := _format_of(arg)) is not None), None)


def _note_formats(schema: dict[str, Any], model: type[Any]) -> None:
    properties = schema.get("properties", {})
    for name, info in model.model_fields.items():
        kind = text_format(model, name)
        prop = properties.get(info.alias or name)
        if kind is not None and prop is not None:
            note = FORMAT_NOTES[kind]
            prop["description"] = f"{prop['description']} {note}" if "description" in prop else note


ManifestStatus = Literal["missing", "current", "stale"]
BloomLevel = Literal["remember", "understand", "apply", "analyze", "evaluate", "create"]
SectionKind = Literal["hook", "explain", "example", "practice", "recap"]
Method = Literal["quiz", "exercise", "capstone"]
ItemType = Literal["mcq", "short"]


FILES: dict[str, type[Artefact]] = {}
"""Every kind that is a course file, by its FILE pattern: filled as each kind is declared."""


class Artefact(BaseModel):
    """Base of every artefact: strict types, unknown fields kept in order."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, json_schema_extra=_note_formats)

    FILE: ClassVar[str | None] = None
    """The course file a kind is: ``audience.yaml``, or ``{lesson}.quiz.yaml`` in the lesson's module directory."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        file = cls.__dict__.get("FILE")
        if file is None:  # an answer shape or a part of a file (inherits no file of its own)
            return
        known = FILES.get(file)
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ArtefactError(f"{cls.__qualname__} and {known.__qualname__} both declare the course file "
                                f"{file}; give each kind its own FILE")
        FILES[file] = cls

    def derived(self) -> dict[str, Artefact]:
        """The course files written from this artefact, by course path (example.yaml's data files)."""
        return {}


class Brief(Artefact):
    """What a course is asked to be: the input to the whole pipeline."""

    title: Text
    topic: Text
    audience: Text
    time_available: Text = Field(description='Free text, e.g. "45 minutes", "4 hours", "1 day".')
    industry: Text | None = None
    constraints: list[Text] | None = None

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> Brief:
        """Read and check a brief file as ``stay build BRIEF.yaml`` does (``stay.BriefError``)."""
        return read_brief(path)

    # -- in a notebook and at a prompt: every field the brief sets, escaped (its text is anyone's)

    def _rows(self) -> list[tuple[str, str]]:
        return [(name, "; ".join(value) if isinstance(value, list) else str(value))
                for name in type(self).model_fields if (value := getattr(self, name)) is not None]

    def _display(self) -> tuple[str, list[Table], str]:
        return f"brief: {self.title}", [(("field", "value"), self._rows(), set())], ""

    def _repr_html_(self) -> str:
        return html_block("stay-brief", *self._display())

    def _repr_markdown_(self) -> str:
        return markdown_block(*self._display())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's terminal: one field a line, each value made safe for a terminal."""
        width = max(len(name) for name, _ in self._rows())
        printer.text("\n".join(["Brief"] + [f"  {name.ljust(width)}  {terminal_text(value)}"
                                            for name, value in self._rows()]))


# -- reading a brief: every check, once, before anything is built from it (a brief is
# untrusted: refused before it is expanded when too large, too deep, or using aliases)

MAX_BYTES = 64 * 1024
BRIEF_REQUIRED = tuple(name for name, field in Brief.model_fields.items() if field.is_required())
BRIEF_OPTIONAL = tuple(name for name in Brief.model_fields if name not in BRIEF_REQUIRED)
EXAMPLE = "the example brief `stay init` writes"  # what every install has, never a checkout's path


def check_duration(text: str, where: str, limits: DurationLimits = DEFAULT_LIMITS) -> int:
    try:
        minutes = parse_duration(text)
    except BriefError as exc:
        raise BriefError(f"{where}: field 'time_available': {exc}", field="time_available") from None
    if minutes < limits.shortest:
        raise BriefError(f"{where}: field 'time_available': {text!r} is {minutes} minutes, shorter than the "
                         f"shortest lesson house style allows ({limits.min_minutes} minutes) once "
                         f"{limits.practice_percent}% is kept for practice: give at least {limits.shortest} minutes",
                         field="time_available")
    if limits.lessons_share(minutes) > limits.longest:
        raise BriefError(f"{where}: field 'time_available': {text[:60]!r} is {minutes:,} minutes, "
                         f"{limits.lessons_share(minutes):,} of them lessons; the longest course house style allows "
                         f"is {limits.longest:,} minutes of lessons ({limits.longest // 60} hours of study): split the "
                         "subject into several courses", field="time_available")
    return minutes


def brief_data(text: str, where: str) -> dict[str, Any]:
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise BriefError(f"{where}: the brief is larger than {MAX_BYTES // 1024} KB; a brief is a few lines")

    def refuse(fault: YamlFault, line: int | None) -> BriefError:
        if fault == "aliases":
            return BriefError(f"{where}: the brief uses YAML anchors or aliases (& and *); write each "
                              "value out in full")
        if fault == "deep":
            return BriefError(f"{where}: the brief nests deeper than {MAX_DEPTH} levels; a brief is a flat mapping "
                              "with a list of constraints")
        at = f" at line {line}" if line is not None else ""
        return BriefError(f"{where}: the brief is not valid YAML{at}; fix its syntax")

    return check_keys(guarded_yaml(text, refuse, yaml.SafeLoader), where)


def check_keys(data: object, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BriefError(f"{where}: a brief is a mapping with {', '.join(BRIEF_REQUIRED)} (see {EXAMPLE})")
    known = (*BRIEF_REQUIRED, *BRIEF_OPTIONAL)
    for key in data:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"did you mean '{near[0]}'?" if near else f"the fields are {', '.join(known)}"
            raise BriefError(f"{where}: unknown field '{str(key)[:40]}'; {hint}", field=str(key))
    for key in BRIEF_REQUIRED:
        if key not in data or data[key] is None:
            raise BriefError(f"{where}: field '{key}' is missing; add it (see {EXAMPLE})", field=key)
    return data


def read_brief_text(path: str | os.PathLike[str]) -> str:
    where = os.fspath(path)
    try:
        raw = read_bounded(path, MAX_BYTES)
    except TooLarge:
        raise BriefError(f"{where}: the brief is larger than {MAX_BYTES // 1024} KB; a brief is a few lines",
                         path=where) from None
    except FileNotFoundError:
        raise BriefNotFound(f"{where}: brief not found; give the path of a brief YAML file", path=where) from None
    except IsADirectoryError:
        raise BriefError(f"{where}: is a directory; give the path of a brief YAML file", path=where) from None
    except OSError as exc:
        raise BriefError(f"{where}: cannot read the brief ({exc.strerror or type(exc).__name__})",
                         path=where) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BriefError(f"{where}: the brief is not UTF-8 text; save it as UTF-8", path=where) from None


def read_brief(path: str | os.PathLike[str], limits: DurationLimits = DEFAULT_LIMITS) -> Brief:
    where = os.fspath(Path(path))
    text = read_brief_text(path)
    if not text.strip():  # an empty file, or a pipe read to its end already (it is read once)
        raise BriefError(f"{where}: the brief is empty, nothing was read from it; give a brief YAML file "
                         f"(see {EXAMPLE}), or pipe one in", path=where)
    try:
        brief = validate_as(Brief, brief_data(text, where), where)
        check_duration(brief.time_available, where, limits)
    except ArtefactLoadError as exc:
        raise BriefError(str(exc), path=where, field=exc.field) from None
    except BriefError as exc:  # the checks of a brief's text name no file: this one is read from it
        exc.path = exc.path or where
        raise
    return brief


class CourseManifest(Artefact):
    """course.yaml: the brief and a status projection of every artefact."""

    FILE = "course.yaml"

    schema_: int = Field(alias="schema", serialization_alias="schema")
    slug: Slug
    title: Text
    brief: Brief
    artefacts: dict[str, ManifestStatus]

    model_config = ConfigDict(populate_by_name=True)


class Audience(Artefact):
    """audience.yaml: who the learners are and how much time they have."""

    FILE = "audience.yaml"

    learners: Text
    prior_knowledge: list[Text]
    goals: list[Text] = Field(min_length=1)
    constraints: list[Text] | None = None
    misconceptions: list[Text] | None = Field(
        default=None, description="Misconceptions to anticipate; quiz distractors draw on them.")
    time_budget_minutes: int = Field(gt=0, description=f"The lessons' share of the brief's time_available: "
                                     f"that time less {_L.practice_percent}% of it, rounded down (house style's "
                                     "course.practice_percent), which is kept for exercises and the capstone.")


class LessonEntry(Artefact):
    id: LessonId = Field(description="<module id>-l<two digits>, from l01 inside each module.")
    title: Text
    minutes: int
    summary: Text


class Module(Artefact):
    id: ModuleId = Field(description="m<two digits>, from m01 in curriculum order.")
    slug: Slug = Field(description="Lowercase words joined by hyphens; names the directory.")
    title: Text
    summary: Text
    lessons: list[LessonEntry]


class Curriculum(Artefact):
    """curriculum.yaml: modules and lessons, in teaching order.

    Module ids, module slugs and lesson ids name directories and files, so each is
    checked (``_ids``) and none may repeat: two lessons with one id would be one file.
    """

    FILE = "curriculum.yaml"

    modules: list[Module]

    @model_validator(mode="after")
    def _no_repeats(self) -> Curriculum:
        for kind, values in (("module id", [m.id for m in self.modules]),
                             ("lesson id", [lesson.id for m in self.modules for lesson in m.lessons])):
            repeated = sorted(v for v, n in Counter(values).items() if n > 1)  # linear: a curriculum may be huge
            if repeated:
                raise ValueError(f"{kind} {', '.join(map(repr, repeated))} is used more than once; "
                                 "every one must be unique")
        return self


class Outcome(Artefact):
    id: Text = Field(description="<lesson id>-o<n>, from o1.")
    lesson: Text
    bloom: BloomLevel
    verb: Text = Field(description="One word from bloom-verbs.yaml under this level.")
    text: Text = Field(description="Opens with the verb; one observable behaviour.")


class Outcomes(Artefact):
    """outcomes.yaml: what a learner can do after each lesson."""

    FILE = "outcomes.yaml"

    outcomes: list[Outcome]


class Evidence(Artefact):
    outcome: Text
    methods: list[Method] = Field(min_length=1)


class Assessment(Artefact):
    """assessment.yaml: how evidence of each outcome is gathered."""

    FILE = "assessment.yaml"

    strategy: Text
    evidence: list[Evidence]


class Section(Artefact):
    heading: Text
    kind: SectionKind
    minutes: int
    covers: list[Text]


class NewTerm(Artefact):
    term: TermText
    definition: Text


HEAD_LINES = 6  # a data file's first lines a writer is shown: enough to name its columns, bounded


class DataFileNote(Artefact):
    """A data file as the writers see it: where it is, what it holds, its first lines."""

    path: AssetPath = Field(description="Where it is in the course, e.g. assets/orders.csv.")
    about: Text = Field(description="What it holds and which lessons use it, in one sentence.")
    head: list[str] = Field(default_factory=list, max_length=HEAD_LINES,
                            description="Its first lines, exactly as in the file.")


class DataFile(Artefact):
    """A data file learners download and open: CSV (a header row, then rows), plain text
    (a log, a transcript) or JSON, under the course's ``assets/``."""

    path: AssetPath = Field(description="assets/<lowercase name>.csv, .txt or .json, e.g. assets/orders.csv.")
    about: Text = Field(description="What it holds and which lessons use it, in one sentence.")
    text: Text = Field(max_length=MAX_ASSET_BYTES // 4,
                       description="The whole file, exactly: CSV with a header row and the same number of "
                                   "columns in every row; JSON that parses; or plain text. Every value "
                                   "matches the running example's data.")

    def note(self) -> DataFileNote:
        return DataFileNote(path=self.path, about=self.about, head=self.text.splitlines()[:HEAD_LINES])


class AssetText(Artefact):
    """A file written from another artefact (``Artefact.derived``): its text, exactly as
    the file holds it, with no front matter or YAML around it."""

    text: str


class Case(Artefact):
    """A running example's case: where it happens, who is in it, and its data."""

    setting: Text = Field(description="Where it happens, in the learners' own workplace as audience.yaml "
                                      "describes it: the organisation, the system, the situation.")
    people: list[Text] = Field(min_length=1, description="Who is in it, each with a name and a job title.")
    data: list[Text] = Field(min_length=1, description="The concrete data it works with: records, numbers, "
                                                       "names, commands, each stated exactly.")


class RunningExample(Case):
    """The course's running example, as every lesson plan carries it: the one case all the
    lessons work on. The writers of the lessons run side by side and never see each other;
    each sees this, in its lesson's plan, so the lessons tell one story with the same people
    and numbers, and name the same data files."""

    files: list[DataFileNote] | None = Field(
        default=None, description="The course's data files learners open: name them by path, never paste them.")


class CourseExample(Case):
    """example.yaml: the one running example of the whole course, written once after the
    design gate from the brief, the audience and the curriculum, and read by every
    module's planning call; its data files are written to ``assets/`` from it."""

    FILE = "example.yaml"

    files: list[DataFile] = Field(
        min_length=1, max_length=5,
        description="The data files learners open in the lessons, exercises and capstone, each built from "
                    "the running example's data: one to five small files.")

    @model_validator(mode="after")
    def _unique_paths(self) -> CourseExample:
        paths = [file.path for file in self.files]
        if len(set(paths)) != len(paths):
            raise ValueError(f"files: each data file needs its own path; {paths} repeats one")
        return self

    def derived(self) -> dict[str, Artefact]:
        return {file.path: AssetText(text=file.text if file.text.endswith("\n") else file.text + "\n")
                for file in self.files}

    def running(self) -> RunningExample:
        return RunningExample(setting=self.setting, people=self.people, data=self.data,
                              files=[file.note() for file in self.files])


class PlanCore(Artefact):
    """What a lesson plan holds as the planning call writes it, per lesson."""

    lesson: LessonId
    title: Text
    minutes: int
    outcomes: list[Text]
    sections: list[Section]
    new_terms: list[NewTerm]
    prerequisites: list[TermText]
    revisits: list[TermText]


class LessonPlan(PlanCore):
    """<lesson>.plan.yaml: the contract the wave writes a lesson to. The worked-example
    facts and the running example are optional (extra fields to the format), so a
    course planned without them still loads."""

    FILE = "{lesson}.plan.yaml"

    example_facts: list[Text] | None = Field(
        default=None, description="The facts this lesson's worked example uses, within the running example.")
    running_example: RunningExample | None = Field(
        default=None, description="The module's running example, the same in every plan of the module.")


class LessonContent(Artefact):
    """<lesson>.md: front matter (lesson, title) and the Markdown body."""

    FILE = "{lesson}.md"

    lesson: Text
    title: Text
    body: str = Field(description="Markdown after the front matter: one '# ' title, "
                                  "one '## ' heading per plan section.")


class Exercise(Artefact):
    id: Text
    outcome: Text
    bloom: BloomLevel
    task: Markdown
    hints: list[Markdown]
    solution: Markdown
    minutes: int = Field(gt=0, description=f"Estimated minutes a learner spends on it, {_L.exercise_min} to "
                                           f"{_L.exercise_max} (house style's exercise.min/max_minutes).")


class Exercises(Artefact):
    """<lesson>.exercises.yaml: practice for outcomes at apply or above."""

    FILE = "{lesson}.exercises.yaml"

    lesson: Text
    exercises: list[Exercise]


class Option(Artefact):
    text: Plain
    correct: bool
    why_wrong: Plain | None = Field(default=None,
                                   description="The misconception a wrong option embodies.")


class QuizItem(Artefact):
    id: Text
    outcome: Text | None = None
    retrieves: TermText | None = Field(default=None,
                                   description="An earlier-introduced term this item retrieves.")
    type: ItemType
    stem: Markdown
    options: list[Option] | None = None
    answer: Plain | None = None
    explanation: Markdown


class Quiz(Artefact):
    """<lesson>.quiz.yaml: one item per outcome, plus retrieval items."""

    FILE = "{lesson}.quiz.yaml"

    lesson: Text
    items: list[QuizItem]


ReviewKind = Literal["wrong_key", "two_right", "solution", "contradiction", "untaught"]  # one ``rev`` rule each
ReviewedFile = Literal["content", "exercises", "quiz"]


class ReviewFinding(Artefact):
    """One thing a reviewer found wrong in a lesson's files, quoted from where it stands."""

    kind: ReviewKind = Field(description="wrong_key: the marked answer is wrong; two_right: another option is "
                                         "also right; solution: the solution does not follow from its task or "
                                         "data; contradiction: a figure, name or fact contradicts the plan or "
                                         "the running example; untaught: the item tests nothing the lesson "
                                         "teaches.")
    file: ReviewedFile = Field(description="The file the quote is in: content (the lesson), exercises or quiz.")
    item: str = Field(default="", description="The quiz item's or exercise's id (m01-l02-q3, m01-l02-e1); "
                                              "empty for the lesson.")
    quote: Text = Field(description="The words that are wrong, copied verbatim from that file (and item).")
    why: Text = Field(description="Why it is wrong for a learner, in one sentence, with the evidence.")
    fix: Text = Field(description="What to change, in one sentence.")


class LessonReview(Artefact):
    """.review/<lesson>.review.yaml: what the review stage found in a lesson's files, the
    findings it could not quote dropped and counted. Under a directory whose name starts
    with '.', so the contract's layout rule (lay001), the course hash and the viewer pass
    it over: it is stay's record for the ``rev`` rules, not a file learners are shown."""

    FILE = ".review/{lesson}.review.yaml"

    lesson: Text
    findings: list[ReviewFinding]
    dropped: int = Field(default=0, description="Findings dropped because their quote was not in their file.")


class Milestone(Artefact):
    id: Text
    title: Text
    modules: list[Text]
    description: Markdown


class RubricCriterion(Artefact):
    id: Text
    criterion: Text
    outcomes: list[Text]
    levels: dict[str, Plain] = Field(
        description="One description per house-style rubric level, in that order.")


class Project(Artefact):
    """project.yaml: the capstone."""

    FILE = "project.yaml"

    title: Text
    brief: Markdown
    deliverable: Markdown
    minutes: int = Field(gt=0, description=f"Estimated minutes a learner spends on the whole capstone, "
                                           f"{_L.capstone_min} to {_L.capstone_max} (house style's "
                                           "capstone.min/max_minutes).")
    milestones: list[Milestone]
    rubric: list[RubricCriterion]


class GlossaryTerm(Artefact):
    term: TermText
    definition: Text
    introduced_in: LessonId


class Glossary(Artefact):
    """glossary.yaml: every introduced term, merged from the plans after the wave."""

    FILE = "glossary.yaml"

    terms: list[GlossaryTerm]


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


# Line breaks YAML folds on reading unless they are escaped in a double-quoted scalar.
_FOLDED_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style: str | None = None
    if any(c in value for c in _FOLDED_BREAKS):
        style = '"'
    elif "\n" in value:
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """The pure-Python emitter (libyaml's cannot indent a sequence under its key), never wrapping."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=sys.maxsize)


def to_data(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def dump(model: BaseModel) -> str:
    if isinstance(model, AssetText):
        return model.text
    if isinstance(model, LessonContent):
        front = {"lesson": model.lesson, "title": model.title, **(model.model_extra or {})}
        return "---\n" + dump_yaml(front) + "---\n" + model.body
    return dump_yaml(to_data(model))


_FRONT_MATTER = re.compile(r"---\n(.*?\n)?---(?:\n|$)", re.DOTALL)


def parse_markdown(text: str, where: str = "lesson") -> LessonContent:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise ArtefactLoadError(
            f"{where}: front matter is missing; start the file with a '---' line, "
            "'lesson:' and 'title:', and a closing '---' line")
    front = _safe_load(match.group(1) or "", where)
    if not isinstance(front, dict):
        raise ArtefactLoadError(f"{where}: front matter must be a mapping with lesson and title")
    return validate_as(LessonContent, {**front, "body": text[match.end():]}, where)


def _safe_load(text: str, where: str) -> Any:
    def refuse(fault: YamlFault, line: int | None) -> ArtefactLoadError:
        if fault == "aliases":
            return ArtefactLoadError(f"{where}: uses YAML anchors or aliases (& and *); write each value out in full")
        if fault == "deep":
            return ArtefactLoadError(f"{where}: nests deeper than {MAX_DEPTH} levels, deeper than any artefact; "
                                     "fix the file, or regenerate it")
        at = f" at line {line}" if line is not None else ""
        return ArtefactLoadError(f"{where}: not valid YAML{at}; fix the syntax")

    return guarded_yaml(text, refuse)


def parse(model: type[M], text: str, where: str = "artefact") -> M:
    if model is LessonContent:
        return parse_markdown(text, where)  # type: ignore[return-value]
    if model is AssetText:
        return AssetText(text=text)  # type: ignore[return-value]
    return validate_as(model, _safe_load(text, where), where)


def artefact_type(path: str | os.PathLike[str]) -> type[Artefact]:
    name = Path(path).name
    if ASSET_PATTERN.fullmatch(f"{Path(path).parent.name}/{name}"):
        return AssetText  # a data file: its text, as it is
    # a lesson's file by what follows {lesson}, and the folder before it (.review/) if its FILE names one
    folder = f"{Path(path).parent.name}/"
    lesson_files = [(pattern.partition("{lesson}"), model) for pattern, model in FILES.items() if "{lesson}" in pattern]
    for (before, _, suffix), model in sorted(lesson_files, key=lambda row: -len(row[0][2])):  # .plan.yaml first
        if name.endswith(suffix) and before in ("", folder):
            return model
    top = FILES.get(name)
    if top is None or "{lesson}" in name:
        raise ArtefactLoadError(f"{path}: not a course artefact; see course-format.md for names", path=path)
    return top


def load(path: str | os.PathLike[str], model: type[M] | None = None) -> M:
    chosen = model if model is not None else artefact_type(path)
    return parse_bytes(chosen, read_bytes(path), os.fspath(path))  # type: ignore[return-value]


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        return read_bounded(path)
    except TooLarge as exc:
        raise ArtefactLoadError(str(exc), path=path) from None
    except FileNotFoundError:
        raise ArtefactLoadError(f"{os.fspath(path)}: file not found", path=path) from None


def parse_bytes(model: type[M], data: bytes, where: str) -> M:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArtefactLoadError(f"{where}: not UTF-8; save the file as UTF-8", path=where) from None
    try:
        return parse(model, text, where)
    except ArtefactError as exc:  # parse's ``where`` may be a label; here it is the file
        exc.path = exc.path or where
        raise


TEMPORARY = re.compile(r"\.(?P<name>.+)\.stay-[0-9a-f]{16}\.tmp")
"""Every temporary stay makes: the sweep after a killed run removes these, never a person's ``*.tmp``."""


def temporary_name(name: str) -> str:
    return f".{name}.stay-{secrets.token_hex(8)}.tmp"


def _create_beside(target: Path, parent: int | None) -> tuple[int, str]:
    """Mode 0666 less the umask (mkstemp's 0600 would hide a course file from a group)."""
    while True:
        name = temporary_name(target.name)
        temp = name if parent is not None else os.fspath(target.parent / name)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666, **at(parent, "dir_fd"))
            return fd, temp
        except FileExistsError:
            continue  # 64 random bits met an existing name: draw again


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """A whole file or nothing. The rename replaces a planted link rather than writing through it,
    and the directory is walked to without following one (``stay._paths``). Every write comes
    through here or ``create_text_atomic``: where a configured secret is cut out by value."""
    target = Path(path)
    parent = parent_of(target)
    try:
        temp = _filled_beside(target, redact_bytes(data), parent)
        try:
            recheck(target)
            os.replace(temp, target.name if parent is not None else target, **at(parent, "src_dir_fd", "dst_dir_fd"))
        except BaseException:
            _remove(temp, parent)
            raise
    finally:
        if parent is not None:
            os.close(parent)


_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}  # no hard links here (vfat: EPERM)


def create_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """FileExistsError when the file exists, even if made meanwhile: a hard link, unlike a rename,
    refuses a name that is taken."""
    target = Path(path)
    parent = parent_of(target)
    name = target.name if parent is not None else os.fspath(target)
    try:
        temp = _filled_beside(target, redact_bytes(text.encode("utf-8")), parent)
        try:
            recheck(target)
            try:
                os.link(temp, name, **at(parent, "src_dir_fd", "dst_dir_fd"))
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise  # the name is taken (FileExistsError), the disk is full, ...
                # no hard links here (FAT, some network shares): claim the name with an empty file
                # (refused when it is taken), then rename the whole text over that claim
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666, **at(parent, "dir_fd")))
                os.replace(temp, name, **at(parent, "src_dir_fd", "dst_dir_fd"))
        finally:
            _remove(temp, parent)
    finally:
        if parent is not None:
            os.close(parent)


def _remove(temp: str, parent: int | None) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, **at(parent, "dir_fd"))


def _filled_beside(target: Path, data: bytes, parent: int | None) -> str:
    """Synced to disk, so the name it is given next never shows fewer bytes after a power cut."""
    if parent is None:  # a walked directory was made on the way
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = _create_beside(target, parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove(temp, parent)
        raise
    return temp


def write(path: str | os.PathLike[str], model: BaseModel) -> None:
    write_text_atomic(path, dump(model))


# -- a course directory read as artefacts: the one reader the pipeline, the scorers and the viewer
# share. ``load`` raises (the pipeline stops), ``read`` records why (the viewer shows a damaged course).


def module_dir(module: Module) -> str:
    """``modules/<id>-<slug>``: the Module type has checked both before this joins them."""
    return f"modules/{module.id}-{module.slug}"


def lesson_file(module: Module, lesson_id: str, kind: type[Artefact]) -> str:
    pattern = kind.FILE
    if pattern is None or "{lesson}" not in pattern:
        raise ArtefactLoadError(f"{kind.__name__} is not a kind of lesson file; see course-format.md")
    return f"{module_dir(module)}/{pattern.format(lesson=lesson_id)}"


@dataclass(frozen=True)
class Loaded(Generic[M]):
    path: str  # relative to the course directory, '/'-separated
    model: M | None = None
    problem: str | None = None
    missing: bool = False

    @property
    def ok(self) -> bool:
        return self.model is not None


class CourseReader:
    """Each file parsed once per distinct bytes, read every time: a cache keyed on time and size
    would miss a same-size rewrite within one clock tick. Safe to share between threads."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._parsed: dict[str, tuple[bytes, BaseModel]] = {}
        self._lock = threading.Lock()

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def load(self, path: str, kind: type[M] | None = None) -> M:
        file = self.root / path
        return self._parse(path, kind, read_bytes(file), os.fspath(file))

    def maybe(self, path: str, kind: type[M]) -> M | None:
        return self.load(path, kind) if self.exists(path) else None

    def read(self, path: str, kind: type[M]) -> Loaded[M]:
        """Never raises for anything the file holds; follows no link out of the course."""
        file = self.root / path
        try:
            if not file.resolve().is_relative_to(self.root.resolve()):
                return Loaded(path, problem="a link that leaves the course directory; not followed")
            if not file.exists():
                return Loaded(path, problem="missing", missing=True)
            if not file.is_file():
                return Loaded(path, problem="not a regular file")
            data = read_bounded(file)
        except TooLarge:
            return Loaded(path, problem=f"too large to show (over {MAX_FILE_BYTES // 2**20} MB, the limit on a "
                                        "course file)")
        except OSError as exc:
            return Loaded(path, problem=f"cannot be read ({exc.strerror or type(exc).__name__})")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return Loaded(path, problem="not UTF-8 text")
        try:
            return Loaded(path, model=self._parse(path, kind, data, path))
        except ArtefactLoadError as exc:
            return Loaded(path, problem=str(exc))
        except RecursionError:
            return Loaded(path, problem=f"{path}: nested too deeply to read")

    def _parse(self, path: str, kind: type[M] | None, data: bytes, where: str) -> M:
        chosen = kind if kind is not None else artefact_type(path)
        with self._lock:
            cached = self._parsed.get(path)
        if cached is not None and cached[0] == data and isinstance(cached[1], chosen):
            return cast(M, cached[1])
        parsed = parse_bytes(chosen, data, where)
        with self._lock:
            self._parsed[path] = (data, parsed)
        return cast(M, parsed)

    def sha256(self) -> str:
        """One hash of every course file, hidden directories left out."""
        digest = hashlib.sha256()
        for file in sorted(p for p in self.root.rglob("*") if p.is_file()):
            relative = file.relative_to(self.root)
            if any(part.startswith(".") for part in relative.parts):
                continue
            try:
                data = read_bytes(file)
            except OSError as exc:
                raise ArtefactLoadError(f"{file}: cannot be read ({exc.strerror or type(exc).__name__})") from None
            digest.update(f"{relative.as_posix()}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        return digest.hexdigest()


__all__ = [
    "BRIEF_OPTIONAL", "BRIEF_REQUIRED", "DEFAULT_LIMITS", "FILES", "FORMAT_NOTES", "TEMPORARY", "Artefact",
    "ArtefactLoadError", "Assessment", "AssetText", "Audience", "BloomLevel", "Brief", "CourseExample",
    "CourseManifest", "CourseReader", "Curriculum", "DataFile", "DurationLimits", "Exercise", "Exercises",
    "Glossary", "GlossaryTerm", "LessonContent", "LessonEntry", "LessonPlan", "LessonReview", "Loaded", "Markdown",
    "Milestone", "Module", "NewTerm", "Option", "Outcomes", "Plain", "PlanCore", "Project", "Quiz", "QuizItem",
    "ReviewFinding", "RubricCriterion", "RunningExample", "Section", "Text", "YamlFault", "artefact_type",
    "check_duration", "create_text_atomic", "dump", "dump_yaml", "guarded_yaml", "lesson_file", "load", "module_dir",
    "parse", "parse_bytes", "parse_duration", "read_brief", "read_bytes", "text_format", "to_data", "validate_as",
    "write", "write_bytes_atomic", "write_text_atomic",
]
