"""``memharness github comment``: one pull-request comment with a run's verdict, created once and updated after.

The repository's ``action.yml`` runs the suite on a pull request and on its base branch, compares the two, and calls
this to post the run's ``summary.md`` (the verdict, the metric table, the verdict against the base branch, what
flipped) as a comment on the pull request. The comment carries a hidden marker, so a later run updates the same
comment instead of adding one per push. It talks to the GitHub REST API with the workflow's token
(``GITHUB_TOKEN``), through ``urllib`` only; every failure is one line.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from harness.errors import Duplicate, HarnessError, one_line, too_deep, unique_members, unreadable_json

MARKER: Final = "<!-- memharness:verdict -->"
"""The hidden first line of the comment: how a later run finds the comment to update."""
MAX_BODY: Final = 65_000
"""GitHub refuses comment bodies over 65,536 characters: a longer summary is cut, with a pointer to the report."""


def pull_number(event_path: Path) -> int | None:
    """The pull request number of a workflow event (``pull_request`` / ``pull_request_target``), or None."""
    try:
        event = json.loads(text := _read(event_path), object_pairs_hook=unique_members)
    except RecursionError:
        raise HarnessError(too_deep(event_path, text, "file: cannot read the GitHub event")) from None
    except Duplicate as exc:  # round 20: the last of two "number" members was the pull request commented on
        raise HarnessError(unreadable_json(event_path, text, "file: cannot read the GitHub event", exc)) from None
    except ValueError as exc:  # its line named, as every file's error (round 12)
        raise HarnessError(f"{one_line(str(event_path))}:{getattr(exc, 'lineno', 1)}: file: cannot read the GitHub "
                           f"event ({type(exc).__name__}: {one_line(str(exc))[:200]})") from None
    pr = event.get("pull_request") if isinstance(event, dict) else None
    number = pr.get("number") if isinstance(pr, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None


def _read(path: Path) -> str:
    """A regular UTF-8 file the run or the workflow wrote: a FIFO, a device or a directory is refused without
    blocking, bytes that are not UTF-8 name the line (never an internal error)."""
    from harness.scenario._limits import MAX_RUN_FILE_BYTES
    from harness.scenario._yaml import decode_utf8, read_regular

    return decode_utf8(read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError), path, HarnessError)


def comment_body(run_dir: Path, *, report_url: str = "") -> str:
    """The comment: the marker, then the run's summary.md (cut to GitHub's limit, saying where the rest is).
    summary.md is posted only when it is what the run's checked records (``read_run``: summary.json, results.jsonl,
    traces.jsonl) render: an edited, truncated or swapped one is refused, naming its first line that differs."""
    summary = _read(run_dir / "summary.md")
    _check_summary(run_dir / "summary.md", summary)
    where = f" ([report]({report_url}))" if report_url else " (the full report is in the workflow's artifacts)"
    if len(summary) > MAX_BODY:
        summary = summary[:MAX_BODY].rsplit("\n", 1)[0] + f"\n\n… cut at {MAX_BODY} characters{where}\n"
    elif report_url:
        summary += f"\n[Full report]({report_url})\n"
    return f"{MARKER}\n{summary}"


def _check_summary(path: Path, text: str) -> None:
    from harness.reporting import read_run, summary_markdown

    records, results, _ = read_run(path.parent)  # its own errors name their file, line and field
    rendered = summary_markdown(records, results)
    if text != rendered:
        ours, theirs = text.splitlines(), rendered.splitlines()
        pairs = enumerate(zip(ours, theirs, strict=False))
        line = next((i for i, (a, b) in pairs if a != b), min(len(ours), len(theirs))) + 1
        raise HarnessError(f"{one_line(str(path))}:{line}: file: is not what the run's summary.json and results.jsonl "
                           "say (edited or from another run); it is not posted as the run's verdict")


def upsert_comment(api: str, repo: str, number: int, body: str, token: str, *, timeout: float = 30.0) -> tuple[str, int]:
    """Update the pull request's memharness comment, or create it: ("updated" | "created", comment id)."""
    base = f"{api.rstrip('/')}/repos/{repo}/issues"
    mine = None
    page = 1
    while mine is None:
        url = f"{base}/{number}/comments?per_page=100&page={page}"
        comments = _call("GET", url, token, None, timeout)
        if not isinstance(comments, list) or not comments:
            break
        mine = next((c for c in comments if isinstance(c, dict) and isinstance(c.get("body"), str)
                     and c["body"].startswith(MARKER)), None)
        page += 1
        if page > 50:  # 5,000 comments: enough
            break
    if mine is not None:
        ident = _comment_id(mine, f"GitHub API GET {url}")
        _call("PATCH", f"{base}/comments/{ident}", token, {"body": body}, timeout)
        return "updated", ident
    done = _call("POST", f"{base}/{number}/comments", token, {"body": body}, timeout)
    return "created", _comment_id(done, f"GitHub API POST {base}/{number}/comments") \
        if isinstance(done, dict) and "id" in done else 0


def _comment_id(comment: dict[str, Any], what: str) -> int:
    """A comment's ``id`` as GitHub gives it (a positive integer); anything else is the API's answer at fault."""
    ident = comment.get("id")
    if not isinstance(ident, int) or isinstance(ident, bool) or ident <= 0:
        raise HarnessError(f"{what}: id: expected a positive integer, got {one_line(json.dumps(ident))[:60]}")
    return ident


def _call(method: str, url: str, token: str, payload: Mapping[str, Any] | None, timeout: float) -> Any:
    """One API call, answered within ``timeout`` seconds in all; any failure is one line (harness.tools._http)."""
    from harness.tools._http import fetch_json

    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
        "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "memharness", "Content-Type": "application/json"})
    return fetch_json(request, timeout=timeout, what=f"GitHub API {method} {url}")


def post_verdict(run_dir: Path, *, event_path: str, repo: str, api: str, token: str, report_url: str = "") -> str:
    """Comment the run's verdict on the workflow's pull request; what was done, in one line. The run directory, the
    API URL, the repository and the report's link are checked whether or not there is a pull request to comment on
    (round 20: a missing run directory, ``--repo`` or ``--report-url`` of any text were "nothing to comment on")."""
    from harness.tools._urls import http_url_problem, repo_problem

    body = comment_body(run_dir, report_url=report_url)
    for name, value, problem in (("GITHUB_API_URL (or --api)", api, http_url_problem(api)),
                                 ("--report-url", report_url, report_url and http_url_problem(report_url)),
                                 ("GITHUB_REPOSITORY (or --repo)", repo, repo and repo_problem(repo))):
        if problem:
            raise HarnessError(f"{name}: {problem}, got {one_line(repr(value))[:60]}")
    if not event_path:
        return "no GitHub event (GITHUB_EVENT_PATH is not set): nothing to comment on"
    number = pull_number(Path(event_path))
    if number is None:
        return "the workflow event is not a pull request: nothing to comment on"
    if not token:
        raise HarnessError("GITHUB_TOKEN is not set: the workflow must pass it (permissions: pull-requests: write)")
    if not repo:
        raise HarnessError("GITHUB_REPOSITORY (or --repo): expected OWNER/REPO, got nothing")
    what, ident = upsert_comment(api, repo, number, body, token)
    return f"{what} the memharness comment {ident} on pull request #{number}"
