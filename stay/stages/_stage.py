"""One declaration per stage (``Stage``), from which the pipeline derives its nodes, edges and
handlers, and the prompts it is asked with: templates and reference documents (``Prompts``, loaded
once), and a stage's inputs as a request. A stage stays pure: no I/O, clock or randomness."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from stay._bounds import MAX_DEPTH, TooLarge, read_bounded
from stay._words import did_you_mean
from stay.artefacts import (
    DEFAULT_LIMITS,
    Artefact,
    ArtefactLoadError,
    Brief,
    DurationLimits,
    RunningExample,
    YamlFault,
    guarded_yaml,
    to_data,
    validate_as,
)
from stay.errors import AnswerError, GraphError, UsageError
from stay.requests import ModelAnswer, ModelRequest, OfflineAnswer, Role, SystemBlock
from stay.settings import resolve_data_dir
from stay.stages._offline import answer_offline
from stay.validate import BLOOM_FILE, HOUSE_FILE

Phase = Literal["design", "plan", "wave", "review"]
Scope = Literal["course", "module", "lesson"]  # a module's call answers for all its lessons


# An input is named by the artefact kind it reads, or by one of these views (stay.pipeline._layout
# finds each in a course).


@dataclass(frozen=True)
class LessonOutcomesInput:
    """This lesson's outcomes."""


@dataclass(frozen=True)
class EarlierLessonsInput:
    """Each earlier lesson's title and new terms, nothing more, so a long course's request stays bounded."""


@dataclass(frozen=True)
class DefinitionsInput:
    """Each of this plan's ``prerequisites`` and ``revisits`` with the definition its introducing plan gave."""


@dataclass(frozen=True)
class ModuleIdInput:
    """This module's id: no file, so no edge."""


@dataclass(frozen=True)
class EarlierPlansInput:
    """The plans of every module before this one (module scope)."""


@dataclass(frozen=True)
class AllPlansInput:
    """Every lesson plan of the course, in lesson order."""


@dataclass(frozen=True)
class DataFilesInput:
    """Each data file this lesson's files of the kinds ``named_in`` name, cut at 8,000 characters."""

    named_in: tuple[type[Artefact], ...]


View = (LessonOutcomesInput | EarlierLessonsInput | DefinitionsInput | ModuleIdInput | EarlierPlansInput
        | AllPlansInput | DataFilesInput)
Source = type[Artefact] | View

SCOPED: Mapping[type, tuple[Scope, ...]] = {
    LessonOutcomesInput: ("lesson",), EarlierLessonsInput: ("lesson",), DefinitionsInput: ("lesson",),
    ModuleIdInput: ("module",), EarlierPlansInput: ("module",), DataFilesInput: ("lesson",),
}


def lesson_file(source: Source) -> str | None:
    return source.FILE if isinstance(source, type) and "{lesson}" in (source.FILE or "") else None


def _source_problem(name: str, source: Source, scope: Scope) -> str | None:
    if isinstance(source, type):
        if source not in (Brief, RunningExample) and source.FILE is None:
            return f"input {name!r} ({source.__name__}) is no course file; name a kind with a FILE"
        return f"input {name!r} ({source.__name__}) is a lesson's file: it needs scope lesson, not {scope}" \
            if lesson_file(source) and scope != "lesson" else None
    scopes = SCOPED.get(type(source))
    if scopes is not None and scope not in scopes:
        return f"input {name!r} ({type(source).__name__}) needs scope {scopes[0]}, not {scope}"
    return None


Make = Callable[[Any, Mapping[str, Any]], Artefact | Sequence[Artefact]]
Check = Callable[[Sequence[Artefact], Mapping[str, Any], DurationLimits], None]
"""A stage's own check of what it made: an ``AnswerError`` asks for the answer again."""


def same(answer: Any, _inputs: Mapping[str, Any]) -> Artefact:
    made: Artefact = answer
    return made


@dataclass(frozen=True)
class Stage:
    name: str
    role: Role
    phase: Phase
    scope: Scope
    answer: type[BaseModel]  # the structured answer asked of the model
    inputs: tuple[tuple[str, Source], ...]  # in the order the request shows them
    needs: tuple[str, ...]
    """Its reference floor: a prompts directory whose front matter no longer reaches one is refused."""
    offline: OfflineAnswer
    """Pure, and complete enough that the course passes the validator with --strict."""
    makes: type[Artefact] | None = None  # the kind it writes, when the answer is another shape
    shared: tuple[str, ...] = ()  # inputs every call in one run shares: sent first, and cached
    make: Make = same  # answer (and typed inputs) -> its artefact, or a module's in lesson order
    check: Check | None = None
    """Run before anything is written: later calls scale with what it made, so a misfit is refused early."""
    template: str = ""  # default: its name
    node: str = ""  # default: from phase and scope
    doc: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        problems = []
        names = [name for name, _source in self.inputs]
        if len(set(names)) != len(names):
            problems.append("an input name is used twice")
        problems += [f"shared input {name!r} is not one of its inputs" for name in self.shared if name not in names]
        problems += [found for name, source in self.inputs if (found := _source_problem(name, source, self.scope))]
        kind = self.makes or self.answer
        file = kind.FILE if issubclass(kind, Artefact) else None
        if file is None:
            problems.append(f"{kind.__name__} is no course file (an Artefact with a FILE); name the kind it "
                            "makes (makes=...)")
        elif self.scope == "course" and "{lesson}" in file:
            problems.append("a course-scope output names no lesson")
        elif self.scope != "course" and "{lesson}" not in file:
            problems.append("a module- or lesson-scope output must contain {lesson}")
        if self.phase == "plan" and self.scope == "lesson":
            problems.append("planning runs per module or per course, before the wave")
        if problems:
            raise GraphError(f"stage {self.name}: " + "; ".join(problems))

    @property
    def kind(self) -> type[Artefact]:
        kind = self.makes or self.answer
        assert issubclass(kind, Artefact)
        return kind

    @property
    def output(self) -> str:
        file = self.kind.FILE
        assert file is not None
        return file

    def answer_offline(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return answer_offline(self.name, self.offline, inputs)

    @property
    def written(self) -> str:
        """Where its file lies in a sample course: what a reference document's ``files:`` globs match."""
        return self.output if self.scope == "course" else \
            f"{SAMPLE_MODULE_DIR}/{self.output.format(lesson=SAMPLE_LESSON)}"

    @property
    def prompt(self) -> str:
        return self.template or self.name

    @property
    def node_name(self) -> str:
        if self.node:
            return self.node
        if self.phase == "wave":
            return "write_lesson" if self.scope == "lesson" else f"write_{self.name}"
        return self.name if self.scope == "course" else f"{self.name}_modules"

    def request(self, inputs: Mapping[str, Any], prompts: Prompts, artefact: str) -> ModelRequest:
        data = {name: _plain(inputs[name]) for name, _source in self.inputs}
        return build_request(stage=self.name, template=self.prompt, role=self.role,
                             references=prompts.reference_set(self), prompts=prompts, artefact=artefact,
                             output=self.answer, inputs=data, shared=self.shared, offline=self.answer_offline)

    def artefacts(self, answer: ModelAnswer, inputs: Mapping[str, Any], artefact: str,
                  limits: DurationLimits = DEFAULT_LIMITS) -> list[Artefact]:
        """A misfit is an ``AnswerError`` naming the stage, the file and the field."""
        parsed = parse_answer(self.answer, answer, self.name, artefact)
        made = self.make(parsed, inputs)
        artefacts = list(made) if isinstance(made, Sequence) else [made]
        if self.check is not None:
            self.check(artefacts, inputs, limits)
        return artefacts


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return to_data(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


# Where each reference document applies is its front matter (a YAML one's is <name>.applies.yaml
# beside it); docs/pipeline.md describes it. Every file is read: one that is no document, or applies
# nowhere, is refused. A stage's set is in a stable order: the references every stage shares (the
# cached prefix), its floor (Stage.needs), then the others by name.

COMMON_REFERENCES: tuple[str, ...] = ("course-state.md", "house-style.yaml", "bloom-verbs.yaml")

FENCE = "---"
SIDECAR = ".applies.yaml"
MAX_GLOB = 500  # matching costs a glob's length times a path's (under 50)
SAMPLE_LESSON = "m01-l01"  # a lesson's file is matched against ``files:`` globs as this lesson's
SAMPLE_MODULE_DIR = "modules/m01-module"


def sidecar_of(name: str) -> str:
    return name.removesuffix(".yaml") + SIDECAR


def ignored(name: str) -> bool:
    """Hidden files and editors' backups and swap files: passed over."""
    return name.startswith(".") or name.endswith(("~", ".swp", ".swo", ".swx")) or (
        name.startswith("#") and name.endswith("#"))


class Applies(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    always: bool = False

    @model_validator(mode="after")
    def _somewhere(self) -> Applies:
        if not (self.stages or self.files or self.always):
            raise ValueError("it applies nowhere")
        return self


_TOKEN = re.compile(r"\*\*/|\*\*|.", re.DOTALL)
"""A glob's tokens, left to right: ``**/``, else ``**``, else one character."""


def glob_match(pattern: str, path: str) -> bool:
    """``*`` and ``?`` stay inside one folder, ``**`` spans any, ``**/`` is any folders or none. A
    table of (token, position), not a regex: nested ``.*`` backtracked for hours."""
    tokens, end = _TOKEN.findall(pattern), len(path)
    after = [False] * end + [True]  # whether tokens[i + 1:] match path[j:], for the token after this one
    for token in reversed(tokens):
        here = [False] * (end + 1)
        ahead = False  # for '**/': a '/' at some k >= j with tokens[i + 1:] matching path[k + 1:]
        for j in range(end, -1, -1):
            char = path[j] if j < end else ""
            if token == "**/":
                ahead = ahead or (char == "/" and after[j + 1])
                here[j] = after[j] or ahead
            elif token == "**":
                here[j] = after[j] or (j < end and here[j + 1])
            elif token == "*":
                here[j] = after[j] or (j < end and char != "/" and here[j + 1])
            else:
                here[j] = j < end and (char != "/" if token == "?" else char == token) and after[j + 1]
        after = here
    return after[0]


def reaches(applies: Applies, stage: Stage) -> bool:
    return applies.always or stage.name in applies.stages or any(
        glob_match(pattern, stage.written) for pattern in applies.files)


def reference_set(applies: Mapping[str, Applies], stage: Stage) -> tuple[str, ...]:
    reached = {name for name, where in applies.items() if reaches(where, stage)}
    floor = (*COMMON_REFERENCES, *stage.needs)
    return (*(name for name in dict.fromkeys(floor) if name in reached),
            *sorted(reached - set(floor)))


def attachment_problems(directory: str, applies: Mapping[str, Applies], stages: Sequence[Stage]) -> list[str]:
    names = [stage.name for stage in stages]
    where = f"{directory}/reference"
    found = []
    for document, what in applies.items():
        declared = f"{where}/{document}" + ("" if document.endswith(".md") else f" ({sidecar_of(document)})")
        found += [f"{declared}: there is no stage '{name}'{did_you_mean(name, names)}; the stages are "
                  f"{', '.join(names)}" for name in what.stages if name not in names]
        found += [f"{declared}: files: {pattern!r} matches no file a stage writes (they are "
                  f"{', '.join(sorted({s.written for s in stages}))}); fix the glob"
                  for pattern in what.files if not any(glob_match(pattern, stage.written) for stage in stages)]
    missing: dict[str, list[str]] = {}  # a floor document -> the stages that lack it, one line per document
    unreached: dict[str, list[str]] = {}
    for stage in stages:
        held = reference_set(applies, stage)
        for name in dict.fromkeys((*COMMON_REFERENCES, *stage.needs)):
            if name not in held:
                (unreached if name in applies else missing).setdefault(name, []).append(stage.name)
    for name, lacking in missing.items():
        found.append(f"{where}/{name}: missing, and stage{'s' * (len(lacking) > 1)} {', '.join(lacking)} cannot do "
                     "without it; copy it from stay's prompts/reference/")
    for name, lacking in unreached.items():
        found.append(f"{where}/{name}: its front matter no longer reaches stage{'s' * (len(lacking) > 1)} "
                     f"{', '.join(lacking)}, which cannot do without it; add {', '.join(lacking)} to its stages:")
    return found


def split_front_matter(path: Path, text: str) -> tuple[Applies, str]:
    lines = text.split("\n")
    if lines[0].rstrip("\r") != FENCE:
        raise _Refused(f"{path}: has no front matter; open it with '---', then 'stages: [outcomes]', "
                       "'files: [\"modules/**/*.md\"]' or 'always: true', then '---'")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r") == FENCE), None)
    if end is None:
        raise _Refused(f"{path}: its front matter is never closed; end it with a line holding '---'")
    return parse_applies(path, "\n".join(lines[1:end])), "\n".join(lines[end + 1:])


def parse_applies(path: Path, block: str) -> Applies:
    def refuse(fault: YamlFault, line: int | None) -> _Refused:
        if fault == "deep":
            return _Refused(f"{path}: its front matter nests deeper than {MAX_DEPTH} levels; write it as "
                            "'stages: [outcomes]'")
        if fault == "aliases":
            return _Refused(f"{path}: its front matter uses YAML anchors or aliases (& and *); write each value "
                            "out in full")
        at = f" (line {line})" if line is not None else ""
        return _Refused(f"{path}: its front matter is not YAML{at}; write it as 'stages: [outcomes]'")

    raw = guarded_yaml(block, refuse, yaml.SafeLoader)
    if not isinstance(raw, dict):
        raise _Refused(f"{path}: its front matter is not a mapping; write 'stages: [...]', 'files: [...]' "
                       "or 'always: true'")
    try:
        applies = Applies.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(part) for part in error["loc"])
        keys = tuple(Applies.model_fields)
        if error["type"] == "extra_forbidden":
            raise _Refused(f"{path}: unknown front matter key '{loc}'{did_you_mean(loc, keys)}; the keys are "
                           f"{', '.join(keys)}") from None
        if not loc:
            raise _Refused(f"{path}: its front matter applies nowhere; give stages:, files: or always: true") from None
        wanted = "true or false" if loc == "always" else f"a list, as {loc}: [...]"
        raise _Refused(f"{path}: front matter {loc} should be {wanted}") from None
    for pattern in applies.files:
        if len(pattern) > MAX_GLOB:
            raise _Refused(f"{path}: files: a glob of {len(pattern):,} characters, longer than {MAX_GLOB}; no "
                           "course path is near that long, so shorten it")
    return applies


class _Refused(UsageError):
    """A line of the refusal."""


def refusal(problems: Sequence[str]) -> UsageError:
    if len(problems) == 1:
        return UsageError(problems[0])
    return UsageError(f"{len(problems)} problems with the reference documents:\n"
                      + "\n".join(f"({number}) {line}" for number, line in enumerate(problems, 1)))


def load_references(directory: Path) -> tuple[dict[str, str], dict[str, Applies], list[str]]:
    """Each document's text as sent, where it applies, and a line for each file that is no document."""
    texts: dict[str, str] = {}
    applies: dict[str, Applies] = {}
    problems: list[str] = []
    entries = sorted(directory.iterdir()) if directory.is_dir() else []
    names = {entry.name for entry in entries}
    for entry in entries:
        if ignored(entry.name):
            continue
        try:
            _one(entry, names, texts, applies)
        except (_Refused, TooLarge) as exc:
            problems.append(str(exc))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{entry}: cannot read this reference ({type(exc).__name__}); fix or remove it")
    return texts, applies, problems


def _one(entry: Path, names: Iterable[str], texts: dict[str, str], applies: dict[str, Applies]) -> None:
    name = entry.name
    if entry.is_dir():
        raise _Refused(f"{entry}: reference/ holds documents, not folders; move it out")
    if name.endswith(SIDECAR):
        document = name.removesuffix(SIDECAR) + ".yaml"
        if document not in names:
            raise _Refused(f"{entry}: says where {document} applies, which is not here; "
                           "remove it, or add that document")
        return
    if name.endswith(".md"):
        applies[name], texts[name] = split_front_matter(entry, read_prompt(entry))
    elif name.endswith(".yaml"):
        sidecar = entry.with_name(sidecar_of(name))
        if sidecar.name not in names:
            raise _Refused(f"{entry}: has no front matter; a YAML document says where it applies in {sidecar.name} "
                           "beside it (stages: [...], files: [...] or always: true)")
        applies[name] = parse_applies(sidecar, read_prompt(sidecar))
        texts[name] = read_prompt(entry)
    else:
        raise _Refused(f"{entry}: is not a reference document; reference/ holds .md and .yaml documents "
                       "(rename it, or move it out)")


M = TypeVar("M", bound=BaseModel)

REGENERATE = "regenerate"  # the template every repair or revision ends with
SHARED_TEMPLATES: tuple[str, ...] = ("common", REGENERATE)


def packaged_prompts_dir() -> Path:
    here = Path(__file__).resolve().parents[1]
    wheel = here / "_prompts"
    return wheel if wheel.is_dir() else here.parent / "prompts"


def read_prompt(path: str | os.PathLike[str]) -> str:
    return read_bounded(path).decode("utf-8")


_registry: list[Sequence[Stage]] = [()]
"""``stay.stages.REGISTRY``, handed over by the package once built (the package imports this module)."""


def use_registry(stages: Sequence[Stage]) -> None:
    _registry[0] = stages


@dataclass(frozen=True)
class Prompts:
    directory: str
    templates: Mapping[str, str]
    references: Mapping[str, str]  # without the front matter
    applies: Mapping[str, Applies] = field(default_factory=dict)
    _sets: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, directory: str | os.PathLike[str] | None = None, stages: Sequence[Stage] | None = None,
             data_dir: str | os.PathLike[str] | None = None) -> Prompts:
        """The validator's two data files come from ``data_dir``: one copy, so a stage is told
        the table it is checked against. Every problem is one UsageError naming the files."""
        root = Path(directory) if directory is not None else packaged_prompts_dir()
        if not root.is_dir():
            raise UsageError(f"{root}: the prompts directory does not exist; give a copy of prompts/ "
                             "(--prompts-dir or STAY_PROMPTS_DIR)")
        try:
            templates = {p.stem: read_prompt(p) for p in sorted(root.glob("*.md"))}
        except TooLarge as exc:
            raise UsageError(str(exc)) from None
        except (OSError, UnicodeDecodeError) as exc:
            where = getattr(exc, "filename", None) or root
            raise UsageError(f"{where}: cannot read this prompt file ({type(exc).__name__}); a prompts "
                             "directory holds one template per stage and reference/ with its documents") from None
        references, applies, unread = load_references(root / "reference")
        data = resolve_data_dir(data_dir)
        for name in (BLOOM_FILE, HOUSE_FILE):
            if os.path.lexists(root / "reference" / name):  # a copy from before there was one
                unread.append(f"{root / 'reference' / name}: a stage is sent the data directory's {name} "
                              f"({data / name}), the one the validator checks against; remove this copy")
            try:
                references[name], applies[name] = read_prompt(data / name), Applies(always=True)
            except (OSError, UnicodeDecodeError, TooLarge) as exc:
                unread.append(f"{data / name}: cannot read this data file ({type(exc).__name__}); "
                              "give a data directory holding it (--data-dir or STAY_DATA_DIR)")
        references, applies = dict(sorted(references.items())), dict(sorted(applies.items()))
        missing = [f"{name}.md" for name in SHARED_TEMPLATES if name not in templates]
        if missing:  # said now, not when a repair first needs it, after the calls before it were paid
            raise UsageError(f"{root}: the prompts directory has no {', '.join(missing)}; copy it from stay's "
                             "prompts/ (every stage's request uses common.md, a repair or revision regenerate.md)")
        prompts = cls(os.fspath(root), templates, references, applies)
        checked_references(prompts, _registry[0] if stages is None else stages, unread)
        return prompts

    def reference_set(self, stage: Stage) -> tuple[str, ...]:
        if stage.name not in self._sets:
            self._sets[stage.name] = reference_set(self.applies, stage)
        return self._sets[stage.name]

    def template(self, name: str) -> str:
        if name not in self.templates:
            raise UsageError(f"{self.directory}: there is no prompt template {name}.md; every stage needs one")
        return self.templates[name]

    def digest(self, name: str) -> str:
        text = self.references[name.removeprefix("reference/")] if name.startswith("reference/") \
            else self.template(name)
        return hashlib.sha256(text.encode()).hexdigest()

    def hashes(self) -> dict[str, str]:
        files = {f"{name}.md": text for name, text in self.templates.items()}
        files.update({f"reference/{name}": text for name, text in self.references.items()})
        return {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sorted(files.items())}


def checked_references(prompts: Prompts, stages: Sequence[Stage],
                       unread: Sequence[str] = ()) -> dict[str, tuple[str, ...]]:
    problems = [*unread, *attachment_problems(prompts.directory, prompts.applies, stages)]
    if problems:
        raise refusal(problems)
    return {stage.name: prompts.reference_set(stage) for stage in stages}


def parse_answer(output: type[M], answer: ModelAnswer, stage: str, artefact: str) -> M:
    try:
        return validate_as(output, answer.data, f"{artefact} (stage {stage})")
    except ArtefactLoadError as exc:
        raise AnswerError(f"the model's answer does not fit its schema: {exc}", path=artefact,
                          field=exc.field) from None


try:
    _Dumper: type[yaml.SafeDumper | yaml.CSafeDumper] = yaml.CSafeDumper  # libyaml: much faster
except AttributeError:  # PyYAML built without libyaml
    _Dumper = yaml.SafeDumper


def render_inputs(inputs: Mapping[str, Any]) -> str:
    return "\n".join(f"## {name}\n\n```yaml\n{_render(value)}```\n" for name, value in inputs.items())


def _render(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


@cache
def answer_schema(output: type[BaseModel]) -> dict[str, Any]:
    return output.model_json_schema()


def _documents(prompts: Prompts, names: tuple[str, ...]) -> str:
    return "\n\n".join(f'<reference name="{name}">\n{prompts.references[name]}\n</reference>' for name in names)


def build_request(*, stage: str, role: Role, references: tuple[str, ...], prompts: Prompts,
                  artefact: str, output: type[BaseModel], inputs: Mapping[str, Any],
                  shared: tuple[str, ...] = (), template: str | None = None,
                  offline: OfflineAnswer | None = None) -> ModelRequest:
    """The system prompt is the stable prefix: the preamble and shared references (cached), then the
    stage's instructions and own references (cached only with ``shared`` inputs: a single call's
    prefix would only pay the write premium). What varies per call is in the user message."""
    common = tuple(name for name in COMMON_REFERENCES if name in references)
    own = tuple(name for name in references if name not in COMMON_REFERENCES)
    system = (
        SystemBlock(text=prompts.templates["common"].strip(), label="the common preamble (prompt template)"),
        SystemBlock(text=_documents(prompts, common), cache=True, label="the reference documents"),
        SystemBlock(text=prompts.template(template or stage).strip(),
                    label="the stage instructions (prompt template)"),
        SystemBlock(text=_documents(prompts, own), cache=bool(shared), label="the reference documents"),
    )
    # The API refuses an empty text block. A stage holding none of the common references
    # keeps no breakpoint after the preamble alone: it is far below any model's cache minimum.
    kept = [block for block in system if block.text]
    return ModelRequest(
        stage=stage, role=role, artefact=artefact, system=tuple(kept),
        shared=render_inputs({k: inputs[k] for k in shared}),
        user=render_inputs({k: v for k, v in inputs.items() if k not in shared}),
        output_schema=answer_schema(output),
        output_name=output.__name__, inputs=dict(inputs), offline=offline,
    )
