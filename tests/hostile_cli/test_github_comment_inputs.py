"""``memharness github comment``'s inputs, checked whether or not there is a pull request (round 20).

A generated argv probe found the command's inputs taken as given outside a pull request: ``github comment
/nonexistent`` or ``--report-url 1e309 --repo $'\\u2028'`` printed "nothing to comment on" and exited 0. On a pull
request, ``--report-url`` went into the comment's Markdown link whatever it held, and ``--repo`` (or
``GITHUB_REPOSITORY``) into the API's URL if it held a slash. Now the run directory, ``--repo``, ``--api`` and
``--report-url`` (and the variables they default to) are checked first: one line, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.tools._urls import http_url_problem, repo_problem
from tests.helpers import examples
from tests.hostile_cli._support import cli, quiet_run

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
JUNK = st.one_of(st.text(max_size=12), st.sampled_from(["1e309", "nan", "-1", "", " ", "ftp://x/y", "http://",
                                                        "javascript:alert(1)", "https://a b", "https://x:port/",
                                                        "http://x\u2028y", "https://h/\x1b[31m", "o/r/x", "/r", "o/",
                                                        "o r/x", "-o/r", "o/r\n", "o/..", "\u202eo/r"]))
GOOD_URL = st.builds(lambda host, path: f"https://{host}.example/{path}", st.from_regex(r"[a-z]{1,8}", fullmatch=True),
                     st.from_regex(r"[A-Za-z0-9/_-]{0,20}", fullmatch=True))
GOOD_REPO = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,10}/[A-Za-z0-9._-]{1,12}", fullmatch=True).filter(
    lambda r: not r.endswith(("/.", "/..")))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quiet_run(tmp_path_factory.mktemp("run") / "run")


@SETTINGS
@given(option=st.sampled_from(["--repo", "--api", "--report-url"]), value=JUNK)
def test_a_wrong_option_is_refused_without_a_pull_request(option: str, value: str, run: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """No event at all: a value that is not OWNER/REPO (``--repo``) or an http(s) URL (``--api``, ``--report-url``)
    is one line naming the option, exit 2; an empty value is "none given" (a workflow's ``--repo "$VAR"`` of an unset
    variable), as an empty variable is unset."""
    wrong = (repo_problem if option == "--repo" else http_url_problem)(value)
    o = cli(["github", "comment", str(run), option, value], capsys)
    if wrong is None or value == "":
        assert (o.code, o.err) == (0, ""), o.err
        assert "nothing to comment on" in o.out
        return
    assert o.code == 2, (value, o.out, o.err)
    (line,) = o.err.splitlines()
    assert option in line, line


@SETTINGS
@given(variable=st.sampled_from(["GITHUB_REPOSITORY", "GITHUB_API_URL"]), value=JUNK)
def test_a_wrong_variable_is_refused_without_a_pull_request(variable: str, value: str, run: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The variables the options default to, the same (an empty one is unset, as every variable of ours)."""
    wrong = (repo_problem if variable == "GITHUB_REPOSITORY" else http_url_problem)(value)
    o = cli(["github", "comment", str(run)], capsys, environ={variable: value})
    if wrong is None or value == "":
        assert (o.code, o.err) == (0, ""), o.err
        return
    assert o.code == 2, (value, o.out, o.err)
    (line,) = o.err.splitlines()
    assert variable in line, line


@SETTINGS
@given(url=GOOD_URL, repo=GOOD_REPO)
def test_good_values_pass(url: str, repo: str, run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The other side of the boundary: real URLs and OWNER/REPO names are taken."""
    o = cli(["github", "comment", str(run), "--repo", repo, "--api", url, "--report-url", url], capsys)
    assert (o.code, o.err) == (0, ""), o.err


def test_a_missing_run_directory_is_refused_without_a_pull_request(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["github", "comment", str(tmp_path / "nope")], capsys)
    assert o.code == 2, o.out
    (line,) = o.err.splitlines()
    assert str(tmp_path / "nope") in line, line
