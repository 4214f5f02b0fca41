"""rev: what the review stage found wrong for a learner, while it still stands (group ``stay``). The review
(``stay.stages.review``) writes ``<module>/.review/<lesson>.review.yaml``, each finding quoted from its file;
a finding is reported while its quote still stands in its file (and item), so a repair clears it without a
second review, and it is owned by the stage whose file holds the quote. Without a model review, none."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from stay._bounds import read_bounded
from stay.validate._course import Course, Finding, Group, Lesson, Owner, Rule, Severity, rule
from stay.validate._text import quoted_in, safe_load, show

REVIEW = ".review/{lesson}.review.yaml"
"""``LessonReview.FILE``, under its module directory (a test holds the two equal)."""
TEMPLATE = "{what}: '{quote}': {why}; fix: {fix}"


def item_texts(file: str, data: Any) -> dict[str, str]:
    """The text a finding about ``file`` may quote, by item id ('' the whole file); ``data`` is the body,
    or the file's data."""
    if file == "content":
        return {"": data} if isinstance(data, str) else {}
    field = {"exercises": "exercises", "quiz": "items"}.get(file, "")
    items = data.get(field) if isinstance(data, Mapping) else None
    texts = {str(item.get("id")): "\n".join(_strings(item)) for item in items or [] if isinstance(item, Mapping)}
    return {"": "\n".join(texts.values()), **texts}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if key not in ("id", "outcome", "bloom", "type", "retrieves"):  # labels, not what a learner reads
                yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def stands(found: Mapping[str, Any], texts: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether a finding's quote stands in the file (and item) it names."""
    text = texts.get(str(found.get("file")), {}).get(str(found.get("item") or ""))
    return text is not None and quoted_in(str(found.get("quote", "")), text)


def _review(course: Course, lesson: Lesson) -> list[Mapping[str, Any]]:
    try:
        data = safe_load(read_bounded(os.path.join(course.root, lesson.module_dir,
                                                    REVIEW.format(lesson=lesson.id))).decode("utf-8"))
    except Exception:  # no review, or a damaged one: stay's own record, so nothing to report from it
        return []
    found = data.get("findings") if isinstance(data, dict) else None
    return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []


def _family(code: str, kind: str, severity: Severity, owner: Owner, what: str) -> Rule:
    def check(course: Course) -> Iterator[Finding]:
        for lesson in course.lessons:
            files = {"content": lesson.md, "exercises": lesson.exercises, "quiz": lesson.quiz}
            texts = {name: item_texts(name, file.body.text if name == "content" and file.body else file.data)
                     for name, file in files.items() if file.usable}
            for found in (f for f in _review(course, lesson) if f.get("kind") == kind and f.get("file") in files):
                file = str(found["file"])  # each finding is evaluated; a defect while its quote stands
                values = {"what": what, "quote": " ".join(str(found["quote"]).split()),
                          "why": found.get("why", ""), "fix": found.get("fix", "")}
                yield Finding(files[file].path, show(str(found.get("item") or "-")), stands(found, texts), values,
                              file)  # type: ignore[arg-type]  # the stage whose file holds the quote

    check.__name__ = code
    check.__doc__ = (f"The review found {what} (kind {kind}), and the words it quoted still stand in the file: "
                     "the judging model's finding, kept only because its quote was found there.")
    return rule(code, severity, owner, TEMPLATE, group=Group.STAY)(check)


FAIL, WARN = Severity.FAIL, Severity.WARN
rev001 = _family("rev001", "wrong_key", FAIL, "quiz", "the marked answer is wrong")
rev002 = _family("rev002", "two_right", FAIL, "quiz", "another option is also right")
rev003 = _family("rev003", "solution", FAIL, "exercises", "a solution that does not follow from its task or data")
rev004 = _family("rev004", "contradiction", FAIL, "content", "a contradiction of the plan or the running example")
rev005 = _family("rev005", "untaught", WARN, "quiz", "an item that tests nothing the lesson teaches")
