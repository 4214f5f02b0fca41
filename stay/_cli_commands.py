"""The ``stay`` command's handlers: each parsed command, run, and its result printed.

Split from ``stay.cli``, which turns what these raise into an exit code and one line
(``_command``); the parser they read is ``stay._cli_parser``. Every heavy import is
inside the handler that needs it: the module itself is as cheap as ``stay.cli``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from typing import TYPE_CHECKING

from stay._cli_parser import _parser
from stay.errors import EXIT_FAIL, EXIT_GATE, EXIT_OK, EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from stay.pipeline import BuildResult
    from stay.settings import Settings


def _dispatch(args: list[str]) -> int:
    parser = _parser()
    if not args:
        parser.print_help()
        return EXIT_USAGE
    ns = parser.parse_args(args)
    from stay import _secrets
    from stay.settings import secrets_from

    # every secret the environment holds, known before anything is written: the files'
    # writers cut out what the one-line error does, whether or not a command's settings
    # ever read that variable (OTEL_EXPORTER_OTLP_TRACES_HEADERS, another backend's key)
    _secrets.keep(secrets_from())
    if ns.command == "init":
        from stay._init import INIT_EXAMPLE, init

        print("\n".join(init(ns.directory, ns.example or INIT_EXAMPLE)))
        return EXIT_OK
    if ns.command == "new" and (ns.list_examples or ns.example is not None or ns.target is None):
        return _new_example(ns)
    if ns.command in ("new", "build", "plan", "write", "repair", "revise"):
        return _run(ns, _settings(ns))
    if ns.command in ("approve", "status", "adopt"):
        return _course_command(ns, _settings(ns))
    if ns.command == "evals":
        from stay.scoring import evals_main

        return evals_main(ns)
    if ns.command == "view":
        from stay.view import view_main

        return view_main(ns)
    if ns.command == "watch":
        from stay._watch import watch

        return watch(ns.slug, ns.courses_dir)
    if ns.command == "estimate":
        return _estimate(ns, _settings(ns))
    if ns.command == "graph":
        print(render_graph(ns.format, _settings(ns).prompts_dir), end="")
        return EXIT_OK
    parser.print_help()
    return EXIT_USAGE


def _new_example(ns: argparse.Namespace) -> int:
    """``stay new --list-examples``, ``stay new --example NAME``, or ``stay new`` given nothing."""
    from stay._init import example_lines, example_path

    if ns.list_examples:
        print("\n".join(example_lines()))
        return EXIT_OK
    if ns.example is None:
        raise UsageError("stay new needs a BRIEF.yaml, or --example NAME for a packaged one "
                         "(`stay new --list-examples` lists them; `stay init` writes one to edit)")
    if ns.target is not None:
        raise UsageError(f"give a BRIEF ({ns.target[:60]}) or --example {ns.example[:60]}, not both")
    ns.target = str(example_path(ns.example))
    return _run(ns, _settings(ns))


def _settings(ns: argparse.Namespace) -> Settings:
    """The environment, read once, with the command line's overrides."""
    from pathlib import Path

    from stay.settings import Settings

    prompts = getattr(ns, "prompts_dir", None)
    return Settings.from_env(backend=getattr(ns, "backend", None), prompts_dir=Path(prompts) if prompts else None,
                             answer_tokens=getattr(ns, "answer_tokens", None),
                             max_cost=getattr(ns, "max_cost", None))


def _course_command(ns: argparse.Namespace, settings: Settings) -> int:
    import stay.pipeline as pipeline

    if ns.command == "approve":
        fails = pipeline.approve(ns.slug, ns.gate, courses_dir=ns.courses_dir, decline=ns.decline, note=ns.note,
                                 settings=settings)
        said = f"{ns.slug}: the {ns.gate} gate is {'declined' if ns.decline else 'approved'}"
        if fails:  # a person may sign a FAIL, but not unaware of it
            import shlex

            where = shlex.quote(os.path.join(ns.courses_dir, ns.slug))
            said += f"; its files hold {len(fails)} FAIL: `stay validate {where}` lists them"
        print("\n".join([said, *(f"{ns.slug}: {line}" for line in fails.lines())]))
        return EXIT_OK
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


def _estimate(ns: argparse.Namespace, settings: Settings) -> int:
    """``stay estimate``: each stage's calls, tokens and cost range, and the whole range."""
    from stay.pipeline import estimate

    print("\n".join(estimate(ns.target, courses_dir=ns.courses_dir, settings=settings,
                             batch=ns.batch, review=ns.review).lines()))
    return EXIT_OK


def _run(ns: argparse.Namespace, settings: Settings) -> int:
    try:
        result = _result(ns, settings)
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


def _result(ns: argparse.Namespace, settings: Settings) -> BuildResult:
    from stay.pipeline import run_command

    if ns.command == "revise":
        from stay.pipeline import revise

        return revise(ns.slug, ns.targets, note=ns.note, courses_dir=ns.courses_dir, force=ns.force,
                      settings=settings, show=ns.show, keep=ns.keep)
    return run_command(ns.command, ns.target, courses_dir=ns.courses_dir, yes=getattr(ns, "yes", False),
                       slug=ns.slug, settings=settings, replay=ns.replay, batch=ns.batch,
                       screen=getattr(ns, "screen", True), review=getattr(ns, "review", True))


def _printed(ns: argparse.Namespace, result: BuildResult) -> int:
    """Print the result's summary; its exit code. A stop at the gate a command is declared
    to end at (``new`` at the design gate, ``plan`` at the plan gate) is where it always
    stops: done, exit 0; a stop short of its end (``build`` at a gate) is EXIT_GATE."""
    from stay.pipeline import DECLARATION

    print(result.summary(), end="")
    if result.stopped_at is not None:
        last = DECLARATION.commands[ns.command].last
        ends_at = [f"{gate.name} gate" for gate in DECLARATION.gates if last in gate.nodes]
        return EXIT_OK if result.stopped_at in ends_at else EXIT_GATE
    report = result.validation
    return EXIT_FAIL if report is not None and report.fails else EXIT_OK


def render_graph(fmt: str, prompts_dir: str | os.PathLike[str] | None = None) -> str:
    """The pipeline graph as Mermaid, DOT or node-link JSON, with the references each
    stage reads (derived from ``prompts_dir``'s front matter): a node attribute in JSON, a
    comment line per stage in Mermaid and DOT."""
    import networkx as nx

    from stay.pipeline import graph
    from stay.stages import Prompts

    pipeline = graph(Prompts.load(prompts_dir) if prompts_dir is not None else None)
    reads = [f"references of {stage}: {', '.join(refs)}" for _name, attrs in pipeline.nodes(data=True)
             for stage, refs in attrs.get("references", {}).items()]
    if fmt == "json":
        import dataclasses

        data = nx.node_link_data(pipeline, edges="edges")
        data["graph"] = {"name": pipeline.graph["name"],
                         "commands": {name: dataclasses.asdict(command)
                                      for name, command in pipeline.graph["commands"].items()}}
        return json.dumps(data, indent=2, sort_keys=True, default=list) + "\n"
    shapes = {"gate-ask": ("{{", "}}"), "router": ("{", "}"), "guard": ("[/", "/]"),
              "wave": ("[[", "]]"), "barrier": ("[(", ")]")}
    if fmt == "mermaid":
        lines = ["flowchart TD"]
        for name, attrs in pipeline.nodes(data=True):
            left, right = shapes.get(attrs["kind"], ("[", "]"))
            lines.append(f'    {name}{left}"{name}<br/>{attrs["kind"]}"{right}')
        lines += [f"    {a} --> {b}" for a, b in pipeline.edges]
        lines += [f"    %% {line}" for line in reads]
        return "\n".join(lines) + "\n"
    lines = ["digraph stay {", "  rankdir=TB;"]
    for name, attrs in pipeline.nodes(data=True):
        shape = {"gate-ask": "diamond", "router": "diamond", "wave": "box3d"}.get(attrs["kind"], "box")
        lines.append(f'  {name} [label="{name}\\n{attrs["kind"]}", shape={shape}];')
    lines += [f"  {a} -> {b};" for a, b in pipeline.edges]
    lines += [f"  // {line}" for line in reads]
    return "\n".join(lines) + "\n}\n"
