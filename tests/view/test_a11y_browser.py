"""Every page the viewer writes, checked for accessibility in headless Chromium.

axe-core (the npm package package-lock.json pins; ``npm ci`` at the repository's root
installs it, and .ci/run does) is injected into each page and run with the WCAG 2.1 A
and AA rules; every violation is listed with its rule and element. The pages come
from test_layout_browser.py's ``rendered_sites`` (every .html of the sample, a damaged,
a hostile and a stale course, and the eval report pages), so a page added later is checked too.
Locally the tests skip without axe-core, naming the command; under CI they fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.view.sites import every_page
from tests.view.test_browser import _missing, browser, serve  # noqa: F401  (the module's fixtures)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
"""axe-core's tags for the rules of WCAG 2.0 and 2.1, levels A and AA."""

RUN_AXE = """async tags => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return result.violations.flatMap(v => v.nodes.map(n => `${v.id} (${v.impact}): ${n.target.join(" ")}`));
}"""

LANDMARKS = """() => ({
  h1: document.querySelectorAll("h1").length,
  banner: document.querySelectorAll("body > header").length,
  main: document.querySelectorAll("main").length,
  contentinfo: document.querySelectorAll("body > footer").length,
  // a page of sections has a named navigation; a one-message page (a refused comparison) needs none
  nav: document.querySelectorAll("nav[aria-label]").length === document.querySelectorAll("nav").length
       && (document.querySelectorAll("nav").length > 0 || document.querySelectorAll("h2").length < 2),
  unlabelled: [...document.querySelectorAll("input, select, textarea, button")]
      .filter(c => c.type !== "hidden" && !(c.labels && c.labels.length) && !c.getAttribute("aria-label")
                   && !c.getAttribute("aria-labelledby") && !(c.tagName === "BUTTON" && c.textContent.trim()))
      .map(c => c.outerHTML.slice(0, 80)),
})"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        _missing(f"axe-core is not installed ({AXE.relative_to(ROOT)}): run `npm ci` in {ROOT}")
    return AXE.read_text(encoding="utf-8")


@pytest.mark.parametrize(("scheme", "width"), [("light", 390), ("dark", 1280)])
def test_every_page_passes_axe_cores_wcag_21_aa_rules(browser: Any, serve: Any, rendered_sites: Path,  # noqa: F811
                                                      axe_source: str, scheme: str, width: int) -> None:
    """On a phone (where tables and code scroll in their boxes, so those must take focus)
    in the light scheme, and on a desktop in the dark one (the other palette's contrast)."""
    base = serve(rendered_sites)
    # the pages' CSP allows only their own scripts: this context lets the test inject axe
    context = browser.new_context(bypass_csp=True, color_scheme=scheme, viewport={"width": width, "height": 900})
    page = context.new_page()
    violations = []
    pages = every_page(rendered_sites)
    for name in pages:
        page.goto(base + name)
        page.add_script_tag(content=axe_source)
        violations += [f"{name}: {v}" for v in page.evaluate(RUN_AXE, WCAG21_AA)]
    context.close()
    assert violations == [], f"{len(violations)} axe violations ({scheme}, {width} px) on {len(pages)} pages"


def test_every_page_has_one_h1_its_landmarks_and_labelled_controls(browser: Any, serve: Any,  # noqa: F811
                                                                    rendered_sites: Path) -> None:
    base = serve(rendered_sites)
    page = browser.new_page()
    wrong = {}
    for name in every_page(rendered_sites):
        page.goto(base + name)
        found = page.evaluate(LANDMARKS)
        expected = {"h1": 1, "banner": 1, "main": 1, "contentinfo": 1, "nav": True, "unlabelled": []}
        if found != expected:
            wrong[name] = {key: value for key, value in found.items() if value != expected[key]}
    page.close()
    assert wrong == {}


@pytest.mark.parametrize("name", ["sample/m01-l01.html", "reports/compare.html"])
def test_keyboard_focus_is_visible(browser: Any, serve: Any, rendered_sites: Path, name: str) -> None:  # noqa: F811
    """Tabbing through the page, every focused element draws an outline of at least 2 px
    (Chromium's own focus ring is a 1 px "auto" outline, thin on a busy page)."""
    page = browser.new_page()
    page.goto(serve(rendered_sites) + name)
    seen = []
    for _ in range(12):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
            return [e.tagName + (e.className ? "." + e.className : ""), s.outlineStyle, parseFloat(s.outlineWidth)]; }"""))
    page.close()
    assert [s for s in seen if s[0] != "BODY"], seen  # something took focus
    assert [s for s in seen if s[1] in ("none", "auto") or s[2] < 2] == []
