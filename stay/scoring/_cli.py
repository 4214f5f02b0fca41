"""``stay evals ...``: compare two eval reports, and score saved courses again.

``stay/cli.py`` calls ``add_evals_parser`` to add the ``evals`` command to its
subparsers and ``run_evals`` to run it; everything else about the command is here.

Exit codes of ``stay evals compare``: 0 no regression; 1 at least one scorer is worse
at a Holm-adjusted p below alpha; 2 refused, the runs cannot be compared (they differ
in judge, judge model, backend, scorer versions or briefs, and ``--allow`` does not
name the difference), or a usage error; 5 refused, a run is invalid (more than
``--max-failed`` of a scorer's judge items failed): rescore it, then compare.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from stay.errors import EXIT_OK, EXIT_USAGE, InvalidRun, RunsNotComparable, exit_code


def add_evals_parser(subparsers: Any) -> None:
    """Add ``evals`` (with ``compare`` and ``score``) to an argparse subparsers object."""
    from stay.scoring._compare import ALLOWABLE, ALPHA, EFFECT, MAX_FAILED

    evals = subparsers.add_parser("evals", help="compare two eval reports, and score saved courses again")
    commands = evals.add_subparsers(dest="evals_command", metavar="EVALS_COMMAND")
    compare = commands.add_parser(
        "compare", help="did the candidate get worse? per scorer, with intervals and Holm-adjusted p-values",
        description="Compare a candidate eval report with a baseline. Exit 0: no regression; 1: a scorer is "
                    "worse at a Holm-adjusted p below alpha; 2: the runs cannot be compared; 5: a run is invalid "
                    "(too many failed judge items).")
    compare.add_argument("baseline", metavar="BASELINE.json")
    compare.add_argument("candidate", metavar="CANDIDATE.json")
    compare.add_argument("--markdown", metavar="PATH", help="also write a Markdown report with a chart")
    compare.add_argument("--alpha", type=float, default=ALPHA, help=f"family-wise error rate (default {ALPHA})")
    compare.add_argument("--allow", action="append", default=[], metavar="WHAT",
                         help=f"a difference between the runs to accept: {', '.join(ALLOWABLE)} "
                              "(repeat, or separate with commas)")
    compare.add_argument("--items", nargs="?", type=int, const=10, default=None, metavar="N",
                         help="list the N content-matched items that changed most (default 10), with both "
                              "judges' reasons")
    compare.add_argument("--max-failed", type=float, default=MAX_FAILED, metavar="SHARE",
                         help=f"a run with a larger share of failed judge items per scorer is invalid "
                              f"(default {MAX_FAILED})")
    compare.add_argument("--effect", type=float, default=EFFECT, metavar="SHARE",
                         help="the smallest drop that matters, as a share of the baseline mean (default "
                              f"{EFFECT}): 'no detectable difference' needs the interval to exclude it or the MDE")
    compare.add_argument("--permutations", type=int, default=None, metavar="N",
                         help="permutations per test (default 4999)")
    compare.add_argument("--seed", type=int, default=0, help="the permutations' seed (default 0)")
    score = commands.add_parser("score", help="score saved courses again, without regenerating them")
    score.add_argument("courses", nargs="+", metavar="COURSE_DIR",
                       help="course directories; those under an eNN directory (the suite's layout) are that epoch")
    score.add_argument("--output", required=True, metavar="PATH")
    score.add_argument("--label", default="rescored")
    score.add_argument("--backend", choices=("offline", "anthropic"),
                       help="the judge: the offline heuristic judge, or the judging model")
    score.add_argument("--judge-model", metavar="MODEL", help="the judge's model (default: the judging role's)")


def run_evals(ns: argparse.Namespace) -> int:
    """Run a parsed ``stay evals ...`` command; returns its exit code. A comparison that is
    refused prints one line to stderr."""
    if ns.evals_command == "compare":
        try:
            return _compare(ns)
        except (RunsNotComparable, InvalidRun) as exc:
            sys.stderr.write(f"refused: {' '.join(str(exc).split())}\n")
            return exit_code(exc)
    if ns.evals_command == "score":
        return _score(ns)
    sys.stderr.write("usage: stay evals compare BASELINE.json CANDIDATE.json | stay evals score COURSE_DIR ...\n")
    return EXIT_USAGE


def _compare(ns: argparse.Namespace) -> int:
    from stay.artefacts import write_text_atomic
    from stay.errors import UsageError
    from stay.scoring._compare import compare, item_changes
    from stay.scoring._render import items_text, markdown, text
    from stay.scoring._report import read_report

    if not 0 < ns.alpha < 1 or not 0 <= ns.max_failed < 1 or not 0 < ns.effect <= 1:
        raise UsageError("--alpha must be between 0 and 1, --max-failed at least 0 and below 1, and --effect above 0 "
                         "and at most 1")
    if ns.permutations is not None and ns.permutations < 99:
        raise UsageError(f"--permutations {ns.permutations}: at least 99, or no p-value can fall below 0.01")
    baseline, candidate = read_report(ns.baseline), read_report(ns.candidate)
    paths = (str(ns.baseline), str(ns.candidate))
    comparison = compare(baseline, candidate, alpha=ns.alpha, allow=ns.allow, max_failed=ns.max_failed,
                         effect=ns.effect, permutations=ns.permutations, seed=ns.seed, names=paths)
    print(text(comparison, paths), end="")
    changes = None
    if ns.items is not None:
        changes, coverage = item_changes(baseline, candidate, top=ns.items)
        print(items_text(changes, coverage), end="")
    if ns.markdown:
        write_text_atomic(ns.markdown, markdown(comparison, paths, changes))
        print(f"wrote {ns.markdown}")
    worse = [r for r in comparison.scorers if r.scorer in comparison.regressions]
    if worse:
        print("regression: " + ", ".join(f"{r.scorer} {r.difference:+.3f} (Holm-adjusted p {r.p_adjusted:.2g} < "
                                          f"{ns.alpha})" for r in worse if r.difference is not None))
    return comparison.exit_code


def _epoch_of(course: Path, seen: int) -> int:
    match = re.fullmatch(r"e(\d+)", course.parent.name)
    return int(match.group(1)) if match else seen + 1


def _score(ns: argparse.Namespace) -> int:
    from stay.models import Usage
    from stay.scoring import CourseOnDisk, default_scorers, score_course, scorer_versions
    from stay.scoring._judges import make_judge
    from stay.scoring._report import build_entry, report, write_report
    from stay.settings import Settings
    from stay.stages import Prompts

    backend = ns.backend or Settings.from_env().chosen_backend
    builds: dict[str, list[dict[str, Any]]] = {}
    for course_dir in map(Path, ns.courses):
        course = CourseOnDisk.load(course_dir)
        judge = make_judge(backend, course_dir / ".runs" / "judge-cache", judge_model=ns.judge_model)
        slug = course_dir.name
        entries = builds.setdefault(slug, [])
        entries.append(build_entry(score_course(course, default_scorers(judge)), epoch=_epoch_of(course_dir,
                                   len(entries)), seed=None, course_sha256=course.sha256, build_usage=Usage(),
                                   build_cost=0.0, built=False))
        sys.stderr.write(f"scored {course_dir}\n")
    document = report(label=ns.label, backend=backend, prompts_dir="(not generated: courses scored as saved)",
                      prompt_hashes=Prompts.load().hashes(), scorers=scorer_versions(default_scorers(judge)),
                      builds=builds, epochs=max(len(entries) for entries in builds.values()))
    write_report(ns.output, document)
    print(f"wrote {ns.output}")
    return EXIT_OK
