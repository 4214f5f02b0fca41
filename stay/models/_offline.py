"""The offline backend: deterministic answers with no network.

It is the default when ``ANTHROPIC_API_KEY`` is unset. From any reasonable brief it
writes a complete course that passes the validator with --strict, in honest template
prose (see ``_offline_course``). What only tests use (counting calls, latency, faults,
defects, a moderation flag, quality knobs) is ``stay.testing.RiggedBackend``, a
subclass, not part of this one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from stay.errors import UsageError
from stay.models._offline_course import ANSWERS, honour_note
from stay.models._offline_repair import keep_file
from stay.models._screen import SCREEN_STAGE, Screening, screen_request
from stay.requests import ModelAnswer, ModelRequest, Usage

OFFLINE_MODEL = "offline"

STAGES = (*ANSWERS, SCREEN_STAGE)
"""Every stage ``offline_answer`` answers."""


def offline_answer(stage: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The offline backend's answer for one stage, from the named inputs its request
    carries (``ModelRequest.inputs``: e.g. ``{"brief": ...}`` for ``audience``, ``{"plan":
    ..., "outcomes": ..., "audience": ...}`` for ``content``), as plain JSON data.

    Public and stable, so fakes and tests outside stay can answer as the offline backend
    does (``tests/models/fake_api.py`` serves it over HTTP). Pure and deterministic: the
    same inputs give the same answer, ``inputs`` is not modified, no clock or randomness;
    an answer changes only with the offline course generator (``_offline_course``), which
    is noted in the changelog of ``docs/models.md``. ``moderation`` (inputs
    ``{"brief_text": ...}``) never flags. A repair (inputs ``current_version`` and
    ``defects_to_fix``) keeps the current file and changes only what the defects name
    (``_offline_repair``). Defects, faults and quality knobs are options of
    ``stay.testing.RiggedBackend``, not of this function.
    """
    if stage == SCREEN_STAGE:
        return {"flagged": False, "reason": "the offline backend does not screen briefs"}
    answer = ANSWERS.get(stage)
    if answer is None:
        raise UsageError(f"offline_answer: unknown stage {stage!r}; the stages are {', '.join(STAGES)}")
    try:
        data = answer(copy.deepcopy(inputs))
        current, defects = inputs.get("current_version"), inputs.get("defects_to_fix")
        if current is not None and isinstance(defects, list):  # a repair: keep the file, fix what is named
            data = keep_file(stage, data, current, defects)
        note = inputs.get("reviewer_note")
        return honour_note(stage, data, note) if isinstance(note, str) else data
    except KeyError as exc:
        raise UsageError(f"offline_answer: stage {stage!r} needs the input {exc.args[0]!r}; give it the "
                         "inputs its request carries (ModelRequest.inputs)") from None


@dataclass
class OfflineBackend:
    """Answers every stage from its inputs: the same request, the same answer. It keeps no
    state, so one instance serves any number of runs and threads; a run's calls are
    counted in its ``BuildResult``. Tests that count, slow down or damage what it answers
    use ``stay.testing.RiggedBackend``, a subclass, so the pipeline treats it the same
    (no request cache by default, like every offline run)."""

    name: str = "offline"

    def screen(self, text: str) -> str | None:
        """The reason to reject ``text``: the offline backend flags no brief."""
        return None

    def screening(self, text: str) -> Screening:
        """The screen's verdict; no model is called, so there is no usage to count."""
        return Screening(self.screen(text), screen_request(text))

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        data = self.answer(request)
        words = len(request.user.split()) + sum(len(b.text.split()) for b in request.system)
        return ModelAnswer(data=data, model=OFFLINE_MODEL,
                           usage=Usage(input_tokens=words, output_tokens=len(str(data).split())))

    def answer(self, request: ModelRequest) -> dict[str, Any]:
        """The data of the answer to ``request``; ``complete`` counts its tokens. The one
        place a subclass changes what is answered (``stay.testing.RiggedBackend``)."""
        if request.stage == SCREEN_STAGE:
            return {"flagged": False, "reason": "not flagged (offline)"}
        return offline_answer(request.stage, request.inputs)
