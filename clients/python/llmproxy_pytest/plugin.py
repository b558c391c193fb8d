"""The pytest plugin: one llmproxy per test process, one session per test.

Registered through the `pytest11` entry point as `llmproxy` (disable it with
`-p no:llmproxy`). Before any conftest is imported, each test process (each
xdist worker; never the xdist controller) starts `llmproxy MODE --cassette-dir
ROOTDIR` on a free loopback port and points the SDKs at it through
os.environ (OPENAI_BASE_URL etc.; placeholder API keys in replay). A test
marked `@pytest.mark.llmproxy`, or asking for the `llmproxy` fixture, gets its
own session: the cassette `cassettes/<module path>/<test name>.cassette` under
the rootdir, or a scenario. After the test's call the session ends; a miss
fails that test with the proxy's difference, unused interactions are listed
in the terminal summary (or fail the test with --llmproxy-fail-on-unused).
"""

import atexit
import hashlib
import os
import re
import shutil
import tempfile

import pytest

from .client import (BinaryNotFound, ControlError, Proxy, describe_summary, describe_unused, find_binary,
                     sdk_environ)

MODES = ("record", "replay", "auto")
_MARKER = "llmproxy"
_UNUSED_PROPERTY = "llmproxy_unused"
_MISSED_PROPERTY = "llmproxy_missed"


class _State:
    """What one test process knows about its proxy."""

    def __init__(self):
        self.proxy = None  # llmproxy MODE --cassette-dir ROOT
        self.mock = None  # llmproxy mock, started for the first scenario test
        self.binary = None
        self.mode = "replay"
        self.root = None
        self.logdir = None
        self.fail_on_unused = False
        self.keep_log = False  # a report named the proxy's log
        self.started = False


_STATE = pytest.StashKey[_State]()
_HANDLE = pytest.StashKey["LLMProxy"]()


def pytest_addoption(parser):
    group = parser.getgroup("llmproxy", "llmproxy: per-test cassettes and scenarios")
    group.addoption("--llmproxy-mode", choices=MODES, default=None,
                    help="record, replay or auto: how each test's cassette is used (default: the "
                         "llmproxy_mode ini value, else replay)")
    group.addoption("--llmproxy-bin", default=None, metavar="PATH",
                    help="the llmproxy binary (default: $LLMPROXY_BIN, else llmproxy on PATH)")
    group.addoption("--llmproxy-upstream", action="append", default=[], metavar="[NAME=]URL",
                    help="an upstream for record and auto, passed to llmproxy as --upstream (repeatable)")
    group.addoption("--llmproxy-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for the llmproxy command line (repeatable)")
    group.addoption("--llmproxy-fail-on-unused", action="store_true", default=False,
                    help="fail a test whose cassette has interactions the test did not use")
    parser.addini("llmproxy_mode", "default for --llmproxy-mode", default="replay")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "llmproxy(cassette=None, scenario=None, mode=None, ignore=None, on_exhausted=None): serve this test "
        "from its own llmproxy session: the cassette cassettes/<module>/<test>.cassette (or `cassette`, a "
        "name under cassettes/<module>/), or `scenario` (a file next to the test, inline YAML, or a dict).")
    state = config.stash.setdefault(_STATE, _State())
    config.pluginmanager.register(_Unused(), "llmproxy-unused")
    # Started here only when pytest_load_initial_conftests could not tell
    # yet that this process runs tests (xdist's -n settled to 0).
    if not state.started and _runs_tests(config, config.option):
        _start(config, config.option, state)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    ns = early_config.known_args_namespace
    state = early_config.stash.setdefault(_STATE, _State())
    if _runs_tests(early_config, ns):
        _start(early_config, ns, state)


def _runs_tests(config, ns):
    """Whether this process runs tests: an xdist worker does, the xdist
    controller does not, a plain pytest does; --help and --version run none."""
    if getattr(ns, "help", False) or getattr(ns, "version", False):
        return False
    if getattr(config, "workerinput", None) is not None or os.environ.get("PYTEST_XDIST_WORKER"):
        return True
    n = getattr(ns, "numprocesses", None)
    if n not in (None, 0, "0"):
        return False
    return getattr(ns, "dist", "no") in ("no", None)


def _start(config, ns, state):
    """Starts this process's llmproxy and points the SDKs at it."""
    state.started = True
    mode = ns.llmproxy_mode or config.getini("llmproxy_mode") or "replay"
    if mode not in MODES:
        raise pytest.UsageError("llmproxy_mode = %s: want one of %s" % (mode, ", ".join(MODES)))
    try:
        binary = find_binary(ns.llmproxy_bin)
    except BinaryNotFound as e:
        raise pytest.UsageError("%s (or disable the plugin with -p no:llmproxy)" % e) from None
    state.binary, state.mode, state.root = binary, mode, str(config.rootpath)
    state.fail_on_unused = bool(ns.llmproxy_fail_on_unused)
    args = ["--cassette-dir", state.root]
    for up in ns.llmproxy_upstream or []:
        args += ["--upstream", up]
    args += list(ns.llmproxy_arg or [])
    state.logdir = tempfile.mkdtemp(prefix="llmproxy-pytest-")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    try:
        state.proxy = Proxy.start(binary, mode, args, cwd=state.root,
                                  log=os.path.join(state.logdir, "llmproxy-%s.log" % worker))
    except RuntimeError as e:
        shutil.rmtree(state.logdir, ignore_errors=True)
        raise pytest.UsageError(str(e)) from None
    os.environ.update(sdk_environ(state.proxy.url, placeholders=(mode == "replay")))
    config.add_cleanup(lambda: _stop(state))
    # Also when pytest stops before its cleanups run (a usage error of
    # another plugin after this point).
    atexit.register(_stop, state)


def _mock(state):
    """This process's llmproxy mock, started on first use."""
    if state.mock is None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        try:
            state.mock, problem = Proxy.start(state.binary, "mock", cwd=state.root,
                                              log=os.path.join(state.logdir, "llmproxy-mock-%s.log" % worker)), None
        except RuntimeError as e:
            problem = str(e)
        if problem:
            pytest.fail(problem, pytrace=False)
    return state.mock


def _stop(state):
    """Stops the processes once; removes their logs unless a report named them."""
    if state.proxy is None and state.mock is None:
        return
    for proxy in (state.mock, state.proxy):
        if proxy is not None:
            proxy.stop()
    state.proxy = state.mock = None
    if not state.keep_log:
        shutil.rmtree(state.logdir, ignore_errors=True)


def cassette_name(root, path, name):
    """The cassette of the test name in the module at path, relative to
    root: cassettes/<module path without .py>/<name>.cassette. Characters
    other than letters, digits and ._-[],=+ become _, and a name that had to
    change (or is over 120 characters) ends with a hash of the original, so
    that two tests never share a cassette by accident."""
    try:
        rel = os.path.relpath(str(path), root)
    except ValueError:  # another drive
        rel = os.path.basename(str(path))
    if rel.startswith(".."):
        rel = os.path.basename(str(path))
    module = os.path.splitext(rel)[0].replace(os.sep, "/")
    safe = re.sub(r"[^A-Za-z0-9._\-\[\],=+]", "_", name)
    if safe != name or len(safe) > 120 or safe.startswith("."):
        safe = safe[:100].lstrip(".") + "-" + hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return "cassettes/%s/%s.cassette" % (module, safe)


def _test_name(item):
    """The test's name within its module: Class.test_name[param]."""
    parts = item.nodeid.split("::")[1:]
    return ".".join(parts) if parts else item.name


class LLMProxy:
    """The `llmproxy` fixture: the test's proxy and session.

    url is the proxy (http://HOST:PORT), client its control Client, session
    the SESSION the proxy opened for this test, summary the SUMMARY once the
    session has ended (after the test's call).
    """

    def __init__(self, url, client, session):
        self.url, self.client, self.session = url, client, session
        self.summary = None
        self.log = None  # the proxy's log file

    def verify(self, tool, args=None, count=None):
        """Asserts that the answers served in this test called tool (with
        arguments including args, count times when given, else at least
        once): an AssertionError carrying the proxy's message otherwise."""
        __tracebackhide__ = True
        got = self.client.verify(tool, args=args, count=count)
        if not got.get("ok"):
            raise AssertionError(got.get("message") or "llmproxy verify %s: not ok: %r" % (tool, got))
        return got

    def end(self):
        """Ends the session (once) and returns its SUMMARY."""
        if self.summary is None:
            self.summary = self.client.end_session() or {}
        return self.summary


@pytest.fixture
def llmproxy(request):
    """This test's llmproxy session (see LLMProxy). The marker's arguments,
    when the test has one, choose the cassette, scenario, mode and ignores."""
    state = request.config.stash.get(_STATE, None)
    if state is None or state.proxy is None:
        pytest.fail("llmproxy: no proxy runs in this process", pytrace=False)
    body = _session_body(request, state)
    proxy, saved = state.proxy, None
    if "scenario" in body:
        # Scenarios are served by llmproxy mock, a second process: the
        # SDK variables point at it for this test only.
        proxy = _mock(state)
        env = sdk_environ(proxy.url, placeholders=True)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
    try:
        answer, refused = proxy.client.put_session(**body), None
    except ControlError as e:
        answer, refused = None, str(e)
    if refused:
        _restore(saved)
        pytest.fail(refused, pytrace=False)
    handle = LLMProxy(proxy.url, proxy.client, answer.get("session") or {})
    handle.log = proxy.log
    request.node.stash[_HANDLE] = handle
    yield handle
    _restore(saved)
    # Normally ended after the call (pytest_runtest_makereport); here when
    # the test never got there (a failing fixture).
    if handle.summary is None:
        try:
            handle.end()
        except ControlError:
            pass


def _restore(saved):
    """Puts back the environment variables saved before a scenario test."""
    for k, v in (saved or {}).items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(autouse=True)
def _llmproxy_marker(request):
    """Gives every test marked @pytest.mark.llmproxy the llmproxy fixture."""
    if request.node.get_closest_marker(_MARKER) is not None:
        request.getfixturevalue("llmproxy")


_MARKER_KEYS = ("cassette", "scenario", "mode", "ignore", "on_exhausted")


def _session_body(request, state):
    """The PUT /_llmproxy/session arguments for this test."""
    marker = request.node.get_closest_marker(_MARKER)
    kw = dict(marker.kwargs) if marker else {}
    unknown = sorted(set(kw) - set(_MARKER_KEYS))
    if unknown or (marker and marker.args):
        pytest.fail("@pytest.mark.llmproxy: unknown argument %s (want keyword arguments %s)" % (
            ", ".join(unknown) or repr(marker.args), ", ".join(_MARKER_KEYS)), pytrace=False)
    body = {"name": request.node.nodeid}
    scenario = kw.get("scenario")
    if scenario is not None:
        if kw.get("cassette") is not None:
            pytest.fail("@pytest.mark.llmproxy: give cassette or scenario, not both", pytrace=False)
        if isinstance(scenario, str) and "\n" not in scenario:
            # A file next to the test, given to the mock (which runs in
            # the rootdir and keeps scenario files inside it) from there.
            path = os.path.join(os.path.dirname(str(request.node.path)), scenario)
            scenario = os.path.relpath(path, state.root).replace(os.sep, "/")
        body["scenario"] = scenario
        return body
    default = cassette_name(state.root, request.node.path, _test_name(request.node))
    cassette = kw.get("cassette")
    if cassette is not None:
        name = str(cassette)
        if not name.endswith(".cassette"):
            name += ".cassette"
        cassette = os.path.dirname(default) + "/" + name
    body["cassette"] = cassette or default
    body["mode"] = kw.get("mode") or state.mode
    if kw.get("ignore"):
        ignore = kw["ignore"]
        body["ignore"] = [ignore] if isinstance(ignore, str) else list(ignore)
    if kw.get("on_exhausted"):
        body["on_exhausted"] = kw["on_exhausted"]
    return body


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Ends the test's session right after its call, so that a miss fails
    this test (its report carries the proxy's difference) rather than
    erroring in a teardown."""
    handle = item.stash.get(_HANDLE, None) if call.when == "call" else None
    summary, problem = None, ""
    if handle is not None:
        try:
            summary = handle.end()
        except ControlError as e:
            problem = str(e)
    outcome = yield
    if handle is None:
        return
    rep = outcome.get_result()
    state = item.config.stash[_STATE]
    text = problem or describe_summary(summary)
    unused = describe_unused(summary)
    if unused:
        rep.user_properties.append((_UNUSED_PROPERTY, unused))
    if text:
        rep.user_properties.append((_MISSED_PROPERTY, len((summary or {}).get("missed") or [1])))
    elif unused and state.fail_on_unused:
        text = "llmproxy: unused in %s (--llmproxy-fail-on-unused):\n  %s" % (
            handle.session.get("cassette") or handle.session.get("scenario") or "the session", "\n  ".join(unused))
    if not text:
        return
    where = "session %s: %s (%s)" % (handle.session.get("id", "?"),
                                      handle.session.get("cassette") or handle.session.get("scenario") or "?",
                                      handle.session.get("mode", "mock"))
    if handle.log:
        where += "\nproxy log: " + handle.log
        state.keep_log = True
    if rep.passed:
        rep.outcome = "failed"
        rep.longrepr = text + "\n\n" + where
    elif rep.failed:
        # In the failure's own text, so that JUnit XML and xdist carry it.
        if hasattr(rep.longrepr, "addsection"):
            rep.longrepr.addsection("llmproxy", text + "\n\n" + where)
        else:
            rep.sections.append(("llmproxy", text + "\n\n" + where))


class _Unused:
    """Gathers the unused interactions the tests' reports carry (in the
    xdist controller, those of every worker) and lists them at the end."""

    def __init__(self):
        self.seen = []  # (nodeid, [line, ...])

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == _UNUSED_PROPERTY:
                self.seen.append((report.nodeid, value))

    def pytest_terminal_summary(self, terminalreporter):
        if not self.seen:
            return
        tr = terminalreporter
        n = sum(_count(line) for _, lines in self.seen for line in lines)
        tr.write_sep("-", "llmproxy: %d unused interaction(s) or step(s) in %d test(s)" % (n, len(self.seen)))
        for nodeid, lines in self.seen:
            tr.write_line(nodeid)
            for line in lines:
                tr.write_line("    " + line)


def _count(line):
    """How many unused things a line of describe_unused stands for."""
    more = re.fullmatch(r"\(and (\d+) more\)", line)
    return int(more.group(1)) if more else 1
