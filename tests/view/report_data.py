"""Hand-made comparison data in the shape stay.view._reports defines: the report pages
are tested against it while the statistics that will fill it are being written."""

from __future__ import annotations

from stay.view import CompareHeader, Interval, ItemDiffRow, ScorerRow

HEADER = CompareHeader(
    baseline_label="baseline", candidate_label="candidate-shorter-prompts",
    judge="model:claude-sonnet-5-5", judge_model="claude-sonnet-5-5", backend="anthropic",
    baseline_models={"planning": "claude-opus-5-5", "writing": "claude-sonnet-5-5", "judging": "claude-sonnet-5-5"},
    candidate_models={"planning": "claude-opus-5-5", "writing": "claude-haiku-5-5", "judging": "claude-sonnet-5-5"},
    alpha=0.05, power=0.8, test="exact sign test on paired items", adjustment="Holm",
)

ROWS = [
    ScorerRow("distractor_quality", 0.82, Interval(0.78, 0.86), 0.71, Interval(0.66, 0.76), -0.11,
              Interval(-0.16, -0.06), 0.0004, 0.0016, 0.05, "worse", pairs=240),
    ScorerRow("outcome_coverage", 0.91, Interval(0.87, 0.94), 0.93, Interval(0.90, 0.96), 0.02,
              Interval(-0.02, 0.06), 0.41, 0.82, 0.06, "no detectable difference", pairs=180),
    ScorerRow("exercise_alignment", 0.64, Interval(0.57, 0.71), 0.77, Interval(0.71, 0.83), 0.13,
              Interval(0.05, 0.21), 0.003, 0.009, 0.09, "better", pairs=96),
    ScorerRow("rubric_specificity", None, None, 0.5, Interval(0.3, 0.7), None, None, None, None, None,
              "not compared: no pairs", pairs=0),
]

ITEMS = [
    ItemDiffRow("distractor_quality", "how-http-requests-travel", "m01-l01-q1 option 2", 1.0, 0.0,
                "embodies the misconception", "the distractor is obviously wrong <b>without</b> a misconception"),
    ItemDiffRow("exercise_alignment", "sql-window-functions", "m02-l01-e1", 0.0, 1.0,
                "asks to recall, not to apply", "asks the learner to apply the frame clause",
                baseline_item="m02-l01-e2"),
    ItemDiffRow("outcome_coverage", "how-http-requests-travel", "m01-l01-o1", 1.0, 1.0, "quoted", "quoted"),
    ItemDiffRow("outcome_coverage", "how-http-requests-travel", "m01-l01-o4", None, 1.0, "", "new outcome"),
]
