"""The course viewer and the report pages: read-only static HTML, rendered offline.

    >>> from stay.view import render_course
    >>> render_course("courses/how-http-requests-travel", "site/how-http-requests-travel")

``build_site`` returns every file of a course's site in memory (same course, same
bytes); ``render_course`` writes them to a directory outside the course;
``render_library`` renders every course of a courses directory and a listing of them. The report
pages (``render_compare_html``, ``render_run_summary_html``) turn eval results into
one self-contained HTML page each (``stay.scoring.compare_page`` maps the result of
``stay evals compare`` onto the comparison page's rows). Nothing here writes into a course or fetches
anything from a network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stay._lazy import lazy_names

# Names are imported on first use: ``stay --help`` builds the parser from
# stay.view._cli, and must not pay for Jinja2, markdown-it and Pygments.
_EXPORTS = {
    "CompareHeader": "stay.view._reports", "Interval": "stay.view._reports", "ItemDiffRow": "stay.view._reports",
    "MeanError": "stay.view._reports",
    "ScorerRow": "stay.view._reports", "render_compare_html": "stay.view._reports",
    "render_run_summary_html": "stay.view._reports", "render_compare_refused_html": "stay.view._reports",
    "PAIR_KINDS": "stay.view._compare_detail", "BuildMeans": "stay.view._compare_detail",
    "CompareDetail": "stay.view._compare_detail", "ItemPair": "stay.view._compare_detail",
    "ItemSide": "stay.view._compare_detail", "PromptFile": "stay.view._compare_detail",
    "RunCost": "stay.view._compare_detail", "ScorerPairs": "stay.view._compare_detail",
    "LessonText": "stay.view._compare_detail", "dollars": "stay.view._compare_detail",
    "build_site": "stay.view._site",
    "default_out_dir": "stay.view._site", "render_course": "stay.view._site", "write_site": "stay.view._site",
    "view_parser": "stay.view._cli", "view_main": "stay.view._cli",
    "build_library": "stay.view._library", "render_library": "stay.view._library",
}

__all__ = [
    "PAIR_KINDS", "BuildMeans", "CompareDetail", "CompareHeader", "Interval", "ItemDiffRow", "ItemPair", "ItemSide",
    "LessonText", "MeanError", "PromptFile", "RunCost", "ScorerPairs", "ScorerRow", "build_library", "build_site",
    "default_out_dir", "dollars", "render_compare_html", "render_compare_refused_html", "render_course",
    "render_library", "render_run_summary_html", "view_main", "view_parser", "write_site",
]

if TYPE_CHECKING:
    from stay.view._cli import view_main, view_parser
    from stay.view._compare_detail import (
        PAIR_KINDS,
        BuildMeans,
        CompareDetail,
        ItemPair,
        ItemSide,
        LessonText,
        PromptFile,
        RunCost,
        ScorerPairs,
        dollars,
    )
    from stay.view._library import build_library, render_library
    from stay.view._reports import (
        CompareHeader,
        Interval,
        ItemDiffRow,
        MeanError,
        ScorerRow,
        render_compare_html,
        render_compare_refused_html,
        render_run_summary_html,
    )
    from stay.view._site import build_site, default_out_dir, render_course, write_site


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)
