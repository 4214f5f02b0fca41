"""The public surface is curated: this test is the gate for changing it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import stay

PUBLIC = [
    "Brief", "BuildResult", "adopt", "approve", "build_course", "revise", "status",
    "Answered", "Statuses",  # what approve and status (and adopt) return: a tuple of FAILs, a dict of Status
    "Backend",  # the protocol a backend plug-in implements (docs/plugins.md)
    "NotebookProgress", "ProgressUpdate",  # progress: a bar in a notebook; what a custom sink receives
    "CourseReport", "Defect", "Severity", "ValidationReport", "__version__", "validate_course", "validate_courses",
    "Comparison", "compare_runs", "read_run",  # eval comparison (docs/evals.md), as `stay evals compare`
    "export",  # a course as an LMS package (docs/export.md), as `stay export`
    # the whole error tree (stay/errors.py), so a caller can catch exactly what it handles
    "StayError", "UsageError", "CoursePathError", "CourseNotFound", "DataFileError", "BriefError", "BriefNotFound",
    "EnvironmentProblem",
    "ArtefactError", "AnswerError", "ModelError", "TruncationError", "RefusalError", "ReplayMiss",
    "ModelUnavailable", "PipelineError", "BriefRejected", "UnsafeId", "CourseLocked", "CostCapReached",
    "GraphError",
]

TESTING = ["RiggedBackend", "InjectedFault", "DEFECTS", "QUALITY_KNOBS", "ScriptedJudge", "heuristic_judge"]
"""stay.testing: test support, public so tests outside stay can rig the offline backend, or script a judge, too."""


def test_all_is_exactly_the_curated_list() -> None:
    assert sorted(stay.__all__) == sorted(PUBLIC)


def test_the_test_support_is_exactly_its_curated_list() -> None:
    import stay.testing

    assert sorted(stay.testing.__all__) == sorted(TESTING)
    assert all(getattr(stay.testing, name) is not None for name in TESTING)


def test_every_public_name_resolves() -> None:
    for name in stay.__all__:
        assert getattr(stay, name) is not None


def test_exception_tree() -> None:
    assert issubclass(stay.CoursePathError, stay.UsageError)
    assert issubclass(stay.DataFileError, stay.UsageError)
    assert issubclass(stay.UsageError, stay.StayError)
    assert issubclass(stay.ArtefactError, stay.StayError)
    assert issubclass(stay.AnswerError, stay.StayError)
    assert issubclass(stay.PipelineError, stay.StayError)
    assert issubclass(stay.ModelUnavailable, stay.StayError) and not issubclass(stay.ModelUnavailable, stay.ModelError)
    assert issubclass(stay.BriefError, stay.UsageError)
    assert issubclass(stay.CourseLocked, stay.PipelineError)


def test_every_exception_stay_defines_derives_from_stay_error() -> None:
    import importlib
    import inspect
    import pkgutil

    found = []
    for info in pkgutil.walk_packages(stay.__path__, "stay."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found.append((info.name, name, issubclass(value, stay.StayError)))
    # control flow that never leaves its module: a gate stop inside the runner, and the
    # validator's hand-over from the fast YAML parser to the pure one
    internal = {("stay.pipeline._run", "Stop"), ("stay.validate._text", "_TooDeep"), ("stay.validate._text", "_Unusual")}
    outside = [(module, name) for module, name, ok in found if not ok and (module, name) not in internal]
    assert found and not outside, outside


def test_validator_imports_neither_pydantic_nor_a_model_client() -> None:
    code = ("import sys, stay.validate; "
            "print(sorted(m for m in ('pydantic', 'anthropic', 'networkx', 'stay.pipeline') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_offline_run_does_not_pay_for_the_anthropic_sdk() -> None:
    code = ("import sys, stay.pipeline, stay.models, stay.scoring; "
            "print('anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_validate_and_validate_course_agree() -> None:
    from tests.conftest import SAMPLE

    one = stay.validate_course(SAMPLE, strict=True)
    many = stay.validate_courses(SAMPLE.parent, strict=True)
    assert many.courses[0].defects == one.defects == ()
    assert many.ok and one.ok and one.checks == sum(one.passed.values())


@pytest.mark.parametrize("package", ["stay", "stay.view", "stay.scoring"])
def test_what_a_package_imports_on_first_use_is_exactly_its_public_names(package: str) -> None:
    import importlib

    module = importlib.import_module(package)
    assert dir(module) == sorted(module.__all__)  # dir() sorts; __all__ is in isort order (constants first)
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'missing'"):
        module.missing  # noqa: B018


SIGNATURE_LIMIT = 800
"""Characters a public function's signature may take: a few lines of a help() page. The
longest honest parameter list (stay.pipeline.run_command, 17 parameters) is about 620; one
default that spells the stage registry is over 5,000."""


@pytest.mark.parametrize("package", ["stay", "stay.pipeline", "stay.stages", "stay.testing", "stay.models",
                                     "stay.validate", "stay.view", "stay.scoring"])
def test_help_shows_readable_signatures(package: str) -> None:
    """A default that is a big object (the stage registry, the pipeline declaration) is
    None in the signature, so help(stay.build_course) is not 4 KB of Stage reprs. Functions
    only for the length: a pydantic model's signature (Brief) spells its validators, which
    is not a default."""
    import importlib
    import inspect

    module = importlib.import_module(package)
    for name in module.__all__:
        found = getattr(module, name)
        if not callable(found):
            continue
        try:
            signature = str(inspect.signature(found))
        except (TypeError, ValueError):  # a class whose signature inspect cannot read
            continue
        assert "Stage(" not in signature and "Decl(" not in signature, (name, signature[:200])
        if inspect.isfunction(found):
            assert len(signature) < SIGNATURE_LIMIT, (name, len(signature))


def _python_blocks() -> list[tuple[str, str]]:
    """(file, code) of every fenced ```python block in the README and docs/*.md."""
    import re

    from tests.conftest import ROOT

    fence = re.compile(r"^```(?:python|py|pycon)\s*\n(.*?)^```", re.M | re.S)
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [(path.name, match.group(1)) for path in files for match in fence.finditer(path.read_text("utf-8"))]


def _private(module: str) -> bool:
    return module.split(".")[0] == "stay" and any(part.startswith("_") for part in module.split(".")[1:])


def test_the_docs_import_nothing_private() -> None:
    """What the docs show a user is the public surface: no ``stay.<x>._y`` module (e.g.
    ``stay.scoring._compare``), and every name taken from a package is in its __all__."""
    import ast
    import importlib

    blocks = _python_blocks()
    assert blocks
    found = []
    for name, code in blocks:
        lines = [line.removeprefix(">>> ").removeprefix("... ") for line in code.splitlines()]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:  # a signature shown as text (docs/plugins.md): its import lines alone
            tree = ast.parse("\n".join(line for line in lines if line.startswith(("import ", "from "))))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(name, alias.name) for alias in node.names if _private(alias.name)]
            elif isinstance(node, ast.ImportFrom) and node.module:
                if _private(node.module):
                    found.append((name, node.module))
                elif node.module.split(".")[0] == "stay":
                    public = importlib.import_module(node.module).__all__
                    found += [(name, f"{node.module}.{a.name}") for a in node.names if a.name not in public]
    assert not found, found
    assert _private("stay.scoring._compare") and not _private("stay.scoring")  # the check can fail
