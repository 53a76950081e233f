"""Where the curated fixtures and the C++ `qsa` binary are: the Bazel runfiles under `bazel test`,
else the source tree and bazel-bin (or $QSA_BIN)."""
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def _runfiles_root():
    src = os.environ.get("TEST_SRCDIR")
    if src and os.path.isdir(os.path.join(src, "qsa_indexer")):
        return os.path.join(src, "qsa_indexer")
    return None


def repo_root():
    return _runfiles_root() or os.path.dirname(os.path.dirname(HERE))


def cases_dir():
    return os.path.join(repo_root(), "fixtures", "cases")


def curated_cases():
    d = cases_dir()
    names = sorted(n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n, "case.json")))
    assert len(names) >= 20, f"expected the curated fixtures under {d}, found {names}"
    return [os.path.join(d, n) for n in names]


def qsa_bin():
    """The C++ reader's CLI (//tools:qsa). Missing is an error, never a skip."""
    for p in (os.environ.get("QSA_BIN"), os.path.join(repo_root(), "tools", "qsa"),
              os.path.join(repo_root(), "bazel-bin", "tools", "qsa")):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise AssertionError("no qsa binary: run under `bazel test //python/...`, or `bazel build //tools:qsa` "
                         "first, or set QSA_BIN")


_MSG = re.compile(r"^qsa: (.*?): field '(.*?)': (.*)$", re.S)


def cpp_verdict(d):
    """('ok',) or ('error', file, field, detail) from the C++ reader (`qsa show DIR`)."""
    p = subprocess.run([qsa_bin(), "show", d], capture_output=True, timeout=60)
    if p.returncode == 0:
        return ("ok",)
    err = p.stderr.decode("utf-8", "replace").rstrip("\n")
    m = _MSG.match(err)
    assert p.returncode == 1 and m, f"unexpected qsa output rc={p.returncode}: {err!r}"
    return ("error", m.group(1), m.group(2), m.group(3))


def py_verdict(d):
    from qsa_fixture import FixtureError, read_fixture
    try:
        read_fixture(d)
        return ("ok",)
    except FixtureError as e:
        return ("error", e.file, e.field, e.detail)
