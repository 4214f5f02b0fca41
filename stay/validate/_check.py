"""Running the registry over courses, and the reports it returns."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from stay._paths import check_links
from stay.errors import CourseNotFound, CoursePathError, EnvironmentProblem, UsageError
from stay.validate._course import Course
from stay.validate._data import HouseData, default_data_dir
from stay.validate._defect import OWNERS, Defect, Severity
from stay.validate._rules import Selectors, added_at_run_time, selected
from stay.validate._text import show

CONTRACT_VERSION = 1
DISPLAY_DEFECTS = 20
"""Defects a notebook shows (``_repr_html_``, ``_repr_markdown_``); ``to_text`` lists them all."""


OWNER_HEAD = ("owner", "FAIL", "WARN", "codes")


def owner_rows(defects: Iterable[Defect]) -> list[tuple[object, ...]]:
    """Defects by the stage that must fix them, as table rows (owner, FAILs, WARNs, the
    codes with their counts), in the pipeline's owner order; none for no defect."""
    owners: dict[str, list[Defect]] = {}
    for defect in defects:
        owners.setdefault(defect.owner, []).append(defect)
    rows: list[tuple[object, ...]] = []
    for owner in sorted(owners, key=lambda o: (OWNERS.index(o) if o in OWNERS else len(OWNERS), o)):
        found = owners[owner]
        codes = Counter(d.code for d in found)
        rows.append((owner, sum(d.severity is Severity.FAIL for d in found),
                     sum(d.severity is Severity.WARN for d in found),
                     ", ".join(f"{code} x{n}" if n > 1 else code for code, n in sorted(codes.items()))))
    return rows


@dataclass(frozen=True)
class CourseReport:
    """What the validator found in one course."""

    dir: str
    """The course directory as given or found."""
    slug: str
    """The directory's own name."""
    strict: bool
    evaluated: Mapping[str, int]
    """code -> how many subjects the rule evaluated (only codes evaluated at least once)."""
    passed: Mapping[str, int]
    """code -> evaluations that did not fire."""
    defects: tuple[Defect, ...]
    """Sorted by (path, code, subject, message)."""

    @property
    def fails(self) -> int:
        return sum(1 for d in self.defects if d.severity is Severity.FAIL)

    @property
    def warns(self) -> int:
        return sum(1 for d in self.defects if d.severity is Severity.WARN)

    @property
    def checks(self) -> int:
        return sum(self.evaluated.values())

    @property
    def ok(self) -> bool:
        """No FAIL (in strict mode: no defect at all)."""
        return self.fails == 0

    def by_owner(self) -> dict[str, list[Defect]]:
        """Defects grouped by the stage that must fix them."""
        grouped: dict[str, list[Defect]] = {}
        for defect in self.defects:
            grouped.setdefault(defect.owner, []).append(defect)
        return grouped

    def as_dict(self) -> dict[str, object]:
        return {"dir": self.dir, "slug": self.slug, "evaluated": dict(self.evaluated),
                "passed": dict(self.passed), "defects": [d.as_dict() for d in self.defects]}

    def _repr_html_(self) -> str:
        """In a notebook: the same tables as a ``ValidationReport`` of this one course."""
        return ValidationReport((self,), self.strict)._repr_html_()

    def _repr_markdown_(self) -> str:
        return ValidationReport((self,), self.strict)._repr_markdown_()


@dataclass(frozen=True)
class ValidationReport:
    """Reports for every course validated in one call, in directory-name order."""

    courses: tuple[CourseReport, ...]
    strict: bool

    @property
    def fails(self) -> int:
        return sum(course.fails for course in self.courses)

    @property
    def warns(self) -> int:
        return sum(course.warns for course in self.courses)

    @property
    def ok(self) -> bool:
        return self.fails == 0

    @property
    def exit_code(self) -> int:
        """0 with no FAIL, 1 with at least one."""
        return 0 if self.ok else 1

    def to_text(self) -> str:
        lines: list[str] = []
        for course in self.courses:
            lines.append(f"== {course.dir} ==")
            lines.extend(defect.line() for defect in course.defects)
            # the course's verdict: the reference writes PASS even above a FAIL, which reads as a pass
            lines.append(f"{'PASS' if course.ok else 'FAIL'} {len(course.evaluated)} rules evaluated, "
                         f"{course.checks} checks, {sum(course.passed.values())} passed")
        lines.append(f"{len(self.courses)} courses: {self.fails} FAIL, {self.warns} WARN")
        return "\n".join(lines) + "\n"

    def _display(self) -> tuple[str, list[tuple[Sequence[str], list[tuple[object, ...]], set[int]]], str]:
        """What a notebook shows: a summary line, then tables (head, rows, numeric columns):
        per course, defects by owner, and the first defects; then what was left out."""
        summary = (f"stay validate{' --strict' if self.strict else ''}: {len(self.courses)} "
                   f"course{'s' if len(self.courses) != 1 else ''}, {self.fails} FAIL, {self.warns} WARN, "
                   f"{sum(course.checks for course in self.courses)} checks run")
        tables: list[tuple[Sequence[str], list[tuple[object, ...]], set[int]]] = [
            (("course", "FAIL", "WARN", "checks run", "passed", "rules"),
             [(course.dir, course.fails, course.warns, course.checks, sum(course.passed.values()),
               len(course.evaluated)) for course in self.courses], {1, 2, 3, 4, 5})]
        defects = [(course.dir, defect) for course in self.courses for defect in course.defects]
        rows = owner_rows(defect for _slug, defect in defects)
        if rows:
            tables.append((OWNER_HEAD, rows, {1, 2}))
            tables.append((("course", "severity", "code", "path", "subject", "message"),
                           [(slug, str(d.severity), d.code, d.path, d.subject, d.message)
                            for slug, d in defects[:DISPLAY_DEFECTS]], set()))
        rest = len(defects) - DISPLAY_DEFECTS
        tail = (f"{rest} more defects not shown; to_text() lists every one." if rest > 0
                else "" if defects else "No defects.")
        return summary, tables, tail

    def _repr_html_(self) -> str:
        """The report in a notebook: counts per course, defects by owner, the first defects."""
        from stay._display import html_block

        return html_block("stay-validation-report", *self._display())

    def _repr_markdown_(self) -> str:
        from stay._display import markdown_block

        return markdown_block(*self._display())

    def to_json(self) -> str:
        document = {
            "version": CONTRACT_VERSION,
            "strict": self.strict,
            "courses": [course.as_dict() for course in self.courses],
            "summary": {
                "courses": len(self.courses),
                "checks": sum(course.checks for course in self.courses),
                "passed": sum(sum(course.passed.values()) for course in self.courses),
                "fail": self.fails,
                "warn": self.warns,
            },
        }
        import json  # here, not at the top: start-up pays for it only when JSON is asked for

        return json.dumps(document, indent=2, sort_keys=True) + "\n"


def check_course(path: str | os.PathLike[str], data: HouseData, *, strict: bool = False,
                 shown: str | None = None, select: Selectors | None = None,
                 ignore: Selectors | None = None) -> CourseReport:
    """Validate one course directory with already-loaded data files, running the rules
    ``select`` and ``ignore`` choose (``_rules.selected``: by default every rule); a
    course holding a link that leads outside it is refused, as every command refuses it
    (nothing is read through such a link), as a path the validator cannot use."""
    rules = selected(select, ignore)
    root = shown if shown is not None else os.fspath(path)
    try:
        check_links(root)
    except EnvironmentProblem as exc:
        raise CoursePathError(str(exc), path=exc.path or root) from None
    course = Course.load(root, data)
    evaluated: Counter[str] = Counter()
    fired: Counter[str] = Counter()
    defects: list[Defect] = []
    for code, rule in rules.items():
        severity = Severity.FAIL if strict else rule.severity
        count = 0
        for found in rule.check(course):
            count += 1
            if not found.fired:
                continue
            fired[code] += 1
            message = rule.template.format(**{k: show(v) for k, v in found.values.items()})
            owner = found.owner or rule.owner
            assert owner is not None, f"{code} fired without an owner"
            defects.append(Defect(found.path, code, found.subject, message, severity, owner))
        if count:
            evaluated[code] = count
    defects.sort(key=lambda d: (d.path, d.code, d.subject, d.message))
    return CourseReport(
        dir=root,
        slug=course.name,
        strict=strict,
        evaluated=dict(evaluated),
        passed={code: count - fired[code] for code, count in evaluated.items()},
        defects=tuple(defects),
    )


def find_courses(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Every course under ``paths``, as shown in reports, in directory-name order.

    A path holding course.yaml is a course; otherwise each immediate subdirectory
    whose name does not start with '.' or '_' is one.
    """
    found: list[str] = []
    for given in paths:
        path = os.fspath(given)
        if not os.path.exists(path):
            raise CourseNotFound(f"PATH '{path}' does not exist", path=path)
        if not os.path.isdir(path):
            raise CoursePathError(f"PATH '{path}' is not a directory", path=path)
        if os.path.isfile(os.path.join(path, "course.yaml")):
            found.append(path)
            continue
        try:
            names = os.listdir(path)
        except OSError as exc:
            raise CoursePathError(f"PATH '{path}' cannot be read ({exc.strerror or exc})", path=path) from None
        found.extend(os.path.join(path, name) for name in names
                     if not name.startswith((".", "_")) and os.path.isdir(os.path.join(path, name)))
    return sorted(found, key=lambda shown: (os.path.basename(os.path.abspath(shown)), shown))


def available_cores() -> int:
    """The processors this process may run on (its CPU affinity where the platform says)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on every platform
        return os.cpu_count() or 1


def validate_courses(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = "courses", *,
             strict: bool = False,
             data_dir: str | os.PathLike[str] | None = None,
             jobs: int | None = 1,
             select: Selectors | None = None,
             ignore: Selectors | None = None) -> ValidationReport:
    """Validate a course directory, a directory of courses, or several of either.

    ``jobs`` courses are checked at once, each in its own process (``None``: one per
    available core); the report is the same, byte for byte, whatever ``jobs`` is.
    ``select`` and ``ignore`` choose the rules (codes, family prefixes, groups; by
    default every rule, as a build checks).
    Raises ``CoursePathError`` for a path that does not exist, ``DataFileError`` for
    missing or malformed data files, ``UsageError`` for a ``jobs`` below 1 or a selector
    that names no rule, and ``CoursePathError`` for a course holding a link that leads
    outside it; a defect in a course is never an exception.
    """
    codes = tuple(selected(select, ignore))  # resolved once, and a bad selector refused before any work
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    workers = available_cores() if jobs is None else jobs
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UsageError(f"jobs must be a whole number of processes, at least 1; got {jobs!r}")
    courses = find_courses(paths)
    data = HouseData.load(data_dir if data_dir is not None else default_data_dir())
    return ValidationReport(tuple(_check_all(courses, data, strict, workers, codes)), strict)


def _check_all(courses: list[str], data: HouseData, strict: bool, jobs: int,
               codes: tuple[str, ...]) -> list[CourseReport]:
    """Each course's report, in the order given, from up to ``jobs`` processes."""
    workers = min(jobs, len(courses))
    # a rule registered in this process is unknown to a worker started fresh (spawn,
    # forkserver: the default on some platforms and Pythons), so those run here
    if workers > 1 and not added_at_run_time(codes):
        try:
            return _check_in_processes(courses, data, strict, workers, codes)
        except (OSError, NotImplementedError, ImportError):
            pass  # no processes or semaphores here (a sandbox): one process does the same work
    return [check_course(Path(shown), data, strict=strict, shown=shown, select=codes) for shown in courses]


def _check_in_processes(courses: list[str], data: HouseData, strict: bool, workers: int,
                        codes: tuple[str, ...]) -> list[CourseReport]:
    from concurrent.futures import ProcessPoolExecutor  # only when asked for: it costs start-up time

    # A few chunks per worker: few round trips, and a slow course does not leave a worker idle.
    chunk = max(1, len(courses) // (workers * 4))
    with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker,
                             initargs=(data, strict, codes)) as pool:
        return list(pool.map(_check_one, courses, chunksize=chunk))


_worker: tuple[HouseData, bool, tuple[str, ...]] | None = None


def _start_worker(data: HouseData, strict: bool, codes: tuple[str, ...]) -> None:
    global _worker
    _worker = (data, strict, codes)


def _check_one(shown: str) -> CourseReport:
    assert _worker is not None, "a worker process checks courses only after _start_worker"
    data, strict, codes = _worker
    return check_course(Path(shown), data, strict=strict, shown=shown, select=codes)


"""``validate`` under the name ``stay`` exports it by (``stay.validate`` is this package)."""


def validate_course(course_dir: str | os.PathLike[str], *, strict: bool = False,
                    data_dir: str | os.PathLike[str] | None = None,
                    select: Selectors | None = None, ignore: Selectors | None = None) -> CourseReport:
    """Validate one course directory (with or without a course.yaml), running the rules
    ``select`` and ``ignore`` choose (by default every rule, as a build checks)."""
    codes = tuple(selected(select, ignore))
    path = os.fspath(course_dir)
    if not os.path.isdir(path):
        missing = CourseNotFound if not os.path.exists(path) else CoursePathError  # a file there is no ENOENT
        raise missing(f"course directory '{path}' does not exist; check the slug or path", path=path)
    data = HouseData.load(data_dir if data_dir is not None else default_data_dir())
    return check_course(path, data, strict=strict, select=codes)
