"""The ``stay`` command: the same pipeline as ``stay.build_course``, from a shell.

Progress goes to stderr, results to stdout, and every refusal is one line naming
what went wrong and the command that fixes it. Exit codes are in the README.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_BUG, EXIT_GATE, EXIT_REFUSED = 0, 1, 2, 3, 4, 5


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        from stay.errors import UsageError

        raise UsageError(f"{message} (run `stay --help`)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="stay", description="Turn a course brief into a complete course.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _Parser(add_help=False)
    common.add_argument("--courses-dir", default="courses", metavar="DIR",
                        help="where courses live (default: courses)")
    helps = {
        "new": "create a course from a brief and stop at the design gate",
        "build": "build (or resume) a course: design, gate, plans, gate, wave, validate, repair",
        "plan": "plan every lesson; needs a holding design approval",
        "write": "write lessons, exercises, quizzes and the capstone; needs both approvals",
        "repair": "validate, then repair leaf artefacts in bounded rounds",
    }
    for name, text in helps.items():
        command = sub.add_parser(name, parents=[common], help=text, description=text)
        command.add_argument("target", metavar="BRIEF-or-SLUG",
                             help="a brief YAML file, or the slug of a course in --courses-dir")
        command.add_argument("--slug", help="the course slug (default: from the brief's title)")
        if name in ("build", "plan", "write"):
            command.add_argument("--yes", action="store_true",
                                 help="answer each gate; recorded as 'auto-approved (--yes)'")
        command.add_argument("--backend", choices=("offline", "anthropic"),
                             help="default: anthropic when ANTHROPIC_API_KEY is set, else offline")
        command.add_argument("--batch", action="store_true",
                             help="send the wave through one Message Batch (half price, slower)")
        command.add_argument("--replay", action="store_true",
                             help="answer only from <course>/.runs/cache/: no model call; a miss "
                                  "says what changed")
    approve = sub.add_parser("approve", parents=[common], help="answer a gate for a course")
    approve.add_argument("slug")
    approve.add_argument("gate", choices=("design", "plan"))
    approve.add_argument("--decline", action="store_true")
    approve.add_argument("--note", default="")
    for name, text in (("status", "what is missing, current, stale or edited, and why"),
                       ("adopt", "rebuild the hash ledger from the files of a course written elsewhere")):
        command = sub.add_parser(name, parents=[common], help=text)
        command.add_argument("slug")
    graph = sub.add_parser("graph", help="print the pipeline graph")
    graph.add_argument("--format", choices=("mermaid", "dot", "json"), default="mermaid")
    sub.add_parser("validate", help="check courses against the course format (see `stay validate`)",
                   add_help=False)
    from stay.scoring._cli import add_evals_parser

    add_evals_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "validate":
        from stay.validate._cli import main as validate_main

        return validate_main(args[1:])
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; every file written so far is whole, run the command again to "
                         "continue\n")
        return 130
    except BaseException as exc:
        from stay.errors import StayError, UsageError

        if isinstance(exc, SystemExit):
            return int(exc.code or 0)
        if isinstance(exc, UsageError):
            sys.stderr.write(f"error: {_one_line(exc)}\n")
            return EXIT_USAGE
        if isinstance(exc, StayError):
            sys.stderr.write(f"refused: {_one_line(exc)}\n")
            return EXIT_REFUSED
        sys.stderr.write(f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                         "(a bug in stay; files written so far are whole)\n")
        return EXIT_BUG


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _dispatch(args: list[str]) -> int:
    parser = _parser()
    if not args:
        parser.print_help()
        return EXIT_USAGE
    ns = parser.parse_args(args)
    if ns.command in ("new", "build", "plan", "write", "repair"):
        return _run(ns)
    import stay.pipeline as pipeline

    if ns.command == "approve":
        pipeline.approve(ns.slug, ns.gate, courses_dir=ns.courses_dir, decline=ns.decline, note=ns.note)
        print(f"{ns.slug}: the {ns.gate} gate is {'declined' if ns.decline else 'approved'}")
        return EXIT_OK
    if ns.command in ("status", "adopt"):
        statuses = (pipeline.adopt if ns.command == "adopt" else pipeline.status)(
            ns.slug, courses_dir=ns.courses_dir)
        for path, (state, why) in statuses.items():
            print(f"{state:8} {path}" + (f"  <- {', '.join(why)}" if why else ""))
        for gate, verdict in pipeline.gate_status(ns.slug, courses_dir=ns.courses_dir).items():
            print(f"gate     {gate}: {verdict}")
        return EXIT_OK
    if ns.command == "evals":
        from stay.scoring._cli import run_evals

        return run_evals(ns)
    if ns.command == "graph":
        print(render_graph(ns.format), end="")
        return EXIT_OK
    parser.print_help()
    return EXIT_USAGE


def _run(ns: argparse.Namespace) -> int:
    from stay.pipeline import run_command

    result = run_command(ns.command, ns.target, courses_dir=ns.courses_dir, yes=getattr(ns, "yes", False),
                         slug=ns.slug, backend=ns.backend, replay=ns.replay, batch=ns.batch)
    print(f"{result.slug}: {result.course_dir}")
    usage = result.usage
    print(f"usage: {result.calls} calls; {usage.input_tokens} input, {usage.cache_creation_input_tokens} "
          f"cache-write, {usage.cache_read_input_tokens} cache-read, {usage.output_tokens} output tokens; "
          f"${result.cost:.4f}")
    if result.stopped_at is not None:
        print(f"stopped at the {result.stopped_at}: {result.reason}")
        return EXIT_OK if ns.command == "new" else EXIT_GATE
    report = result.validation
    if report is not None:
        print(f"validation: {report.fails} FAIL, {report.warns} WARN ({report.checks} checks)")
        if result.repair:
            print(f"repair: stopped because {result.repair.stop}")
        return EXIT_FAIL if report.fails else EXIT_OK
    return EXIT_OK


def render_graph(fmt: str) -> str:
    """The pipeline graph as Mermaid, DOT or node-link JSON."""
    import networkx as nx

    from stay.pipeline import graph

    pipeline = graph()
    if fmt == "json":
        data = nx.node_link_data(pipeline, edges="edges")
        return json.dumps(data, indent=2, sort_keys=True, default=list) + "\n"
    shapes = {"gate-ask": ("{{", "}}"), "router": ("{", "}"), "guard": ("[/", "/]"),
              "wave": ("[[", "]]"), "barrier": ("[(", ")]")}
    if fmt == "mermaid":
        lines = ["flowchart TD"]
        for name, attrs in pipeline.nodes(data=True):
            left, right = shapes.get(attrs["kind"], ("[", "]"))
            lines.append(f'    {name}{left}"{name}<br/>{attrs["kind"]}"{right}')
        lines += [f"    {a} --> {b}" for a, b in pipeline.edges]
        return "\n".join(lines) + "\n"
    lines = ["digraph stay {", "  rankdir=TB;"]
    for name, attrs in pipeline.nodes(data=True):
        shape = {"gate-ask": "diamond", "router": "diamond", "wave": "box3d"}.get(attrs["kind"], "box")
        lines.append(f'  {name} [label="{name}\\n{attrs["kind"]}", shape={shape}];')
    lines += [f"  {a} -> {b};" for a, b in pipeline.edges]
    return "\n".join(lines) + "\n}\n"


if __name__ == "__main__":
    sys.exit(main())
