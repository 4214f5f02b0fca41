"""Message Batches for generation and judging: create, poll, collect, priced at half, split
to the limits, and collected on a rerun instead of submitted again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from stay.artefacts import Brief
from stay.errors import AnswerError, ModelError, ModelUnavailable, UnsafeId, exit_code
from stay.models import PRICES, AnthropicBackend, RequestCache, Usage, cost, prefetch
from stay.models._batch import BATCH_ID, split
from stay.models._cache import request_key
from stay.models._protocol import BATCH_CACHE_TTL, backoff
from stay.pipeline import build_course, run_command
from stay.scoring._judges import batch_score
from stay.stages import STAGES, Prompts
from tests.conftest import ROOT
from tests.models.fake_api import CacheAccounting, FakeMessagesAPI, answer_for, is_stage, message, reply, stage_of

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
USAGE = {"input_tokens": 1000, "output_tokens": 400, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
WAVE = {"content", "exercises", "quiz", "capstone"}


def _batch(batch_id: str, status: str, counts: dict[str, int]) -> dict[str, Any]:
    return {"id": batch_id, "type": "message_batch", "processing_status": status,
            "request_counts": {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0,
                               **counts},
            "created_at": "2026-11-30T00:00:00Z", "expires_at": "2026-12-01T00:00:00Z", "ended_at": None,
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"http://testserver/v1/messages/batches/{batch_id}/results" if status == "ended" else None}


class FakeBatches:
    """Canned Messages and Message Batches endpoints; answers come from offline_answer.

    A batch ends after ``polls_to_end`` polls; ``fail`` makes those entries error;
    ``down`` makes polling answer 500 (the service going away mid-batch)."""

    def __init__(self, judge: Any = None, fail: set[int] | None = None, polls_to_end: int = 2,
                 name: Any = None) -> None:
        self.name = name or (lambda number: f"msgbatch_{number}")
        """The id the server gives its n-th batch (a hostile server chooses any string)."""
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.polls: dict[str, int] = {}
        self.live: list[dict[str, Any]] = []
        self.judge = judge
        self.fail = fail or set()
        self.polls_to_end = polls_to_end
        self.down = False

    def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        if is_stage(params):
            return answer_for(params)
        if self.judge is None:
            return {"flagged": False, "reason": "fine"}
        return dict(self.judge(params))

    def counts(self, batch_id: str) -> dict[str, int]:
        total = len(self.batches[batch_id])
        if self.polls[batch_id] < self.polls_to_end:
            return {"processing": total - self.polls[batch_id], "succeeded": self.polls[batch_id]}
        return {"succeeded": total}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            body = json.loads(request.content)
            batch_id = self.name(len(self.batches) + 1)
            self.batches[batch_id], self.polls[batch_id] = body["requests"], 0
            return httpx2.Response(200, json=_batch(batch_id, "in_progress", {"processing": len(body["requests"])}))
        if request.method == "GET" and path.endswith("/results"):
            batch_id = path.split("/")[-2]
            lines = []
            for index, entry in enumerate(self.batches[batch_id]):
                if index in self.fail:
                    result = {"type": "errored", "error": {"type": "error", "error": {"type": "api_error",
                                                                                       "message": "boom"}}}
                else:
                    result = {"type": "succeeded", "message": message(self.answer(entry["params"]),
                                                                      model=entry["params"]["model"], usage=USAGE)}
                lines.append(json.dumps({"custom_id": entry["custom_id"], "result": result}))
            return httpx2.Response(200, content="\n".join(lines).encode(),
                                   headers={"content-type": "application/binary"})
        if request.method == "GET" and path.startswith("/v1/messages/batches/"):
            batch_id = path.split("/")[-1]
            if self.down:
                return httpx2.Response(500, json={"type": "error", "error": {"type": "api_error", "message": "x"}})
            if batch_id not in self.batches:
                return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error",
                                                                             "message": batch_id}})
            self.polls[batch_id] += 1
            ended = self.polls[batch_id] >= self.polls_to_end
            return httpx2.Response(200, json=_batch(batch_id, "ended" if ended else "in_progress",
                                                    self.counts(batch_id)))
        if request.method == "POST" and path == "/v1/messages":
            body = json.loads(request.content)
            if is_stage(body) or self.judge is not None:
                self.live.append(body)
            return reply(body, message(self.answer(body), model=body["model"], usage=USAGE))
        return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": path}})


def _client(api: FakeBatches) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url="http://testserver", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(api)))


def _backend(api: FakeBatches) -> AnthropicBackend:
    return AnthropicBackend(_client(api), sleep=lambda _s: None)


pytestmark = pytest.mark.usefixtures("batch_env")  # tests/models/conftest.py


def test_the_wave_goes_through_one_batch_and_makes_no_live_call(tmp_path: Path) -> None:
    api = FakeBatches()
    lines: list[str] = []
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api), batch=True,
                          progress=lines.append)
    assert result.complete and result.validation is not None and not result.validation.defects
    (requests,) = api.batches.values()
    assert len(requests) == 2 * 3 + 1  # two lessons' three files, and the capstone
    assert all(entry["params"]["output_config"]["format"]["type"] == "json_schema" for entry in requests)
    assert all("stream" not in entry["params"] for entry in requests)
    live_stages = {json.dumps(b["system"]).split("# Stage: ")[1].split("\\n")[0] for b in api.live}
    assert not live_stages & {"lesson content", "exercises", "quiz", "capstone"}  # all from the batch
    assert "batch msgbatch_1: 7 requests submitted (its id is stored under .runs/batches/)" in lines
    assert "batch msgbatch_1: 1/7 ended (1 succeeded, 0 errored, 0 canceled, 0 expired), 6 processing" in lines
    assert not list((result.course_dir / ".runs" / "batches").glob("*.json"))  # collected: the record is gone


def test_a_batch_build_costs_half_of_a_live_build_for_the_same_requests(tmp_path: Path) -> None:
    live = build_course(BRIEF, courses_dir=tmp_path / "live", yes=True, backend=_backend(FakeBatches()),
                        progress=lambda _l: None)
    batched = build_course(BRIEF, courses_dir=tmp_path / "batch", yes=True, backend=_backend(FakeBatches()),
                           batch=True, progress=lambda _l: None)
    assert live.cost_by_stage is not None and batched.cost_by_stage is not None
    assert live.usage_by_stage == batched.usage_by_stage  # the same requests, the same tokens
    for stage, dollars in live.cost_by_stage.items():
        expected = dollars / 2 if stage in WAVE else dollars
        assert batched.cost_by_stage[stage] == pytest.approx(expected), stage
    wave_live = sum(d for s, d in live.cost_by_stage.items() if s in WAVE)
    assert wave_live > 0 and batched.cost == pytest.approx((live.cost or 0) - wave_live / 2)
    trace = next((batched.course_dir / ".runs" / "traces").glob("*.jsonl")).read_text()
    assert trace.count('"batch": true') == 7


def test_a_failed_batch_entry_is_asked_again_live(tmp_path: Path) -> None:
    api = FakeBatches(fail={0})
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api), batch=True,
                          progress=lambda _l: None)
    assert result.complete
    wave_live = [b for b in api.live if any(f"# Stage: {name}" in json.dumps(b["system"])
                                            for name in ("capstone", "lesson content", "exercises", "quiz"))]
    assert len(wave_live) == 1


def _jobs(count: int) -> list[tuple[Any, str]]:
    brief = Brief.from_yaml(BRIEF)
    return [(STAGES["audience"].request({"brief": brief.model_copy(update={"title": f"Course {n}"})}, Prompts.load(),
                                        "audience.yaml"),
             "claude-sonnet-5-5") for n in range(count)]


def test_prefetch_skips_what_the_cache_holds_and_usage_is_reported_once(tmp_path: Path) -> None:
    api = FakeBatches()
    cache = RequestCache(tmp_path / "cache")
    (job,) = _jobs(1)
    outcome = prefetch(_client(api), [job], cache, poll_seconds=0, sleep=lambda _s: None)
    assert outcome is not None and outcome.succeeded == 1 and outcome.failed == {}
    assert prefetch(_client(api), [job], cache, sleep=lambda _s: None) is None
    assert len(api.batches) == 1
    first, again = cache.claim(*job), cache.claim(*job)
    assert first is not None and first.batch and first.usage.input_tokens == 1000  # reported by the first user
    assert again is not None and again.usage == Usage() and not again.batch  # and never again


def test_a_batch_left_running_is_collected_on_the_rerun_not_submitted_again(tmp_path: Path) -> None:
    api = FakeBatches(polls_to_end=3)
    cache = RequestCache(tmp_path / ".runs" / "cache")
    jobs = _jobs(3)
    api.down = False
    with pytest.raises(ModelUnavailable, match=r"did not end within 1 s; .*stored under \.runs/batches/"):
        prefetch(_client(api), jobs, cache, poll_seconds=1, timeout_seconds=1, sleep=lambda _s: None)
    (record,) = (tmp_path / ".runs" / "batches").glob("*.json")
    assert json.loads(record.read_text())["batch_id"] == "msgbatch_1"
    lines: list[str] = []
    outcome = prefetch(_client(api), jobs, cache, poll_seconds=1, sleep=lambda _s: None, progress=lines.append)
    assert outcome is not None and outcome.resumed == 3 and outcome.submitted == 0 and outcome.succeeded == 3
    assert list(api.batches) == ["msgbatch_1"]  # nothing submitted twice
    assert lines[0] == ("batch msgbatch_1: submitted by an earlier run, in_progress; collecting it instead of "
                        "submitting its requests again")
    assert not record.exists() and all(cache.get(*job) is not None for job in jobs)


def test_a_build_stopped_mid_batch_collects_it_when_run_again(tmp_path: Path) -> None:
    api = FakeBatches(polls_to_end=2)
    original = api.__call__

    def going_away(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET" and request.url.path.startswith("/v1/messages/batches/") and \
                not request.url.path.endswith("/results") and not api.down:
            api.down = True  # the first poll fails: the run stops with the batch still running
        return original(request)

    client = anthropic.Anthropic(api_key="test", base_url="http://testserver", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(going_away)))
    with pytest.raises(ModelUnavailable, match="rerun to continue"):  # the poll's retries are spent too
        build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(client, sleep=lambda _s: None),
                     batch=True, progress=lambda _l: None)
    api.down = False
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api), batch=True,
                          progress=lambda _l: None)
    assert result.complete and list(api.batches) == ["msgbatch_1"]


def test_requests_beyond_one_batchs_limits_are_split(tmp_path: Path) -> None:
    api = FakeBatches()
    cache = RequestCache(tmp_path / "cache")
    outcome = prefetch(_client(api), _jobs(7), cache, sleep=lambda _s: None, max_requests=3)
    assert outcome is not None and outcome.succeeded == 7 and len(outcome.batch_ids) == 3
    assert outcome.batch_id == outcome.batch_ids[-1]  # the last batch, public since batches began
    assert [len(requests) for requests in api.batches.values()] == [3, 3, 1]
    entries = [{"custom_id": str(n), "params": {"text": "x" * 1_000}} for n in range(10)]
    by_size = split(entries, max_bytes=4_000)
    assert [len(chunk) for chunk in by_size] == [2, 2, 2, 2, 2]
    assert [entry for chunk in by_size for entry in chunk] == entries
    with pytest.raises(ModelError, match=r"request 0 is \d+ bytes, more than one batch may hold"):
        split(entries[:1], max_bytes=1_500)


def test_judging_at_scale_goes_through_one_batch(tmp_path: Path) -> None:
    built = run_command("build", str(BRIEF), courses_dir=tmp_path, yes=True, progress=lambda _l: None,
                        backend="offline")

    def judge(params: dict[str, Any]) -> dict[str, Any]:
        system = json.dumps(params["messages"])  # a judge's instructions follow the (cached) lesson
        if "teaches a learning outcome" in system:
            return {"quote": "", "teaches": False, "reason": "canned"}
        if "wrong option" in system:
            return {"embodies": True, "reason": "canned"}
        if "exercise against" in system:
            return {"aligned": True, "reason": "canned"}
        return {"distinguishable": True, "reason": "canned"}

    api = FakeBatches(judge=judge)
    results = batch_score(built.course_dir, _client(api), RequestCache(tmp_path / "judge-cache"),
                          poll_seconds=0, sleep=lambda _s: None)
    assert len(api.batches) == 1 and api.live == []
    assert results["distractor_quality"].score == 1.0 and results["outcome_coverage"].score == 0.0
    assert results["exercise_alignment"].judge.startswith("model:")


def _calls(course: Path, stage: str) -> list[dict[str, Any]]:
    """Every call of ``stage`` in every run's trace, as traced (usage, batch or live)."""
    records = [json.loads(line) for path in sorted((course / ".runs" / "traces").glob("*.jsonl"))
               for line in path.read_text().splitlines()]
    return [call for record in records for call in record.get("calls", []) if call["stage"] == stage]


def test_a_batch_answer_that_fails_its_check_is_asked_again_and_paid_for_once(tmp_path: Path) -> None:
    api = FakeBatches()
    honest, spoiled = api.answer, []

    def answer(params: dict[str, Any]) -> dict[str, Any]:  # run 1's quizzes, from its batch and live retries
        if "# Stage: quiz" in json.dumps(params["system"]) and len(api.batches) == 1:
            spoiled.append(params)
            return {}
        return honest(params)

    api.answer = answer  # type: ignore[method-assign]
    with pytest.raises(AnswerError, match="quiz"):
        build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api), batch=True,
                     progress=lambda _l: None)
    course = tmp_path / "incident-postmortems"
    cache = RequestCache(course / ".runs" / "cache")
    rejected = sorted(cache.rejected_dir.glob("*.json"))
    assert len(rejected) == len(spoiled) and not any(
        json.loads(path.read_text())["answer"]["data"] == {} for path in cache.directory.glob("*.json"))
    batches = len(api.batches)
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api), batch=True,
                          progress=lambda _l: None)
    assert result.complete and len(api.batches) == batches + 1  # the rejected batch answer was asked again
    again = api.batches[f"msgbatch_{batches + 1}"]
    assert again and all("# Stage: quiz" in json.dumps(entry["params"]["system"]) for entry in again)
    # every quiz answer the fake sent is counted once, across both runs: none twice, none lost
    sent = [entry for entries in api.batches.values() for entry in entries
            if "# Stage: quiz" in json.dumps(entry["params"]["system"])]
    live = [body for body in api.live if "# Stage: quiz" in json.dumps(body["system"])]
    traced = _calls(course, "quiz")
    assert sum(call["input_tokens"] for call in traced) == USAGE["input_tokens"] * (len(sent) + len(live))


# -- batch ids name files: only the API's shape is ever used as one ----------------------------

OUTSIDE = "../../../outside/package"
"""From <course>/.runs/batches/, a record named by this id lands in <tmp>/outside/package.json."""


def _sentinel(tmp_path: Path) -> tuple[RequestCache, Path]:
    """A course's request cache, and a file of the person's beside the course, outside it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "package.json").write_text('{"name": "mine"}\n')
    return RequestCache(tmp_path / "course" / ".runs" / "cache"), tmp_path / "outside" / "package.json"


def _everything(tmp_path: Path) -> dict[str, bytes]:
    return {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("hostile", [OUTSIDE, "{tmp}/outside/package", "msgbatch_1/../../../../outside/package",
                                     "msgbatch_1\x00", "msgbatch_" + "a" * 300, "msgbatch_", "msgbatch_1\n",
                                     "MSGBATCH_1"])
def test_a_batch_id_of_another_shape_from_the_server_is_refused_before_any_path(tmp_path: Path,
                                                                                   hostile: str) -> None:
    hostile = hostile.format(tmp=tmp_path)  # an absolute path, to the person's file
    assert not BATCH_ID.fullmatch(hostile)
    cache, mine = _sentinel(tmp_path)
    before = _everything(tmp_path)
    api = FakeBatches(name=lambda _n: hostile)
    with pytest.raises(UnsafeId) as refused:
        prefetch(_client(api), _jobs(2), cache, poll_seconds=0, sleep=lambda _s: None)
    message = str(refused.value)
    assert exit_code(refused.value) == 5 and "\n" not in message and "not a Message Batch id" in message
    assert _everything(tmp_path) == before  # nothing written (no record) and nothing deleted
    assert mine.read_text() == '{"name": "mine"}\n'


@pytest.mark.parametrize("planted", [{"batch_id": "../../../outside/package"},
                                     {"batch_id": "/nonexistent/stay-hostile-batch"},
                                     {"batch_id": 7},
                                     {"batch_id": "msgbatch_7"}])  # a good id in a file not named by it
def test_a_planted_batch_record_deletes_nothing_even_when_the_api_answers_404(tmp_path: Path,
                                                                               planted: dict[str, Any]) -> None:
    cache, mine = _sentinel(tmp_path)
    jobs = _jobs(2)
    record = cache.directory.parent / "batches" / "planted.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({**planted, "custom_ids": [request_key(*job) for job in jobs]}))
    before = _everything(tmp_path)
    api = FakeBatches()  # honest: it has no such batch (404)
    with pytest.raises(UnsafeId, match=r"planted\.json: field .batch_id.: .*; delete the record"):
        prefetch(_client(api), jobs, cache, poll_seconds=0, sleep=lambda _s: None)
    assert _everything(tmp_path) == before and api.batches == {}  # nothing deleted, nothing submitted
    assert mine.read_text() == '{"name": "mine"}\n'


def test_a_planted_record_that_is_a_fifo_or_huge_is_skipped_not_read(tmp_path: Path) -> None:
    """Batch records are read like every stored file: a FIFO would block the read for ever,
    a sparse 17 MB file would be read whole; each is passed over, the good record kept."""
    import os

    from stay._bounds import MAX_STORED_BYTES
    from stay.models._batch import _Ledger

    ledger = _Ledger(tmp_path)
    ledger.add("msgbatch_good1", ["a"])
    os.mkfifo(tmp_path / "msgbatch_fifo1.json")
    with (tmp_path / "msgbatch_huge1.json").open("wb") as handle:
        handle.truncate(MAX_STORED_BYTES + 1)
    assert [(path.name, record["batch_id"]) for path, record in ledger.records()] == [
        ("msgbatch_good1.json", "msgbatch_good1")]


# -- over real HTTP, against the local fake's Message Batches endpoints ------------------------


def _http_backend(api: FakeMessagesAPI, slept: list[float]) -> AnthropicBackend:
    return AnthropicBackend(api_key="test-key-not-real", base_url=api.url, sleep=slept.append, jitter=lambda: 0.0)


def _breakpoints(params: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = list(params["system"]) + [b for turn in params["messages"] if isinstance(turn["content"], list)
                                       for b in turn["content"]]
    return [block["cache_control"] for block in blocks if "cache_control" in block]


def test_a_500_a_dropped_connection_and_a_429_on_the_batch_calls_are_retried_not_the_end(tmp_path: Path) -> None:
    """The create meets a 500 then a dropped connection, the poll a 429, the results a 503;
    each is retried by the live rules: the retry-after a status carried, else the backoff
    (0.5 s doubling, no jitter here: 1 s at a second attempt)."""
    faults: list[int | str | None] = [500, "reset", None, 429, None, 503]  # None: answered
    asked = "3"
    with FakeMessagesAPI(batch_faults=list(faults), batch_retry_after=asked) as api:
        slept: list[float] = []
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_http_backend(api, slept),
                              batch=True, progress=lambda _l: None)
    assert result.complete and len(api.batches) == 1  # the failed create made no second batch
    poll = "GET /v1/messages/batches/msgbatch_0001fake"
    assert api.batch_calls == ["POST /v1/messages/batches"] * 3 + [poll] * 4 + [poll + "/results"]
    hint = float(asked)
    assert slept == [hint, backoff(1, 0.0), hint, hint] and not api.batch_faults
    (entries,) = api.batches.values()
    assert sum(stage_of(body) in WAVE for body in api.requests) == len(entries)  # no wave stage asked live


def test_batch_calls_whose_retries_are_spent_end_the_run_saying_the_ids_are_stored(tmp_path: Path) -> None:
    with FakeMessagesAPI() as api:
        slept: list[float] = []
        backend = _http_backend(api, slept)
        api.batch_faults = [500] * (backend.max_retries + 1)
        with pytest.raises(ModelUnavailable, match=rf"creating a batch: .*HTTP 500.* after {backend.max_retries + 1} "
                                                   r"attempts.*stored under \.runs/batches/") as stopped:
            build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, batch=True,
                         progress=lambda _l: None)
    assert len(slept) == backend.max_retries and not api.batches and exit_code(stopped.value) == 6 and "\n" not in str(stopped.value)


def test_entries_that_end_without_an_answer_are_said_one_line_each_and_a_refusal_is_counted(tmp_path: Path) -> None:
    outcomes = {0: "expired", 1: "refusal", 2: "errored", 3: "canceled", 4: "garbled"}
    lines: list[str] = []
    with FakeMessagesAPI(batch_outcomes=outcomes) as api:
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_http_backend(api, []), batch=True,
                              progress=lines.append)
    assert result.complete and result.usage_by_stage is not None
    said = [line for line in lines if ", batch msgbatch_" in line and "asking it again live" in line]
    assert len(said) == len(outcomes)
    for kind in ("expired", "errored", "canceled"):
        (line,) = [line for line in said if f": {kind}, not billed; " in line]
        assert "at the full price (twice the batch's)" in line
    (refused,) = [line for line in said if ": refused, billed $" in line]
    (garbled,) = [line for line in said if ": unreadable (" in line and "not JSON" in line]
    assert "at the batch price (counted)" in refused and "at the batch price (counted)" in garbled
    # every token the fake billed, batch entries (the refused one too) and live calls, is in the run's usage
    for field in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        counted = sum(getattr(usage, field) for stage, usage in result.usage_by_stage.items() if stage != "moderation")  # the fake bills stages only
        assert counted == api.accounting.total(field), field
    traced = [call for path in (result.course_dir / ".runs" / "traces").glob("*.jsonl")
              for record in map(json.loads, path.read_text().splitlines()) for call in record.get("calls", [])]
    (entries,) = api.batches.values()
    unbilled = sum(kind in ("expired", "errored", "canceled") for kind in outcomes.values())
    assert sum(call["batch"] for call in traced) == len(entries) - unbilled  # answered, refused, garbled


def test_batch_requests_write_one_hour_entries_that_outlive_a_long_batch(tmp_path: Path) -> None:
    """Entries processed 10 minutes apart, as a long batch may: 5-minute entries would have
    expired between them; the 1-hour ones are read."""
    now = [0.0]

    def later() -> None:
        now[0] += 600.0

    accounting = CacheAccounting(clock=lambda: now[0])
    with FakeMessagesAPI(accounting, between_entries=later) as api:
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_http_backend(api, []), batch=True,
                              progress=lambda _l: None)
    assert result.complete
    (entries,) = api.batches.values()
    marks = [mark for entry in entries for mark in _breakpoints(entry["params"])]
    assert marks and all(mark == {"type": "ephemeral", "ttl": BATCH_CACHE_TTL} for mark in marks)
    batched = [bill for bill in accounting.billed[-len(entries):]]
    assert sum(bill.usage["cache_read_input_tokens"] for bill in batched) > 0


def test_a_batch_cache_write_is_priced_at_the_one_hour_rate_then_halved() -> None:
    for model, price in PRICES.items():
        written = Usage(cache_creation_input_tokens=1_000_000)
        # 2x the base input for a 1-hour write, half of it in a batch: the base input price
        assert cost(model, written, batch=True) == pytest.approx(price.rates_for(written).input), model
        assert cost(model, written) == pytest.approx(price.rates_for(written).cache_write), model  # live: 5-minute writes
