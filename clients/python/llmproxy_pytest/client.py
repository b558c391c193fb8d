"""A client for llmproxy's control API, and a running llmproxy process.

Standard library only. `Client` speaks the routes of SPEC §13 (PUT/GET/DELETE
/_llmproxy/session, POST/DELETE /_llmproxy/scenarios, GET /_llmproxy/verify);
every refusal is a `ControlError` carrying the status, the error type and the
proxy's message. `Proxy.start` runs `llmproxy MODE ...` on a free loopback
port, reads the port from its listening line, and `Proxy.stop` ends it
(terminate, wait, kill). `sdk_environ` is the set of variables that point the
common SDKs at a proxy, as `llmproxy replay -- CMD` sets them.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

__all__ = [
    "ControlError",
    "Client",
    "Proxy",
    "BinaryNotFound",
    "find_binary",
    "sdk_environ",
    "PLACEHOLDER_KEY",
    "describe_summary",
    "describe_unused",
]

# The key SDKs get in replay and mock when the environment has none: the
# value `llmproxy replay -- CMD` uses (cmd/llmproxy/run.go placeholderKey).
PLACEHOLDER_KEY = "llmproxy-placeholder-key"

_LISTENING = "llmproxy listening on "

# LLMPROXY_<FLAG> variables that would contradict the flags Proxy.start
# gives (the proxy reads a flag from its variable when the flag is absent).
_CONFLICTING_ENV = ("LLMPROXY_CASSETTE", "LLMPROXY_LISTEN", "LLMPROXY_SCENARIO")


class ControlError(Exception):
    """The control API refused a request, or could not be reached.

    status is the HTTP status (0 when the proxy could not be reached),
    type the error's "type" field ("" when the body had none) and message
    the proxy's message.
    """

    def __init__(self, method, path, status, type_, message):
        self.method, self.path = method, path
        self.status, self.type, self.message = status, type_, message
        where = "%s %s" % (method, path)
        if status:
            super().__init__("llmproxy: %s: %d %s: %s" % (where, status, type_ or "error", message))
        else:
            super().__init__("llmproxy: %s: %s" % (where, message))


class Client:
    """The control API of the llmproxy at base_url (http://HOST:PORT).

    token, when given, is sent as the admin token (--admin-token). Every
    method returns the decoded JSON answer or raises ControlError.
    """

    def __init__(self, base_url, token=None, timeout=60.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method, path, body=None, query=None):
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            type_, message = _error_of(raw)
            raise ControlError(method, path, e.code, type_, message) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ControlError(method, path, 0, "", "cannot reach %s: %s" % (self.base_url, reason)) from None
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError as e:
            raise ControlError(method, path, 200, "bad_answer", "the answer is not JSON (%s): %.200r" % (e, raw)) from None

    def put_session(self, cassette=None, scenario=None, mode=None, on_exhausted=None, ignore=None, name=None):
        """Makes the proxy serve cassette (a path under its --cassette-dir) or
        scenario (a file, inline YAML or a dict) until the next session.
        Returns the answer: {"session": SESSION, "ended": SUMMARY or None}."""
        if (cassette is None) == (scenario is None):
            raise ValueError("put_session: give exactly one of cassette and scenario")
        body = {"cassette": cassette} if cassette is not None else {"scenario": scenario}
        if mode is not None:
            body["mode"] = mode
        if on_exhausted is not None:
            body["on-exhausted"] = on_exhausted
        if ignore:
            body["ignore"] = list(ignore)
        if name is not None:
            body["name"] = name
        return self._call("PUT", "/_llmproxy/session", body)

    def get_session(self):
        """The open session (SESSION), or None."""
        return self._call("GET", "/_llmproxy/session").get("session")

    def end_session(self):
        """Ends the open session; returns its SUMMARY, or None when none was open."""
        return self._call("DELETE", "/_llmproxy/session").get("ended")

    def load_scenario(self, scenario, name="default"):
        """Loads or replaces a scenario in a running mock."""
        return self._call("POST", "/_llmproxy/scenarios", {"scenario": scenario, "name": name})

    def reset_scenarios(self):
        """Starts every scenario conversation of a running mock afresh."""
        return self._call("DELETE", "/_llmproxy/scenarios")

    def verify(self, tool, args=None, count=None, scope=None):
        """The raw verify answer: {"ok", "tool", "want", "got", "calls", "message"}."""
        query = {"tool": tool}
        if args is not None:
            query["args"] = json.dumps(args)
        if count is not None:
            query["count"] = str(int(count))
        if scope is not None:
            query["scope"] = scope
        return self._call("GET", "/_llmproxy/verify", query=query)


def _error_of(raw):
    """The type and message of an API error body, or its text."""
    text = raw.decode("utf-8", "replace")
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict):
            return str(err.get("type", "")), str(err.get("message", ""))
    except (ValueError, AttributeError):
        pass
    return "", text.strip()[:2000]


class BinaryNotFound(Exception):
    """No llmproxy binary where one was looked for."""


def find_binary(explicit=None, environ=None):
    """The llmproxy binary to run: explicit (--llmproxy-bin), else
    $LLMPROXY_BIN, else one carried inside this package (bin/, by a platform
    wheel), else llmproxy on PATH. Raises BinaryNotFound naming what it tried."""
    environ = os.environ if environ is None else environ
    for source, path in (("--llmproxy-bin", explicit), ("LLMPROXY_BIN", environ.get("LLMPROXY_BIN"))):
        if path:
            found = shutil.which(path) if os.sep not in path else (path if os.access(path, os.X_OK) else None)
            if not found:
                raise BinaryNotFound("%s %s: not an executable file" % (source, path))
            return os.path.abspath(found) if os.sep in found else found
    exe = "llmproxy.exe" if sys.platform == "win32" else "llmproxy"
    carried = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", exe)
    if os.access(carried, os.X_OK):
        return carried
    found = shutil.which("llmproxy", path=environ.get("PATH"))
    if found:
        return found
    raise BinaryNotFound(
        "no llmproxy binary: give --llmproxy-bin PATH, set LLMPROXY_BIN, or put llmproxy on PATH "
        "(go install github.com/llmproxy/llmproxy/cmd/llmproxy@latest, or npm i -g llmproxy)"
    )


def sdk_environ(base, placeholders, environ=None):
    """The variables that point the common SDKs at the proxy at base, as
    `llmproxy replay -- CMD` sets them: the base URLs always, and with
    placeholders (replay, mock) a placeholder for each API key environ lacks."""
    environ = os.environ if environ is None else environ
    env = {
        "LLMPROXY_URL": base,
        "OPENAI_BASE_URL": base + "/v1",
        "ANTHROPIC_BASE_URL": base + "/anthropic",
        "GOOGLE_GEMINI_BASE_URL": base + "/gemini",
        "OLLAMA_HOST": base + "/ollama",
    }
    if placeholders:
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
            if not environ.get(key):
                env[key] = PLACEHOLDER_KEY
    return env


class Proxy:
    """A running llmproxy process and its control client.

    Start one with Proxy.start; url is http://HOST:PORT, client its Client,
    log the path of the file its stderr goes to (None when inherited).
    """

    def __init__(self, process, url, client, log):
        self.process, self.url, self.client, self.log = process, url, client, log

    @classmethod
    def start(cls, binary, command, args=(), cwd=None, log=None, timeout=30.0, environ=None):
        """Runs `binary command --listen 127.0.0.1:0 args...` and waits for its
        listening line. log is a file path for its stderr (its log), else it
        is inherited. A process that exits or stays silent for timeout
        seconds is an error quoting what it said."""
        environ = dict(os.environ if environ is None else environ)
        for name in _CONFLICTING_ENV:
            environ.pop(name, None)
        argv = [binary, command, "--listen", "127.0.0.1:0"] + list(args)
        errf = open(log, "wb") if log else None
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=environ, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=errf)
        except OSError as e:
            if errf:
                errf.close()
            raise RuntimeError("llmproxy: cannot start %s: %s" % (binary, e)) from None
        if errf:
            errf.close()  # the child has its own descriptor
        line = _first_line(proc, timeout)
        if not line.startswith(_LISTENING):
            _stop(proc, 5.0)
            said = ""
            if log and os.path.exists(log):
                with open(log, "rb") as f:
                    said = f.read()[-4000:].decode("utf-8", "replace")
            raise RuntimeError("llmproxy: %s did not start (exit %s): %s%s" % (
                " ".join(argv), proc.returncode, line.strip() or "no listening line", "\n" + said if said else ""))
        url = line[len(_LISTENING):].strip()
        # The rest of stdout is drained so that the proxy never blocks on it.
        threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
        return cls(proc, url, Client(url, token=environ.get("LLMPROXY_ADMIN_TOKEN")), log)

    def stop(self, grace=10.0):
        """Ends the process: SIGTERM (a clean shutdown that closes its
        cassettes), then SIGKILL after grace seconds. Returns its exit status."""
        return _stop(self.process, grace)


def _first_line(proc, timeout):
    """The first line proc writes to stdout, or "" if it writes none within
    timeout seconds or exits first."""
    got = []
    t = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not got:
        return ""
    return got[0].decode("utf-8", "replace")


def _drain(stream):
    try:
        while stream.read(65536):
            pass
    except (OSError, ValueError):
        pass


def _stop(proc, grace):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def describe_summary(summary):
    """The misses of a session SUMMARY as text for a test report, or ""."""
    missed = (summary.get("missed") or []) if summary else []
    total = max(len(missed), int((summary or {}).get("missed_total") or 0))
    parts = []
    for i, m in enumerate(missed, 1):
        head = "llmproxy miss %d of %d: %s %s" % (i, total, m.get("method", "?"), m.get("path", "?"))
        parts.append(head + "\n" + str(m.get("message", "")).rstrip())
    if total > len(missed):
        parts.append("(and %d more misses)" % (total - len(missed)))
    return "\n\n".join(parts)


def describe_unused(summary):
    """One line per unused interaction (or scenario step) of a session
    SUMMARY, and a last line counting those the summary did not list."""
    unused = (summary.get("unused") or []) if summary else []
    lines = [str(u.get("summary") or "interaction %s %s %s" % (u.get("id", "?"), u.get("method", "?"), u.get("path", "?")))
             for u in unused]
    total = int((summary or {}).get("unused_total") or 0)
    if total > len(unused):
        lines.append("(and %d more)" % (total - len(unused)))
    return lines
