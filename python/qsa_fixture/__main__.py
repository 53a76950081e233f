"""python -m qsa_fixture show|diff|replay|run: the `qsa` CLI (tools/qsa_main.cc) for Python callables
(usage: --help and python/README.md). `diff A B` takes output or fixture dirs (a fixture contributes its
expected_*). Exit status: 0 all good, 1 a mismatch or an invalid fixture, 2 a usage error (as qsa).
"""
import argparse
import importlib
import json
import os
import sys

import numpy as np

from .fixture import read_fixture
from .npy import parse_npy, serialize_npy, shape_string
from .levels import selection_from_env
from .outputs import OUTPUT_NAMES, ImplTimeout, OutputError, call_impl, describe_exception, normalize_outputs
from .replay import compare_outputs, replay

DEFAULT_IMPL = "qsa_fixture.numpy_impl:run"


def load_impl(spec):
    mod, sep, fn = spec.partition(":")
    if not sep or not mod or not fn:
        raise ValueError(f"--impl must be module:function, got '{spec}'")
    try:
        obj = importlib.import_module(mod)
    except Exception as e:  # noqa: BLE001 (one line, not the import's traceback)
        raise ValueError(f"--impl {spec}: cannot import module '{mod}': {type(e).__name__}: {e}") from None
    for part in fn.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--impl {spec}: module '{mod}' has no attribute '{fn}'")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"--impl {spec} is not callable")
    return obj


def cmd_show(d):
    f = read_fixture(d)
    line = (f"{d}: {f.pipeline} {f.dtype} B={f.batch_size} S={f.seq_len}"
            + (f" maxBlocks={f.max_blocks}" if f.is_decode else "")
            + f" pool={'yes' if f.pool is not None else 'no'}\n  description: {f.description}"
            + f"\n  contract: {f.contract or '-'}  provenance: {f.provenance or '-'}\n  ctx:")
    print(line + "".join(f" {int(c)}" for c in f.inputs["context_lengths"]))
    return 0


def expand_corpora(dirs):
    """A corpus directory (`qsa corpus`: manifest.json, no case.json) stands for its fixtures, in the
    manifest's order. Returns the fixture dirs and [(corpus dir, manifest, its fixture dirs)]."""
    out, corpora = [], []
    for d in dirs:
        m = os.path.join(d, "manifest.json")
        if os.path.isfile(m) and not os.path.exists(os.path.join(d, "case.json")):
            with open(m, "rb") as fh:
                man = json.loads(fh.read())
            names = [os.path.join(d, e["name"]) for e in man["fixtures"]]
            corpora.append((d, man, names))
            out += names
        else:
            out.append(d)
    return out, corpora


def coverage_line(man, regions_of):
    """properties/coverage.h's QSA_COVERAGE line over the replayed fixtures of one corpus: hits per region
    (the manifest's region order) from each fixture's case.json `regions`. A corpus has no floors; check=pass
    when the counts equal the manifest's coverage, else check=FAIL(manifest:<region>,...)."""
    n = len(regions_of)
    names = [r["region"] for r in man["coverage"]["regions"]]
    hits = {r: sum(r in (g or ()) for g in regions_of) for r in names}
    wrong = [r["region"] for r in man["coverage"]["regions"] if r["hits"] != hits[r["region"]]]
    if man["coverage"]["cases"] != n:
        wrong.insert(0, "cases")
    check = "pass" if not wrong else "FAIL(manifest:" + ",".join(wrong) + ")"
    return (f"QSA_COVERAGE Corpus.seed_{man['seed']} cases={n}" + "".join(f" {r}={hits[r]}/{n}" for r in names)
            + f" floors=none check={check}"), not wrong


def cmd_replay(impl_spec, dirs, verbose, timeout=None):
    impl = load_impl(impl_spec)
    sel = selection_from_env()  # what is judged: QSA_LEVELS / QSA_PROFILE (contract section 8)
    dirs, corpora = expand_corpora(dirs)
    regions = {}  # fixture dir -> its case.json regions (the fixtures that read)
    bad = not_judged = unjudged_checks = 0
    for d in dirs:
        try:
            f = read_fixture(d)
        except Exception as e:  # noqa: BLE001 (qsa prints every reader error as INVALID)
            print(f"INVALID {d}: {e}")
            bad += 1
            continue
        regions[d] = f.regions
        r = replay(f, impl, sel, timeout)
        if not r.any_judged:
            not_judged += 1
            print(f"NOT_JUDGED {d} (inputs level {r.input_level})")
        else:
            print(("PASS " if r.passed else "FAIL ") + d + ("" if r.passed else ": " + r.summary))
        for line in r.lines(d):
            unjudged_checks += line.startswith("QSA_NOT_JUDGED")
            print("  " + line)
        if not r.passed:
            bad += 1
            if verbose:
                print(r.report, end="")
    tail = f"; {not_judged} fixtures and {unjudged_checks} checks not judged ({sel.describe()})" \
        if not_judged or unjudged_checks else ""
    print(f"{len(dirs) - bad - not_judged} of {len(dirs)} fixtures pass (impl={impl_spec}){tail}")
    for _, man, names in corpora:
        line, ok = coverage_line(man, [regions[n] for n in names if n in regions])
        print(line)
        bad += not ok
    return 1 if bad else 0


def write_outputs(d, out):
    """Each array of `out` (normalize_outputs': the format's dtypes and shapes) as d/<name>.npy."""
    os.makedirs(d, exist_ok=True)
    for name, a in out.items():
        with open(os.path.join(d, name + ".npy"), "wb") as fh:
            fh.write(serialize_npy(a))


def cmd_run(impl_spec, d, out_dir, timeout=None):
    f = read_fixture(d)
    impl = load_impl(impl_spec)
    try:
        out = normalize_outputs(f, call_impl(impl, f, timeout))
    except (ImplTimeout, OutputError) as e:
        raise ValueError(f"{d}: {e}") from None
    except Exception as e:  # noqa: BLE001 (the implementation's exception, one line)
        raise ValueError(f"{d}: the implementation threw: {describe_exception(e)}") from None
    write_outputs(out_dir, out)
    print(f"wrote outputs of impl={impl_spec} for {d} to {out_dir}")
    return 0


def load_output_arrays(d):
    is_fixture = os.path.exists(os.path.join(d, "case.json"))
    out = {}
    for name in OUTPUT_NAMES:
        p = os.path.join(d, ("expected_" if is_fixture else "") + name + ".npy")
        if os.path.exists(p):
            with open(p, "rb") as fh:
                out[name] = parse_npy(fh.read(), p)
    if "out_idx" not in out:
        raise ValueError(f"{d}: neither an output directory (out_idx.npy) nor a fixture (case.json)")
    return out, is_fixture


def cmd_diff(a, b):
    A, fa = load_output_arrays(a)
    B, fb = load_output_arrays(b)
    if fa or fb:  # a fixture on one side: the full replay report
        f = read_fixture(a if fa else b)
        r = compare_outputs(f, B if fa else A)
        print(("IDENTICAL" if r.passed else "DIFFERENT") + f" {a} vs {b}\n" + r.report, end="")
        return 0 if r.passed else 1
    same = True
    for n in sorted(set(A) | set(B)):
        if n not in A or n not in B:
            print(f"{n}: only in {a if n in A else b}")
            same = False
            continue
        x, y = A[n], B[n]
        if x.dtype != y.dtype or x.shape != y.shape:
            print(f"{n}: {x.dtype.str}{shape_string(x.shape)} vs {y.dtype.str}{shape_string(y.shape)}")
            same = False
            continue
        view = np.uint16 if x.dtype.itemsize == 2 else np.uint32
        d = np.flatnonzero(x.reshape(-1).view(view) != y.reshape(-1).view(view))
        if len(d):
            same = False
            print(f"{n}: {len(d)} elements differ, first at {shape_string(np.unravel_index(d[0], x.shape))}")
        else:
            print(f"{n}: identical")
    print("IDENTICAL" if same else "DIFFERENT")
    return 0 if same else 1


def main(argv=None):
    ap = argparse.ArgumentParser(prog=os.path.basename(sys.argv[0]) if sys.argv[0].endswith("qsa-fixture")
                                 else "python -m qsa_fixture",
                                 description="show, diff, run and replay QSA indexer fixtures (qsa-fixture/1)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="print a fixture's header")
    s.add_argument("dir")
    r = sub.add_parser("replay", help="replay fixture directories through a Python callable")
    r.add_argument("--impl", default=DEFAULT_IMPL, help="module:function (default %(default)s)")
    r.add_argument("--quiet", action="store_true", help="only the one-line results")
    r.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="a call that does not return in time fails the fixture (check Fixture.Api)")
    r.add_argument("dirs", nargs="+", help="fixture directories, or corpus directories (manifest.json)")
    u = sub.add_parser("run", help="run a callable on a fixture, write its outputs as .npy")
    u.add_argument("--impl", default=DEFAULT_IMPL)
    u.add_argument("dir")
    u.add_argument("--out", required=True)
    u.add_argument("--timeout", type=float, default=None, metavar="SECONDS")
    d = sub.add_parser("diff", help="compare two output directories (or a fixture's expected outputs)")
    d.add_argument("a")
    d.add_argument("b")
    args = ap.parse_args(argv)
    if getattr(args, "timeout", None) is not None and not args.timeout > 0:
        ap.error(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    try:
        if args.cmd == "show":
            return cmd_show(args.dir)
        if args.cmd == "replay":
            return cmd_replay(args.impl, args.dirs, not args.quiet, args.timeout)
        if args.cmd == "run":
            return cmd_run(args.impl, args.dir, args.out, args.timeout)
        return cmd_diff(args.a, args.b)
    except Exception as e:  # noqa: BLE001 (as qsa: one line on stderr, exit 1)
        print(f"qsa_fixture: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
