"""What changed between two runs, in detail, for the comparison page: build means, both runs' items
side by side (paired by content first, then by brief, epoch and id, marked as not content-matched),
each run's cost, and the prompt files that differ. A diff is shown only for a file that still hashes
to what the run recorded: one edited since would be diffed as if the run had used it."""

from __future__ import annotations

import difflib
import hashlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from stay.view import PAIR_KINDS, BuildMeans, CompareDetail, ItemPair, ItemSide, PromptFile, RunCost, ScorerPairs

CHANGED, FAILED, PASSED = PAIR_KINDS

PER_KIND = 20
"""Pairs a scorer lists of each kind (changed, failed, passed) at most."""
MAX_DIFF_LINES = 400
"""Lines of one file's diff shown; the rest is counted."""
PACKAGED = "prompts (packaged)"
"""How the suite names the packaged prompts in a report's ``prompts.dir``."""

Items = list[tuple[str, int, int, dict[str, Any]]]
"""(brief, epoch, build index, item) per item of a run."""


def compare_detail(baseline: Mapping[str, Any], candidate: Mapping[str, Any], *,
                   per_kind: int = PER_KIND, paths: tuple[Path | None, Path | None] = (None, None)) -> CompareDetail:
    """What changed between the reports ``baseline`` and ``candidate``, read from ``paths``
    (None: not from a file, so no course of theirs can be found, and no lesson shown)."""
    from stay.scoring._judged_lessons import with_lessons

    briefs = sorted(set(baseline["briefs"]) & set(candidate["briefs"]))
    scorers = sorted(set(baseline["scorers"]) & set(candidate["scorers"]))
    listed, lessons = with_lessons(tuple(_listed(scorer, pair_items(baseline, candidate, scorer, briefs), per_kind)
                                         for scorer in scorers), (baseline, candidate), paths)
    return CompareDetail(
        brief_means=tuple(_brief_means(baseline, candidate, scorer, brief) for brief in briefs for scorer in scorers),
        scorers=listed, per_kind=per_kind, prompts=tuple(prompt_files(baseline, candidate)),
        costs=(run_cost(baseline), run_cost(candidate)), lessons=lessons)


def _results(report: Mapping[str, Any], scorer: str, brief: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(epoch, build index, result) of each build that ``scorer`` judged."""
    for index, build in enumerate(report["briefs"][brief]["builds"]):
        result = build["scorers"].get(scorer)
        if result is not None:
            yield int(build.get("epoch", 0)), index, result


def _build_mean(result: Mapping[str, Any]) -> float | None:
    values = [float(i["score"]) for i in result["items"] if i.get("failure") is None and i.get("score") is not None]
    return sum(values) / len(values) if values else None


def _brief_means(baseline: Mapping[str, Any], candidate: Mapping[str, Any], scorer: str, brief: str) -> BuildMeans:
    found: list[tuple[float | None, int]] = []
    for report in (baseline, candidate):
        means = [m for _e, _b, r in _results(report, scorer, brief) if (m := _build_mean(r)) is not None]
        found.append((sum(means) / len(means) if means else None, len(means)))
    return BuildMeans(brief, scorer, found[0][0], found[0][1], found[1][0], found[1][1])


def _items(report: Mapping[str, Any], scorer: str, briefs: list[str]) -> Items:
    return [(brief, epoch, index, item) for brief in briefs
            for epoch, index, result in sorted(_results(report, scorer, brief), key=lambda er: er[:2])
            for item in sorted(result["items"], key=lambda i: str(i["item"]))]


def _side(epoch: int, build: int, item: Mapping[str, Any]) -> ItemSide:
    def text(key: str) -> str | None:
        value = item.get(key)
        return value if isinstance(value, str) else None

    score = item.get("score")
    return ItemSide(epoch=epoch, item=str(item["item"]), score=None if score is None else float(score),
                    failure=text("failure"), reason=str(item.get("reason", "")), quote=text("quote"),
                    raw=text("raw"), shown=text("shown"), build=build)


def pair_items(baseline: Mapping[str, Any], candidate: Mapping[str, Any], scorer: str,
               briefs: list[str]) -> list[ItemPair]:
    """Every item of both runs under ``scorer``, paired (see the module's docstring)."""
    before, after = _items(baseline, scorer, briefs), _items(candidate, scorer, briefs)
    by_content: dict[str, list[int]] = defaultdict(list)
    for k, (_brief, _epoch, _build, item) in enumerate(after):
        if item.get("content"):
            by_content[str(item["content"])].append(k)
    pairs: list[ItemPair] = []
    used: set[int] = set()
    left: Items = []
    for brief, epoch, build, item in before:
        queue = by_content.get(str(item.get("content") or ""))
        if queue:
            k = queue.pop(0)
            used.add(k)
            pairs.append(ItemPair(scorer, brief, True, _side(epoch, build, item), _side(*after[k][1:])))
        else:
            left.append((brief, epoch, build, item))
    by_place: dict[tuple[str, int, str], int | None] = {
        (brief, epoch, str(item["item"])): k for k, (brief, epoch, _build, item) in enumerate(after) if k not in used}
    for brief, epoch, build, item in left:
        place = by_place.pop((brief, epoch, str(item["item"])), None)
        if place is not None:
            used.add(place)
        pairs.append(ItemPair(scorer, brief, False, _side(epoch, build, item),
                              None if place is None else _side(*after[place][1:])))
    pairs += [ItemPair(scorer, brief, False, None, _side(epoch, build, item))
              for k, (brief, epoch, build, item) in enumerate(after) if k not in used]
    return pairs


def _change(pair: ItemPair) -> float:
    """How much a pair changed: the score's difference, a missing or failed side counting 1."""
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
    """What building and judging the run cost: the builds' recorded costs summed; unknown
    (None) when any build or judged result records none, never a partial sum or $0."""
    builds = [b for brief in report["briefs"].values() for b in brief["builds"]]

    def total(costs: list[Any]) -> float | None:
        numbers = [c for c in costs if isinstance(c, int | float) and not isinstance(c, bool)]
        return round(sum(numbers), 6) if builds and len(numbers) == len(costs) else None

    build = total([(b.get("build") or {}).get("cost") for b in builds])
    judge = total([r.get("cost") for b in builds for r in b["scorers"].values()])
    return RunCost(build, judge)


def _recorded(report: Mapping[str, Any]) -> dict[str, set[str]]:
    from stay.scoring._provenance import _prompt_versions

    return _prompt_versions(report)


def _directory(report: Mapping[str, Any]) -> tuple[Path | None, str]:
    """The run's prompt directory on disk, or None and why not."""
    from stay.stages import packaged_prompts_dir

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
    """The file's text as the run recorded it, or None and why not."""
    from stay._bounds import TooLarge
    from stay.stages import read_prompt

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
    """Each prompt file that differs between the runs, with its diff when it can be shown."""
    from stay.scoring._provenance import changed_prompts

    hashes = (_recorded(baseline), _recorded(candidate))
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


__all__ = ["compare_detail", "pair_items", "prompt_files", "run_cost"]
