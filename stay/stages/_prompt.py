"""Prompt templates and reference documents, and a stage's inputs as a request. The runner
loads ``Prompts`` once (I/O); a request is then a pure function of the stage and its
inputs, so a prompt change shows up as a snapshot diff."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from stay._bounds import TooLarge, read_bounded
from stay.artefacts import ArtefactLoadError, validate_as
from stay.errors import AnswerError, UsageError
from stay.requests import ModelAnswer, ModelRequest, OfflineAnswer, Role, SystemBlock
from stay.stages._references import (
    COMMON_REFERENCES,
    Applies,
    Attachable,
    attachment_problems,
    load_references,
    reference_set,
    refusal,
)

M = TypeVar("M", bound=BaseModel)

REGENERATE = "regenerate"
"""What every request that regenerates a file ends with (repair, revision): regenerate.md."""
SHARED_TEMPLATES: tuple[str, ...] = ("common", REGENERATE)
"""The templates that are no stage's, which a prompts directory must hold too."""


def packaged_prompts_dir() -> Path:
    """The prompts shipped with stay: inside the wheel, or the checkout's prompts/."""
    here = Path(__file__).resolve().parents[1]
    wheel = here / "_prompts"
    return wheel if wheel.is_dir() else here.parent / "prompts"


def read_prompt(path: str | os.PathLike[str]) -> str:
    """One prompt file's text, bounded (``TooLarge``) and UTF-8: for a build and the evals alike."""
    return read_bounded(path).decode("utf-8")


_registry: list[Sequence[Attachable]] = [()]
"""``stay.stages.REGISTRY``, the stages a prompts directory is checked against by default:
handed over by the package once it is built (the package imports this module)."""


def use_registry(stages: Sequence[Attachable]) -> None:
    _registry[0] = stages


@dataclass(frozen=True)
class Prompts:
    """Every stage template and reference document of one prompt directory."""

    directory: str
    templates: Mapping[str, str]
    references: Mapping[str, str]
    """Each document's text as sent, without its front matter."""
    applies: Mapping[str, Applies] = field(default_factory=dict)
    _sets: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, directory: str | os.PathLike[str] | None = None,
             stages: Sequence[Attachable] | None = None) -> Prompts:
        """Every template and reference of ``directory`` (default: the packaged prompts/), the
        front matter checked against ``stages`` (default: ``stay.stages.REGISTRY``); every
        problem is one UsageError naming the files."""
        root = Path(directory) if directory is not None else packaged_prompts_dir()
        if not root.is_dir():
            raise UsageError(f"{root}: the prompts directory does not exist; give a copy of prompts/ "
                             "(--prompts-dir or STAY_PROMPTS_DIR)")
        read = read_prompt
        try:
            templates = {p.stem: read(p) for p in sorted(root.glob("*.md"))}
        except TooLarge as exc:
            raise UsageError(str(exc)) from None
        except (OSError, UnicodeDecodeError) as exc:
            where = getattr(exc, "filename", None) or root
            raise UsageError(f"{where}: cannot read this prompt file ({type(exc).__name__}); a prompts "
                             "directory holds one template per stage and reference/ with its documents") from None
        references, applies, unread = load_references(root / "reference", read)
        missing = [f"{name}.md" for name in SHARED_TEMPLATES if name not in templates]
        if missing:  # said now, not when a repair first needs it, after the calls before it were paid
            raise UsageError(f"{root}: the prompts directory has no {', '.join(missing)}; copy it from stay's "
                             "prompts/ (every stage's request uses common.md, a repair or revision regenerate.md)")
        prompts = cls(os.fspath(root), templates, references, applies)
        checked_references(prompts, _registry[0] if stages is None else stages, unread)
        return prompts

    def reference_set(self, stage: Attachable) -> tuple[str, ...]:
        if stage.name not in self._sets:
            self._sets[stage.name] = reference_set(self.applies, stage)
        return self._sets[stage.name]

    def with_reference(self, name: str, text: str) -> Prompts:
        """These prompts with document ``name``'s text replaced (``--data-from data``)."""
        return dataclasses.replace(self, references={**self.references, name: text}, _sets={})

    def template(self, name: str) -> str:
        if name not in self.templates:
            raise UsageError(f"{self.directory}: there is no prompt template {name}.md; every stage needs one")
        return self.templates[name]

    def digest(self, name: str) -> str:
        """sha256 of a template (``content``) or a reference (``reference/house-style.yaml``)."""
        text = self.references[name.removeprefix("reference/")] if name.startswith("reference/") \
            else self.template(name)
        return hashlib.sha256(text.encode()).hexdigest()

    def hashes(self) -> dict[str, str]:
        files = {f"{name}.md": text for name, text in self.templates.items()}
        files.update({f"reference/{name}": text for name, text in self.references.items()})
        return {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sorted(files.items())}


def checked_references(prompts: Prompts, stages: Sequence[Attachable],
                       unread: Sequence[str] = ()) -> dict[str, tuple[str, ...]]:
    """Each stage's reference set, once the front matter fits ``stages``: else one UsageError,
    a line per problem (``unread``'s first)."""
    problems = [*unread, *attachment_problems(prompts.directory, prompts.applies, stages)]
    if problems:
        raise refusal(problems)
    return {stage.name: prompts.reference_set(stage) for stage in stages}


def parse_answer(output: type[M], answer: ModelAnswer, stage: str, artefact: str) -> M:
    """The answer's data as ``output``; a mismatch is one line naming stage, file and field."""
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
    """Inputs as the user message: one fenced YAML block per input, in a fixed order."""
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
    """The request for one stage call. The system prompt is the stable prefix, laid out for
    the cache: the preamble and the shared references (one prefix across stages; cached),
    then the stage's instructions and own references (cached only for a stage with
    ``shared`` inputs, called more than once: a single call's prefix would only pay the
    write premium). What varies per call is in the user message."""
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
