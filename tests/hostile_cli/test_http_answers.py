"""The harness's own HTTP clients against a server that answers anything (hostile probe, round 12): ``memharness
github comment`` (the GitHub REST API) and ``memharness record``'s endpoint check (``GET {api_base}/models``).

A seeded generator draws each answer: a status line that is no HTTP, a body cut short, chunked garbage, bytes that
are not UTF-8, JSON nested past the parser's depth, a comment whose ``id`` is text, a float, missing or a list.
On the old code 273 of 400 such exchanges ended ``github comment`` in ``internal error`` (BadStatusLine,
IncompleteRead, UnicodeDecodeError, RecursionError, int() of the id) and the endpoint check raised on 96 of 300.
Every outcome must now be exit 0 or one ``memharness:`` line, exit 2; a server that trickles a byte at a time is
answered within the timeout in all, not per socket read.
"""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli._record import endpoint_problem
from harness.errors import HarnessError
from harness.tools._github import upsert_comment
from tests.hostile_cli._support import cli

ROOT = Path(__file__).resolve().parents[2]

MARK = "<!-- memharness:verdict -->"


def _value(rng: random.Random, depth: int = 0) -> object:
    pick = rng.randrange(9 if depth < 2 else 6)
    makers: list[Callable[[], object]] = [
        lambda: None, lambda: True, lambda: rng.randint(-5, 2**70), lambda: rng.random() * 1e300, lambda: "x",
        lambda: f"{MARK}\nold", lambda: [_value(rng, depth + 1) for _ in range(rng.randrange(3))],
        lambda: {"id": _value(rng, depth + 1), "body": _value(rng, depth + 1)},
        lambda: {str(rng.randrange(3)): _value(rng, depth + 1)}]
    return makers[pick]()


def _body(rng: random.Random) -> bytes:
    return rng.choice([
        lambda: b"not json \xff\xfe", lambda: b"\xff" * 10, lambda: b"[" * 100_000, lambda: b"NaN", lambda: b"",
        lambda: json.dumps([{"id": _value(rng), "body": _value(rng)} for _ in range(rng.randrange(4))]).encode(),
        lambda: json.dumps([{"id": _value(rng), "body": f"{MARK}\nold"}]).encode(),
        lambda: json.dumps(_value(rng)).encode(), lambda: json.dumps({"id": _value(rng)}).encode(),
        lambda: json.dumps([{"id": 5, "body": MARK}]).encode()])()


def _answer(rng: random.Random) -> bytes:
    body = _body(rng)
    whole = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    return rng.choice([
        b"garbage\r\n\r\n", b"", b"HTTP/1.1 abc OK\r\n\r\n", b"HTTP/1.1 301 Moved\r\nLocation: /again\r\n"
        b"Content-Length: 0\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + body[:10],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n" % rng.choice([404, 500, 403, 204]), whole, whole, whole])


class Server:
    """Answers each connection with the next planned answer (the last one once the plan is used up)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.plan: list[bytes] = []
        self.last = b""
        self.trickle = False
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(2)
                    data = b""
                    while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                        data += chunk
                    answer = self.plan.pop(0) if self.plan else self.last
                    if self.trickle:
                        for byte in answer:
                            time.sleep(0.2)
                            conn.sendall(bytes([byte]))
                    else:
                        conn.sendall(answer)
                except OSError:
                    continue


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.sock.close()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run directory: the comment posts summary.md only when the run's records render it."""
    run = tmp_path_factory.mktemp("finished") / "run"
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "recall" / "multi-fact.yaml"
    assert main(["run", str(scenario), "--no-gates", "--out", str(run)], environ={}) == 0
    return run


def test_github_comment_answers_every_hostile_api_in_one_line(tmp_path: Path, server: Server, finished_run: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    run = finished_run
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    rng = random.Random(1)
    bad = []
    for case in range(200):
        server.plan = [_answer(rng) for _ in range(rng.randrange(1, 5))]
        server.last = _answer(rng)
        o = cli(["github", "comment", str(run), "--event", str(event), "--repo", "o/r", "--api", server.url], capsys,
                {"GITHUB_TOKEN": "t"})
        lines = o.err.splitlines()
        if o.code not in (0, 2) or "internal error" in o.err or "Traceback" in o.err or (
                o.code == 2 and (len(lines) != 1 or not lines[0].startswith("memharness: GitHub API "))):
            bad.append((case, o.code, o.err[-300:]))
    assert not bad, f"{len(bad)} of 200: {bad[:3]}"


def test_record_endpoint_check_answers_every_hostile_server(server: Server) -> None:
    rng = random.Random(2)
    for case in range(150):
        server.plan, server.last = [], _answer(rng)
        problem = endpoint_problem(server.url + "/v1")  # raised on 96 of 300 on the old code
        assert problem is None or (problem and "\n" not in problem), (case, problem)


def test_a_trickling_server_is_answered_within_the_timeout(server: Server) -> None:
    server.trickle = True
    server.last = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]"
    start = time.monotonic()
    late = "no whole answer within 1 s|timed out"  # the whole answer's deadline, or (a loaded box) a read's own 1 s
    with pytest.raises(HarnessError, match=late):
        upsert_comment(server.url, "o/r", 7, "body", "t", timeout=1.0)
    problem = endpoint_problem(server.url, timeout_s=1.0)
    assert problem is not None
    assert re.search(late, problem), problem
    assert time.monotonic() - start < 5


def test_a_hostile_event_file_is_read_or_one_located_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The workflow's event JSON (--event): on the old code an unreadable one named no line. (The run directory is a
    real run's: since round 20 it is checked before the event is read.)"""
    run = tmp_path / "run"
    assert main(["run", str(ROOT / "scenarios" / "recall" / "multi-fact.yaml"), "--no-gates", "--out", str(run)],
                environ={}) == 0
    capsys.readouterr()
    event = tmp_path / "event.json"
    rng = random.Random(3)
    for case in range(150):
        pr = {"number": _value(rng)} if rng.random() < 0.5 else _value(rng)
        text = json.dumps({"pull_request": pr}, indent=rng.choice([None, 1]))
        if rng.random() < 0.5:
            cut = rng.randrange(len(text) + 1)
            text = text[:cut] + rng.choice(["", "\x00", "}", "[" * 3000, "\ud800"]) + text[cut:]
        event.write_text(text, encoding="utf-8", errors="surrogatepass")
        o = cli(["github", "comment", str(run), "--event", str(event), "--repo", "o/r"], capsys)
        lines = o.err.splitlines()
        assert o.code in (0, 2), (case, o.err)
        assert o.code == 0 or (len(lines) == 1 and (lines[0].startswith(f"memharness: {event}:")
                                                    or "GITHUB_TOKEN is not set" in lines[0])), (case, o.err)
        if lines and lines[0].startswith(f"memharness: {event}:"):
            assert re.match(rf"memharness: {re.escape(str(event))}:\d+: file: ", lines[0]), (case, o.err)
