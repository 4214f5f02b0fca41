"""The public surface is curated: this test is the gate for changing it."""

from __future__ import annotations

import subprocess
import sys

import stay

PUBLIC = [
    "AnswerError", "Brief", "BuildResult", "PipelineError", "adopt", "approve", "build_course", "status",
    "ArtefactError", "CoursePathError", "CourseReport", "DataFileError", "Defect",
    "Severity", "StayError", "UsageError", "ValidationReport", "__version__",
    "validate_course", "validate_courses",
]


def test_all_is_exactly_the_curated_list() -> None:
    assert sorted(stay.__all__) == sorted(PUBLIC)


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
