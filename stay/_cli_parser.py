"""The ``stay`` command's parser: every command, its arguments and their help, and the argument types
argparse checks. Apart from ``stay.cli`` so the program's entry reads in one sitting; built on each call of
``_parser``, which imports no backend (``--help`` stays cheap)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from stay.errors import UsageError  # errors imports nothing: --help stays cheap
from stay.settings import JUDGED_HELP

BACKEND_HELP = ("an installed backend (stay --version lists them); default: $STAY_BACKEND, else anthropic when "
                "ANTHROPIC_API_KEY is set, else offline")


class _Version(argparse.Action):
    """``stay --version``: stay's version, then one line per installed backend (its name,
    the distribution that declares it and that one's version)."""

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
    from stay.settings import registered_backends

    backends = tuple(registered_backends())  # names only: no backend is imported for --help
    parser = _Parser(prog="stay", description="Turn a course brief into a complete course.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print stay's version and each installed backend's, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _Parser(add_help=False)
    common.add_argument("--courses-dir", default="courses", metavar="DIR",
                        help="where courses live (default: courses)")
    common.add_argument("--prompts-dir", metavar="DIR",
                        help="the prompt templates and references (default: $STAY_PROMPTS_DIR, else the packaged "
                             "prompts/); an artefact whose stage's prompts changed is stale")
    helps = {
        "new": "create a course from a brief and stop at the design gate",
        "build": "build (or resume) a course: design, gate, plans, gate, wave, validate, repair",
        "plan": "plan every lesson; needs a holding design approval",
        "write": "write lessons, exercises, quizzes and the capstone; needs both approvals",
        "repair": "validate, then repair leaf artefacts in bounded rounds",
    }
    for name, text in helps.items():
        command = sub.add_parser(name, parents=[common], help=text, description=text)
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
        command.add_argument("--backend", choices=backends, help=BACKEND_HELP)
        command.add_argument("--answer-tokens", type=_positive, metavar="N", help=ANSWER_TOKENS_HELP)
        command.add_argument("--max-cost", type=_dollars, metavar="USD", help=MAX_COST_HELP)
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
    revise.add_argument("--backend", choices=backends, help=BACKEND_HELP)
    revise.add_argument("--answer-tokens", type=_positive, metavar="N", help=ANSWER_TOKENS_HELP)
    revise.add_argument("--max-cost", type=_dollars, metavar="USD", help=MAX_COST_HELP)
    approve = sub.add_parser("approve", parents=[common], help="answer a gate for a course")
    approve.add_argument("slug")
    # the gates are declared once, in the pipeline (stay.pipeline._gate_decl), which checks
    # the name: importing it here would slow every --help
    approve.add_argument("gate", metavar="GATE", help="the gate to answer, named as its gate page names it")
    approve.add_argument("--decline", action="store_true")
    approve.add_argument("--note", default="")
    approve.add_argument("--backend", choices=backends, help=JUDGED_HELP)
    for name, text in (("status", "what is missing, current, stale or edited, and why"),
                       ("adopt", "rebuild the hash ledger from the files of a course written elsewhere")):
        command = sub.add_parser(name, parents=[common], help=text)
        command.add_argument("slug")
        command.add_argument("--backend", choices=backends, help=JUDGED_HELP)
    estimate = sub.add_parser("estimate", parents=[common],
                              help="the calls a build would make and their cost range, made offline")
    estimate.add_argument("target", metavar="BRIEF-or-SLUG",
                          help="a brief YAML file (a fresh course), or the slug of a course in --courses-dir "
                               "(a rebuild: only what is missing or stale)")
    estimate.add_argument("--batch", action="store_true",
                          help="price the wave as `stay build --batch` sends it (one Message Batch, half price)")
    estimate.add_argument("--no-review", dest="review", action="store_false",
                          help="price `stay build --no-review`: no judging-model review of each lesson")
    estimate.add_argument("--backend", choices=backends, help="price the build this backend would make: its "
                          "models and its price table (a model it has no price for: unknown); " + BACKEND_HELP)
    watch = sub.add_parser("watch",
                           help="validate a course on every save; print only the defects made and fixed",
                           description="Watch a course's files (the optional extra: pip install -e '.[watch]'). "
                                       "On every save the course is validated and only the difference is printed: "
                                       "'+ <defect>' new, '- <defect>' fixed. Ctrl-C stops (exit 0).")
    watch.add_argument("slug")
    watch.add_argument("--courses-dir", default="courses", metavar="DIR", help="where courses live (default: courses)")
    init = sub.add_parser("init", help="write an example brief and a .gitignore for .runs/ to start from")
    init.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where (default: here)")
    init.add_argument("--example", metavar="NAME", help="which example brief (default: how-http-requests-travel; "
                                                        "`stay new --list-examples` lists them)")
    graph = sub.add_parser("graph", help="print the pipeline graph")
    graph.add_argument("--format", choices=("mermaid", "dot", "json"), default="mermaid")
    graph.add_argument("--prompts-dir", metavar="DIR",
                       help="derive each stage's references from this prompts directory's front matter (default: "
                            "$STAY_PROMPTS_DIR, else the packaged prompts/)")
    sub.add_parser("validate", help="check courses against the course format (see `stay validate`)",
                   add_help=False)
    from stay.scoring import evals_parser
    from stay.view import view_parser

    view_parser(sub)
    evals_parser(sub)
    return parser

ANSWER_TOKENS_HELP = ("every answer's room in tokens, thinking on top (default: STAY_ANSWER_TOKENS, else each "
                      "stage's own); a cut-off answer is asked once more with twice the room")


MAX_COST_HELP = ("US dollars this run may spend (default: STAY_MAX_COST, else no cap): a call whose worst case "
                 "would pass it is not made; the run stops there with exit 5, and a rerun pays nothing twice")


def _dollars(raw: str) -> float:
    """An amount of US dollars above 0, for argparse."""
    try:
        value = float(raw.removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw[:40]!r} is not an amount of US dollars (e.g. 2.50)") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, not {raw[:40]}")
    return value


def _positive(raw: str) -> int:
    """A whole number of at least 1, for argparse (which prints the error as a usage line)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw[:40]!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
