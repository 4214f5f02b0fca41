"""What a run returns: ``BuildResult``, with the lines the command line prints and the
tables a notebook shows (``_repr_html_``, ``_repr_markdown_``): where the run stopped and
why, the defects by owner, the tokens and the cost, per stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stay._display import Table, html_block, markdown_block, plural
from stay.models import Usage, describe_cost
from stay.pipeline._fix import Change
from stay.pipeline._repair import RepairReport
from stay.pipeline._wave import WaveStats
from stay.validate import OWNER_HEAD, CourseReport, Defect, owner_rows


def tokens_of(usage: Usage) -> str:
    """Tokens as the summary says them."""
    return (f"{usage.input_tokens} input, {usage.cache_creation_input_tokens} cache-write, "
            f"{usage.cache_read_input_tokens} cache-read, {usage.output_tokens} output tokens")


@dataclass(frozen=True)
class Spent:
    """What a run has paid, in total and per stage: what its summary's ``usage:`` lines
    say, for a run that went to the end and for one that failed or was interrupted."""

    calls: int
    usage: Usage
    cost: float | None
    """US dollars; None (unknown) when a call used a model with no price on file."""
    unpriced: tuple[str, ...] = ()
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    cost_by_stage: dict[str, float] = field(default_factory=dict)
    calls_by_stage: dict[str, int] = field(default_factory=dict)

    def lines(self, *, so_far: bool = False) -> list[str]:
        """``usage: N calls; tokens; cost``, then one line per stage that called a model;
        ``so_far`` for a run that did not end (what it paid before it stopped)."""
        total = describe_cost(self.cost, set(self.unpriced)) + (" so far" if so_far else "")
        lines = [f"usage: {plural(self.calls, 'call')}; {tokens_of(self.usage)}; {total}"]
        for stage, usage in sorted(self.usage_by_stage.items()):
            price = self.cost_by_stage.get(stage)
            # a stage's priced calls only: with an unpriced model its sum would look complete
            paid = "cost unknown" if price is None or self.unpriced else f"${price:.4f}"
            lines.append(f"usage: {stage}: {plural(self.calls_by_stage.get(stage, 0), 'call')}; "
                         f"{tokens_of(usage)}; {paid}")
        return lines


SPENT = "stay_spent"
"""The attribute a failed or interrupted run's exception carries its ``Spent`` under."""


def spent_of(error: BaseException) -> Spent | None:
    """What the run that raised ``error`` had paid when it stopped, if a run raised it."""
    spent = getattr(error, SPENT, None)
    return spent if isinstance(spent, Spent) else None


@dataclass(frozen=True)
class BuildResult:
    """Where a run stopped and why, what it wrote, and the validation report."""

    slug: str
    course_dir: Path
    command: str
    stopped_at: str | None
    """None when the run went to the end; else where it waits, e.g. 'design gate'."""
    reason: str
    validation: CourseReport | None
    repair: RepairReport | None
    written: tuple[str, ...]
    calls: int
    """Model calls this run made (0 when nothing was missing or stale)."""
    usage: Usage
    wave: WaveStats | None = None
    """Lessons, calls and the most in flight at each level, when a wave ran."""
    trace_id: str = ""
    """The id of this run's trace in <course>/.runs/traces/."""
    cost: float | None = 0.0
    """US dollars this run paid, from stay.models.PRICES (a replayed answer costs nothing;
    a batched one, half); None (unknown) when a call used a model with no price on file."""
    usage_by_stage: dict[str, Usage] | None = None
    retired: tuple[str, ...] = ()
    """Files no longer in the curriculum, moved to .state/retired/run-<n>/ by this run."""
    unpriced: tuple[str, ...] = ()
    """Models this run used that have no price on file (then ``cost`` is None)."""
    cost_by_stage: dict[str, float] | None = None
    """US dollars per stage (priced calls only; see ``unpriced``)."""
    unresolved: tuple[Defect, ...] = ()
    """FAILs the check at the write left in the design files and plans this run wrote,
    after asking the model once more: what the gate's reviewer must see."""
    calls_by_stage: dict[str, int] | None = None
    """Model calls per stage (a billed call that failed is counted too)."""
    diff: str = ""
    """``revise --show``: the unified diff each proposal would make (nothing was written)."""
    not_reviewed: str = ""
    """Why no lesson was reviewed by the judging model (the offline backend, ``--no-review``);
    '' when the review ran where a lesson needed it."""

    @property
    def spent(self) -> Spent:
        return Spent(self.calls, self.usage, self.cost, self.unpriced, dict(self.usage_by_stage or {}),
                     dict(self.cost_by_stage or {}), dict(self.calls_by_stage or {}))

    def unresolved_by_file(self) -> dict[str, tuple[str, ...]]:
        """File -> the codes of its unresolved FAILs, in report order."""
        found: dict[str, tuple[str, ...]] = {}
        for defect in self.unresolved:
            found[defect.path] = (*found.get(defect.path, ()), defect.code)
        return found

    @property
    def complete(self) -> bool:
        return self.stopped_at is None

    @property
    def outcome(self) -> str:
        """One line: where the run stopped and why, or that it went to the end."""
        if self.stopped_at is not None:
            return f"stopped at the {self.stopped_at}: {self.reason}"
        return "complete" if self.reason == "done" else self.reason

    def tokens(self) -> str:
        return tokens_of(self.usage)

    def summary(self) -> str:
        """What ``stay build`` prints on stdout: the course, the usage and cost, then where
        the run stopped, or the validation and repair results."""
        lines = [f"{self.slug}: {self.course_dir}", *self.spent.lines()]
        lines += [f"unresolved at the write: {path}: {', '.join(codes)}"
                  for path, codes in self.unresolved_by_file().items()]
        if self.stopped_at is not None:
            lines.append(self.outcome)
            return "\n".join(lines) + "\n"
        if self.diff:  # revise --show: what the proposals would change, before what to do with them
            lines.append(self.diff.rstrip("\n"))
        if self.reason != "done":  # what plan and revise did, and the command to run next
            lines.append(self.reason)
        report = self.validation
        if report is not None:
            lines.append(f"validation: {report.fails} FAIL, {report.warns} WARN ({plural(report.checks, 'check')})")
            if self.not_reviewed:  # never a pass it did not make
                lines.append(f"review: not run, so no lesson was reviewed ({self.not_reviewed})")
            if self.repair is not None:
                lines.append(f"repair: stopped because {self.repair.stop}")
                lines += [f"repair: round {n}: {change.path}: {change.describe()}"
                          for n, change in self._least_kept()]
        return "\n".join(lines) + "\n"

    # -- in a notebook -------------------------------------------------------------------

    def _display(self) -> tuple[str, list[Table], str]:
        """A summary line, the tables (the run; defects by owner; usage and cost by stage)
        and a closing line."""
        head = f"stay {self.command} {self.slug}: {self.outcome}"
        run: list[tuple[object, ...]] = [
            ("course", str(self.course_dir)),
            ("model calls", self.calls),
            ("files written", len(self.written)),
            ("tokens", self.tokens()),
            ("cost", describe_cost(self.cost, set(self.unpriced))),
        ]
        if self.retired:
            run.append(("files retired", len(self.retired)))
        if self.wave is not None:
            run.append(("wave", f"{plural(self.wave.lessons, 'lesson')}, {plural(self.wave.calls, 'call')} "
                                f"in {self.wave.seconds:.1f} s"))
        if self.trace_id:
            run.append(("trace", self.trace_id))
        if self.not_reviewed:
            run.append(("review", f"not run ({self.not_reviewed})"))
        tables: list[Table] = [(("run", "value"), run, set())]
        report = self.validation
        tail = "Not validated: the run stopped before the validator." if report is None else ""
        if report is not None:
            run.append(("validation", f"{report.fails} FAIL, {report.warns} WARN, {plural(report.checks, 'check')}"))
            owners = owner_rows(report.defects)
            if owners:
                tables.append((OWNER_HEAD, owners, {1, 2}))
            else:
                tail = "No defects."
        if self.repair is not None:
            rounds = len(self.repair.rounds)
            run.append(("repair", f"{plural(rounds, 'round')}, stopped because {self.repair.stop}; "
                                  f"{plural(len(self.repair.unrepaired), 'defect')} left"))
        if self.unresolved:
            tables.append((("file", "unresolved at the write"),
                           [(path, ", ".join(codes)) for path, codes in self.unresolved_by_file().items()], set()))
        if self.repair is not None and any(r.changes for r in self.repair.rounds):
            tables.append((("round", "repaired file", "lines kept", "of", "share"),
                           [(n, c.path, c.kept, c.lines, f"{c.share:.0%}")
                            for n, r in enumerate(self.repair.rounds, 1) for c in r.changes], {0, 2, 3, 4}))
        stages = self.usage_by_stage or {}
        if stages:
            costs = self.cost_by_stage or {}
            rows: list[tuple[object, ...]] = [
                (stage, u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens, u.output_tokens,
                 f"${costs[stage]:.4f}" if stage in costs else "unknown")
                for stage, u in sorted(stages.items())]
            tables.append((("stage", "input", "cache writes", "cache reads", "output", "cost"), rows,
                           {1, 2, 3, 4, 5}))
        return head, tables, tail

    def _least_kept(self) -> list[tuple[int, Change]]:
        """Per repair round, the file that kept the smallest share of its lines: the one
        line a terminal shows of what repair changed (the table and the run log, all)."""
        rounds = self.repair.rounds if self.repair is not None else ()
        return [(n, r.least_kept) for n, r in enumerate(rounds, 1) if r.least_kept is not None]

    def _repr_html_(self) -> str:
        """The run in a notebook: its outcome, defects by owner, usage and cost by stage."""
        return html_block("stay-build-result", *self._display())

    def _repr_markdown_(self) -> str:
        return markdown_block(*self._display())


__all__ = ["BuildResult", "Spent", "spent_of"]
