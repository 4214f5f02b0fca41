"""From the result of ``stay evals compare`` to the comparison page's rows, and each run's own
mean with an interval from the units the test used. Items are diffed only when matched by
content: after a regeneration no item matches, and the page says so."""

from __future__ import annotations

import difflib
import functools
import hashlib
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import NormalDist
from typing import Any

from stay._bounds import TooLarge
from stay.artefacts import ArtefactLoadError, CourseReader, Curriculum, LessonContent, lesson_file
from stay.errors import UsageError
from stay.scoring._compare import (
    ITEMS,
    Comparison,
    Item,
    ItemChange,
    ScorerComparison,
    _notes,
    item_changes,
    judge_cell,
    match_items,
    method,
)
from stay.scoring._core import bounded, lesson_note
from stay.scoring._defaults import POWER
from stay.scoring._judges import course_dir
from stay.scoring._report import _prompt_versions, changed_prompts, provenance_notes
from stay.scoring._stats import LEVEL, build_means, build_strata
from stay.stages import packaged_prompts_dir, read_prompt
from stay.view import (
    PAIR_KINDS,
    BuildMeans,
    CompareDetail,
    CompareHeader,
    Interval,
    ItemDiffRow,
    ItemPair,
    ItemSide,
    LessonText,
    MeanError,
    PromptFile,
    RunCost,
    ScorerPairs,
    ScorerRow,
    render_compare_html,
)

MAX_LESSON_CHARS = 40_000  # house style's longest lesson is a few tens of KB
MAX_LESSONS = 40  # a lesson is ~8 KB: the page stays well under a few MB

# The note around the lesson's length, from the one function that writes it: "(the lesson came first: N ..."
_HEAD, _TAIL = lesson_note("").split("0", 1)
_NOTE = re.compile(re.escape(_HEAD) + r"(\d+)" + re.escape(_TAIL))

NOT_ON_DISK = "course not on disk"
COURSE_CHANGED = "course changed since it was judged (its files no longer hash to the report's course_sha256)"


def judged_length(shown: str | None) -> int | None:
    """The length of the lesson an item's judge read first, from its ``shown``; None: no lesson."""
    match = _NOTE.match(shown or "")
    return int(match.group(1)) if match else None


@dataclass
class _Course:
    root: Path | None
    why: str = ""  # why the course cannot be used (root None)
    reader: Any = None  # its one CourseReader


class JudgedLessons:
    """The lessons of two runs' listed items: each build's course checked once (its hash), each lesson's
    text kept once (``lessons``, by anchor, in the order first listed)."""

    def __init__(self, reports: tuple[Mapping[str, Any], Mapping[str, Any]],
                 paths: tuple[Path | None, Path | None]) -> None:
        self.reports, self.paths = reports, paths
        self.lessons: dict[str, LessonText] = {}
        self.course = functools.cache(self._check)  # each build's course checked once
        self.text = functools.cache(self._read)

    def _check(self, run: int, brief: str, index: int) -> _Course:
        path, build = self.paths[run], self.reports[run]["briefs"][brief]["builds"][index]
        named = build.get("course")
        if path is None:
            return _Course(None, f"{NOT_ON_DISK} (the report's own location is not known)")
        if not isinstance(named, str) or not named:
            return _Course(None, f"{NOT_ON_DISK}: the report names no course (written before reports named them)")
        try:
            root = course_dir(path, build, f"briefs.{brief}.builds[{index}]")
        except UsageError:
            plain = Path(os.path.normpath(Path(os.path.realpath(path.parent)) / named))
            if not os.path.lexists(plain / "course.yaml"):
                return _Course(None, f"{NOT_ON_DISK} ({named}, relative to the report)")
            return _Course(None, f"the course {named} is reached through a symbolic link, which is not followed")
        reader = CourseReader(root)
        try:
            digest = reader.sha256()
        except (ArtefactLoadError, OSError):
            return _Course(None, f"the course {named} cannot be read whole")
        if not build.get("course_sha256"):
            return _Course(None, "the report records no course hash, so the course on disk cannot be checked")
        if digest != build.get("course_sha256"):
            return _Course(None, COURSE_CHANGED)
        return _Course(root, reader=reader)

    def _read(self, run: int, brief: str, index: int, lesson: str) -> tuple[str | None, str | None, str]:
        course = self.course(run, brief, index)
        if course.root is None:
            return None, None, course.why
        reader = course.reader
        try:
            curriculum = reader.load("curriculum.yaml", Curriculum)
            module = next((m for m in curriculum.modules for lsn in m.lessons if lsn.id == lesson), None)
            if module is None:
                return None, None, f"its lesson {lesson} is not in its course's curriculum"
            relative = lesson_file(module, lesson, LessonContent)
            file = course.root / relative
            if os.path.realpath(file) != os.path.normpath(file) or not file.is_file():
                return lesson, None, f"{relative} is not a regular file of the course (a symbolic link is not followed)"
            return lesson, reader.load(relative, LessonContent).body, ""
        except (ArtefactLoadError, OSError) as exc:
            return None, None, f"the lesson cannot be read ({' '.join(str(exc).split())[:200]})"

    def side(self, run: int, brief: str, side: ItemSide) -> ItemSide:
        length = judged_length(side.shown)
        if length is None:
            return side
        if side.lesson is None:
            return replace(side, lesson_why="the report does not say which lesson its judge read (written before "
                                            "items recorded it)")
        lesson, body, why = self.text(run, brief, side.build, side.lesson)
        if lesson is None or body is None:
            return replace(side, lesson=lesson, lesson_why=why)
        if len(body) != length:
            return replace(side, lesson=lesson, lesson_why=f"the lesson on disk ({len(body)} characters) is not the "
                                                            f"one its judge read ({length})")
        anchor = "lesson-" + hashlib.sha256(body.encode()).hexdigest()[:16]
        label = f"{('baseline', 'candidate')[run]} {brief} e{side.epoch:02d}"
        if anchor not in self.lessons:
            if len(self.lessons) >= MAX_LESSONS:
                return replace(side, lesson=lesson, lesson_why=f"the page shows at most {MAX_LESSONS} lessons")
            self.lessons[anchor] = LessonText(anchor, lesson, bounded(body, MAX_LESSON_CHARS) or "", len(body), ())
        shown = self.lessons[anchor]
        if label not in shown.read_by:
            self.lessons[anchor] = replace(shown, read_by=(*shown.read_by, label))
        return replace(side, lesson=lesson, lesson_anchor=anchor)


def with_lessons(groups: tuple[ScorerPairs, ...], reports: tuple[Mapping[str, Any], Mapping[str, Any]],
                 paths: tuple[Path | None, Path | None]) -> tuple[tuple[ScorerPairs, ...], tuple[LessonText, ...]]:
    found = JudgedLessons(reports, paths)

    def pair(p: ItemPair) -> ItemPair:
        sides = [None if s is None else found.side(run, p.brief, s)
                 for run, s in enumerate((p.baseline, p.candidate))]
        return replace(p, baseline=sides[0], candidate=sides[1])

    listed = tuple(replace(group, pairs=tuple(pair(p) for p in group.pairs)) for group in groups)
    return listed, tuple(replace(lesson, read_by=tuple(sorted(lesson.read_by))) for lesson in found.lessons.values())


CHANGED, FAILED, PASSED = PAIR_KINDS

PER_KIND = 20  # pairs a scorer lists of each kind at most
MAX_DIFF_LINES = 400  # of one file's diff; the rest is counted
PACKAGED = "prompts (packaged)"  # the suite's name for the packaged prompts


def compare_detail(baseline: Mapping[str, Any], candidate: Mapping[str, Any], *,
                   per_kind: int = PER_KIND, paths: tuple[Path | None, Path | None] = (None, None)) -> CompareDetail:
    """What changed between two reports read from ``paths`` (None: no course found, no lesson shown)."""
    briefs = sorted(set(baseline["briefs"]) & set(candidate["briefs"]))
    scorers = sorted(set(baseline["scorers"]) & set(candidate["scorers"]))
    listed, lessons = with_lessons(tuple(_listed(scorer, pair_items(baseline, candidate, scorer, briefs), per_kind)
                                         for scorer in scorers), (baseline, candidate), paths)
    return CompareDetail(
        brief_means=tuple(_brief_means(baseline, candidate, scorer, brief) for brief in briefs for scorer in scorers),
        scorers=listed, per_kind=per_kind, prompts=tuple(prompt_files(baseline, candidate)),
        costs=(run_cost(baseline), run_cost(candidate)), lessons=lessons)


def _brief_means(baseline: Mapping[str, Any], candidate: Mapping[str, Any], scorer: str, brief: str) -> BuildMeans:
    before, after = ([mean for mean, _items in build_means(dict(report), scorer, brief)]
                     for report in (baseline, candidate))
    return BuildMeans(brief, scorer, sum(before) / len(before) if before else None, len(before),
                      sum(after) / len(after) if after else None, len(after))


def _side(side: Item | None) -> ItemSide | None:
    if side is None:
        return None
    epoch, build, item = side

    def text(key: str) -> str | None:
        value = item.get(key)
        return value if isinstance(value, str) else None

    score = item.get("score")
    return ItemSide(epoch=epoch, item=str(item["item"]), score=None if score is None else float(score),
                    failure=text("failure"), reason=str(item.get("reason", "")), quote=text("quote"),
                    raw=text("raw"), shown=text("shown"), build=build, lesson=text("lesson"))


def pair_items(baseline: Mapping[str, Any], candidate: Mapping[str, Any], scorer: str,
               briefs: list[str]) -> list[ItemPair]:
    """Every item of both runs under ``scorer``: paired by content, else by brief, epoch and id."""
    return [ItemPair(scorer, brief, matched, _side(b), _side(a))
            for brief, matched, b, a in match_items(dict(baseline), dict(candidate), scorer, briefs)]


def _change(pair: ItemPair) -> float:
    before, after = pair.baseline, pair.candidate
    if before is None or after is None or before.score is None or after.score is None:
        return 1.0
    return 1.0 if before.failure or after.failure else abs(after.score - before.score)


def _place(pair: ItemPair) -> tuple[str, int, str]:
    side = pair.baseline or pair.candidate
    assert side is not None  # a pair has at least one side
    return pair.brief, side.epoch, side.item


def _listed(scorer: str, pairs: list[ItemPair], per_kind: int) -> ScorerPairs:
    changed = sorted((p for p in pairs if CHANGED in p.kinds), key=lambda p: (-_change(p), _place(p)))
    failed = [p for p in pairs if CHANGED not in p.kinds and FAILED in p.kinds]
    passed = [p for p in pairs if CHANGED not in p.kinds and PASSED in p.kinds]
    listed = changed[:per_kind] + failed[:per_kind] + passed[:per_kind]
    totals = tuple((kind, sum(kind in p.kinds for p in pairs)) for kind in (CHANGED, FAILED, PASSED))
    return ScorerPairs(scorer, tuple(listed), totals, sum(p.matched for p in pairs))


def run_cost(report: Mapping[str, Any]) -> RunCost:
    """What building and judging cost: unknown (None) when any part records none, never a partial sum."""
    builds = [b for brief in report["briefs"].values() for b in brief["builds"]]

    def total(costs: list[Any]) -> float | None:
        numbers = [c for c in costs if isinstance(c, int | float) and not isinstance(c, bool)]
        return round(sum(numbers), 6) if builds and len(numbers) == len(costs) else None

    build = total([(b.get("build") or {}).get("cost") for b in builds])
    judge = total([r.get("cost") for b in builds for r in b["scorers"].values()])
    return RunCost(build, judge)


def _directory(report: Mapping[str, Any]) -> tuple[Path | None, str]:
    named = str((report.get("prompts") or {}).get("dir") or "")
    if named == PACKAGED:
        return packaged_prompts_dir(), ""
    path = Path(named)
    if not named or not path.is_dir():
        return None, f"its prompt directory ({named or 'n/a'}) is not a directory here"
    if path.is_symlink():
        return None, f"its prompt directory {named} is a symbolic link, which is not followed"
    return path, ""


def _text(root: Path, name: str, recorded: set[str]) -> tuple[str | None, str]:
    path = root / name
    try:
        inside = path.resolve().is_relative_to(root.resolve())
        if not inside or path.is_symlink() or not path.is_file():
            return None, f"{path} is not a regular file inside {root}"
        text = read_prompt(path)
    except TooLarge:
        return None, f"{path} is larger than a prompt file may be"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path} cannot be read ({type(exc).__name__})"
    digest = hashlib.sha256(text.encode()).hexdigest()
    if len(recorded) != 1 or not any(digest.startswith(sha) for sha in recorded):
        return None, f"{path} is not the version the run recorded (edited since, or built in more than one version)"
    return text, ""


def prompt_files(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[PromptFile]:
    hashes = (_prompt_versions(baseline), _prompt_versions(candidate))
    roots = (_directory(baseline), _directory(candidate))
    found = []
    for name in changed_prompts(baseline, candidate):
        recorded = (hashes[0].get(name, set()), hashes[1].get(name, set()))
        labels = tuple(", ".join(sorted(r)) or "none" for r in recorded)
        texts: list[str] = []
        why = ""
        for run, (root, missing), versions in zip(("baseline", "candidate"), roots, recorded, strict=True):
            if not versions:
                texts.append("")  # the run has no such file: the diff adds or removes it whole
                continue
            text, why_not = (None, missing) if root is None else _text(root, name, versions)
            if text is None:
                why = f"{run}: {why_not}"
                break
            texts.append(text)
        diff = None if why else _diff(name, texts[0], texts[1])
        found.append(PromptFile(name, labels[0], labels[1], diff, why))
    return found


def _diff(name: str, before: str, after: str) -> str:
    lines = list(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                      fromfile=f"baseline/{name}", tofile=f"candidate/{name}"))
    shown = "".join(line if line.endswith("\n") else line + "\n" for line in lines[:MAX_DIFF_LINES])
    if len(lines) > MAX_DIFF_LINES:
        shown += f"... ({len(lines) - MAX_DIFF_LINES} more lines of the diff)\n"
    return shown


PAGE_ITEMS = 100  # changed items a page lists when not told otherwise
INTERVALS = ("each run's mean with a 95% t interval over the test's own units, briefs held fixed: "
             "for a test over builds, from the pooled build-to-build variance within briefs (none with one "
             "build per brief); for a test over items, from the matched items' scores; clipped to [0, 1]")


@dataclass(frozen=True)
class ComparePage:
    """What the comparison page draws (``items`` None: no item was matched by content)."""

    header: CompareHeader
    rows: tuple[ScorerRow, ...]
    items: tuple[ItemDiffRow, ...] | None
    detail: CompareDetail | None = None

    def html(self) -> str:
        return render_compare_html(self.header, self.rows, self.items, self.detail)


def _item(change: ItemChange) -> ItemDiffRow:
    return ItemDiffRow(scorer=change.scorer, brief=change.brief, item=change.candidate_item,
                       baseline_score=change.baseline_score, candidate_score=change.candidate_score,
                       baseline_reason=change.baseline_reason, candidate_reason=change.candidate_reason,
                       baseline_item=change.baseline_item)


def compare_page(comparison: Comparison, baseline: Mapping[str, Any], candidate: Mapping[str, Any], *,
                 paths: tuple[str, str] = ("baseline", "candidate"), items: int | None = PAGE_ITEMS,
                 pairs: int = PER_KIND, notes: Sequence[str] = ()) -> ComparePage:
    """The page for ``comparison`` of two reports read from ``paths``: at most ``items`` changed items
    (None: all), ``pairs`` of each kind per scorer side by side; ``notes``: more lines for its notes."""
    intervals = run_intervals(comparison)
    rows = tuple(_row(result, *intervals[result.scorer]) for result in comparison.scorers)
    changes, coverage = item_changes(dict(baseline), dict(candidate), top=sys.maxsize)
    matched = {scorer: counts for scorer, counts in coverage.items() if counts[0]}
    # a row names an item by the candidate's id (and the baseline's when content matching paired two)
    diff = tuple(_item(c) for c in changes[:items]) if matched else None
    tested = sum(r.difference is not None for r in comparison.scorers)
    header = CompareHeader(
        baseline_label=comparison.baseline_label, candidate_label=comparison.candidate_label,
        judge=_either(baseline, candidate, "judge") or "n/a", judge_model=_either(baseline, candidate, "judge_model"),
        backend=_either(baseline, candidate, "backend") or "n/a",
        baseline_models=_models(baseline), candidate_models=_models(candidate),
        alpha=comparison.alpha, power=POWER, test=method(comparison),
        adjustment=f"Holm-Bonferroni across {tested} scorers",
        gate=_gate(comparison), exit_code=comparison.exit_code, regressions=tuple(comparison.regressions),
        sources=paths, epochs=comparison.epochs, intervals=INTERVALS,
        # the provenance lines as the terminal prints them (the page's header names backend and judge)
        notes=tuple(_notes(comparison, paths)) + _quality(baseline, candidate)
        + tuple(provenance_notes(baseline, candidate)) + tuple(notes),
        items_matched=coverage if matched else {}, items_changed=len(changes) if matched else None)
    return ComparePage(header, rows, diff, compare_detail(baseline, candidate, per_kind=pairs,
                                                          paths=(Path(paths[0]), Path(paths[1]))))


def _row(r: ScorerComparison, baseline: Interval | None, candidate: Interval | None) -> ScorerRow:
    tested = r.difference is not None  # "nothing judged": the p-values are placeholders, not results
    return ScorerRow(
        scorer=r.scorer, baseline_mean=r.baseline, baseline_interval=baseline, candidate_mean=r.candidate,
        candidate_interval=candidate, difference=r.difference,
        difference_interval=Interval(r.low, r.high, LEVEL) if r.low is not None and r.high is not None else None,
        p_raw=r.p if tested else None, p_adjusted=r.p_adjusted if tested else None, mde=r.mde, verdict=r.verdict,
        pairs=r.units[0] if r.test == ITEMS else 0, test=r.test if tested else "", units=r.units if tested else None,
        threshold=r.threshold, spread=r.spread, judge=judge_cell(r))


def _either(baseline: Mapping[str, Any], candidate: Mapping[str, Any], key: str) -> str | None:
    before, after = baseline.get(key), candidate.get(key)
    if before == after:
        return None if before is None else str(before)
    return f"baseline {before if before is not None else 'n/a'}; candidate {after if after is not None else 'n/a'}"


def _models(report: Mapping[str, Any]) -> dict[str, str]:
    models = report.get("models")
    return {str(role): str(model) for role, model in models.items()} if isinstance(models, Mapping) else {}


def _quality(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> tuple[str, ...]:
    def knobs(report: Mapping[str, Any]) -> str:
        quality = report.get("quality")
        if not isinstance(quality, Mapping) or not quality:
            return "none"
        return ", ".join(f"{knob} {rate}" for knob, rate in sorted(quality.items()))

    if knobs(baseline) == knobs(candidate) == "none":
        return ()
    return (f"offline quality knob (the share of items the offline backend degrades on purpose): baseline "
            f"{knobs(baseline)}; candidate {knobs(candidate)}",)


def _gate(comparison: Comparison) -> str:
    if comparison.regressions:
        return f"at least one scorer is worse at a Holm-adjusted p below {comparison.alpha}."
    return comparison.passing + "."


def run_intervals(comparison: Comparison, level: float = LEVEL) -> dict[str, tuple[Interval | None, Interval | None]]:
    """Per scorer, (baseline's, candidate's) interval around its mean, over the units its test ran on
    (the comparison's own: nothing is paired or stratified twice)."""
    samples = {r.scorer: comparison.samples.get(r.scorer, ((), ())) for r in comparison.scorers}
    return {scorer: (stratified_interval(before, level), stratified_interval(after, level))
            for scorer, (before, after) in samples.items()}


def stratified_error(strata: Sequence[tuple[float, Sequence[float]]]) -> tuple[float, float, int] | None:
    """(mean, standard error, degrees of freedom) of a weighted mean of (weight, values) stratum means:
    sqrt(s2 * sum((w_b / W)^2 / n_b)), s2 the within-strata variance pooled; None with no df."""
    used = [(w, v) for w, v in strata if w > 0 and v]
    total = sum(w for w, _v in used)
    df = sum(len(v) - 1 for _w, v in used)
    if not used or df <= 0:
        return None
    means = [(w / total, sum(v) / len(v), v) for w, v in used]
    mean = sum(w * m for w, m, _v in means)
    squares = sum((x - m) ** 2 for _w, m, v in means for x in v)
    return mean, math.sqrt(squares / df * sum(w * w / len(v) for w, _m, v in means)), df


def stratified_interval(strata: Sequence[tuple[float, Sequence[float]]], level: float = LEVEL) -> Interval | None:
    """The t interval of ``stratified_error``, clipped to [0, 1]; None without a degree of freedom."""
    found = stratified_error(strata)
    if found is None:
        return None
    mean, error, df = found
    half = t_quantile(level, df) * error
    return Interval(max(0.0, mean - half), min(1.0, mean + half), level)


def run_errors(report: Mapping[str, Any], level: float = LEVEL) -> dict[str, MeanError]:
    """Per scorer of one run: its mean over builds with the standard error, stratified by brief
    as ``compare`` stratifies its test (the run against itself gives its strata and weights)."""
    found = {}
    for scorer in sorted(report["scorers"]):
        strata = [(s.weight, s.baseline) for s in build_strata(dict(report), dict(report), scorer,
                                                                sorted(report["briefs"]))]
        if not strata:
            continue
        estimate = stratified_error(strata)
        total = sum(w for w, _v in strata)
        mean = estimate[0] if estimate else sum(w * sum(v) / len(v) for w, v in strata) / total
        found[scorer] = MeanError(mean, estimate[1] if estimate else None, sum(len(v) for _w, v in strata),
                                 stratified_interval(strata, level))
    return found


def t_quantile(level: float, df: int) -> float:
    """The two-sided critical value of Student's t: exact (closed form, bisection) up to 400 degrees of
    freedom; beyond, the Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5), within 1e-9."""
    if not 0 < level < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0 < level < 1 and df >= 1; got level {level}, df {df}")
    z = NormalDist().inv_cdf((1 + level) / 2)
    if df > 400:
        g = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96,
             (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
             (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)
        return z + sum(term / float(df) ** (k + 1) for k, term in enumerate(g))
    low, high = z, max(2 * z, 1.0)
    while _t_coverage(high, df) < level:
        low, high = high, high * 2
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_coverage(middle, df) < level else (low, middle)
    return (low + high) / 2


def _t_coverage(t: float, df: int) -> float:
    """P(|T| <= t) for whole ``df`` (Abramowitz and Stegun 26.7.3)."""
    theta = math.atan(t / math.sqrt(df))
    squared = math.cos(theta) ** 2
    term, series = 1.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= 2 * k / (2 * k + 1) * squared
            series += term
        tail = math.sin(theta) * math.cos(theta) * series if df > 1 else 0.0
        return 2 / math.pi * (theta + tail)
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * squared
        series += term
    return math.sin(theta) * series

