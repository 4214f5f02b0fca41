"""Prompts stay provider-neutral (issue 24, item 4): every stage builds its request without
a backend, so the sample build asks the same ``ModelRequest``s (stage, system blocks,
shared and user content, role, artefact, schema: the object before any wire rendering)
whichever backend answers it. Caching breakpoints and the wire format are the backend's
business, never the request's.

Each backend is built by a *served* factory: a context manager that starts what it talks
to (a fake API on 127.0.0.1, over real HTTP; nothing for offline) and yields the backend.
A backend is one more entry in ``SERVED``: the OpenAI-compatible backend is served by
``tests/models/fake_openai.py``.

And the layers hold it: nothing the stages and ``stay.requests`` import, directly or
through another module, is a backend (``stay.models`` and any module under it, such as
``stay.models._openai``, whether it exists yet or not) or a provider's SDK.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stay.models import AnthropicBackend, ModelAnswer, ModelClient, ModelRequest, OfflineBackend
from stay.models._openai import OpenAIBackend
from stay.models._protocol import Screening
from stay.pipeline import build_course
from stay.settings import Settings
from tests.conftest import ROOT
from tests.expected import calls, curriculum_of
from tests.models.fake_api import VIOLATIONS, FakeMessagesAPI
from tests.models.fake_openai import FakeOpenAI
from tests.models.helpers import HTTP, KEY
from tools.layers import import_graph, module_name

Served = Callable[[], contextlib.AbstractContextManager[ModelClient]]


@contextlib.contextmanager
def offline() -> Iterator[ModelClient]:
    yield OfflineBackend()


@contextlib.contextmanager
def anthropic_over_http() -> Iterator[ModelClient]:
    with FakeMessagesAPI() as api:
        yield AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None)


@contextlib.contextmanager
def openai_over_http() -> Iterator[ModelClient]:
    pytest.importorskip("openai")
    with FakeOpenAI() as api:  # one model served, no key: the local-server case
        yield OpenAIBackend(base_url=api.url, sleep=lambda _s: None)


SERVED: dict[str, Served] = {"offline": offline, "anthropic": anthropic_over_http, "openai": openai_over_http}
"""Backend name -> its served factory. The reference is ``REFERENCE``; every other entry is
held to it. The hook for a third backend: add its factory here."""
REFERENCE = "offline"


def recorded_requests(served: Served, courses: Path) -> list[dict[str, Any]]:
    """The sample build through ``served``'s backend, with each request it is asked for
    recorded as the backend got it (before its wire rendering), in (stage, artefact) order;
    the screen's request is the one the backend's ``screening`` reports, whether or not the
    backend sends it through its own ``complete`` (the OpenAI backend does).
    The recording wraps the backend's own ``complete`` on the instance, so the pipeline sees
    the backend's class (offline runs are not billed, the Claude backend's models are
    checked) exactly as without it; the request cache is off, so every request reaches it."""
    asked: list[ModelRequest] = []
    screening_now: list[bool] = []
    with served() as backend:
        complete, screening = backend.complete, backend.screening

        def recording(request: ModelRequest, model: str) -> ModelAnswer:
            if not screening_now:  # a backend may screen through its own complete: that call is the screen's
                asked.append(request)
            return complete(request, model)

        def recording_screen(text: str) -> Screening:
            screening_now.append(True)
            try:
                screened = screening(text)
            finally:
                screening_now.pop()
            asked.append(screened.request)  # the screen's request, as the backend reports it
            return screened

        # on the instance: a dataclass may be frozen
        object.__setattr__(backend, "complete", recording)
        object.__setattr__(backend, "screening", recording_screen)
        build_course(HTTP, courses_dir=courses, yes=True, backend=backend, settings=Settings(cache=False),
                     progress=lambda _line: None)
    dumped = [request.model_dump(mode="json") for request in asked]
    return sorted(dumped, key=lambda r: (r["stage"], r["artefact"], repr(r)))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    courses = tmp_path_factory.mktemp(REFERENCE)
    asked = recorded_requests(SERVED[REFERENCE], courses)
    (course,) = courses.iterdir()
    # every stage's every call, as the registry and the curriculum declare them: none left out
    expected = calls(curriculum_of(course))
    assert {stage: sum(r["stage"] == stage for r in asked) for stage in expected} == expected
    return asked


@pytest.mark.parametrize("name", [name for name in SERVED if name != REFERENCE])
def test_every_stage_s_request_is_the_same_whichever_backend_answers(
        name: str, reference: list[dict[str, Any]], tmp_path: Path) -> None:
    VIOLATIONS.clear()
    found = recorded_requests(SERVED[name], tmp_path)
    assert not VIOLATIONS, "a fake answered outside the request's wire schema:\n" + "\n".join(VIOLATIONS)
    # a model reviews each lesson; the offline reference reviews none (its stage builds the request alike)
    assert sum(r["stage"] == "review" for r in found) == sum(len(m.lessons) for m in curriculum_of(
        next(tmp_path.iterdir())).modules)
    found = [r for r in found if r["stage"] != "review"]
    assert [(r["stage"], r["artefact"]) for r in found] == [(r["stage"], r["artefact"]) for r in reference]
    for mine, theirs in zip(found, reference, strict=True):
        assert mine == theirs, f"{name}: the request for {mine['stage']} {mine['artefact']} differs from {REFERENCE}'s"


NEUTRAL = ("stay.stages", "stay.requests")
"""Where requests are built: with no backend in sight."""
BACKENDS = ("stay.models", "anthropic", "openai")
"""Module-name prefixes of a backend: stay's backends (every module of ``stay.models``), and
the providers' SDKs they speak through."""


def _is_under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _reached(roots: tuple[str, ...]) -> dict[str, str]:
    """Every stay module the ``roots`` import, directly or through others: module -> the
    chain that reaches it (for the message). Importing ``stay.a.b`` runs ``stay.a`` too."""
    graph: dict[str, set[str]] = {}
    for edge in import_graph(ROOT):
        parts = edge.imported.split(".")
        graph.setdefault(edge.importer, set()).update(".".join(parts[:n]) for n in range(2, len(parts) + 1))
    modules = {module_name(ROOT, path) for path in (ROOT / "stay").rglob("*.py")}
    chain = {name: name for name in modules if _is_under(name, roots)}
    todo = list(chain)
    while todo:
        here = todo.pop()
        for there in sorted(graph.get(here, ())):
            if there not in chain:
                chain[there] = f"{chain[here]} -> {there}"
                todo.append(there)
    return chain


def _third_party(module: str) -> set[str]:
    """The top-level names of the non-stay modules a stay module imports (any depth, any scope)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.is_file():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    if not path.is_file():
        return set()
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return {name for name in found if not _is_under(name, ("stay",))}


def test_the_stages_and_the_requests_never_import_a_backend() -> None:
    reached = _reached(NEUTRAL)
    assert {name for name in reached if _is_under(name, NEUTRAL)} >= {"stay.requests", "stay.stages"}
    assert [chain for name, chain in sorted(reached.items()) if _is_under(name, BACKENDS)] == []
    sdks = {f"{reached[module]} imports {name}" for module in reached for name in _third_party(module)
            if _is_under(name, BACKENDS)}
    assert sorted(sdks) == []


def test_the_backend_check_sees_an_import_of_a_module_that_does_not_exist_yet() -> None:
    """By prefix: ``stay.models._openai`` is a backend before its file is written."""
    assert _is_under("stay.models._openai", BACKENDS) and _is_under("openai.types", BACKENDS)
    assert not _is_under("stay.modelsx", BACKENDS) and not _is_under("stay.requests", BACKENDS)
