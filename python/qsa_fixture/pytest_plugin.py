"""pytest plugin: one test item per fixture directory, replaying a Python callable (python/README.md,
"pytest plugin"). Registered through the `pytest11` entry point when the package is installed; else load
it with `-p qsa_fixture.pytest_plugin`. Inert unless --qsa-impl is given.

  pytest --qsa-impl mypkg.mod:fn [--qsa-corpus DIR ...] [--qsa-profile ieee|fast] [--qsa-timeout S] [--qsa-bin QSA]

Profile ieee: replay.py's bit-exact replay (what `qsa_fixture replay` prints). Profile fast (contract
section 9): Python cannot enclose FP32 results in intervals, so the profile-none checks (layout, padding,
pool hygiene, the call itself) run here and the outputs are then written to a temporary directory and
judged by `qsa replay --profile fast --outputs OUTDIR FIXTURE_DIR` (the C++ CLI, --qsa-bin or $QSA_BIN).
QSA_LEVELS selects the levels judged, as everywhere.
"""
import os
import subprocess
import tempfile

import pytest

from . import levels
from .errors import FixtureError
from .fixture import read_fixture
from .outputs import OutputError, normalize_outputs
from .replay import replay

_STASH = pytest.StashKey[dict]()  # the configuration of this run (set when --qsa-impl is given)


def pytest_addoption(parser):
    g = parser.getgroup("qsa", "QSA indexer fixtures (qsa_fixture)")
    g.addoption("--qsa-impl", metavar="MODULE:FUNCTION", help="replay this callable on every fixture")
    g.addoption("--qsa-corpus", metavar="DIR", action="append", default=[],
                help="a fixture directory or a directory of them (repeatable; default: the repository's "
                     "fixtures/cases when run inside it)")
    g.addoption("--qsa-profile", choices=("ieee", "fast"), default="ieee",
                help="ieee: bit for bit (default); fast: contract section 9, judged by the qsa binary")
    g.addoption("--qsa-timeout", type=float, metavar="SECONDS", help="a call that does not return in time fails")
    g.addoption("--qsa-bin", metavar="PATH", help="the qsa binary for --qsa-profile fast (default $QSA_BIN)")


def _default_corpus():
    """fixtures/cases of the QSA repository that holds the working directory (one with checks/registry.tsv
    beside it), or None."""
    d = os.getcwd()
    while True:
        cases = os.path.join(d, "fixtures", "cases")
        if os.path.isdir(cases) and os.path.isfile(os.path.join(d, "checks", "registry.tsv")):
            return cases
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def _fixture_dirs(corpus):
    dirs = []
    for c in corpus:
        if os.path.isfile(os.path.join(c, "case.json")):
            dirs.append(c)
            continue
        if not os.path.isdir(c):
            raise pytest.UsageError(f"--qsa-corpus {c}: no such directory")
        found = sorted(os.path.join(c, n) for n in os.listdir(c) if os.path.isfile(os.path.join(c, n, "case.json")))
        if not found:
            raise pytest.UsageError(f"--qsa-corpus {c}: no fixture directories (DIR/case.json or DIR/*/case.json)")
        dirs += found
    return dirs


def pytest_configure(config):
    o = config.option
    spec = o.qsa_impl
    if not spec:
        given = [n for n, v in (("--qsa-corpus", o.qsa_corpus), ("--qsa-timeout", o.qsa_timeout),
                                ("--qsa-bin", o.qsa_bin), ("--qsa-profile", o.qsa_profile != "ieee")) if v]
        if given:
            raise pytest.UsageError(f"{', '.join(given)} need --qsa-impl MODULE:FUNCTION")
        return
    from .__main__ import load_impl  # the CLI's --impl parsing and messages
    try:
        impl = load_impl(spec)
        sel = levels.parse_selection(os.environ.get("QSA_LEVELS", ""), o.qsa_profile)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    if o.qsa_timeout is not None and not o.qsa_timeout > 0:
        raise pytest.UsageError(f"--qsa-timeout must be a positive number of seconds, got {o.qsa_timeout:g}")
    binary = None
    if o.qsa_profile == "fast":
        binary = o.qsa_bin or os.environ.get("QSA_BIN")
        if not binary:
            raise pytest.UsageError("--qsa-profile fast needs the qsa binary: pass --qsa-bin PATH or set QSA_BIN "
                                    "(`bazel build //tools:qsa`); Python cannot judge the fast profile's "
                                    "intervals (contract section 9)")
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise pytest.UsageError(f"--qsa-profile fast: the qsa binary {binary} is not an executable file")
    corpus = o.qsa_corpus or ([_default_corpus()] if _default_corpus() else [])
    if not corpus:
        raise pytest.UsageError(f"--qsa-corpus DIR is required: {os.getcwd()} is not inside the QSA repository "
                                "(no fixtures/cases beside checks/registry.tsv above it)")
    # No test paths on the command line: the fixtures only (not the test files under the working directory).
    only = getattr(config, "args_source", None) not in (None, getattr(pytest.Config, "ArgsSource", None) and
                                                        pytest.Config.ArgsSource.ARGS)
    config.stash[_STASH] = dict(impl=impl, spec=spec, sel=sel, timeout=o.qsa_timeout, binary=binary,
                                dirs=_fixture_dirs(corpus), only=only)


def pytest_ignore_collect(collection_path, config):
    st = config.stash.get(_STASH, None)
    return True if st is not None and st["only"] else None


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect, so they apply to these items too
def pytest_collection_modifyitems(session, config, items):
    st = config.stash.get(_STASH, None)
    if st is None:
        return
    seen = {}
    for d in st["dirs"]:
        name = os.path.basename(os.path.normpath(d))
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name += f"#{seen[name]}"
        items.append(QsaFixtureItem.from_parent(session, name=name, nodeid=f"qsa/{name}", fixture_dir=d, st=st))


class QsaFailure(Exception):
    """The message shown for a failed fixture, without a traceback."""


class QsaFixtureItem(pytest.Item):
    def __init__(self, *, fixture_dir, st, **kw):
        super().__init__(**kw)
        self.fixture_dir, self.st = fixture_dir, st

    def runtest(self):
        st, d = self.st, self.fixture_dir
        try:
            f = read_fixture(d)
        except FixtureError as e:
            raise QsaFailure(f"INVALID {d}: {e}") from None
        fast = st["binary"] is not None
        outs = {}

        def capturing(fx):  # keeps what the callable returned for the fast profile's output directory
            outs["raw"] = st["impl"](fx)
            return outs["raw"]
        # Under fast the checks of profile none (layout, padding, pool hygiene, the call) are judged here.
        sel = levels.Selection(st["sel"].levels, "none") if fast else st["sel"]
        r = replay(f, capturing, sel, st["timeout"])
        if not (r.any_judged or fast):
            pytest.skip(f"NOT JUDGED {d} (inputs level {r.input_level}; {sel.describe()})")
        if not r.passed:
            raise QsaFailure(f"FAIL {d}: {r.summary}\n" + "".join(f"  {x}\n" for x in r.lines(d)) + r.report)
        if fast:
            try:
                out = normalize_outputs(f, outs["raw"])
            except (KeyError, OutputError):  # the call failed, and check Fixture.Api is not selected
                pytest.skip(f"NOT JUDGED {d}: {r.summary} (inputs level {r.input_level}; {sel.describe()})")
            self._judge_fast(d, out)

    def _judge_fast(self, d, out):
        from .__main__ import write_outputs
        with tempfile.TemporaryDirectory(prefix="qsa_fast_") as od:
            write_outputs(od, out)
            cmd = [self.st["binary"], "replay", "--profile", "fast", "--outputs", od, d]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=self.st["timeout"])
            except subprocess.TimeoutExpired:
                raise QsaFailure(f"FAIL {d}: `{' '.join(cmd)}` did not finish within {self.st['timeout']:g} s") from None
        out = p.stdout + p.stderr
        if p.returncode == 0:
            if any(line.startswith("NOT_JUDGED") for line in p.stdout.splitlines()):
                pytest.skip(f"NOT JUDGED {d} (profile fast): {p.stdout.strip()}")
            return
        if p.returncode == 1:
            raise QsaFailure(f"FAIL {d} (profile fast, judged by {self.st['binary']}):\n{out}")
        raise QsaFailure(f"ERROR {d}: `{' '.join(cmd)}` exited with status {p.returncode}: {out.strip()}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, QsaFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.fixture_dir, None, f"qsa fixture {self.fixture_dir} ({self.st['spec']})"
