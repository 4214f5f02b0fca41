"""``stay estimate``: the calls a build would make and their cost, worked out by a real offline build
whose requests are recorded; how they are priced: docs/pipeline.md, "Estimate"."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from stay._display import plural
from stay.artefacts import Brief, LessonContent
from stay.errors import ModelError, ModelUnavailable, UsageError
from stay.models import (
    OUTPUT_LIMIT,
    PRICES,
    SCREENING,
    THINKING,
    AnthropicBackend,
    OfflineBackend,
    Price,
    RequestCache,
    Screening,
    backend_from,
    cost,
    describe_cost,
    prefix_keys,
    prices_of,
    request_params,
    screen_request,
)
from stay.pipeline._commands import default_backend, with_backend_models
from stay.pipeline._run import CHARS_PER_TOKEN
from stay.pipeline._runner import run_command
from stay.requests import ModelAnswer, ModelRequest, Usage
from stay.settings import Settings
from stay.stages import STAGES
from stay.validate import HouseData

MIN_CACHEABLE = 512
"""The shortest prefix the low end assumes is cached: the smallest minimum any current model publishes."""

TOKENS_PER_WORD = 1.5
"""A lesson's tokens per prose word: the sample course runs 5.9 characters a word, ~1.5 tokens at 4 a token."""

PROSE_FACTOR = 2.0
"""How much longer a real model's prose strings (those with a space) are than the offline answer's: the
sample course's design files run 1.35 to 2.25 times the offline build's (docs/pipeline.md, "Estimate")."""

TRUNCATION_MARGIN = 2.0
"""A call is likely cut off (the high end counts its retry) when this many times its expected answer passes
its room: past house style's longest lesson and the sample's longest prose."""

THINKING_SHARE = 0.25
"""The share of its thinking room a thinking call is expected to use (adaptive thinking spends what the
task asks); the high end keeps the whole room."""


@dataclass
class _Recorder(OfflineBackend):
    """The offline backend, recording each request and the model the build would send it to."""

    screen_model: str = ""
    calls: list[tuple[ModelRequest, str, bool]] = field(default_factory=list)
    reviews: ClassVar[bool] = True  # priced as the model build it stands in for: a review call per lesson
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
    """(key, tokens up to the breakpoint) of every cache breakpoint, shortest first, keyed on model and text."""
    max_tokens: int
    typical_output: int
    artefact: str = ""
    """The file the call writes: with the stage, what orders calls the same on every run."""
    scoped: tuple[tuple[str, int], ...] = ()
    """(key, tokens) of every breakpoint as the API keys its cache (``prefix_keys``), shortest first."""
    expected_output: int = 0
    """A real model's answer and thinking, in tokens (``TOKENS_PER_WORD``, ``PROSE_FACTOR``, ``THINKING_SHARE``)."""
    retry_tokens: int = 0
    """The ``max_tokens`` of the one automatic retry of an answer likely cut off (0: none)."""
    wave: bool = False
    """A wave stage's call: the calls ``--batch`` sends through a Message Batch."""


@dataclass(frozen=True)
class StageEstimate:
    """One stage's calls: input tokens, typical and maximum output, cost range (None: a model has no price)."""

    stage: str
    calls: int
    input_tokens: int
    max_output: int
    typical_output: int
    low: float | None
    high: float | None
    expected: float | None = None
    expected_output: int = 0
    expected_read: int = 0
    """Input tokens the expected end reads from the cache (the API's keying)."""
    retries: int = 0
    """Calls whose answer is likely cut off: the high end counts their one retry."""


@dataclass(frozen=True)
class Estimate:
    """Every stage a build would call, in the order it first calls them, and the whole range."""

    stages: tuple[StageEstimate, ...]
    counted_by: str
    """How input tokens were counted: "the token-counting endpoint" or "characters/4"."""
    unpriced: frozenset[str]
    batch: bool = False

    @property
    def low(self) -> float | None:
        return _total(s.low for s in self.stages)

    @property
    def high(self) -> float | None:
        return _total(s.high for s in self.stages)

    @property
    def expected(self) -> float | None:
        return _total(s.expected for s in self.stages)

    def lines(self) -> list[str]:
        priced = "at the batch price for the wave" if self.batch else "at the live price"
        retried = sum(s.retries for s in self.stages)
        said = [f"estimate: {plural(sum(s.calls for s in self.stages), 'call')}, "
                f"expected {_dollars(self.unpriced, self.expected)} "
                f"(range {_dollars(self.unpriced, self.low, self.high)}), {priced}",
                f"{'stage':12} {'calls':>5} {'input':>9} {'output expected':>15} {'output max':>10}  "
                "expected (range)"]
        for s in self.stages:
            said.append(f"{s.stage:12} {s.calls:5} {s.input_tokens:9} {s.expected_output:15} {s.max_output:10}  "
                        f"{_dollars(self.unpriced, s.expected)} ({_dollars(self.unpriced, s.low, s.high)})")
        said.append("expected: answers at a real model's length, a quarter of the thinking room, the cache as the "
                    "API keys it; low: offline-sized answers, no thinking, every prefix shared; high: no cache read, "
                    "every answer at the max_tokens it is sent with, and once more at twice the room where it is "
                    f"likely cut off ({plural(retried, 'call')}); repairs not counted; "
                    f"input tokens by {self.counted_by}")
        return said


def _total(values: Any) -> float | None:
    found = list(values)
    return None if any(v is None for v in found) else sum(found)


def _dollars(unpriced: frozenset[str], *values: float | None) -> str:
    """``values`` in dollars, joined by "to" (a range); unknown when one is."""
    return describe_cost(None, unpriced) if None in values else " to ".join(f"${value:.4f}" for value in values)


def estimate(target: Brief | str | os.PathLike[str], *, courses_dir: str | os.PathLike[str] = "courses",
             settings: Settings | None = None, batch: bool = False, review: bool = True) -> Estimate:
    """The calls ``stay build TARGET --yes`` would make from here, and their cost range.
    ``target`` is a brief (a fresh course) or the slug of a course in ``courses_dir`` (a
    rebuild: only what is missing or stale, e.g. after a prompt edit, is asked).
    ``batch``: priced as ``stay build --batch`` would be (the module docstring); ``review=False``
    as ``stay build --no-review`` (else each lesson to review is one judging-model call)."""
    chosen = settings or Settings.from_env()
    claude, prices = chosen.chosen_backend in ("offline", "anthropic"), PRICES
    if batch and not claude:  # as a build refuses it
        raise UsageError("--batch needs the anthropic backend (Message Batches are an API feature)")
    if not claude:
        backend = default_backend(chosen, lambda _line: None)
        chosen, prices = with_backend_models(chosen, backend), prices_of(backend)
    recorder = _Recorder(screen_model=chosen.model("analysis"))
    rooms = None
    with tempfile.TemporaryDirectory(prefix="stay-estimate-", ignore_cleanup_errors=True) as scratch:
        if not isinstance(target, Brief) and not Path(target).is_file():  # a slug: rebuild a copy of it
            where = Path(courses_dir) / os.fspath(target)
            if not (where / "course.yaml").is_file():  # said here, or the error would name the scratch copy
                raise UsageError(f"there is no course '{os.fspath(target)}' in {os.fspath(courses_dir)} and no "
                                 f"brief file {os.fspath(target)}; give a brief YAML file or a course's slug")
            rooms = RequestCache(where / ".runs" / "cache") if claude else None  # what the Claude backend reads
            # the runs' logs and request cache stay behind: an offline build reads neither
            shutil.copytree(where, Path(scratch) / where.name, ignore=shutil.ignore_patterns(".runs"))
        run_command("build", target, courses_dir=scratch, yes=True, settings=chosen, backend=recorder,
                    progress=lambda _line: None, review=review)
    # the Claude backend whose client counts tokens, when a credential is set
    found = backend_from(chosen.replace(backend="anthropic")) if claude and (chosen.api_key or chosen.auth_token) \
        else None
    counter = found if isinstance(found, AnthropicBackend) else None
    # a real lesson's prose words per planned minute: the middle of house style's band, read as the validator does
    data = HouseData.load(chosen.resolved_data_dir())
    pace = (float(data["prose.min_words_per_minute"]) + float(data["prose.max_words_per_minute"])) / 2
    calls = [_call(request, model, screen, chosen, counter, pace, rooms) for request, model, screen in recorder.calls]
    return _priced(calls, "the token-counting endpoint" if counter is not None else "characters/4", batch,
                   prices, claude)


def _counted(counter: AnthropicBackend, params: dict[str, Any], role: str) -> int:
    """The input tokens of ``params`` by the free token-counting endpoint; a refusal is one line, never a guess."""
    import anthropic  # the SDK's own errors; only with a credential set

    fields = {k: params[k] for k in ("model", "system", "messages", "output_config", "thinking") if k in params}
    try:
        counted = getattr(counter.client.messages.count_tokens(**fields), "input_tokens", None)
    except anthropic.APIStatusError as exc:
        raise UsageError(f"the token-counting endpoint answered {exc.status_code} for model {params['model']}: "
                         f"check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and STAY_MODEL_{role.upper()}; "
                         "nothing was paid") from None
    except anthropic.APIConnectionError:
        raise ModelUnavailable("the token-counting endpoint did not answer; run again, or unset "
                               "ANTHROPIC_API_KEY to estimate by characters/4") from None
    if isinstance(counted, bool) or not isinstance(counted, int) or counted < 0:
        raise ModelError(f"the token-counting endpoint answered no count of input_tokens for model {params['model']} "
                         f"({str(counted)[:40]}); run again, or unset ANTHROPIC_API_KEY to estimate by characters/4")
    return counted


def _call(request: ModelRequest, model: str, screen: bool, settings: Settings,
          counter: AnthropicBackend | None, pace: float, rooms: RequestCache | None = None) -> Call:
    thinking = SCREENING if screen else THINKING.get(request.role)
    params = request_params(request, model, thinking, answer_tokens=settings.answer_tokens)
    think = params["max_tokens"] - (settings.answer_tokens or request.max_tokens) if "thinking" in params else 0
    known = rooms.room(request, model) if rooms is not None and not screen else None
    if known is not None and min(known, OUTPUT_LIMIT - think) > params["max_tokens"] - think:
        # an earlier run's answer was cut off: the Claude backend asks at its retry's room at once
        params = request_params(request, model, thinking, answer_tokens=min(known, OUTPUT_LIMIT - think))
    # every text block in cache order (system, then the user message), and whether it is a breakpoint
    content = params["messages"][0]["content"]
    blocks = list(params["system"]) + ([{"text": content}] if isinstance(content, str) else list(content))
    texts = [(block["text"], bool(block.get("cache_control"))) for block in blocks]
    sizes = [max(1, len(text) // CHARS_PER_TOKEN) for text, _mark in texts]
    counted = _counted(counter, params, request.role) if counter is not None else sum(sizes)
    # Keyed on the model and the prefix's text only (the API adds output format and effort): the low end is
    # the least the build could cost, so it does not count on that rule.
    prefixes = tuple((hashlib.sha256(json.dumps([model, [t for t, _m in texts[:i + 1]]]).encode()).hexdigest(),
                      sum(sizes[:i + 1]))
                     for i, (_text, mark) in enumerate(texts) if mark and sum(sizes[:i + 1]) >= MIN_CACHEABLE)
    # The expected end keys as the API does (``prefix_keys``): it leaves out the breakpoints under the
    # model's minimum, the shortest, so its keys belong to the last of the marked breakpoints
    marks = [sum(sizes[:i + 1]) for i, (_text, mark) in enumerate(texts) if mark]
    keys = prefix_keys(params)
    scoped = tuple(zip(keys, marks[len(marks) - len(keys):], strict=True))
    # a stage's typical answer is its offline one; the screen's is its verdict with no reason
    # (a reason's length is the model's to choose: the low end takes the shortest)
    answer = {"flagged": False, "reason": ""} if screen else OfflineBackend().answer(request)
    room = int(params["max_tokens"])
    answer_room = room - think
    retry = min(2 * answer_room, OUTPUT_LIMIT - think)
    typical = max(1, len(json.dumps(answer)) // CHARS_PER_TOKEN)
    expected = _expected_answer(request, screen, pace)
    likely = TRUNCATION_MARGIN * max(expected, typical) > answer_room  # its retry is counted in the high end
    return Call(stage=request.stage, model=model, input_tokens=counted, prefixes=prefixes,
                max_tokens=room, typical_output=typical, artefact=request.artefact, scoped=scoped,
                expected_output=expected + round(THINKING_SHARE * think),
                retry_tokens=think + retry if likely and retry > answer_room else 0,
                wave=not screen and request.stage in STAGES and STAGES[request.stage].phase == "wave")


def _expected_answer(request: ModelRequest, screen: bool, pace: float) -> int:
    """A real model's answer to ``request`` in tokens: a lesson body at ``pace`` words a minute, anything else
    the offline answer with its prose ``PROSE_FACTOR`` times as long."""
    stage = STAGES.get(request.stage)
    if stage is not None and stage.makes is LessonContent:
        return round(float(request.inputs["plan"]["minutes"]) * pace * TOKENS_PER_WORD)
    answer = {"flagged": False, "reason": "The brief asks for a course and nothing else."} if screen \
        else OfflineBackend().answer(request)
    text = json.dumps(answer)
    prose = sum(len(json.dumps(value)) for value in _strings(answer) if " " in value)
    return max(1, round((len(text) + (PROSE_FACTOR - 1) * prose) / CHARS_PER_TOKEN))


def _strings(data: Any) -> list[str]:
    """Every string in a JSON value, at any depth."""
    if isinstance(data, str):
        return [data]
    values: list[Any] = []
    if isinstance(data, dict):
        values = list(data.values())
    if isinstance(data, list):
        values = data
    return [found for value in values for found in _strings(value)]


class _Priced(NamedTuple):
    """One call, priced low, expected and high (None: unknown), with the cached tokens it is expected to read."""

    call: Call
    low: float | None
    expected: float | None
    high: float | None
    reads: int


def _priced(calls: Sequence[Call], counted_by: str, batch: bool = False,
            prices: Mapping[str, Price] = PRICES, claude: bool = True) -> Estimate:
    """Each stage's calls priced expected, low and high, in the pipeline's order (not the build's: a wave's
    calls run concurrently, and the prefix gate makes the first write the shared prefix and the rest read it)."""
    order = {stage: rank for rank, stage in enumerate(STAGES)}
    calls = sorted(calls, key=lambda c: (c.stage in order, order.get(c.stage, -1), c.stage, c.artefact))
    seen: set[str] = set()
    written: set[str] = set()
    by_stage: dict[str, list[_Priced]] = {}
    for call in calls:
        cached = min(max((size for _key, size in call.prefixes), default=0), call.input_tokens)
        read = min(max((size for key, size in call.prefixes if key in seen), default=0), cached)
        seen.update(key for key, _size in call.prefixes)
        scoped = min(max((size for _key, size in call.scoped), default=0), call.input_tokens)
        reads = min(max((size for key, size in call.scoped if key in written), default=0), scoped)
        written.update(key for key, _size in call.scoped)
        wrote = cached - read if claude else 0  # another server may bill no cache write (OpenAI's automatic cache)
        cheap = Usage(input_tokens=call.input_tokens - read - wrote, cache_creation_input_tokens=wrote,
                      cache_read_input_tokens=read, output_tokens=call.typical_output)
        likely = Usage(input_tokens=call.input_tokens - scoped, cache_creation_input_tokens=scoped - reads,
                       cache_read_input_tokens=reads, output_tokens=call.expected_output)
        dear = Usage(input_tokens=call.input_tokens - cached, cache_creation_input_tokens=cached,
                     output_tokens=call.max_tokens)
        again = Usage(input_tokens=call.input_tokens - cached, cache_creation_input_tokens=cached,
                      output_tokens=call.retry_tokens)
        batched = batch and call.wave
        worst = [cost(call.model, dear, prices=prices)]
        if call.retry_tokens:
            worst.append(cost(call.model, again, prices=prices))
        if batched:  # an entry with no usable answer is asked again live, at the full price
            worst.append(cost(call.model, dear, batch=True, prices=prices))
        by_stage.setdefault(call.stage, []).append(_Priced(call, cost(call.model, cheap, batch=batched, prices=prices),
                                                           cost(call.model, likely, batch=batched, prices=prices),
                                                           _total(worst), reads))
    stages = tuple(StageEstimate(stage, calls=len(rows), input_tokens=sum(row.call.input_tokens for row in rows),
                                 max_output=sum(row.call.max_tokens for row in rows),
                                 typical_output=sum(row.call.typical_output for row in rows),
                                 low=_total(row.low for row in rows), high=_total(row.high for row in rows),
                                 expected=_total(row.expected for row in rows),
                                 expected_output=sum(row.call.expected_output for row in rows),
                                 expected_read=sum(row.reads for row in rows),
                                 retries=sum(bool(row.call.retry_tokens) for row in rows))
                   for stage, rows in by_stage.items())
    return Estimate(stages, counted_by, frozenset(call.model for call in calls if call.model not in prices), batch)
