"""One bounded HTTP exchange for the harness's own clients (``github comment``, ``record``'s endpoint check).

A server the harness talks to may answer anything: a status line that is no HTTP, a body cut short, bytes that are
not UTF-8, JSON nested past the parser's depth, or a byte every few seconds for ever. ``urlopen``'s timeout bounds
each socket read, not the answer, and http.client raises exceptions that are neither ``URLError`` nor ``OSError``
(``BadStatusLine``, ``IncompleteRead``): each reached the user as ``internal error`` (hostile probe, round 12).
Here every outcome is a value or one ``HarnessError`` line, within ``timeout`` seconds in all.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Final

from harness.errors import HarnessError, one_line

MAX_ANSWER_BYTES: Final = 16 << 20
"""An answer longer than this is refused (a GitHub comments page is about 100 KB)."""


@dataclass(frozen=True)
class Words:
    """What each outcome says after ``<what>: `` (``traces push`` speaks of "the backend")."""

    status: str = "HTTP {code} {reason}"
    unreachable: str = "{reason}"
    not_http: str = "the answer is not HTTP ({detail})"
    late: str = "no whole answer within {timeout:g} s"


PUSH_WORDS: Final = Words(status="the backend answered HTTP {code} ({reason})",
                          unreachable="cannot reach the backend ({reason})",
                          not_http="the backend's answer is not HTTP ({detail})",
                          late="the backend did not answer a batch within {timeout:g} s")


def fetch(request: urllib.request.Request | str, *, timeout: float, what: str,
          limit: int = MAX_ANSWER_BYTES, words: Words = Words()) -> bytes:
    """The body of the answer, or ``HarnessError('<what>: <why>')``: an HTTP error status, no connection, a reply
    that is no HTTP, a body over ``limit`` bytes, or no whole answer within ``timeout`` seconds (``traces push`` held
    for ever by a backend trickling a byte every half second: round 10; the other clients: round 12)."""
    done: list[bytes | HarnessError] = []

    def exchange() -> None:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read(limit + 1)
            done.append(body if len(body) <= limit else HarnessError(f"{what}: the answer is over {limit} bytes"))
        except urllib.error.HTTPError as exc:
            done.append(HarnessError(f"{what}: " + words.status.format(code=exc.code,
                                                                       reason=one_line(str(exc.reason))[:200])))
        except (urllib.error.URLError, OSError) as exc:
            reason = one_line(str(getattr(exc, "reason", None) or exc))[:200]
            done.append(HarnessError(f"{what}: " + words.unreachable.format(reason=reason)))
        except Exception as exc:  # http.client's BadStatusLine, IncompleteRead, LineTooLong, …; a bad URL's ValueError
            detail = f"{type(exc).__name__}: {one_line(str(exc).strip())[:200]}"
            done.append(HarnessError(f"{what}: " + words.not_http.format(detail=detail)))

    worker = threading.Thread(target=exchange, name="memharness-http", daemon=True)  # left behind only on a timeout
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or not done:
        raise HarnessError(f"{what}: " + words.late.format(timeout=timeout))
    if isinstance(done[0], HarnessError):
        raise done[0]
    return done[0]


def fetch_json(request: urllib.request.Request | str, *, timeout: float, what: str) -> Any:
    """The answer as JSON (an empty body is None), or one ``HarnessError`` line saying why not."""
    body = fetch(request, timeout=timeout, what=what)
    try:
        text = body.decode("utf-8")
        return json.loads(text) if text.strip() else None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{what}: the answer is not UTF-8 (byte 0x{body[exc.start]:02x} at {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else one_line(str(exc))[:120]
        raise HarnessError(f"{what}: the answer is not JSON ({reason})") from None
