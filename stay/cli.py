"""The ``stay`` command (``stay.build_course``'s pipeline from a shell): its parser, its handlers and the
exit codes. Progress goes to stderr, results to stdout, every refusal is one line naming the fix.
Every heavy import is inside the handler that needs it (``--help`` stays cheap)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from stay._display import terminal_stream  # re and html only
from stay.errors import (  # errors imports nothing: --help stays cheap
    EXIT_BUG,
    EXIT_FAIL,
    EXIT_GATE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    EnvironmentProblem,
    StayError,
    UsageError,
    exit_code,
)
from stay.settings import JUDGED_HELP

if TYPE_CHECKING:
    from stay.pipeline import BuildResult
    from stay.settings import Settings


def _interrupted(process: bool = True, message: str = "interrupted") -> None:
    """Ctrl-C: one line, then out at once through os._exit, as the interpreter would wait for
    worker threads blocked on a call. Also (through a lambda) the SIGINT handler while stay is exiting
    (stay/__init__ installs its own for the start-up)."""
    try:
        sys.stdout.flush()  # what a finished command printed still reaches its reader
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:
        pass
    if process:
        os._exit(EXIT_INTERRUPTED)


def main(argv: Sequence[str] | None = None) -> int:
    process = argv is None  # the process's own command line: Ctrl-C is ours to handle
    args = list(sys.argv[1:] if argv is None else argv)
    streams = sys.stdout, sys.stderr
    # Everything the command prints, whoever prints it, reaches the terminal escaped and
    # encodable: a file name, a heading or a report field cannot drive the terminal, and an
    # ASCII locale cannot turn a Unicode path into a crash.
    sys.stdout, sys.stderr = terminal_stream(sys.stdout), terminal_stream(sys.stderr)
    try:
        try:
            if process:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            return _command(args)
        finally:
            if process:  # leaving: a Ctrl-C from here to the exit ends quietly, as at start-up
                signal.signal(signal.SIGINT, lambda _signal, _frame: _interrupted())
            sys.stdout, sys.stderr = streams
    except KeyboardInterrupt:
        # Outside _command, so a Ctrl-C that lands while the handler is being swapped (signal.signal
        # is Python code) or while _command turns another exception into a code lands here too.
        _interrupted(process, "interrupted; every file written so far is whole, run the command again to continue")
        return EXIT_INTERRUPTED


def _command(args: list[str]) -> int:
    """The command, every exception but Ctrl-C turned into its exit code and one line."""
    try:
        if args and args[0] == "validate":
            from stay.validate import main as validate_main

            return validate_main(args[1:])
        from stay._words import speaking  # stdlib only: --help stays cheap

        with speaking("shell"):  # every hint a command prints is a command to paste, not a Python call
            return _dispatch(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # every error ends in one line; none as a traceback
        return _report(exc)


def _quiet_stdout() -> None:
    """The reader of stdout went away (``stay status X | head -1``): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _report(exc: BaseException) -> int:
    if isinstance(exc, OSError) and not isinstance(exc, StayError):  # BriefNotFound says its own fix
        exc = EnvironmentProblem.from_os_error(exc)
    code = exit_code(exc) if isinstance(exc, StayError) else EXIT_BUG
    said = _one_line(exc)
    if code == EXIT_BUG:
        said = f"{type(exc).__name__}: {said} (a bug in stay; files written so far are whole)"
    prefix = {EXIT_BUG: "internal error", EXIT_UNAVAILABLE: "unavailable", EXIT_USAGE: "error"}.get(code, "refused")
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{prefix}: {said}\n")
    return code


def _one_line(text: object) -> str:
    """One line, and never a secret: every configured one is cut out by value, before the
    line is flattened and after (a secret may hold a space)."""
    from stay._secrets import redact
    from stay.settings import secrets_from

    secrets = secrets_from()
    return redact(" ".join(redact(str(text), secrets).split()), secrets)


BACKEND_HELP = ("an installed backend (stay --version lists them); default: $STAY_BACKEND, else anthropic when "
                "ANTHROPIC_API_KEY is set, else offline")


class _Version(argparse.Action):
    """``stay --version``: stay's version, then one line per installed backend and its distribution."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from stay import __version__
        from stay.models import backends, distribution

        lines = [f"stay {__version__}"]
        for name, point in backends().items():
            dist, version = distribution(point)
            lines.append(f"backend {name}: {dist} {version or __version__} ({point.value})")
        print("\n".join(lines))
        parser.exit()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (run `stay --help`)")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # Python 3.11's argparse lists the choices but names none: a mistyped command (or
        # --backend, --format) gets the nearest of the action's own choices first
        choices = action.choices
        if choices is not None and value not in choices and isinstance(value, str):
            from stay._words import did_you_mean

            name = argparse._get_action_name(action)
            listed = ", ".join(map(repr, choices))
            self.error(f"argument {name}: invalid choice: {value!r}{did_you_mean(value, map(str, choices))} "
                       f"(choose from {listed})")
        super()._check_value(action, value)


def _parser() -> argparse.ArgumentParser:
    """Each command's parser names its handler (``set_defaults(func=...)``), imported when it runs."""
    from stay.settings import registered_backends

    backends = tuple(registered_backends())  # names only: no backend is imported for --help
    parser = _Parser(prog="stay", description="Turn a course brief into a complete course.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print stay's version and each installed backend's, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    courses = _Parser(add_help=False)
    courses.add_argument("--courses-dir", default="courses", metavar="DIR",
                         help="where courses live (default: courses)")
    common = _Parser(add_help=False, parents=[courses])
    common.add_argument("--prompts-dir", metavar="DIR",
                        help="the prompt templates and references (default: $STAY_PROMPTS_DIR, else the packaged "
                             "prompts/); an artefact whose stage's prompts changed is stale")

    def model_options(command: argparse.ArgumentParser) -> None:
        command.add_argument("--backend", choices=backends, help=BACKEND_HELP)
        command.add_argument("--answer-tokens", type=_positive, metavar="N", help=ANSWER_TOKENS_HELP)
        command.add_argument("--max-cost", type=_dollars, metavar="USD", help=MAX_COST_HELP)

    helps = {
        "new": "create a course from a brief and stop at the design gate",
        "build": "build (or resume) a course: design, gate, plans, gate, wave, validate, repair",
        "plan": "plan every lesson; needs a holding design approval",
        "write": "write lessons, exercises, quizzes and the capstone; needs both approvals",
        "repair": "validate, then repair leaf artefacts in bounded rounds",
    }
    for name, text in helps.items():
        command = sub.add_parser(name, parents=[common], help=text, description=text)
        command.set_defaults(func=_new if name == "new" else _run)
        command.add_argument("target", metavar="BRIEF-or-SLUG", nargs="?" if name == "new" else None,
                             help="a brief YAML file, or the slug of a course in --courses-dir")
        if name == "new":  # a packaged brief, for a user with no checkout (stay/_init.py)
            command.add_argument("--example", metavar="NAME", help="build from the example brief NAME, shipped "
                                                                   "with stay, instead of a BRIEF")
            command.add_argument("--list-examples", action="store_true",
                                 help="list the example briefs with their titles, and exit")
        command.add_argument("--slug", help="the course slug (default: from the brief's title)")
        if name in ("build", "plan", "write"):
            command.add_argument("--yes", action="store_true",
                                 help="answer each gate; recorded as 'auto-approved (--yes)'")
        model_options(command)
        if name in ("new", "build"):  # the commands that screen a brief
            command.add_argument("--no-screen", dest="screen", action="store_false",
                                 help="screen the brief with nothing (no input moderation); the run log records "
                                      "it. A backend that cannot screen needs it")
        if name in ("build", "write", "repair"):  # the commands that run the review
            command.add_argument("--no-review", dest="review", action="store_false",
                                 help="do not have the judging model review each lesson after the wave (on by "
                                      "default with a model backend; the offline backend never reviews)")
        command.add_argument("--batch", action="store_true",
                             help="send the wave through one Message Batch (half price, slower)")
        command.add_argument("--replay", action="store_true",
                             help="answer only from <course>/.runs/cache/: no model call; a miss "
                                  "says what changed")
    revise = sub.add_parser("revise", parents=[common],
                            help="regenerate named artefacts with a reviewer's note; nothing else is written",
                            description="Regenerate each TARGET with the note attached to its stage's request, "
                                        "next to the file as it is now. A TARGET is a file path in the course, a "
                                        "lesson id (its lesson files) or a stage name (every file of that stage).")
    revise.set_defaults(func=_run)
    revise.add_argument("slug")
    revise.add_argument("targets", nargs="+", metavar="TARGET")
    revise.add_argument("--note", help="the reviewer's guidance (default: the note of a decline of the gate "
                                       "that covers the target)")
    revise.add_argument("--force", action="store_true",
                        help="revise a file edited by hand too (its bytes are kept in .state/retired/)")
    shown = revise.add_mutually_exclusive_group()
    shown.add_argument("--show", action="store_true",
                       help="write no course file: print the diff the revision would make and keep it as a "
                            "proposal in .state/proposals/ (--keep it, or --show again with another --note)")
    shown.add_argument("--keep", action="store_true",
                       help="write the proposal --show made, as a revise would, with no model call")
    model_options(revise)
    approve = sub.add_parser("approve", parents=[common], help="answer a gate for a course")
    approve.set_defaults(func=_approve)
    approve.add_argument("slug")
    # the gates are declared once, in the pipeline (stay.pipeline._graph), which checks
    # the name: importing it here would slow every --help
    approve.add_argument("gate", metavar="GATE", help="the gate to answer, named as its gate page names it")
    approve.add_argument("--decline", action="store_true")
    approve.add_argument("--note", default="")
    approve.add_argument("--backend", choices=backends, help=JUDGED_HELP)
    for name, text in (("status", "what is missing, current, stale or edited, and why"),
                       ("adopt", "rebuild the hash ledger from the files of a course written elsewhere")):
        command = sub.add_parser(name, parents=[common], help=text)
        command.set_defaults(func=_status)
        command.add_argument("slug")
        command.add_argument("--backend", choices=backends, help=JUDGED_HELP)
    estimate = sub.add_parser("estimate", parents=[common],
                              help="the calls a build would make and their cost range, made offline")
    estimate.set_defaults(func=_estimate)
    estimate.add_argument("target", metavar="BRIEF-or-SLUG",
                          help="a brief YAML file (a fresh course), or the slug of a course in --courses-dir "
                               "(a rebuild: only what is missing or stale)")
    estimate.add_argument("--batch", action="store_true",
                          help="price the wave as `stay build --batch` sends it (one Message Batch, half price)")
    estimate.add_argument("--no-review", dest="review", action="store_false",
                          help="price `stay build --no-review`: no judging-model review of each lesson")
    estimate.add_argument("--backend", choices=backends, help="price the build this backend would make: its "
                          "models and its price table (a model it has no price for: unknown); " + BACKEND_HELP)
    watch = sub.add_parser("watch", parents=[courses],
                           help="validate a course on every save; print only the defects made and fixed",
                           description="Watch a course's files (the optional extra: pip install -e '.[watch]'). "
                                       "On every save the course is validated and only the difference is printed: "
                                       "'+ <defect>' new, '- <defect>' fixed. Ctrl-C stops (exit 0).")
    watch.set_defaults(func=_watch)
    watch.add_argument("slug")
    init = sub.add_parser("init", help="write an example brief and a .gitignore for .runs/ to start from")
    init.set_defaults(func=_init)
    init.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where (default: here)")
    init.add_argument("--example", metavar="NAME", help="which example brief (default: how-http-requests-travel; "
                                                        "`stay new --list-examples` lists them)")
    graph = sub.add_parser("graph", help="print the pipeline graph")
    graph.set_defaults(func=_graph)
    graph.add_argument("--format", choices=("mermaid", "dot", "json"), default="mermaid")
    graph.add_argument("--prompts-dir", metavar="DIR",
                       help="derive each stage's references from this prompts directory's front matter (default: "
                            "$STAY_PROMPTS_DIR, else the packaged prompts/)")
    sub.add_parser("validate", help="check courses against the course format (see `stay validate`)",
                   add_help=False)
    from stay.scoring import evals_main, evals_parser
    from stay.view import export_parser, view_parser

    view_parser(sub, courses)
    export_parser(sub, courses)
    evals_parser(sub)
    sub.choices["evals"].set_defaults(func=evals_main)
    return parser


ANSWER_TOKENS_HELP = ("every answer's room in tokens, thinking on top (default: STAY_ANSWER_TOKENS, else each "
                      "stage's own); a cut-off answer is asked once more with twice the room")
MAX_COST_HELP = ("US dollars this run may spend (default: STAY_MAX_COST, else no cap): a call whose worst case "
                 "would pass it is not made; the run stops there with exit 5, and a rerun pays nothing twice")


def _dollars(raw: str) -> float:
    try:
        value = float(raw.removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw[:40]!r} is not an amount of US dollars (e.g. 2.50)") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, not {raw[:40]}")
    return value


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw[:40]!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _dispatch(args: list[str]) -> int:
    parser = _parser()
    ns = parser.parse_args(args)
    from stay import _secrets
    from stay.settings import secrets_from

    # every secret the environment holds, known before anything is written: the files'
    # writers cut out what the one-line error does, whether or not a command's settings
    # ever read that variable (OTEL_EXPORTER_OTLP_TRACES_HEADERS, another backend's key)
    _secrets.keep(secrets_from())
    if getattr(ns, "func", None) is None:  # no command: `stay`, `stay --`
        parser.print_help()
        return EXIT_USAGE
    return int(ns.func(ns))


def _init(ns: argparse.Namespace) -> int:
    from stay._init import INIT_EXAMPLE, init

    print("\n".join(init(ns.directory, ns.example or INIT_EXAMPLE)))
    return EXIT_OK


def _watch(ns: argparse.Namespace) -> int:
    from stay._watch import watch

    return watch(ns.slug, ns.courses_dir)


def _new(ns: argparse.Namespace) -> int:
    """``stay new BRIEF``, or ``--list-examples``, ``--example NAME``, or given nothing."""
    from stay._init import example_lines, example_path

    if ns.list_examples:
        print("\n".join(example_lines()))
        return EXIT_OK
    if ns.example is not None:
        if ns.target is not None:
            raise UsageError(f"give a BRIEF ({ns.target[:60]}) or --example {ns.example[:60]}, not both")
        ns.target = str(example_path(ns.example))
    elif ns.target is None:
        raise UsageError("stay new needs a BRIEF.yaml, or --example NAME for a packaged one "
                         "(`stay new --list-examples` lists them; `stay init` writes one to edit)")
    return _run(ns)


def _settings(ns: argparse.Namespace) -> Settings:
    from pathlib import Path

    from stay.settings import Settings

    prompts = getattr(ns, "prompts_dir", None)
    return Settings.from_env(backend=getattr(ns, "backend", None), prompts_dir=Path(prompts) if prompts else None,
                             answer_tokens=getattr(ns, "answer_tokens", None),
                             max_cost=getattr(ns, "max_cost", None))


def _approve(ns: argparse.Namespace) -> int:
    import stay.pipeline as pipeline

    fails = pipeline.approve(ns.slug, ns.gate, courses_dir=ns.courses_dir, decline=ns.decline, note=ns.note,
                             settings=_settings(ns))
    said = f"{ns.slug}: the {ns.gate} gate is {'declined' if ns.decline else 'approved'}"
    if fails:  # a person may sign a FAIL, but not unaware of it
        import shlex

        where = shlex.quote(os.path.join(ns.courses_dir, ns.slug))
        said += f"; its files hold {len(fails)} FAIL: `stay validate {where}` lists them"
    print("\n".join([said, *(f"{ns.slug}: {line}" for line in fails.lines())]))
    return EXIT_OK


def _status(ns: argparse.Namespace) -> int:
    """``stay status`` and ``stay adopt``: each file's state, each gate's verdict, each waiting proposal."""
    import stay.pipeline as pipeline

    settings = _settings(ns)
    statuses = (pipeline.adopt if ns.command == "adopt" else pipeline.status)(
        ns.slug, courses_dir=ns.courses_dir, settings=settings)
    for path, status in statuses.items():
        detail = status.describe()
        print(f"{status.state:8} {path}" + (f"  {detail}" if detail else ""))
    for gate, verdict in pipeline.gate_status(ns.slug, courses_dir=ns.courses_dir, settings=settings).items():
        print(f"gate     {gate}: {verdict}")
    for line in statuses.proposals:  # what `revise --show` left waiting, and how to keep it
        print(f"proposal {line}")
    return EXIT_OK


def _estimate(ns: argparse.Namespace) -> int:
    from stay.pipeline import estimate

    print("\n".join(estimate(ns.target, courses_dir=ns.courses_dir, settings=_settings(ns),
                             batch=ns.batch, review=ns.review).lines()))
    return EXIT_OK


def _run(ns: argparse.Namespace) -> int:
    settings = _settings(ns)
    try:
        from stay.pipeline import revise, run_command

        if ns.command == "revise":
            result = revise(ns.slug, ns.targets, note=ns.note, courses_dir=ns.courses_dir, force=ns.force,
                            settings=settings, show=ns.show, keep=ns.keep)
        else:
            result = run_command(ns.command, ns.target, courses_dir=ns.courses_dir, yes=getattr(ns, "yes", False),
                                 slug=ns.slug, settings=settings, replay=ns.replay, batch=ns.batch,
                                 screen=getattr(ns, "screen", True), review=getattr(ns, "review", True))
    except BaseException as exc:  # a failed or interrupted run still says what it paid, on stdout as ever
        from stay.pipeline import spent_of

        spent = spent_of(exc)
        if spent is not None:
            with contextlib.suppress(Exception):
                print("\n".join(spent.lines(so_far=True)), flush=True)
        raise
    if settings.otlp is not None and result.trace_id:  # the id to find this run by in the trace receiver
        print(f"trace: {result.trace_id}")
    return _printed(ns, result)


def _printed(ns: argparse.Namespace, result: BuildResult) -> int:
    """Print the result's summary; its exit code: a stop at the gate a command ends at (``new`` at the
    design gate) is done, exit 0; a stop short of its end (``build`` at a gate) is EXIT_GATE."""
    from stay.pipeline import DECLARATION

    print(result.summary(), end="")
    if result.stopped_at is not None:
        last = DECLARATION.commands[ns.command].last
        ends_at = [f"{gate.name} gate" for gate in DECLARATION.gates if last in gate.nodes]
        return EXIT_OK if result.stopped_at in ends_at else EXIT_GATE
    report = result.validation
    return EXIT_FAIL if report is not None and report.fails else EXIT_OK


def _graph(ns: argparse.Namespace) -> int:
    """``stay graph``: the pipeline graph as Mermaid, DOT or node-link JSON, with the references each stage
    reads (from the prompts directory's front matter)."""
    import networkx as nx

    from stay.pipeline import graph
    from stay.stages import Prompts

    prompts_dir, fmt = _settings(ns).prompts_dir, ns.format
    pipeline = graph(Prompts.load(prompts_dir) if prompts_dir is not None else None)
    reads = [f"references of {stage}: {', '.join(refs)}" for _name, attrs in pipeline.nodes(data=True)
             for stage, refs in attrs.get("references", {}).items()]
    if fmt == "json":
        import dataclasses

        data = nx.node_link_data(pipeline, edges="edges")
        data["graph"] = {"name": pipeline.graph["name"],
                         "commands": {name: dataclasses.asdict(command)
                                      for name, command in pipeline.graph["commands"].items()}}
        print(json.dumps(data, indent=2, sort_keys=True, default=list))
        return EXIT_OK
    mermaid = fmt == "mermaid"
    lines = ["flowchart TD"] if mermaid else ["digraph stay {", "  rankdir=TB;"]
    for name, attrs in pipeline.nodes(data=True):
        kind = attrs["kind"]
        if mermaid:
            left, right = MERMAID_SHAPES.get(kind, ("[", "]"))
            lines.append(f'    {name}{left}"{name}<br/>{kind}"{right}')
        else:
            lines.append(f'  {name} [label="{name}\\n{kind}", shape={DOT_SHAPES.get(kind, "box")}];')
    lines += [f"    {a} --> {b}" if mermaid else f"  {a} -> {b};" for a, b in pipeline.edges]
    lines += [f"    %% {line}" if mermaid else f"  // {line}" for line in reads]
    print("\n".join(lines) + ("" if mermaid else "\n}"))
    return EXIT_OK


MERMAID_SHAPES = {"gate-ask": ("{{", "}}"), "router": ("{", "}"), "guard": ("[/", "/]"), "wave": ("[[", "]]"),
                  "barrier": ("[(", ")]")}
DOT_SHAPES = {"gate-ask": "diamond", "router": "diamond", "wave": "box3d"}


if __name__ == "__main__":
    sys.exit(main())
