"""What a cassette per test costs: N generated tests (default 200), each
making one Chat Completions request with urllib, replayed two ways in the
same run:

  per-test   pytest with the plugin: one llmproxy, one session (PUT and
             DELETE /_llmproxy/session) and one cassette per test;
  baseline   `llmproxy replay --cassette one.cassette -- pytest` without the
             plugin: one cassette holding all N interactions.

Both sets of cassettes are first recorded from an in-process fake upstream.
Each way runs --rounds times (alternating); the medians and their difference
are printed. The target (issue 24) is a difference of at most 2 s for 200
tests.

    go build -o /tmp/llmproxy ./cmd/llmproxy
    /usr/bin/python3 clients/python/bench/bench_sessions.py --bin /tmp/llmproxy [--tests 200] [--rounds 5]
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)  # clients/python

TEST_FILE = '''import json, os, urllib.request
import pytest

pytestmark = [pytest.mark.llmproxy] if os.environ.get("BENCH_PER_TEST") else []


def ask(i):
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "question %d" % i}]})
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")})
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)["choices"][0]["message"]["content"]

'''

TEST_FUNC = '''
def test_{i}():
    assert ask({i}) == "answer {i}"
'''


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        i = req["messages"][-1]["content"].split()[-1]
        body = json.dumps({"id": "chatcmpl-" + i, "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "answer " + i},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}, indent=2).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def run(argv, cwd, env):
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s: exit %d\n%s" % (" ".join(argv), p.returncode, p.stdout.decode(errors="replace")[-4000:]))
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("LLMPROXY_BIN", "llmproxy"), help="the llmproxy binary")
    ap.add_argument("--tests", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--python", default=sys.executable, help="the Python with pytest (default: this one)")
    a = ap.parse_args()

    up = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    upstream = "http://127.0.0.1:%d" % up.server_address[1]

    with tempfile.TemporaryDirectory(prefix="llmproxy-bench-") as proj:
        with open(os.path.join(proj, "pytest.ini"), "w") as f:
            f.write("[pytest]\n")
        with open(os.path.join(proj, "test_gen.py"), "w") as f:
            f.write(TEST_FILE + "".join(TEST_FUNC.format(i=i) for i in range(a.tests)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLMPROXY_", "OPENAI_"))}
        env.update(PYTHONPATH=PACKAGE, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1",
                   LLMPROXY_BIN=os.path.abspath(a.bin) if os.sep in a.bin else a.bin, OPENAI_API_KEY="sk-bench")
        pytest = [a.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        plugin = pytest + ["-p", "llmproxy_pytest.plugin"]
        per_test = dict(env, BENCH_PER_TEST="1")
        one = os.path.join(proj, "one.cassette")

        run(plugin + ["--llmproxy-mode", "record", "--llmproxy-upstream", upstream], proj, per_test)
        run([a.bin, "record", "--cassette", one, "--upstream", upstream, "--"] + pytest, proj, env)
        up.shutdown()

        replay_env = dict(env)
        del replay_env["OPENAI_API_KEY"]
        ways = {
            "per-test": (plugin, dict(per_test, OPENAI_API_KEY="")),
            "baseline": ([a.bin, "replay", "--cassette", one, "--"] + pytest, replay_env),
        }
        times = {name: [] for name in ways}
        for _ in range(a.rounds):
            for name, (argv, e) in ways.items():
                times[name].append(run(argv, proj, e))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        print("%-9s median %.3f s  (runs: %s)" % (name, med[name], " ".join("%.3f" % t for t in ts)))
    extra = med["per-test"] - med["baseline"]
    print("per-test cassettes add %.3f s for %d tests (%.2f ms a test); target: <= 2 s for 200"
          % (extra, a.tests, 1000 * extra / a.tests))


if __name__ == "__main__":
    main()
