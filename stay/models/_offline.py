"""The offline backend, the default with no API key: deterministic answers with no network,
each the one its stage declares (``Stage.offline``), carried by the request since the model
layer may not import the stages. Test knobs live in ``stay.testing.RiggedBackend``, a subclass."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from stay.errors import UsageError
from stay.models._protocol import PRICES, SCREEN_STAGE, Price, Screening, screen_request
from stay.requests import ModelAnswer, ModelRequest, Usage

if TYPE_CHECKING:
    from stay.settings import Settings

OFFLINE_MODEL = "offline"


@dataclass
class OfflineBackend:
    """Answers every stage from its inputs: the same request, the same answer. It keeps no state,
    so one instance serves any number of runs and threads."""

    name: str = "offline"
    prices: ClassVar[Mapping[str, Price]] = {OFFLINE_MODEL: PRICES[OFFLINE_MODEL]}
    features: ClassVar[frozenset[str]] = frozenset({"screen"})
    """It flags no brief, so an offline run needs no --no-screen."""
    reviews: ClassVar[bool] = False
    """A template cannot read prose, so it must not report a review it did not make."""

    def screen(self, text: str) -> str | None:
        return None

    def screening(self, text: str) -> Screening:
        return Screening(self.screen(text), screen_request(text))

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        data = self.answer(request)
        words = len(request.user.split()) + sum(len(b.text.split()) for b in request.system)
        return ModelAnswer(data=data, model=OFFLINE_MODEL,
                           usage=Usage(input_tokens=words, output_tokens=len(str(data).split())))

    def answer(self, request: ModelRequest) -> dict[str, Any]:
        """The answer's data; the one place a subclass changes what is answered."""
        if request.stage == SCREEN_STAGE:
            return {"flagged": False, "reason": "not flagged (offline)"}
        if request.offline is None:
            raise UsageError(f"offline backend: the request for stage {request.stage!r} carries no offline answer; "
                             "build it with its stage's Stage.request")
        return request.offline(request.inputs)


def make(settings: Settings, *, progress: Callable[[str], None] | None = None) -> OfflineBackend:
    return OfflineBackend()
