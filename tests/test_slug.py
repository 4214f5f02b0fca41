"""Course slugs: every slug slugify makes is accepted, and check_slug accepts exactly the
artefact ids' slugs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stay.artefacts
import stay.briefs
from stay.errors import UsageError


@given(st.text(max_size=120))
def test_every_slug_made_is_a_slug_and_is_accepted(title: str) -> None:
    slug = stay.briefs.slugify(title)
    assert stay.briefs.check_slug(slug) == slug


@given(st.text(max_size=80))
def test_check_slug_agrees_with_the_artefacts_check(name: str) -> None:
    accepted = len(name) <= stay.artefacts.SLUG_MAX and stay.artefacts.SLUG_PATTERN.fullmatch(name) is not None
    if accepted:
        assert stay.briefs.check_slug(name) == name
    else:
        with pytest.raises(UsageError):
            stay.briefs.check_slug(name)
