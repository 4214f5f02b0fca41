"""Course slugs: one slugify for the pipeline and the no-op record, and the light slug
module's limits equal to those the artefact ids declare."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import stay.artefacts as _ids
import stay.briefs
from stay import _slug


def test_the_light_module_declares_the_formats_limits() -> None:
    assert _slug.SLUG_MAX == _ids.SLUG_MAX
    assert _slug.SLUG_PATTERN.pattern == _ids.SLUG_PATTERN.pattern
    assert stay.briefs.slugify is _slug.slugify  # one function, not a copy


@given(st.text(max_size=120))
def test_every_slug_made_is_a_slug_and_is_accepted(title: str) -> None:
    slug = _slug.slugify(title)
    assert _slug.is_slug(slug)
    assert stay.briefs.check_slug(slug) == slug


@given(st.text(max_size=80))
def test_is_slug_agrees_with_the_artefacts_check(name: str) -> None:
    accepted = len(name) <= _ids.SLUG_MAX and _ids.SLUG_PATTERN.fullmatch(name) is not None
    assert _slug.is_slug(name) == accepted
