"""``stay evals ...``: compare two eval reports, show one, plan epochs, calibrate, score saved courses
again. ``compare``'s ``--html`` is written whatever the verdict, saying why on a refusal, so an earlier
run's page is never taken for this one's."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from stay._display import fixed
from stay.errors import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, InvalidRun, RunsNotComparable, StayError, exit_code

PAGE_ITEMS = 100  # _compare_page's default, not imported: it loads Jinja2, which `stay --help` must not pay for


def evals_parser(subparsers: Any) -> None:
    from stay.scoring._defaults import ALLOWABLE, ALPHA, CALIBRATION, EFFECT, GOLD_DIR, KAPPA_TO_GATE, MAX_FAILED, POWER

    evals = subparsers.add_parser("evals", help="compare two eval reports, and score saved courses again")
    commands = evals.add_subparsers(dest="evals_command", metavar="EVALS_COMMAND")
    compare = commands.add_parser(
        "compare", help="did the candidate get worse? per scorer, with intervals and Holm-adjusted p-values",
        description="Compare a candidate eval report with a baseline. Exit 0: no regression; 1: a scorer is "
                    "worse at a Holm-adjusted p below alpha; 2: the runs cannot be compared; 5: a run is invalid "
                    "(too many failed judge items).")
    compare.add_argument("--markdown", metavar="PATH", help="also write a Markdown report with a chart")
    compare.add_argument("--html", metavar="PATH",
                         help="also write the comparison as one HTML page: both means with interval bars, "
                              "the difference, adjusted p, MDE and verdict per scorer, the judge and models, "
                              "and the changed items matched by content; written on exit 0, 1, 2 and 5 alike")
    compare.add_argument("--alpha", type=float, default=ALPHA, help=f"family-wise error rate (default {ALPHA})")
    compare.add_argument("--allow", action="append", default=[], metavar="WHAT",
                         help=f"a difference between the runs to accept: {', '.join(ALLOWABLE)} "
                              "(repeat, or separate with commas)")
    compare.add_argument("--items", nargs="?", type=int, const=10, default=None, metavar="N",
                         help="list the N content-matched items that changed most (default 10), with both "
                              f"judges' reasons; the --html page lists N too (without --items: {PAGE_ITEMS})")
    compare.add_argument("--max-failed", type=float, default=MAX_FAILED, metavar="SHARE",
                         help=f"a run with a larger share of failed judge items per scorer is invalid "
                              f"(default {MAX_FAILED})")
    compare.add_argument("--effect", type=float, default=EFFECT, metavar="SHARE",
                         help="the smallest drop that matters, as a share of the baseline mean (default "
                              f"{EFFECT}): 'no detectable difference' needs the interval to exclude it or the MDE")
    compare.add_argument("--permutations", type=int, default=None, metavar="N",
                         help="permutations per test (default 4999)")
    compare.add_argument("--seed", type=int, default=0, help="the permutations' seed (default 0)")
    compare.add_argument("--calibration", metavar="PATH",
                         help="the judges' calibration (stay evals calibrate) shown beside each scorer; a model-judged "
                              f"scorer gates only when its judge's kappa is at least {KAPPA_TO_GATE} (default: "
                              "calibration.json beside the candidate's report, if there is one)")
    show = commands.add_parser(
        "show", help="one eval run's summary: judge, models, mean per scorer, judge failures, cost",
        description="Print one eval report's summary; --html also writes it as a page with every brief, build "
                    "and item. Exit 0, or 2 when the file is not an eval report.")
    show.add_argument("report", metavar="REPORT.json")
    show.add_argument("--html", metavar="PATH", help="also write the run as one self-contained HTML page")
    show.add_argument("--markdown", metavar="PATH", help="also write the mean per scorer, with its standard "
                                                        "error over builds, as Markdown")
    plan = commands.add_parser(
        "plan", help="the epochs per brief each scorer needs for power at a drop that matters, from a baseline",
        description="From a baseline eval report's own build-to-build variance, print per scorer the epochs "
                    "(builds per brief) a comparison needs to see a drop of --effect times its mean with "
                    "--power, at the gate's one-sided Holm level, and the power at the run's and the "
                    "default epochs. Exit 0, or 2 when the file is not a report or has one build per brief.")
    plan.add_argument("baseline", metavar="BASELINE.json")
    plan.add_argument("--effect", type=float, default=EFFECT, metavar="SHARE",
                      help=f"the drop to detect, as a share of the baseline mean (default {EFFECT})")
    plan.add_argument("--power", type=float, default=POWER, help=f"the power to plan for (default {POWER})")
    plan.add_argument("--alpha", type=float, default=ALPHA, help=f"the gate's family-wise error rate (default {ALPHA})")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    score = commands.add_parser(
        "score", help="score saved courses again, without regenerating them",
        description="Score saved courses again into one eval report. A course that cannot be read (not a course, "
                    "a damaged file) is recorded as a failed build, never left out: the report is written and the "
                    "command exits 5, and compare refuses the report until the course is rebuilt.")
    score.add_argument("courses", nargs="+", metavar="COURSE_DIR",
                       help="course directories; those under an eNN directory (the suite's layout) are that epoch")
    score.add_argument("--output", required=True, metavar="PATH")
    score.add_argument("--label", default="rescored")
    calibrate = commands.add_parser(
        "calibrate", help="how far each model judge agrees with the labelled gold set: kappa, sensitivity, specificity",
        description="Run every model judge on its labelled gold items, through its scorer's own request, and "
                    "report per judge sensitivity, specificity, Cohen's kappa with a 95% interval, judge failures "
                    "and the items it got wrong; write the report compare shows beside each scorer. Offline, it "
                    "says which judges the offline judge could not run and calibrates nothing. Exit 0, or 2 on a "
                    "bad gold file or option.")
    calibrate.add_argument("--backend", "--judge-backend", dest="backend", metavar="NAME",
                           help="the judge: offline, or the backend the judging model answers through, e.g. "
                                "anthropic (default: STAY_BACKEND's)")
    calibrate.add_argument("--judge-model", metavar="MODEL", help="the judge's model (default: the judging role's)")
    calibrate.add_argument("--gold", default=GOLD_DIR, metavar="DIR", help=f"the gold set (default {GOLD_DIR})")
    calibrate.add_argument("--output", default=CALIBRATION, metavar="PATH", help=f"the report (default {CALIBRATION})")
    rejudge = commands.add_parser(
        "rejudge", help="judge two runs' saved courses again in one session, interleaved, so compare can test them",
        description="Judge the baseline's and the candidate's saved courses in one judging session, alternating "
                    "(per brief and epoch, the baseline's build, then the candidate's), and write both reports "
                    "anew as NAME.rejudged.json beside each input (or in --output-dir), with one session id: a "
                    "judge that drifted between the days the runs were judged cannot pass for a difference. "
                    "Exit 0, or 2 when a report or a course it names cannot be read.")
    for paired in (compare, rejudge):
        paired.add_argument("baseline", metavar="BASELINE.json")
        paired.add_argument("candidate", metavar="CANDIDATE.json")
    for judged in (score, rejudge):
        judged.add_argument("--backend", "--judge-backend", dest="backend", metavar="NAME",
                            help="the judge: offline (no model: only the validator and answer_cues are scored, "
                                 "the rest 'not judged (offline)'), or the backend the judging model answers "
                                 "through, e.g. anthropic (default: STAY_BACKEND's); its name records it")
        judged.add_argument("--judge-model", metavar="MODEL", help="the judge's model (default: the judging role's)")
    rejudge.add_argument("--output-dir", metavar="DIR", help="where both reports go (default: beside each input)")


def evals_main(ns: argparse.Namespace) -> int:
    """Run a parsed ``stay evals ...`` command; a refused comparison prints one line to stderr."""
    if ns.evals_command == "compare":
        try:
            return _compare(ns)
        except StayError as exc:
            code = exit_code(exc)
            if ns.html and code in (EXIT_USAGE, EXIT_REFUSED):
                _write_refused_page(ns, exc, code)
            if not isinstance(exc, RunsNotComparable | InvalidRun):
                raise  # stay's command line prints it as it prints every error
            sys.stderr.write(f"refused: {' '.join(str(exc).split())}\n")
            return code
    command = {"show": _show, "score": _score, "rejudge": _rejudge, "plan": _plan, "calibrate": _calibrate}
    if ns.evals_command in command:
        return command[ns.evals_command](ns)
    sys.stderr.write("usage: stay evals compare BASELINE.json CANDIDATE.json | stay evals show REPORT.json | "
                     "stay evals score COURSE_DIR ... | stay evals rejudge BASELINE.json CANDIDATE.json | "
                     "stay evals calibrate\n")
    return EXIT_USAGE


def _write_refused_page(ns: argparse.Namespace, exc: StayError, code: int) -> None:
    """The page says the comparison was refused, never a stale comparison; the refusal is what the
    command reports even when the page cannot be written."""
    from stay.artefacts import write_text_atomic
    from stay.view import render_compare_refused_html

    page = render_compare_refused_html(str(ns.baseline), str(ns.candidate), " ".join(str(exc).split()), code)
    try:
        write_text_atomic(ns.html, page)
    except OSError as error:
        sys.stderr.write(f"error: {ns.html}: the refusal page was not written ({error.strerror or error})\n")
        return
    print(f"wrote {ns.html} (refused, exit {code})")


def _compare(ns: argparse.Namespace) -> int:
    from stay.artefacts import write_text_atomic
    from stay.errors import UsageError
    from stay.scoring._compare import compare, item_changes, items_text, markdown, text
    from stay.scoring._judges import calibration_note, find_calibration, standings
    from stay.scoring._report import provenance_notes, read_report

    if not 0 < ns.alpha < 1 or not 0 <= ns.max_failed < 1 or not 0 < ns.effect <= 1:
        raise UsageError("--alpha must be between 0 and 1, --max-failed at least 0 and below 1, and --effect above 0 "
                         "and at most 1")
    if ns.items is not None and ns.items < 1:
        raise UsageError(f"--items {ns.items}: list at least 1 item, or leave --items out")
    if ns.permutations is not None and ns.permutations < 99:
        raise UsageError(f"--permutations {ns.permutations}: at least 99, or no p-value can fall below 0.01")
    baseline, candidate = read_report(ns.baseline), read_report(ns.candidate)
    paths = (str(ns.baseline), str(ns.candidate))
    calibration_path, calibration = find_calibration(ns.calibration, ns.candidate)
    comparison = compare(baseline, candidate, alpha=ns.alpha, allow=ns.allow, max_failed=ns.max_failed,
                         effect=ns.effect, permutations=ns.permutations, seed=ns.seed, names=paths,
                         standing=standings(baseline, candidate, calibration))
    note = calibration_note(calibration_path, calibration)
    provenance = [*provenance_notes(baseline, candidate), note]
    print(text(comparison, paths, provenance), end="")
    changes = None
    if ns.items is not None:
        changes, coverage = item_changes(baseline, candidate, top=ns.items)
        print(items_text(changes, coverage), end="")
    if ns.markdown:
        write_text_atomic(ns.markdown, markdown(comparison, paths, changes, provenance))
        print(f"wrote {ns.markdown}")
    if ns.html:
        from stay.scoring._compare_page import compare_page

        page = compare_page(comparison, baseline, candidate, paths=paths,
                            items=ns.items if ns.items is not None else PAGE_ITEMS, notes=(note,))
        write_text_atomic(ns.html, page.html())
        print(f"wrote {ns.html}")
    worse = [r for r in comparison.scorers if r.scorer in comparison.regressions]
    if worse:
        print("regression: " + ", ".join(f"{r.scorer} {r.difference:+.3f} (Holm-adjusted p {r.p_adjusted:.2g} < "
                                          f"{ns.alpha})" for r in worse if r.difference is not None))
    return comparison.exit_code


def _show(ns: argparse.Namespace) -> int:
    from stay.artefacts import write_text_atomic
    from stay.scoring._compare_page import run_errors
    from stay.scoring._report import read_report

    document = read_report(ns.report)
    print(summary_text(document, str(ns.report)), end="")
    if ns.markdown:
        write_text_atomic(ns.markdown, summary_markdown(document, str(ns.report)))
        print(f"wrote {ns.markdown}")
    if ns.html:
        from stay.view import render_run_summary_html

        write_text_atomic(ns.html, render_run_summary_html(document, run_errors(document), STDERR))
        print(f"wrote {ns.html}")
    return EXIT_OK


STDERR = ("build mean ± SE: a scorer's brief-weighted mean of build means (weights: a brief's mean items a "
          "build, as compare weighs them) and its standard error sqrt(s2 * sum((w_b / W)^2 / n_b)), s2 the "
          "variance of build means within briefs pooled over them; n/a with one build per brief; 0.000: "
          "every build of a brief scored the same")


def _mean_error(document: dict[str, Any]) -> dict[str, str]:
    from stay.scoring._compare_page import run_errors

    return {name: f"{e.mean:.3f} ± {fixed(e.error)} ({e.builds} builds)" for name, e in run_errors(document).items()}


def sessions_line(document: dict[str, Any]) -> str:
    """The header's sessions; a kind no build records is "none recorded" (rescored courses were built by none)."""
    sessions = document.get("sessions")
    if not isinstance(sessions, dict):
        return "sessions: unknown (a report from before sessions were recorded)"
    said = {key: ", ".join(map(str, sessions.get(key) or [])) or "none recorded" for key in ("built_in", "judged_in")}
    return f"sessions: built in {said['built_in']}; judged in {said['judged_in']}"


def summary_markdown(document: dict[str, Any], path: str) -> str:
    from stay.scoring._report import not_judged

    errors = _mean_error(document)
    means, unjudged = document.get("means") or {}, not_judged(document)
    lines = [f"# Eval run {document['label']}", "", f"- report: {path}", f"- backend {document['backend']}; judge "
             f"{document['judge']}" + (f" ({document['judge_model']})" if document.get("judge_model") else ""),
             f"- {sessions_line(document)}",
             "", "| scorer | item mean | build mean ± SE |", "|---|---|---|"]
    lines += [f"| {name} | {unjudged[name]} | - |" if name in unjudged else
              f"| {name} | {fixed(means.get(name))} | {errors.get(name, 'n/a')} |"
              for name in sorted(document["scorers"])]
    return "\n".join([*lines, "", STDERR + ".", ""])


def _plan(ns: argparse.Namespace) -> int:
    from stay.errors import UsageError
    from stay.scoring._report import read_report
    from stay.scoring._stats import plan_epochs

    if not 0 < ns.alpha < 1 or not 0 < ns.power < 1 or not 0 < ns.effect <= 1:
        raise UsageError("--alpha and --power must be between 0 and 1, and --effect above 0 and at most 1")
    found = plan_epochs(read_report(ns.baseline), path=str(ns.baseline), effect=ns.effect, power=ns.power,
                        alpha=ns.alpha)
    print(found.json() if ns.json else found.text(), end="")
    return EXIT_OK


def summary_text(document: dict[str, Any], path: str) -> str:
    from stay.scoring._report import not_judged
    from stay.view import dollars  # unknown reads "unknown", never $0, as on the pages

    quality = ", ".join(f"{k} {v}" for k, v in sorted((document.get("quality") or {}).items())) or "none"
    builds = [b for brief in document["briefs"].values() for b in brief["builds"]]
    failed = [f"{slug} e{b.get('epoch', 0):02d}" for slug, brief in sorted(document["briefs"].items())
              for b in brief["builds"] if b.get("failed")]
    models = sorted((document.get("models") or {}).items())
    lines = [f"run: {path} ({document['label']}, {document.get('epochs', 'n/a')} epochs, seed "
             f"{document.get('seed', 'n/a')})",
             f"backend {document['backend']}; offline quality knob {quality}",
             f"judge {document['judge']}" + (f" ({document['judge_model']})" if document.get("judge_model") else ""),
             "models: " + (", ".join(f"{role} {model}" for role, model in models) or "n/a"),
             _prompts_line(document.get("prompts") or {}),
             sessions_line(document),
             f"briefs: {len(document['briefs'])} ({', '.join(sorted(document['briefs']))}), {len(builds)} builds"
             + (f", {len(failed)} failed ({', '.join(failed)}): compare refuses this run until they are rebuilt"
                if failed else ""),
             "", f"{'scorer':20} {'version':>7} {'mean':>6} {'items':>6} {'unparseable':>11} {'errors':>6}  "
                 "build mean ± SE"]
    means, failures = document.get("means") or {}, document.get("failures") or {}
    scorers = document["scorers"] if isinstance(document["scorers"], dict) else {}
    errors, unjudged = _mean_error(document), not_judged(document)
    for name, version in sorted(scorers.items()):
        counts = failures.get(name) or {}
        if name in unjudged:  # no mean, no pass: what the judge could not read is not scored
            lines.append(f"{name:20} {'v' + str(version):>7} {unjudged[name]}")
            continue
        lines.append(f"{name:20} {'v' + str(version):>7} {fixed(means.get(name)):>6} {counts.get('items', 'n/a'):>6} "
                     f"{counts.get('unparseable', 'n/a'):>11} {counts.get('errors', 'n/a'):>6}  "
                     f"{errors.get(name, 'n/a')}")
    lines += ["", STDERR]
    totals = document.get("totals") or {}

    def known(value: Any) -> float | None:  # a damaged total is unknown too
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    lines += ["", f"cost: building {dollars(known(totals.get('build_cost')))}, judging "
                  f"{dollars(known(totals.get('judge_cost')))} "
                  f"({totals.get('judge_input_tokens', 'n/a')} input, {totals.get('judge_output_tokens', 'n/a')} "
                  "output tokens)"]
    return "\n".join(lines) + "\n"


def _prompts_line(prompts: dict[str, Any]) -> str:
    source = {"ledger": "as the builds' ledgers record them", "requested": "as asked (no build records them)"}
    mixed = sorted(prompts.get("mixed") or {})
    origin = source.get(str(prompts.get("source")), "of unknown origin")
    return (f"prompts: {prompts.get('dir', 'n/a')}, hashes {origin}"
            + (f"; built in more than one version: {', '.join(mixed)}" if mixed else ""))


def _score(ns: argparse.Namespace) -> int:
    """Score each course again; one that cannot be scored is a failed build, never left out (exit 5)."""
    from stay.scoring._core import CourseOnDisk, OfflineJudge
    from stay.scoring._judges import backend_name, judge_name, make_judge, relative_course, session_id
    from stay.scoring._report import (
        QUALITY_RECORD,
        build_entry,
        failed_entry,
        recorded_quality,
        report,
        write_report,
    )
    from stay.scoring.scorers import default_scorers, score_course, scorer_versions
    from stay.stages import Prompts

    backend = backend_name(ns.backend, flag="--backend")
    builds: dict[str, list[dict[str, Any]]] = {}
    loaded: list[tuple[Path, CourseOnDisk | StayError | OSError]] = []
    for course_dir in map(Path, ns.courses):
        try:
            loaded.append((course_dir, CourseOnDisk.load(course_dir)))
        except (StayError, OSError) as error:  # this course cannot be scored; the others still can
            loaded.append((course_dir, error))
    # one judging session (stay.scoring._judges), answered afresh: never another session's cached verdicts
    session = session_id(judge_name(backend, ns.judge_model), {ns.label: [
        f"{d.parent.name}/{d.name}/{c.sha256 if isinstance(c, CourseOnDisk) else 'unreadable'}" for d, c in loaded]})
    failed = 0
    for course_dir, course in loaded:
        slug = course_dir.name
        entries = builds.setdefault(slug, [])
        numbered = re.fullmatch(r"e(\d+)", course_dir.parent.name)  # the suite's layout: eNN/slug
        epoch = int(numbered.group(1)) if numbered else len(entries) + 1
        try:
            if not isinstance(course, CourseOnDisk):
                raise course
            judge = make_judge(backend, course_dir / ".runs" / "judge-cache", judge_model=ns.judge_model, salt=session)
            entry = build_entry(score_course(course, default_scorers(judge)), epoch=epoch, seed=None,
                                course_sha256=course.sha256, course_dir=course_dir, judged_in=session)
            if (course_dir / QUALITY_RECORD).is_file():  # an offline suite's build: say its knob
                entry["quality"] = recorded_quality(course_dir)
        except (StayError, OSError) as error:  # this course cannot be scored; the others still can
            entry = failed_entry(error, epoch=epoch, seed=None)
            failed += 1
            sys.stderr.write(f"failed {course_dir}: {entry['failed']['error']}: {entry['failed']['message']}\n")
        else:
            sys.stderr.write(f"scored {course_dir}\n")
        entry["course"] = relative_course(course_dir, Path(ns.output))
        entries.append(entry)
    document = report(label=ns.label, backend=backend, prompts_dir="(not generated: courses scored as saved)",
                      prompt_hashes=Prompts.load().hashes(), scorers=scorer_versions(default_scorers(OfflineJudge())),
                      builds=builds, epochs=max(len(entries) for entries in builds.values()))
    write_report(ns.output, document)
    print(f"wrote {ns.output}" + (f" ({failed} of {len(ns.courses)} courses failed and are recorded as failed "
                                  "builds; compare refuses the report until they are rebuilt)" if failed else ""))
    return EXIT_REFUSED if failed else EXIT_OK


def _calibrate(ns: argparse.Namespace) -> int:
    from stay.scoring._judges import backend_name, make_judge, run_calibrate

    backend = backend_name(ns.backend, flag="--backend")
    # the verdicts are cached beside the report: calibrating the same judge again pays nothing
    judge = make_judge(backend, Path(ns.output).parent / "calibration-cache", judge_model=ns.judge_model,
                       salt="calibration")
    print(run_calibrate(ns.gold, judge, ns.output, backend=backend), end="")
    return EXIT_OK


def _rejudge(ns: argparse.Namespace) -> int:
    from stay.scoring._judges import backend_name, rejudge

    backend = backend_name(ns.backend, flag="--backend")
    session, written = rejudge(Path(ns.baseline), Path(ns.candidate), backend=backend, judge_model=ns.judge_model,
                               output_dir=Path(ns.output_dir) if ns.output_dir else None,
                               progress=lambda line: sys.stderr.write(line + "\n"))
    builds = sum(len(brief["builds"]) for _path, document in written for brief in document["briefs"].values())
    print(f"wrote {written[0][0]} and {written[1][0]} ({builds} builds judged interleaved in session {session})")
    return EXIT_OK
