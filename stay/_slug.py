"""Course slugs, stdlib only: ``stay.briefs`` makes and checks them with these. The
format's limits are also declared with the artefact ids (``stay.artefacts``, which
imports nothing of ours); a test holds the two equal."""

from __future__ import annotations

import re
import unicodedata

SLUG_MAX = 60
SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def slugify(title: str) -> str:
    """A course slug from a title: lowercase ASCII words joined by hyphens, at most 60;
    ``course`` for a title with none (``title_words`` tells the two apart)."""
    return title_words(title) or "course"


def title_words(title: str) -> str:
    """The slug a title's ASCII words make, or ``""`` when it has none (a title in a
    non-Latin script: the stdlib cannot transliterate it, and no library for it is a
    dependency of stay)."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = ""
    for word in re.findall(r"[a-z0-9]+", ascii_text.lower()):
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > SLUG_MAX:
            break
        slug = candidate
    return slug


def is_slug(name: str) -> bool:
    """Whether ``name`` is a course slug (and so can never name a path outside the courses
    directory)."""
    return len(name) <= SLUG_MAX and SLUG_PATTERN.fullmatch(name) is not None
