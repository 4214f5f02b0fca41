"""tools/relay.py: stay built over HTTP by a "person" who answers the relay's request
files, a bad answer turned back with an error file, and the relay's bounds, names,
streams and retries."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from stay.models import AnthropicBackend
from tests.conftest import ROOT, run_stay
from tests.models.fake_api import answer_for, is_stage
from tests.parity.harness import reference_report
from tools import relay as relay_module
from tools.relay import Relay
from tools.wire import problems, read_answer, schema_of, system_of, user_of

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
POLL = 0.01
"""The relay's and the person's poll, in seconds: a person takes minutes, the test must not."""
NOT_FLAGGED = {"flagged": False, "reason": "a course brief"}
UNDECLARED = "notes"
"""A property no answer schema declares: the one constrained decoding would never let a model write."""


def _write(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)  # whole, as an editor's save: the relay never reads half of it


class Person(threading.Thread):
    """Answers every request file the relay writes, as a model would: a stage with its
    offline answer (``answer_for`` from the raw request), the screen with not flagged.
    The first stage answer is bad at first (a required property missing, an undeclared one
    added); once the relay's error file for it is there, it writes the good one. Any other
    rejection is kept, and the relay closed, so the build ends at once instead of waiting."""

    def __init__(self, relay: Relay) -> None:
        super().__init__(daemon=True)
        self.relay, self.dir = relay, relay.directory
        self.answered: set[str] = set()
        self.bad: str | None = None
        self.missing = ""
        self.good: Any = None
        self.error: str | None = None
        self.unexpected: dict[str, str] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(POLL):
            for request in sorted(self.dir.glob("*.request.json")):
                name = request.name.removesuffix(".request.json")
                answer, error = self.dir / f"{name}.answer.json", self.dir / f"{name}.error.txt"
                if name not in self.answered:
                    self.answered.add(name)
                    body = json.loads(request.read_bytes())
                    good = answer_for(body) if is_stage(body) else NOT_FLAGGED
                    if self.bad is None and is_stage(body):
                        schema = schema_of(body)
                        assert schema is not None
                        self.bad, self.good, self.missing = name, good, schema["required"][0]
                        bad = {key: value for key, value in good.items() if key != self.missing}
                        _write(answer, json.dumps({**bad, UNDECLARED: "a property the schema lacks"}))
                    else:
                        _write(answer, json.dumps(good))
                elif name == self.bad and self.error is None and error.exists():
                    self.error = error.read_text(encoding="utf-8")
                    _write(answer, json.dumps(self.good))
                elif name != self.bad and name not in self.unexpected and error.exists():
                    self.unexpected[name] = error.read_text(encoding="utf-8")
                    threading.Thread(target=self.relay.close, daemon=True).start()


Built = tuple[Relay, Person, Path, Any, list[str]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """``stay build BRIEF --yes --backend anthropic`` at the relay, answered by a Person."""
    lines: list[str] = []
    relay = Relay(tmp_path_factory.mktemp("relay"), port=0, poll=POLL, say=lines.append)
    courses = tmp_path_factory.mktemp("courses")
    person = Person(relay)
    with relay, pytest.MonkeyPatch.context() as patch:
        for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "STAY_WAVE", "STAY_REPAIR"))]:
            patch.delenv(name)
        person.start()
        done = run_stay("build", str(BRIEF), "--yes", "--backend", "anthropic", "--courses-dir", str(courses),
                        env={"ANTHROPIC_BASE_URL": relay.url, "ANTHROPIC_API_KEY": "relay-key-not-real",
                             "STAY_MAX_RETRIES": "0"})  # a closed relay ends the build, not four retries
        person.done.set()
    (course,) = courses.iterdir()
    yield relay, person, course, done, lines


def test_a_person_answering_each_request_file_builds_a_course_that_validates_strict(built: Built) -> None:
    _relay, person, course, done, _lines = built
    assert person.unexpected == {}, "the relay rejected an offline answer"
    assert done.returncode == 0, done.stderr
    checked = run_stay("validate", "--strict", str(course))
    assert checked.returncode == 0, checked.stdout
    assert reference_report(course, True)["courses"][0]["defects"] == []  # the frozen reference agrees


def test_every_request_is_handed_over_readable_the_screen_too(built: Built) -> None:
    relay, person, _course, _done, lines = built
    requests = sorted(relay.directory.glob("*.request.json"))
    labels = [path.name.removesuffix(".request.json").split("-", 1)[1] for path in requests]
    assert labels.count("input-screen") == 1 and len(requests) > 1
    for path in requests:
        name = path.name.removesuffix(".request.json")
        body = json.loads(path.read_bytes())
        readable = (relay.directory / f"{name}.request.md").read_text(encoding="utf-8")
        for part in (system_of(body), user_of(body), json.dumps(schema_of(body), indent=2, ensure_ascii=False)):
            assert part and part in readable, name
        said = [line for line in lines if line.startswith(f"relay: {name}: answer in ")]
        assert said == [f"relay: {name}: answer in {relay.directory / (name + '.answer.json')} "
                        f"(the request: {relay.directory / (name + '.request.md')})"]
    assert len(requests) == len(person.answered)


def test_a_bad_answer_gets_an_error_file_and_the_corrected_one_is_accepted(built: Built) -> None:
    relay, person, _course, _done, lines = built
    assert person.bad is not None and person.error is not None, "the bad answer was never turned back"
    assert f"at $: '{person.missing}' is a required property" in person.error.splitlines()
    assert f"'{UNDECLARED}' was unexpected" in person.error
    assert not (relay.directory / f"{person.bad}.error.txt").exists()  # gone once the good one is in
    assert f"relay: {person.bad}: answer accepted" in lines


# -- the relay alone ---------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"flagged": {"type": "boolean"}}, "required": ["flagged"]}


def _body(stage: str = "audience", **extra: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 100, "system": [{"type": "text", "text": f"# Stage: {stage}\n"}],
            "messages": [{"role": "user", "content": "hello"}],
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}, **extra}


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[Relay]:
    with Relay(tmp_path / "relay", port=0, poll=POLL, ping=POLL, say=lambda _line: None) as served:
        yield served


def _answer_when_asked(relay: Relay, data: Any, *, after: float = 0.0, count: int = 1) -> threading.Thread:
    """Answers the next ``count`` requests with ``data``, each ``after`` seconds after it appears."""
    def answer() -> None:
        answered: set[Path] = set()
        while len(answered) < count:
            for path in set(relay.directory.glob("*.request.json")) - answered:
                threading.Event().wait(after)
                _write(path.with_name(path.name.replace(".request.json", ".answer.json")), json.dumps(data))
                answered.add(path)
            threading.Event().wait(POLL)
    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def test_file_names_are_safe_and_the_relay_listens_on_loopback_only(relay: Relay) -> None:
    assert relay.server.server_address[0] == "127.0.0.1"
    _answer_when_asked(relay, {"flagged": True})
    hostile = "../../etc/passwd\x00 \u00e9 " + "x" * 200
    response = httpx2.post(f"{relay.url}/v1/messages", json=_body(hostile), timeout=10)
    assert response.status_code == 200 and json.loads(response.json()["content"][0]["text"]) == {"flagged": True}
    names = sorted(path.name for path in relay.directory.rglob("*"))
    label = relay_module.safe_label(hostile)
    assert label == "etc-passwd-" + "x" * (relay_module.LABEL_CHARS - len("etc-passwd-"))
    assert names == [f"001-{label}.answer.json", f"001-{label}.request.json", f"001-{label}.request.md"]


def test_requests_and_answers_are_read_within_bounds(relay: Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    connection = http.client.HTTPConnection(*relay.server.server_address[:2], timeout=10)
    connection.putrequest("POST", "/v1/messages")
    connection.putheader("content-length", str(relay_module.MAX_REQUEST_BYTES + 1))
    connection.endheaders()  # no body: the relay must refuse on the length alone, reading nothing
    refused = connection.getresponse()
    assert refused.status == 413 and json.loads(refused.read())["error"]["type"] == "request_too_large"
    connection.close()

    monkeypatch.setattr(relay_module, "MAX_ANSWER_BYTES", 64)
    result: list[httpx2.Response] = []
    waiting = threading.Thread(target=lambda: result.append(
        httpx2.post(f"{relay.url}/v1/messages", json=_body(), timeout=10)), daemon=True)
    waiting.start()
    answer, error = relay.directory / "001-audience.answer.json", relay.directory / "001-audience.error.txt"
    while not (relay.directory / "001-audience.request.json").exists():
        threading.Event().wait(POLL)
    oversized = json.dumps({"flagged": True, "padding": "x" * 100})
    _write(answer, oversized)
    while not error.exists():
        threading.Event().wait(POLL)
    assert f"the file is {len(oversized.encode())} bytes; the relay reads at most 64" in error.read_text(encoding="utf-8")
    _write(answer, json.dumps({"flagged": False}))
    waiting.join(timeout=10)
    assert json.loads(result[0].json()["content"][0]["text"]) == {"flagged": False}


def test_a_streamed_request_outlives_the_clients_timeout_while_the_person_writes(relay: Relay) -> None:
    """The relay pings a stream while it waits: with no ping, a 1-second timeout and no
    retries would end the screen long before the answer, written after three, arrives (a
    second of silence, not 0.3 s: its pings, every 0.01 s, can be late on a loaded machine)."""
    _answer_when_asked(relay, {"flagged": False, "reason": "fine"}, after=3.0)
    backend = AnthropicBackend(api_key="relay-key-not-real", base_url=relay.url, timeout=1.0, max_retries=0)
    assert backend.screen("title: A brief") is None
    (request,) = relay.directory.glob("*.request.json")
    assert json.loads(request.read_bytes())["stream"] is True


def test_a_retry_waits_for_the_same_answer_and_a_request_answered_is_asked_again(relay: Relay) -> None:
    with pytest.raises(httpx2.ReadTimeout):  # a client that gives up, as stay does after its timeout
        httpx2.post(f"{relay.url}/v1/messages", json=_body(), timeout=0.3)
    _answer_when_asked(relay, {"flagged": True}, count=2)
    retried = httpx2.post(f"{relay.url}/v1/messages", json=_body(), timeout=10)
    assert json.loads(retried.json()["content"][0]["text"]) == {"flagged": True}
    assert [path.name for path in relay.directory.glob("*.request.json")] == ["001-audience.request.json"]
    again = httpx2.post(f"{relay.url}/v1/messages", json=_body(), timeout=10)  # answered once: a new question
    assert again.status_code == 200
    assert sorted(path.name for path in relay.directory.glob("*.request.json")) == [
        "001-audience.request.json", "002-audience.request.json"]


def test_an_answer_may_hold_only_what_the_schema_declares_at_every_depth() -> None:
    """A hand-made schema that never says ``additionalProperties`` is held to its declared
    properties as constrained decoding would hold a model, through $defs, anyOf and items;
    a property named ``properties`` is a property like another."""
    schema = {"type": "object", "required": ["items"],
              "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                             "properties": {"anyOf": [{"type": "null"}, {"type": "object",
                                                                        "properties": {"a": {"type": "string"}}}]}},
              "$defs": {"Item": {"type": "object", "properties": {"name": {"type": "string"}}}}}
    assert problems(schema, {"items": [{"name": "x"}], "properties": {"a": "y"}}) == []
    found = problems(schema, {"items": [{"name": "x", "extra": 1}], "properties": {"a": "y", "b": 2}, "top": 3})
    assert sorted(line.split(":")[0] for line in found) == ["at $", "at $.items[0]", "at $.properties"]
    assert all("was unexpected" in line or "is not valid under any" in line for line in found)


def test_pass_screen_answers_the_input_screen_without_handing_it_over(tmp_path: Path) -> None:
    with Relay(tmp_path / "relay", port=0, poll=POLL, pass_screen=True, say=lambda _line: None) as served:
        backend = AnthropicBackend(api_key="relay-key-not-real", base_url=served.url, max_retries=0)
        assert backend.screen("title: A brief") is None
        assert list(served.directory.iterdir()) == []
        _answer_when_asked(served, {"flagged": False})
        stage = httpx2.post(f"{served.url}/v1/messages", json=_body(), timeout=10)  # a stage is still handed over
        assert stage.status_code == 200 and (served.directory / "001-audience.request.md").exists()


def test_an_answer_file_that_is_not_json_is_named_for_what_it_is() -> None:
    assert read_answer(b'{"flagged": true', SCHEMA)[1] == [
        "not JSON: Expecting ',' delimiter at line 1 column 17"]
    assert read_answer('{"flagged": true}'.encode("utf-16"), SCHEMA)[1] == [
        "the file is not UTF-8 (byte 0); save it as UTF-8"]
    assert read_answer(b"[" * 100_000, SCHEMA)[1] == ["not JSON a parser can read: nested too deeply"]
    assert read_answer(b'{"flagged": true}', SCHEMA) == ({"flagged": True}, [])
