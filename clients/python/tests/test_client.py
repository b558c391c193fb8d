"""Tests of llmproxy_pytest.client and the plugin's cassette names, against
a stub of the control API (no llmproxy needed). Run them with the plugin
off: python3 -m pytest -p no:llmproxy clients/python/tests
"""

import http.server
import json
import os
import stat
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from llmproxy_pytest import client as c  # noqa: E402
from llmproxy_pytest.plugin import cassette_name  # noqa: E402


class Stub(http.server.BaseHTTPRequestHandler):
    """Answers every request with the server's next (status, body) and
    keeps what it was sent."""

    def log_message(self, *args):
        pass

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.server.seen.append((self.command, self.path, dict(self.headers), self.rfile.read(n)))
        status, body = self.server.answers.pop(0)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_PUT = do_POST = do_DELETE = _answer


@pytest.fixture
def stub():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    srv.seen, srv.answers = [], []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def client_of(srv):
    return c.Client("http://127.0.0.1:%d" % srv.server_address[1], timeout=5)


def test_put_session_sends_the_contracts_body(stub):
    stub.answers.append((200, {"session": {"id": "s1"}, "ended": None}))
    got = client_of(stub).put_session(cassette="cassettes/m/t.cassette", mode="replay", on_exhausted="reject",
                                      ignore=("model",), name="tests/m.py::t")
    assert got == {"session": {"id": "s1"}, "ended": None}
    method, path, headers, body = stub.seen[0]
    assert (method, path) == ("PUT", "/_llmproxy/session")
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"cassette": "cassettes/m/t.cassette", "mode": "replay", "on-exhausted": "reject",
                                "ignore": ["model"], "name": "tests/m.py::t"}


def test_put_session_wants_one_of_cassette_and_scenario():
    with pytest.raises(ValueError):
        c.Client("http://127.0.0.1:1").put_session()
    with pytest.raises(ValueError):
        c.Client("http://127.0.0.1:1").put_session(cassette="a", scenario="b")


def test_verify_query(stub):
    stub.answers.append((200, {"ok": True, "got": 1}))
    client_of(stub).verify("get_weather", args={"city": "Paris"}, count=1)
    method, path, _, _ = stub.seen[0]
    assert method == "GET"
    assert path.startswith("/_llmproxy/verify?")
    assert "tool=get_weather" in path and "count=1" in path and "args=%7B%22city%22%3A+%22Paris%22%7D" in path


def test_end_session_answers_the_summary(stub):
    stub.answers += [(200, {"ended": {"missed": [{"method": "POST", "path": "/v1/x", "message": "closest: #1"}]}}),
                     (200, {"ended": None})]
    summary = client_of(stub).end_session()
    assert c.describe_summary(summary) == "llmproxy miss 1 of 1: POST /v1/x\nclosest: #1"
    assert client_of(stub).end_session() is None
    assert c.describe_summary(None) == ""


@pytest.mark.parametrize("status,body,type_,message", [
    (400, {"error": {"type": "bad_cassette_path", "message": "outside the directory"}}, "bad_cassette_path",
     "outside the directory"),
    (409, b"locked by another writer\n", "", "locked by another writer"),
    (403, {"error": "not an object"}, "", '{"error": "not an object"}'),
])
def test_refusals_are_control_errors(stub, status, body, type_, message):
    stub.answers.append((status, body))
    with pytest.raises(c.ControlError) as e:
        client_of(stub).get_session()
    assert (e.value.status, e.value.type, e.value.message) == (status, type_, message)
    assert "GET /_llmproxy/session" in str(e.value)


def test_an_answer_that_is_not_json(stub):
    stub.answers.append((200, b"<html>"))
    with pytest.raises(c.ControlError) as e:
        client_of(stub).get_session()
    assert e.value.type == "bad_answer"


def test_an_unreachable_proxy():
    with pytest.raises(c.ControlError) as e:
        c.Client("http://127.0.0.1:1", timeout=2).end_session()
    assert e.value.status == 0 and "cannot reach http://127.0.0.1:1" in str(e.value)


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return str(path)


def test_find_binary_order(tmp_path):
    exe = executable(tmp_path / "llmproxy", "#!/bin/sh\n")
    assert c.find_binary(exe, environ={"PATH": ""}) == exe
    assert c.find_binary(None, environ={"LLMPROXY_BIN": exe, "PATH": ""}) == exe
    assert c.find_binary(None, environ={"PATH": str(tmp_path)}) == exe


@pytest.mark.parametrize("explicit,environ,want", [
    ("/nonexistent/llmproxy", {}, "--llmproxy-bin /nonexistent/llmproxy: not an executable file"),
    (None, {"LLMPROXY_BIN": "/nonexistent/llmproxy"}, "LLMPROXY_BIN /nonexistent/llmproxy: not an executable file"),
    (None, {"PATH": ""}, "give --llmproxy-bin PATH, set LLMPROXY_BIN, or put llmproxy on PATH"),
])
def test_find_binary_refusals(explicit, environ, want):
    with pytest.raises(c.BinaryNotFound) as e:
        c.find_binary(explicit, environ=environ)
    assert want in str(e.value)


def test_a_proxy_that_does_not_start_is_quoted(tmp_path):
    exe = executable(tmp_path / "llmproxy", "#!/bin/sh\necho 'llmproxy: --cassette-dir x: not a directory' >&2\nexit 2\n")
    with pytest.raises(RuntimeError) as e:
        c.Proxy.start(exe, "replay", ["--cassette-dir", "x"], log=str(tmp_path / "log"), timeout=10)
    assert "did not start (exit 2)" in str(e.value) and "not a directory" in str(e.value)


def test_a_silent_proxy_times_out(tmp_path):
    exe = executable(tmp_path / "llmproxy", "#!/bin/sh\nexec sleep 30\n")
    with pytest.raises(RuntimeError) as e:
        c.Proxy.start(exe, "replay", timeout=0.5)
    assert "no listening line" in str(e.value)


def test_proxy_start_reads_the_port_and_stops(tmp_path):
    exe = executable(tmp_path / "llmproxy",
                     "#!/bin/sh\necho \"$LLMPROXY_CASSETTE|$*\" > %s\necho 'llmproxy listening on http://127.0.0.1:4242'\n"
                     "exec sleep 30\n" % (tmp_path / "args"))
    p = c.Proxy.start(exe, "replay", ["--cassette-dir", "/r"], environ={"LLMPROXY_CASSETTE": "x", "PATH": os.defpath})
    assert p.url == "http://127.0.0.1:4242"
    assert p.stop(grace=5) is not None
    # The variable that would contradict --cassette-dir is not passed on.
    assert (tmp_path / "args").read_text() == "|replay --listen 127.0.0.1:0 --cassette-dir /r\n"


def test_sdk_environ():
    env = c.sdk_environ("http://h:1", placeholders=True, environ={"OPENAI_API_KEY": "sk-real"})
    assert env["OPENAI_BASE_URL"] == "http://h:1/v1" and env["ANTHROPIC_BASE_URL"] == "http://h:1/anthropic"
    assert "OPENAI_API_KEY" not in env and env["ANTHROPIC_API_KEY"] == c.PLACEHOLDER_KEY
    assert "GEMINI_API_KEY" not in c.sdk_environ("http://h:1", placeholders=False, environ={})


@pytest.mark.parametrize("path,name,want", [
    ("/r/tests/test_m.py", "test_a", "cassettes/tests/test_m/test_a.cassette"),
    ("/r/test_m.py", "TestK.test_a[1-x]", "cassettes/test_m/TestK.test_a[1-x].cassette"),
    ("/elsewhere/test_m.py", "test_a", "cassettes/test_m/test_a.cassette"),
])
def test_cassette_name(path, name, want):
    assert cassette_name("/r", path, name) == want


def test_cassette_names_that_needed_changing_stay_apart():
    a = cassette_name("/r", "/r/t.py", "test_a[x/y]")
    b = cassette_name("/r", "/r/t.py", "test_a[x y]")
    assert a != b
    for got in (a, b):
        assert got.startswith("cassettes/t/test_a[x_y]-") and "/" not in got[len("cassettes/t/"):]
    assert "/." not in cassette_name("/r", "/r/t.py", ".." )
    assert len(cassette_name("/r", "/r/t.py", "test_" + "x" * 300)) < 140


def test_describe_unused_and_the_rest():
    summary = {"unused": [{"id": 4, "method": "POST", "path": "/v1/x", "summary": "interaction 4 POST /v1/x → 200"},
                          {"step": "answer", "summary": "step answer never reached"},
                          {"id": 5, "method": "GET", "path": "/v1/y"}],
               "unused_total": 103}
    assert c.describe_unused(summary) == ["interaction 4 POST /v1/x → 200", "step answer never reached",
                                          "interaction 5 GET /v1/y", "(and 100 more)"]
    assert c.describe_unused({"unused": []}) == [] and c.describe_unused(None) == []
    assert c.describe_summary({"missed": [{"method": "POST", "path": "/p", "message": "m"}], "missed_total": 3}) == \
        "llmproxy miss 1 of 3: POST /p\nm\n\n(and 2 more misses)"
