"""The course viewer, its LMS packages and the eval report pages: read-only static HTML, rendered offline
(same course, same bytes). ``build_site`` returns a course's site in memory, ``render_course`` writes it
outside the course, ``render_library`` every course and a listing. Nothing here writes into a course."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stay._lazy import lazy_package

# imported on first use: ``stay --help`` builds the parser from stay.view._cli, without Jinja2 or Pygments
if TYPE_CHECKING:
    from stay.view._cli import export_main as export_main
    from stay.view._cli import export_parser as export_parser
    from stay.view._cli import view_main as view_main
    from stay.view._cli import view_parser as view_parser
    from stay.view._export import build_package as build_package
    from stay.view._export import export as export
    from stay.view._reports import PAIR_KINDS as PAIR_KINDS
    from stay.view._reports import BuildMeans as BuildMeans
    from stay.view._reports import CompareDetail as CompareDetail
    from stay.view._reports import CompareHeader as CompareHeader
    from stay.view._reports import Interval as Interval
    from stay.view._reports import ItemDiffRow as ItemDiffRow
    from stay.view._reports import ItemPair as ItemPair
    from stay.view._reports import ItemSide as ItemSide
    from stay.view._reports import LessonText as LessonText
    from stay.view._reports import MeanError as MeanError
    from stay.view._reports import PromptFile as PromptFile
    from stay.view._reports import RunCost as RunCost
    from stay.view._reports import ScorerPairs as ScorerPairs
    from stay.view._reports import ScorerRow as ScorerRow
    from stay.view._reports import dollars as dollars
    from stay.view._reports import render_compare_html as render_compare_html
    from stay.view._reports import render_compare_refused_html as render_compare_refused_html
    from stay.view._reports import render_run_summary_html as render_run_summary_html
    from stay.view._site import build_library as build_library
    from stay.view._site import build_site as build_site
    from stay.view._site import default_out_dir as default_out_dir
    from stay.view._site import render_course as render_course
    from stay.view._site import render_library as render_library
    from stay.view._site import write_site as write_site

__getattr__, __dir__, __all__ = lazy_package(__name__, __file__)
