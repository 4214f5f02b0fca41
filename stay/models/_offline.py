"""The offline backend: deterministic answers with no network.

It is the default when ``ANTHROPIC_API_KEY`` is unset. From any reasonable brief it
writes a complete course that passes the validator with --strict, in honest template
prose: the answer each stage declares (``Stage.offline``), which its request carries,
since the model layer may not import the stages (``stay.stages.offline_answer`` answers
by stage name, for fakes). What only tests use (counting calls, latency, faults,
defects, a moderation flag, quality knobs) is ``stay.testing.RiggedBackend``, a
subclass, not part of this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from stay.errors import UsageError
from stay.models._prices import PRICES, Price
from stay.models._protocol import SCREEN_STAGE, Screening, screen_request
from stay.requests import ModelAnswer, ModelRequest, Usage

if TYPE_CHECKING:
    from stay.settings import Settings

OFFLINE_MODEL = "offline"
OFFLINE_PRICES: Mapping[str, Price] = {OFFLINE_MODEL: PRICES[OFFLINE_MODEL]}
"""The offline backend's rule: its answers (all named ``OFFLINE_MODEL``) cost nothing."""


def _answer(request: ModelRequest) -> dict[str, Any]:
    """The offline backend's answer to one request, as plain JSON data: its stage's
    declared answer, which the request carries."""
    if request.offline is None:
        raise UsageError(f"offline backend: the request for stage {request.stage!r} carries no offline answer; "
                         "build it with its stage's Stage.request")
    return request.offline(request.inputs)


@dataclass
class OfflineBackend:
    """Answers every stage from its inputs: the same request, the same answer. It keeps no
    state, so one instance serves any number of runs and threads; a run's calls are
    counted in its ``BuildResult``. Tests that count, slow down or damage what it answers
    use ``stay.testing.RiggedBackend``, a subclass, so the pipeline treats it the same
    (no request cache by default, like every offline run)."""

    name: str = "offline"
    prices: ClassVar[Mapping[str, Price]] = OFFLINE_PRICES
    features: ClassVar[frozenset[str]] = frozenset({"screen"})
    """It screens by its rule (it flags no brief), so an offline run needs no --no-screen.
    Both are the class's, not fields: the backend keeps no state of its own."""
    reviews: ClassVar[bool] = False
    """A build with it reviews no lesson: a template cannot read prose, and must not report a
    review it did not make (``stay estimate``'s recorder, which stands in for a model, does)."""

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
        return _answer(request)


def make(settings: Settings, *, progress: Callable[[str], None] | None = None) -> OfflineBackend:
    """The ``stay.backends`` entry point ``offline``: nothing in ``settings`` bears on it."""
    return OfflineBackend()
