"""The repository's GitHub Action (action.yml) and `memharness github comment` (issue 32: CI-native failures), tested
with a local fixture of the GitHub event and API: a fake REST API on 127.0.0.1 that keeps comments, a pull-request
event file, and the action's own shell steps run in order in a git repository with a base commit and a pull
request that makes recall worse."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.tools._github import MARKER
from tests.harness.conftest import REPO, SCENARIOS


class _Api:
    """Issue comments of one repository, as the REST API serves them."""

    def __init__(self) -> None:
        self.comments: dict[int, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.next_id = 100

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict[str, Any]:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")

            def do_GET(self) -> None:
                api.calls.append(("GET", self.path, self.headers.get("Authorization", "")))
                m = re.match(r"/repos/o/r/issues/(\d+)/comments\?per_page=100&page=(\d+)$", self.path)
                if not m:
                    return self._send(404, {"message": "Not Found"})
                mine = [c for c in api.comments.values() if c["issue"] == int(m[1])]
                page = int(m[2])
                return self._send(200, mine[(page - 1) * 100: page * 100])

            def do_POST(self) -> None:
                api.calls.append(("POST", self.path, self.headers.get("Authorization", "")))
                m = re.match(r"/repos/o/r/issues/(\d+)/comments$", self.path)
                if not m:
                    return self._send(404, {"message": "Not Found"})
                api.next_id += 1
                api.comments[api.next_id] = {"id": api.next_id, "issue": int(m[1]), "body": self._body()["body"]}
                return self._send(201, api.comments[api.next_id])

            def do_PATCH(self) -> None:
                api.calls.append(("PATCH", self.path, self.headers.get("Authorization", "")))
                m = re.match(r"/repos/o/r/issues/comments/(\d+)$", self.path)
                if not m or int(m[1]) not in api.comments:
                    return self._send(404, {"message": "Not Found"})
                api.comments[int(m[1])]["body"] = self._body()["body"]
                return self._send(200, api.comments[int(m[1])])
        return Handler


@pytest.fixture
def github() -> Iterator[tuple[_Api, str]]:
    api = _Api()
    server = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _event(tmp_path: Path, number: int | None, base: str = "0" * 40) -> Path:
    event = {"pull_request": {"number": number, "base": {"sha": base}}} if number else {"ref": "refs/heads/main"}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return path


def _run(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--no-gates", "--out", str(out)], environ={}) == 0
    return out


def test_the_verdict_is_one_comment_created_then_updated(tmp_path: Path, github: tuple[_Api, str],
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    api, url = github
    monkeypatch.setenv("GITHUB_TOKEN", "not-this-one")  # the environment main() is given is the one read
    env = {"GITHUB_TOKEN": "t0ken"}
    run = _run(tmp_path)
    argv = ["github", "comment", str(run), "--event", str(_event(tmp_path, 7)), "--repo", "o/r", "--api", url]
    api.comments[1] = {"id": 1, "issue": 7, "body": "a reviewer's comment"}  # never touched
    assert main(argv, environ=env) == 0
    assert "created the memharness comment 101 on pull request #7" in capsys.readouterr().out
    assert main([*argv, "--report-url", "https://example.invalid/run/1"], environ=env) == 0
    assert "updated the memharness comment 101 on pull request #7" in capsys.readouterr().out
    ours = [c for c in api.comments.values() if c["body"].startswith(MARKER)]
    assert len(ours) == 1
    assert "## memharness — PASSED" in ours[0]["body"]
    assert "[Full report](https://example.invalid/run/1)" in ours[0]["body"]
    assert api.comments[1]["body"] == "a reviewer's comment"
    assert all(auth == "Bearer t0ken" for _, _, auth in api.calls)


def test_no_pull_request_no_token_and_a_failing_api_are_one_line_each(tmp_path: Path, github: tuple[_Api, str],
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _, url = github
    run = _run(tmp_path)
    capsys.readouterr()
    monkeypatch.setenv("GITHUB_TOKEN", "t")  # the process's token: main() reads only the environment it is given
    assert main(["github", "comment", str(run), "--event", str(_event(tmp_path, None)), "--repo", "o/r", "--api", url],
                environ={"GITHUB_TOKEN": "t"}) == 0
    assert "not a pull request: nothing to comment on" in capsys.readouterr().out
    assert main(["github", "comment", str(run), "--event", str(_event(tmp_path, 3)), "--repo", "o/r", "--api", url],
                environ={}) == 2
    assert capsys.readouterr().err.strip().startswith("memharness: GITHUB_TOKEN is not set")
    assert main(["github", "comment", str(run), "--event", str(_event(tmp_path, 3)), "--repo", "x/y", "--api", url],
                environ={"GITHUB_TOKEN": "t"}) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "HTTP 404" in err[0]


def _expr(text: str, ctx: dict[str, Any]) -> str:
    """``${{ a.b.c }}`` from ``ctx`` (the few expressions action.yml uses); an unknown one fails the test."""
    def value(m: re.Match[str]) -> str:
        node: Any = ctx
        for part in m[1].strip().split("."):
            assert isinstance(node, dict), f"unknown expression {m[0]}"
            assert part in node, f"unknown expression {m[0]}"
            node = node[part]
        return str(node)
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", value, text)


@pytest.mark.slow
def test_the_action_compares_a_pull_request_with_its_base_and_comments(tmp_path: Path, github: tuple[_Api, str]) -> None:
    api, url = github
    repo = tmp_path / "repo"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("GITHUB_ACTIONS", None)

    def sh(cmd: str) -> str:
        done = subprocess.run(cmd, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=300,
                              check=True)
        return done.stdout.strip()
    repo.mkdir()
    assert main(["init", str(repo)], environ={}) == 0
    sh("git init -q && git add -A && git commit -qm base")
    base = sh("git rev-parse HEAD")
    sh("sed -i.bak 's/^RECALL_LIMIT = 5/RECALL_LIMIT = 1/' my_memory.py && rm my_memory.py.bak && git commit -qam pr")
    action = yaml.safe_load((REPO / "action.yml").read_text())
    inputs = {k: v.get("default", "") for k, v in action["inputs"].items()}
    inputs.update(system="my_memory:factory", token="t0ken")
    output, runner = tmp_path / "github_output", tmp_path / "runner"
    runner.mkdir()
    env.update(GITHUB_OUTPUT=str(output), GITHUB_WORKSPACE=str(repo), RUNNER_TEMP=str(runner),
               GITHUB_EVENT_PATH=str(_event(tmp_path, 12, base)), GITHUB_REPOSITORY="o/r", GITHUB_API_URL=url)
    ctx: dict[str, Any] = {"inputs": inputs, "steps": {}, "github": {
        "action_path": str(REPO), "token": "t0ken", "event_name": "pull_request", "server_url": "https://github.test",
        "repository": "o/r", "run_id": "42", "event": {"pull_request": {"base": {"sha": base}}}}}
    codes = []
    for step in action["runs"]["steps"]:
        if "run" not in step or step.get("name", "").startswith("Install"):  # uses: steps; already installed here
            continue
        step_env = {**env, **{k: _expr(str(v), ctx) for k, v in (step.get("env") or {}).items()}}
        done = subprocess.run(["bash", "-e", "-c", _expr(step["run"], ctx)], cwd=repo, env=step_env,
                              capture_output=True, text=True, timeout=600, check=False)
        codes.append((step["name"], done.returncode))
        if "id" in step:
            outs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            ctx["steps"][step["id"]] = {"outputs": outs}
    assert (repo / "reports" / "base" / "summary.json").is_file()
    summary = json.loads((repo / "reports" / "latest" / "summary.json").read_text())
    assert summary["baseline"]["verdicts"][0]["verdict"] == "worse"
    assert ctx["steps"]["head"]["outputs"]["code"] == "1"
    assert codes[-1] == ("Fail on a failed run", 1)  # the job fails
    assert all(code == 0 for _, code in codes[:-1]), codes
    [comment] = [c for c in api.comments.values() if c["issue"] == 12]
    assert comment["body"].startswith(MARKER)
    assert "## memharness — FAILED" in comment["body"]
    assert "against the baseline: heuristic: worse" in comment["body"]
    assert "https://github.test/o/r/actions/runs/42" in comment["body"]
