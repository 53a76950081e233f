"""tools/coverage_margin.py on synthetic QSA_COVERAGE logs: each verdict (ok, fixed, below, thin, over-claimed)
is reached, and the exit status follows them."""
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coverage_margin.py")


def line(prop, cases, regions, floors):
    hits = " ".join("%s=%d/%d" % (r, h, cases) for r, h in regions.items())
    return "QSA_COVERAGE %s cases=%d %s floors=%s check=pass\n" % (prop, cases, hits, floors)


def run(logs):
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, text in enumerate(logs):
            p = os.path.join(d, "run%d.log" % i)
            with open(p, "w") as f:
                f.write(text)
            paths.append(p)
        out = subprocess.run([sys.executable, TOOL] + paths, capture_output=True, text=True)
    rows = {}
    for row in out.stdout.splitlines()[1:-1]:
        f = row.split()
        rows[(f[1], f[2])] = (f[0], f[-1])
    return out.returncode, rows, out.stdout


def test_verdicts():
    logs = []
    for seed in range(12):
        wobble = seed % 3 - 1  # -1, 0, +1: hits that move across seeds
        text = line("A.Fixed", 40, {"r": 13}, "r:25%")                       # the same at every seed
        text += line("A.Clear", 40, {"r": 20 + wobble}, "r:25%")             # 10 needed, far above
        text += line("A.Thin", 40, {"r": 10 + 2 * wobble}, "r:25%")          # 8 at one seed: below
        text += line("A.Near", 40, {"r": 12 + wobble}, "r:25%")              # never below, under 4 sd
        text += line("A.Drawn", 400, {"r": 200 + wobble}, "r:~30%")          # rate 0.5 against a claim of 0.3
        text += line("A.Claimed", 400, {"r": 100 + wobble}, "r:~30%")        # rate 0.25 against a claim of 0.3
        text += line("A.Skipped", 10, {"r": 0}, "r:25%").replace("check=pass", "check=skipped(10_cases<default_40)")
        logs.append(text)
    rc, rows, out = run(logs)
    assert rows[("A.Fixed", "r")] == ("fixed", "ok"), out
    assert rows[("A.Clear", "r")][1] == "ok", out
    assert rows[("A.Thin", "r")][1] == "below", out
    assert rows[("A.Near", "r")][1] == "thin", out
    assert rows[("A.Drawn", "r")][1] == "ok", out
    assert rows[("A.Claimed", "r")][1] == "thin", out  # over-claimed: pooled rate below the claim
    assert ("A.Skipped", "r") not in rows, out
    assert rc == 1, out


def test_clean_logs_exit_zero():
    logs = [line("A.Clear", 40, {"r": 20 + s % 2}, "r:25%") + line("A.Drawn", 400, {"r": 200 + s}, "r:~30%")
            for s in range(12)]
    rc, rows, out = run(logs)
    assert rc == 0 and len(rows) == 2, out


if __name__ == "__main__":
    test_verdicts()
    test_clean_logs_exit_zero()
    print("coverage_margin_test: pass")
