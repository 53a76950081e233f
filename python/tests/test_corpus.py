"""`qsa corpus` (properties/corpus.h, fixtures/README.md "Generated corpora") end to end on a small corpus:
byte-identical per seed, replayed by the C++ reference (`qsa replay`) and by the NumPy implementation
(`python -m qsa_fixture replay CORPUS`), manifest coverage equal to the fixtures' case.json regions, and
the coverage line of both tools identical."""
import json
import subprocess

import pytest

from common import files, qsa_bin, run_python

COUNT, SEED = 12, 7


def corpus(out, *args):
    p = subprocess.run([qsa_bin(), "corpus", *args, str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def py_replay(*dirs):
    return run_python(["-m", "qsa_fixture", "replay", "--quiet", *map(str, dirs)], timeout=900)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus") / "a"
    out = corpus(d, "--count", str(COUNT), "--seed", str(SEED))
    return d, out


def test_same_seed_same_bytes_other_seed_other_bytes(small, tmp_path):
    d, out = small
    corpus(tmp_path / "b", "--count", str(COUNT), "--seed", str(SEED))
    a, b = files(d), files(tmp_path / "b")
    assert sorted(a) == sorted(b)
    assert [n for n in a if a[n] != b[n]] == []
    corpus(tmp_path / "c", "--count", "2", "--seed", str(SEED + 1))
    c = files(tmp_path / "c")
    assert c["0000_prefill/index_qk.npy"] != a["0000_prefill/index_qk.npy"]


def test_manifest_matches_fixtures(small):
    d, out = small
    m = json.loads((d / "manifest.json").read_text())
    assert (m["schema"], m["seed"], m["count"], len(m["fixtures"])) == ("qsa-corpus/1", SEED, COUNT, COUNT)
    assert m["generator_version"].startswith("corpus1-")
    hits = {r["region"]: 0 for r in m["coverage"]["regions"]}
    for e in m["fixtures"]:
        c = json.loads((d / e["name"] / "case.json").read_text())
        assert c["regions"] == e["regions"], e["name"]
        assert (c["pipeline"], c["dtype"]) == (e["pipeline"], e["dtype"])
        assert e["bytes"] == sum(p.stat().st_size for p in (d / e["name"]).iterdir())
        for r in c["regions"]:
            hits[r] += 1
    assert {r["region"]: r["hits"] for r in m["coverage"]["regions"]} == hits
    assert m["coverage"]["cases"] == COUNT
    # The slot cycle reaches both pipelines and dtypes, nVis > 512 and invalid decode rows in 12 fixtures.
    assert {e["pipeline"] for e in m["fixtures"]} == {"prefill", "decode"}
    assert {e["dtype"] for e in m["fixtures"]} == {"half", "bf16"}
    assert hits["nvis_gt_512"] >= 1 and hits["invalid_row"] >= 1
    assert f"wrote {COUNT} fixtures" in out


def test_python_writer_gives_the_cpp_bytes(small, tmp_path):
    """The optional `regions` key through the Python reader and writer: every fixture rewritten byte for byte."""
    from qsa_fixture import read_fixture, write_fixture
    d, _ = small
    for e in json.loads((d / "manifest.json").read_text())["fixtures"]:
        f = read_fixture(str(d / e["name"]))
        assert f.regions == e["regions"]
        write_fixture(str(tmp_path / e["name"]), f)
        assert files(tmp_path / e["name"]) == files(d / e["name"]), e["name"]


def test_cpp_reference_replay_passes_with_the_same_coverage_line(small):
    d, out = small
    dirs = sorted(str(p) for p in d.iterdir() if p.is_dir())
    # The corpus directory: every fixture in the manifest's order passes, then the coverage line.
    c = subprocess.run([qsa_bin(), "replay", "--quiet", str(d)], capture_output=True, text=True, timeout=600)
    assert c.returncode == 0, c.stdout + c.stderr
    lines = c.stdout.splitlines()
    assert lines[-1] == [line for line in out.splitlines() if line.startswith("QSA_COVERAGE")][0]
    assert lines[-2] == f"{COUNT} of {COUNT} fixtures pass (impl=reference)"
    assert [line.split()[1] for line in lines if line.startswith("PASS ")] == dirs


def test_numpy_replay_passes_with_the_same_coverage_line(small):
    d, out = small
    p = py_replay(d)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert f"{COUNT} of {COUNT} fixtures pass (impl=qsa_fixture.numpy_impl:run)" in lines
    cov = [line for line in lines if line.startswith("QSA_COVERAGE")]
    want = [line for line in out.splitlines() if line.startswith("QSA_COVERAGE")]
    assert cov == want and cov[0].endswith("floors=none check=pass"), (cov, want)


def test_tampered_manifest_fails_the_coverage_check(small, tmp_path):
    d, _ = small
    m = json.loads((d / "manifest.json").read_text())
    m["fixtures"] = m["fixtures"][:1]  # a one-fixture corpus, its coverage right but for nvis_gt_512 (+1)
    m["coverage"]["cases"] = 1
    for r in m["coverage"]["regions"]:
        r["hits"] = int(r["region"] in m["fixtures"][0]["regions"]) + (r["region"] == "nvis_gt_512")
    t = tmp_path / "t"
    t.mkdir()
    (t / m["fixtures"][0]["name"]).symlink_to(d / m["fixtures"][0]["name"])
    (t / "manifest.json").write_text(json.dumps(m))
    for p in (py_replay(t), subprocess.run([qsa_bin(), "replay", "--quiet", str(t)], capture_output=True, text=True,
                                           timeout=600)):
        assert p.returncode == 1, p.stdout
        assert p.stdout.splitlines()[-1].endswith("floors=none check=FAIL(manifest:nvis_gt_512)"), p.stdout


def test_regions_restrict(tmp_path):
    out = corpus(tmp_path / "r", "--count", "3", "--seed", "3", "--regions", "invalid_row,hole_used",
                 "--dtype", "bf16")
    m = json.loads((tmp_path / "r" / "manifest.json").read_text())
    for e in m["fixtures"]:
        assert e["dtype"] == "bf16"
        assert {"invalid_row", "hole_used"} & set(e["regions"]), e
    assert m["regions_requested"] == ["invalid_row", "hole_used"]
    assert "wrote 3 fixtures" in out
