"""The registry of every rule (``--select``/``--ignore``, after ruff's), running it over courses,
and the reports it returns."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from types import MappingProxyType, ModuleType

from stay._display import html_block, markdown_block
from stay._paths import check_links
from stay.errors import CourseNotFound, CoursePathError, EnvironmentProblem, GraphError, UsageError
from stay.validate._course import OWNERS, Course, Defect, Group, HouseData, Rule, Severity, default_data_dir
from stay.validate._text import show

# A selector is a rule code (aud001), a family prefix (aud), a group (contract, stay) or a comma-separated
# list of them. With no select, every rule: a build checks what `stay validate` checks. register adds a
# stay rule at run time; the contract group is closed.
FAMILIES: tuple[ModuleType, ...] = tuple(import_module(f"stay.validate.rules.{prefix}") for prefix in (
    "sch", "man", "lay", "aud", "cur", "out", "asm", "pln", "lod", "trm", "les", "exe", "qz", "ret", "prj", "glo",
    "pos", "prc", "ast", "rev"))
"""The rule families in the contract's order, then stay's own; each module is named by its prefix."""


def family_rules(family: ModuleType) -> list[Rule]:
    return [value for value in vars(family).values() if isinstance(value, Rule)]


def prefix_of(family: ModuleType) -> str:
    return family.__name__.rpartition(".")[2]


_REGISTRY: dict[str, Rule] = {}

RULES: Mapping[str, Rule] = MappingProxyType(_REGISTRY)
"""A read-only view of the registry: a rule ``register`` adds is seen wherever RULES is read."""


def _add(rule: Rule, module: str) -> None:
    if rule.code in _REGISTRY:
        raise GraphError(f"rule {rule.code} is registered twice")
    if rule.code[:-3] != module or rule.check.__name__ != rule.code or not rule.code[-3:].isdigit():
        raise GraphError(f"rule {rule.code} is declared as {rule.check.__name__} in "
                         f"rules/{module}.py; it belongs in rules/{rule.code[:-3]}.py, "
                         f"named {rule.code}")
    _REGISTRY[rule.code] = rule


def register(rule: Rule) -> Rule:
    """Add a ``stay``-group rule to the registry; returns it, so it can decorate ``@rule(...)``."""
    if rule.group is Group.CONTRACT:
        raise GraphError(f"rule {rule.code} cannot join the contract group, which holds the frozen "
                         f"reference's rules only; declare it with group=Group.STAY")
    if rule.check.__name__ != rule.code:
        raise GraphError(f"rule {rule.code} is declared as {rule.check.__name__}; name its function {rule.code}")
    _add(rule, rule.code[:-3])
    return rule


def unregister(code: str) -> None:
    if code not in _REGISTRY or code in _DECLARED:
        raise GraphError(f"rule {code} was not added by register(), so it cannot be removed")
    del _REGISTRY[code]


def _declare_families() -> frozenset[str]:
    """Register every family's rules; the codes known to a fresh worker process."""
    for family in FAMILIES:
        for rule in family_rules(family):
            _add(rule, prefix_of(family))
    return frozenset(_REGISTRY)


_DECLARED = _declare_families()


Selectors = str | Iterable[str]

DEFAULT_SELECT: tuple[str, ...] = tuple(Group)  # every group: no two callers count differently

FORMS = "a rule code (aud001), a family prefix (aud) or a group (" + ", ".join(Group) + ")"


def _named(selectors: Selectors, option: str) -> set[str]:
    # Each rule answers to its code, its family prefix and its group. Indexed once per call, not matched
    # name by rule: a selection of every code (what a build hands its workers) would be quadratic.
    index: dict[str, set[str]] = {group: set() for group in Group}  # an empty group (no stay rule yet) is one
    for code, rule in RULES.items():
        for key in (code, code[:-3], rule.group.value):
            index.setdefault(key, set()).add(code)
    given = [selectors] if isinstance(selectors, str) else list(selectors)
    if not all(isinstance(item, str) for item in given):
        raise UsageError(f"rule selectors must be strings; got {given!r}")
    codes: set[str] = set()
    for name in (name.strip() for item in given for name in item.split(",")):  # an empty one names no rule
        if name not in index:
            raise UsageError(f"{option} '{name}' names no rule: give {FORMS}")
        codes |= index[name]
    return codes


def selected(select: Selectors | None = None, ignore: Selectors | None = None) -> Mapping[str, Rule]:
    """The rules ``select`` names (None: every rule) less those ``ignore`` names, in the registry's order."""
    chosen = _named(DEFAULT_SELECT if select is None else select, "--select")
    if ignore is not None:
        chosen -= _named(ignore, "--ignore")
    return {code: rule for code, rule in RULES.items() if code in chosen}


CONTRACT_VERSION = 1
DISPLAY_DEFECTS = 20  # in a notebook; to_text lists them all
OWNER_HEAD = ("owner", "FAIL", "WARN", "codes")


def owner_rows(defects: Iterable[Defect]) -> list[tuple[object, ...]]:
    """Table rows (owner, FAILs, WARNs, codes with their counts), in the pipeline's owner order."""
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


class _Verdict:
    """FAIL and WARN counts over ``defects``, and whether it passes: no FAIL (in strict mode, every
    defect is a FAIL)."""

    defects: tuple[Defect, ...]

    @property
    def fails(self) -> int:
        return sum(1 for d in self.defects if d.severity is Severity.FAIL)

    @property
    def warns(self) -> int:
        return sum(1 for d in self.defects if d.severity is Severity.WARN)

    @property
    def ok(self) -> bool:
        return self.fails == 0


@dataclass(frozen=True)
class CourseReport(_Verdict):
    """What the validator found in one course."""

    dir: str
    slug: str
    strict: bool
    evaluated: Mapping[str, int]
    """code -> how many subjects the rule evaluated (only codes evaluated at least once)."""
    passed: Mapping[str, int]
    defects: tuple[Defect, ...]

    @property
    def checks(self) -> int:
        return sum(self.evaluated.values())

    def as_dict(self) -> dict[str, object]:
        return {"dir": self.dir, "slug": self.slug, "evaluated": dict(self.evaluated),
                "passed": dict(self.passed), "defects": [d.as_dict() for d in self.defects]}

    def _repr_html_(self) -> str:
        return ValidationReport((self,), self.strict)._repr_html_()

    def _repr_markdown_(self) -> str:
        return ValidationReport((self,), self.strict)._repr_markdown_()


@dataclass(frozen=True)
class ValidationReport(_Verdict):
    """Reports for every course validated in one call, in directory-name order."""

    courses: tuple[CourseReport, ...]
    strict: bool

    @property
    def defects(self) -> tuple[Defect, ...]:  # type: ignore[override]  # every course's, in order
        return tuple(defect for course in self.courses for defect in course.defects)

    @property
    def exit_code(self) -> int:
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
        """A notebook's summary line, tables (per course, by owner, the first defects) and tail."""
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
        return html_block("stay-validation-report", *self._display())

    def _repr_markdown_(self) -> str:
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
    """Validate one course directory; one holding a link that leads outside it is refused, as by every command."""
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
    """Every course under ``paths`` by name: a path holding course.yaml, else each subdirectory not '.'/'_'."""
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
    """Validate a course directory, a directory of courses, or several of either, ``jobs`` processes at
    once (``None``: one per core; the report is the same whatever ``jobs`` is). A defect in a course is
    never an exception."""
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
    check = partial(check_course, data=data, strict=strict, select=codes)
    workers = min(jobs, len(courses))
    # a rule registered in this process is unknown to a worker started fresh (spawn,
    # forkserver: the default on some platforms and Pythons), so those run here
    if workers > 1 and all(code in _DECLARED for code in codes):
        try:
            from concurrent.futures import ProcessPoolExecutor  # only when asked for: it costs start-up time

            with ProcessPoolExecutor(max_workers=workers) as pool:
                # a few chunks per worker: few round trips, and a slow course leaves no worker idle
                return list(pool.map(check, courses, chunksize=max(1, len(courses) // (workers * 4))))
        except (OSError, NotImplementedError, ImportError):
            pass  # no processes or semaphores here (a sandbox): one process does the same work
    return [check(shown) for shown in courses]


def validate_course(course_dir: str | os.PathLike[str], *, strict: bool = False,
                    data_dir: str | os.PathLike[str] | None = None,
                    select: Selectors | None = None, ignore: Selectors | None = None) -> CourseReport:
    """Validate one course directory (with or without a course.yaml)."""
    codes = tuple(selected(select, ignore))
    path = os.fspath(course_dir)
    if not os.path.isdir(path):
        missing = CourseNotFound if not os.path.exists(path) else CoursePathError  # a file there is no ENOENT
        raise missing(f"course directory '{path}' does not exist; check the slug or path", path=path)
    data = HouseData.load(data_dir if data_dir is not None else default_data_dir())
    return check_course(path, data, strict=strict, select=codes)
