"""What ``memharness github comment`` takes from its options and the workflow's environment, checked before any use.

Before round 20 ``--repo``, ``--api`` and ``--report-url`` were taken as given (only "holds a slash" and "starts with
http" were asked, and only on a pull request): ``--report-url 1e309`` or one holding a line separator went into the
comment's Markdown link, and ``--repo`` with a control character into the API's URL.
"""

from __future__ import annotations

import re
from typing import Final

_REPO: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
"""GitHub's OWNER/REPO: an owner of letters, digits and inner hyphens (at most 39), a repository name of letters,
digits, ``.``, ``_`` and ``-`` (at most 100)."""


def http_url_problem(text: str) -> str | None:
    """Why ``text`` is not an ``http://`` or ``https://`` URL with a host and no spaces or control characters, or
    ``None``."""
    from urllib.parse import urlsplit

    expected = "expected an http:// or https:// URL"
    if any(c.isspace() or not c.isprintable() for c in text):
        return f"{expected} (no spaces or control characters)"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return expected
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return expected
    return None


def repo_problem(text: str) -> str | None:
    """Why ``text`` is not a GitHub ``OWNER/REPO``, or ``None``."""
    if _REPO.fullmatch(text) is None or text.endswith("/.") or text.endswith("/.."):
        return "expected OWNER/REPO (letters, digits, '-' in the owner; also '.' and '_' in the repository's name)"
    return None
