"""A judge for tests: it answers each request with what a callable returns, so a test can
script a verdict (by the gold set's labels, always "fine", an invented quote) and run it
through exactly the request a model judge would get."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stay.models import ModelRequest
from stay.scoring import JudgeReply


@dataclass
class ScriptedJudge:
    answer: Callable[[ModelRequest], dict[str, Any]]
    name: str = "scripted judge (test double, not a model)"

    def ask(self, request: ModelRequest) -> JudgeReply:
        data = self.answer(request)
        return JudgeReply(data, json.dumps(data, sort_keys=True), "scripted")
