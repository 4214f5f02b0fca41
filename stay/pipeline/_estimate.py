"""``stay estimate``: the calls a build would make and what they would cost, made offline.

The build is run for real, with the offline backend, in a scratch copy (a temporary
courses directory, removed after; the user's course is never written), and every request
the pipeline sends is recorded. So the calls are the ones a build makes, rendered as the
Claude backend would send them (``stay.models.request_params``: the role's model, its
thinking room and ``max_tokens``), and a rebuild after a prompt edit records only the
stale stages' calls: the ledger's staleness decides, as in a real rebuild.

Input tokens are counted by the token-counting endpoint when a credential is set, else as
characters/4 per text block (said in the output). Two costs are given, per stage and in
all: *low*, each answer the size of the offline answer with no thinking, and every cache
prefix (keyed on the model and the text up to the breakpoint: the most any keying rule
could share, so the low end is a floor) read from the second call on; *high*, every answer at its full
``max_tokens`` (thinking included) and every cacheable prefix written, none read. Repair
rounds are not foreseen: an offline build passes the validator, so none is recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stay._display import plural
from stay.artefacts import Brief
from stay.errors import ModelUnavailable, UsageError
from stay.models import (
    PRICES,
    SCREENING,
    THINKING,
    AnthropicBackend,
    OfflineBackend,
    Screening,
    backend_from,
    cost,
    describe_cost,
    request_params,
    screen_request,
)
from stay.pipeline._runner import run_command
from stay.requests import ModelAnswer, ModelRequest, Usage
from stay.settings import Settings
from stay.stages import STAGES

MIN_CACHEABLE = 512
"""The shortest prefix the low end assumes is cached: the smallest minimum any current
model publishes (Sonnet 5.5, Haiku 5.5, Opus 5), so the low end never assumes less caching
than the API could give."""

CHARS_PER_TOKEN = 4
"""Without the token-counting endpoint, a token is taken to be about four characters."""


@dataclass
class _Recorder(OfflineBackend):
    """The offline backend, recording each request and the model the build would send it to."""

    screen_model: str = ""
    calls: list[tuple[ModelRequest, str, bool]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        with self.lock:
            self.calls.append((request, model, False))
        return super().complete(request, model)

    def screening(self, text: str) -> Screening:
        with self.lock:
            self.calls.append((screen_request(text), self.screen_model, True))
        return super().screening(text)


@dataclass(frozen=True)
class Call:
    """One recorded call, rendered: its input tokens, cache prefixes and output room."""

    stage: str
    model: str
    input_tokens: int
    prefixes: tuple[tuple[str, int], ...]
    """(key, tokens up to and including the breakpoint) of every cache breakpoint, shortest first."""
    max_tokens: int
    typical_output: int
    artefact: str = ""
    """The file the call writes: with the stage, what orders calls the same on every run."""


@dataclass(frozen=True)
class StageEstimate:
    """One stage's calls: their input tokens, typical and maximum output, and cost range
    (None when a model it uses has no price on file)."""

    stage: str
    calls: int
    input_tokens: int
    max_output: int
    typical_output: int
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Estimate:
    """Every stage a build would call, in the order it first calls them, and the whole range."""

    stages: tuple[StageEstimate, ...]
    counted_by: str
    """How input tokens were counted: "the token-counting endpoint" or "characters/4"."""
    unpriced: frozenset[str]

    @property
    def low(self) -> float | None:
        return _total(s.low for s in self.stages)

    @property
    def high(self) -> float | None:
        return _total(s.high for s in self.stages)

    def lines(self) -> list[str]:
        said = [f"{'stage':12} {'calls':>5} {'input':>9} {'output typical':>14} {'output max':>10}  cost"]
        for s in self.stages:
            said.append(f"{s.stage:12} {s.calls:5} {s.input_tokens:9} {s.typical_output:14} {s.max_output:10}  "
                        f"{_range(s.low, s.high, self.unpriced)}")
        said.append(f"estimate: {plural(sum(s.calls for s in self.stages), 'call')}, "
                    f"{_range(self.low, self.high, self.unpriced)} (low: typical answers and cache reads; "
                    f"high: no cache read, every answer at max_tokens); input tokens by {self.counted_by}")
        return said


def _total(values: Any) -> float | None:
    found = list(values)
    return None if any(v is None for v in found) else sum(found)


def _range(low: float | None, high: float | None, unpriced: frozenset[str]) -> str:
    if low is None or high is None:
        return describe_cost(None, set(unpriced))
    return f"${low:.4f} to ${high:.4f}"


def estimate(target: Brief | str | os.PathLike[str], *, courses_dir: str | os.PathLike[str] = "courses",
             settings: Settings | None = None) -> Estimate:
    """The calls ``stay build TARGET --yes`` would make from here, and their cost range.
    ``target`` is a brief (a fresh course) or the slug of a course in ``courses_dir`` (a
    rebuild: only what is missing or stale, e.g. after a prompt edit, is asked)."""
    chosen = settings or Settings.from_env()
    recorder = _Recorder(screen_model=chosen.model("analysis"))
    scratch = Path(tempfile.mkdtemp(prefix="stay-estimate-"))
    try:
        if not isinstance(target, Brief) and not Path(target).is_file():  # a slug: rebuild a copy of it
            where = Path(courses_dir) / os.fspath(target)
            if not (where / "course.yaml").is_file():  # said here, or the error would name the scratch copy
                raise UsageError(f"there is no course '{os.fspath(target)}' in {os.fspath(courses_dir)} and no "
                                 f"brief file {os.fspath(target)}; give a brief YAML file or a course's slug")
            # the runs' logs and request cache stay behind: an offline build reads neither
            shutil.copytree(where, scratch / where.name, ignore=shutil.ignore_patterns(".runs"))
        run_command("build", target, courses_dir=scratch, yes=True, settings=chosen, backend=recorder,
                    progress=lambda _line: None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counter = _counter(chosen)
    calls = [_call(request, model, screen, chosen, counter) for request, model, screen in recorder.calls]
    return _priced(calls, "the token-counting endpoint" if counter is not None else "characters/4")


def _counter(settings: Settings) -> AnthropicBackend | None:
    """The Claude backend whose client counts tokens, when a credential is set."""
    if not (settings.api_key or settings.auth_token):
        return None
    backend = backend_from(settings.replace(backend="anthropic"))
    return backend if isinstance(backend, AnthropicBackend) else None


def _counted(counter: AnthropicBackend, params: dict[str, Any], role: str) -> int:
    """The input tokens of ``params`` by the token-counting endpoint (free: nothing is
    answered); a refusal or no answer is one line, never a guess passed off as a count."""
    import anthropic  # the SDK's own errors; only with a credential set

    fields = {k: params[k] for k in ("model", "system", "messages", "output_config", "thinking") if k in params}
    try:
        return int(counter.client.messages.count_tokens(**fields).input_tokens)
    except anthropic.APIStatusError as exc:
        raise UsageError(f"the token-counting endpoint answered {exc.status_code} for model {params['model']}: "
                         f"check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and STAY_MODEL_{role.upper()}; "
                         "nothing was paid") from None
    except anthropic.APIConnectionError:
        raise ModelUnavailable("the token-counting endpoint did not answer; run again, or unset "
                               "ANTHROPIC_API_KEY to estimate by characters/4") from None


def _texts(params: dict[str, Any]) -> list[tuple[str, bool]]:
    """Every text block in cache order (system, then the user message), and whether it is a breakpoint."""
    content = params["messages"][0]["content"]
    blocks = list(params["system"]) + ([{"text": content}] if isinstance(content, str) else list(content))
    return [(block["text"], bool(block.get("cache_control"))) for block in blocks]


def _call(request: ModelRequest, model: str, screen: bool, settings: Settings,
          counter: AnthropicBackend | None) -> Call:
    thinking = SCREENING if screen else THINKING.get(request.role)
    params = request_params(request, model, thinking, answer_tokens=settings.answer_tokens)
    texts = _texts(params)
    sizes = [max(1, len(text) // CHARS_PER_TOKEN) for text, _mark in texts]
    counted = sum(sizes)
    if counter is not None:
        counted = _counted(counter, params, request.role)
    # Keyed on the model and the prefix's text only: the API keys an entry on the output
    # format and effort too, but the low end is the least the build could cost, so it does
    # not count on that rule (a service that shares more across stages is still above it).
    prefixes = tuple((hashlib.sha256(json.dumps([model, [t for t, _m in texts[:i + 1]]]).encode()).hexdigest(),
                      sum(sizes[:i + 1]))
                     for i, (_text, mark) in enumerate(texts) if mark and sum(sizes[:i + 1]) >= MIN_CACHEABLE)
    # a stage's typical answer is its offline one; the screen's is its verdict with no reason
    # (a reason's length is the model's to choose: the low end takes the shortest)
    answer = {"flagged": False, "reason": ""} if screen else OfflineBackend().answer(request)
    return Call(stage=request.stage, model=model, input_tokens=counted, prefixes=prefixes,
                max_tokens=int(params["max_tokens"]),
                typical_output=max(1, len(json.dumps(answer)) // CHARS_PER_TOKEN), artefact=request.artefact)


def _priced(calls: Sequence[Call], counted_by: str) -> Estimate:
    """Each stage's calls priced low and high, in the pipeline's order: the screen, then
    the stages as declared, each stage's calls by the file they write. Not the order the
    build asked them in: a wave's calls run concurrently, and their order (which decides
    which call writes a shared prefix and which reads it) would change from run to run."""
    order = {stage: rank for rank, stage in enumerate(STAGES)}
    calls = sorted(calls, key=lambda c: (c.stage in order, order.get(c.stage, -1), c.stage, c.artefact))
    seen: set[str] = set()
    by_stage: dict[str, list[Call]] = {}
    low: dict[str, float | None] = {}
    high: dict[str, float | None] = {}
    for call in calls:
        by_stage.setdefault(call.stage, []).append(call)
        cached = min(max((size for _key, size in call.prefixes), default=0), call.input_tokens)
        read = min(max((size for key, size in call.prefixes if key in seen), default=0), cached)
        seen.update(key for key, _size in call.prefixes)
        cheap = Usage(input_tokens=call.input_tokens - cached, cache_creation_input_tokens=cached - read,
                      cache_read_input_tokens=read, output_tokens=call.typical_output)
        dear = Usage(input_tokens=call.input_tokens - cached, cache_creation_input_tokens=cached,
                     output_tokens=call.max_tokens)
        low[call.stage] = _add(low.get(call.stage, 0.0), cost(call.model, cheap))
        high[call.stage] = _add(high.get(call.stage, 0.0), cost(call.model, dear))
    stages = tuple(StageEstimate(stage, calls=len(made), input_tokens=sum(c.input_tokens for c in made),
                                 max_output=sum(c.max_tokens for c in made),
                                 typical_output=sum(c.typical_output for c in made),
                                 low=low[stage], high=high[stage]) for stage, made in by_stage.items())
    return Estimate(stages, counted_by, frozenset(call.model for call in calls if call.model not in PRICES))


def _add(total: float | None, more: float | None) -> float | None:
    return None if total is None or more is None else total + more
