"""Where the curated fixtures and the C++ `qsa` binary are: the Bazel runfiles under `bazel test`,
else the source tree and bazel-bin (or $QSA_BIN)."""
import os
import pathlib
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def repo_root():
    src = os.environ.get("TEST_SRCDIR")
    if src and os.path.isdir(os.path.join(src, "qsa_indexer")):
        return os.path.join(src, "qsa_indexer")
    return os.path.dirname(os.path.dirname(HERE))


def cases_dir():
    """$QSA_CASES_DIR (another set of curated fixtures, e.g. a branch's) or fixtures/cases."""
    return os.environ.get("QSA_CASES_DIR") or os.path.join(repo_root(), "fixtures", "cases")


def curated_cases():
    d = cases_dir()
    names = sorted(n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n, "case.json")))
    assert len(names) >= 20, f"expected the curated fixtures under {d}, found {names}"
    return [os.path.join(d, n) for n in names]


def built_binary(env, package, name, missing):
    """$env, else //package:name in the runfiles (or the source tree), else in bazel-bin. Missing is an
    error (the message `missing`), never a skip."""
    for p in (os.environ.get(env), os.path.join(repo_root(), package, name),
              os.path.join(repo_root(), "bazel-bin", package, name)):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise AssertionError(missing)


def qsa_bin():
    """The C++ reader's CLI (//tools:qsa)."""
    return built_binary("QSA_BIN", "tools", "qsa", "no qsa binary: run under `bazel test //python/...`, or "
                        "`bazel build //tools:qsa` first, or set QSA_BIN")


def files(d):
    """{path relative to d: bytes} of every file under d."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(pathlib.Path(d).rglob("*")) if p.is_file()}


def run_python(args, *paths, cwd=None, env_extra=None, timeout=600):
    """`python3 ARGS` in a subprocess, python/ and `paths` as PYTHONPATH, no QSA_* variable but env_extra's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QSA_")}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(repo_root(), "python"), *paths])
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


_MSG = re.compile(r"^(.*?): field '(.*?)': (.*)$", re.S)


def _split(message):
    """(file, field, detail) of a reader message; the message is cut at a NUL byte first, as the C++
    what() string is (a header key may hold one)."""
    message = message.split("\0", 1)[0]
    m = _MSG.match(message)
    assert m, f"not a reader message: {message!r}"
    return ("error",) + m.groups()


def cpp_verdict(d):
    """('ok',) or ('error', file, field, detail) from the C++ reader (`qsa show DIR`). Bytes that are not
    UTF-8 are kept (surrogateescape), so messages compare byte for byte."""
    p = subprocess.run([qsa_bin(), "show", d], capture_output=True, timeout=60)
    if p.returncode == 0:
        return ("ok",)
    err = p.stderr.decode("utf-8", "surrogateescape")
    assert p.returncode == 1 and err.startswith("qsa: ") and err.endswith("\n"), \
        f"unexpected qsa output rc={p.returncode}: {err!r}"
    return _split(err[len("qsa: "):-1])


def py_verdict(d):
    from qsa_fixture import FixtureError, read_fixture
    try:
        read_fixture(d)
        return ("ok",)
    except FixtureError as e:
        return _split(str(e))
