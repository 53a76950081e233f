"""`pip install ./python` works offline (pyproject.toml, python/README.md "Install"): a copy of the package
source is installed into a fresh venv (--system-site-packages: Debian's numpy, setuptools and wheel) with
--no-build-isolation --no-index; then the `qsa-fixture` command, a replay of a curated fixture, the
packaged checks registry and the pytest plugin's pytest11 entry point are used from OUTSIDE the source
tree (PYTHONPATH cleared, so only the installed copy can be imported)."""
import os
import shutil
import subprocess
import sys

from common import cases_dir, repo_root

PKG_FILES = ["pyproject.toml", "README.md"]


def copy_package(dst):
    """python/ as a checkout holds it (the registry link resolved, as setuptools copies it)."""
    src = os.path.join(repo_root(), "python")
    os.makedirs(os.path.join(dst, "qsa_fixture"))
    for n in PKG_FILES:
        shutil.copyfile(os.path.join(src, n), os.path.join(dst, n))
    for n in sorted(os.listdir(os.path.join(src, "qsa_fixture"))):
        if n.endswith(".py") or n == "registry.tsv":
            shutil.copyfile(os.path.join(src, "qsa_fixture", n), os.path.join(dst, "qsa_fixture", n))


def clean_env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "QSA_"))}
    env.update(HOME=str(tmp), PIP_NO_CACHE_DIR="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def run(cmd, cwd, env, timeout=300):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_offline_install_command_replay_and_plugin(tmp_path):
    env = clean_env(tmp_path)
    src, venv, elsewhere = tmp_path / "python", tmp_path / "venv", tmp_path / "elsewhere"
    copy_package(str(src))
    elsewhere.mkdir()
    rc, out = run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], str(tmp_path), env)
    assert rc == 0, out
    rc, out = run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", str(src)],
                  str(tmp_path), env)
    assert rc == 0 and "Successfully installed qsa-fixture" in out, out
    py, exe = str(venv / "bin" / "python"), str(venv / "bin" / "qsa-fixture")

    rc, out = run([py, "-c", "import qsa_fixture, qsa_fixture.levels as l; print(qsa_fixture.__file__); "
                   "print(l.REGISTRY_PATH, len(l.registry()))"], str(elsewhere), env)
    assert rc == 0 and out.startswith(str(venv)), out  # the installed copy, not the source tree
    reg = out.split()[1]
    assert not os.path.islink(reg) and open(reg, "rb").read() == \
        open(os.path.join(repo_root(), "checks", "registry.tsv"), "rb").read(), reg

    rc, out = run([exe, "--help"], str(elsewhere), env)
    assert rc == 0 and out.startswith("usage: qsa-fixture ") and "replay" in out, out
    fx = os.path.join(cases_dir(), "decode_completes_block_half")
    rc, out = run([exe, "replay", "--timeout", "120", fx], str(elsewhere), env)
    assert rc == 0 and out == f"PASS {fx}\n1 of 1 fixtures pass (impl=qsa_fixture.numpy_impl:run)\n", out

    # The plugin through its pytest11 entry point (no -p), and -p on top of it (registered once).
    for extra in ([], ["-p", "qsa_fixture.pytest_plugin"]):
        rc, out = run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--qsa-impl",
                       "qsa_fixture.numpy_impl:run", "--qsa-corpus", fx], str(elsewhere), env)
        assert rc == 0 and "1 passed" in out, out
