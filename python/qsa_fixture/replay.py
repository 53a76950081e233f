"""Replay: run a Python implementation on a fixture and compare its outputs with the expected ones bit
for bit, with the one-line summaries, contract names, checks, levels and report of fixtures/replay.cc
(contract section 8: each failure is recorded against its Fixture.* check of checks/registry.tsv, raised to
the fixture's input level, and judged only when QSA_LEVELS / QSA_PROFILE select it; levels.py).
The implementation interface is python/README.md's; replay() checks and converts what it returns
(outputs.py: torch tensors, float16 / bf16 values as bits; a wrong dtype or shape is a Fixture.Api failure);
compare_outputs() takes arrays already in the format's dtypes.
"""
from types import SimpleNamespace

import numpy as np

from . import levels, outputs
from .fixture import INDEX_WIDTH as WIDTH, TOKENS_PER_PAGE as TPP, TOPK


def hex32(x):
    x = np.float32(x)
    return "0x%08x (%.9g)" % (int(np.asarray(x).view(np.uint32)), float(x))


def set_string(v, limit=16, as_list=False):
    v = [int(x) for x in v]
    s = ", ".join(str(x) for x in v[:limit])
    if len(v) > limit:
        s += f", ... ({len(v)} in all)"
    return ("[" if as_list else "{") + s + ("]" if as_list else "}")


def row_info(f, row):
    r = SimpleNamespace()
    S = f.seq_len
    r.b = row // S
    r.ctx = int(f.inputs["context_lengths"][r.b])
    if f.is_decode:
        r.t = r.ctx - 1  # the decode row is the new token, pos = ctx - 1
        r.padded = r.ctx < 1 or r.ctx // 4 > f.max_blocks  # invalid row (contract section 5, floor rule)
        r.n_vis, r.tail = r.ctx // 4, r.ctx % 4
    else:
        r.t = row % S
        r.padded = r.t >= r.ctx
        r.n_vis, r.tail = (r.t + 1) // 4, (r.t + 1) % 4
    if r.padded:
        r.n_vis = r.tail = 0
    r.k_sel = min(TOPK, r.n_vis)
    return r


def layout_violation(r, row):
    """Section 4's K4 consequences on one actual row: '' or the first violation."""
    row = [int(x) for x in row]
    if r.padded:
        for i, v in enumerate(row):
            if v != -1:
                return f"padded row has entry {v} at column {i}"
        return ""
    seen = set()
    for i in range(4 * r.k_sel):
        v = row[i]
        if v < 0 or v > r.t:
            return f"entry {v} at column {i} outside [0, t = {r.t}]"
        if i % 4 != 0 and v != row[i - i % 4] + i % 4:
            return f"column {i} breaks out[4i + j] = sel[i] * 4 + j"
        if i % 4 == 0 and v % 4 != 0:
            return f"column {i} holds {v}, not a block start"
        if v in seen:
            return f"entry {v} repeated (column {i})"
        seen.add(v)
    for j in range(r.tail):
        if row[4 * r.k_sel + j] != 4 * r.n_vis + j:
            return f"tail entry {j} is {row[4 * r.k_sel + j]}, expected {4 * r.n_vis + j}"
    for i in range(4 * r.k_sel + r.tail, WIDTH):
        if row[i] != -1:
            return f"column {i} after the tail is {row[i]}, not -1"
    return ""


def _c_div(a, b):  # C++ integer division truncates toward zero
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def blocks_of(row, n):
    return sorted(_c_div(int(row[i]), 4) for i in range(0, n, 4) if row[i] >= 0)


def reference_logits(o, f, row):
    """Logits of one row recomputed by this package's NumPy implementation of the contract, or None with
    the reason in the report (the report must not hide the mismatch)."""
    try:
        from . import numpy_impl
        return numpy_impl.run(f)["logits"][row]
    except Exception as ex:  # noqa: BLE001
        o.append(f"    (reference logits unavailable: {ex})\n")
        return None


def _report_order(o, f, r, row, exp, act):
    eo = [_c_div(int(exp[4 * i]), 4) if exp[4 * i] >= 0 else -1 for i in range(r.k_sel)]
    ao = [_c_div(int(act[4 * i]), 4) if act[4 * i] >= 0 else -1 for i in range(r.k_sel)]
    if eo == ao:
        o.append("    same blocks in the same order: the expansion out[4i + j] = sel[i] * 4 + j differs\n")
        return
    o.append("    same set, different order" + (" (decode emits ascending block ids)" if f.is_decode else "")
             + f": expected {set_string(eo, 16, True)}, actual {set_string(ao, 16, True)}\n")
    i = 0
    while eo[i] == ao[i]:
        i += 1
    lg = reference_logits(o, f, row)
    if lg is not None:
        eq = lg[eo[i]] == lg[ao[i]]
        o.append(f"    at position {i}: expected block {eo[i]} (logit {hex32(lg[eo[i]])}), actual block {ao[i]} "
                 f"(logit {hex32(lg[ao[i]])})"
                 + (": equal logits, the contract orders them by ascending block id" if eq else "") + "\n")


def _report_row(o, f, r, row, exp, act):
    col = 0
    while col < WIDTH and exp[col] == act[col]:
        col += 1
    line = f"  first differing row (b={r.b}, t={r.t}), ctx={r.ctx}"
    if r.padded:
        line += " (padded/invalid row: all -1 expected)\n"
    else:
        line += f", nVis={r.n_vis}, kSel={r.k_sel}, tail={r.tail}\n"
    o.append(line)
    o.append(f"    first differing column {col}: expected {int(exp[col])}, actual {int(act[col])}\n")
    e, a = blocks_of(exp, 4 * r.k_sel), blocks_of(act, 4 * r.k_sel)
    e_only = sorted(set(e) - set(a)) if len(set(e)) == len(e) else _multiset_diff(e, a)
    a_only = sorted(set(a) - set(e)) if len(set(a)) == len(a) else _multiset_diff(a, e)
    o.append(f"    selected blocks: expected-only {set_string(e_only)}, actual-only {set_string(a_only)} "
             f"({len(e) - len(e_only)} in common)\n")
    lo, hi = 4 * r.k_sel, 4 * r.k_sel + r.tail
    o.append(f"    tail (columns [{lo}, {hi})): expected {set_string(exp[lo:hi], 16, True)}, actual "
             f"{set_string(act[lo:hi], 16, True)}\n")
    if r.padded or r.n_vis == 0:
        return
    if r.n_vis <= TOPK:
        o.append("    nVis <= 512: every visible block is selected (no threshold)\n")
        if not e_only and not a_only:
            _report_order(o, f, r, row, exp, act)
        return
    lg = reference_logits(o, f, row)
    if lg is None:
        return
    order = list(np.argsort(-lg[:r.n_vis], kind="stable"))  # logit descending, ties by ascending id
    es, as_ = set(e), set(a)
    o.append("    logits around the selection threshold (NumPy implementation; rank = position in logit-desc, "
             "id-asc order):\n")
    for k in range(max(0, r.k_sel - 4), min(r.n_vis, r.k_sel + 4)):
        g = int(order[k])
        mark = " (last selected)" if k == r.k_sel - 1 else " (first dropped) " if k == r.k_sel else ""
        o.append(f"      rank {k}{mark}  block {g}  logit {hex32(lg[g])}  expected {'sel' if g in es else '-'} "
                 f"actual {'sel' if g in as_ else '-'}\n")
    rank = {int(g): k for k, g in enumerate(order)}
    for what, v in (("expected-only", e_only), ("actual-only", a_only)):
        for g in v[:6]:
            if g < r.n_vis:
                o.append(f"      {what} block {g}: rank {rank[g]}, logit {hex32(lg[g])}\n")


def _multiset_diff(x, y):  # std::set_difference on sorted ranges with repeats
    out, j = [], 0
    for v in x:
        while j < len(y) and y[j] < v:
            j += 1
        if j < len(y) and y[j] == v:
            j += 1
        else:
            out.append(v)
    return out


def _bits(a, dtype):
    """Flat bit patterns for comparison (memcmp in C++)."""
    a = np.ascontiguousarray(np.asarray(a).astype(dtype, copy=False)).reshape(-1)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def fixture_input_level(f):
    """(level, why) of a fixture's inputs (contract section 8): "hardened" when the fixture exercises a
    clause on inputs the seed leaves undefined (prefill ctx outside [0, S], invalid decode rows, page ids
    outside their plane, slots >= maxPagesPerSeq in use, decode reads of -1 holes), else "core"."""
    reasons = []
    ctx = [int(c) for c in f.inputs["context_lengths"]]
    S = f.seq_len
    if f.is_decode and any(c < 1 or c // 4 > f.max_blocks for c in ctx):
        reasons.append("invalid decode row")
    elif not f.is_decode and any(c < 0 or c > S for c in ctx):
        reasons.append("prefill ctx outside [0, S]")
    if f.pool is not None:
        M, N = f.pool["max_pages_per_seq"], f.pool["num_pages"]
        pt = np.asarray(f.inputs["page_table"]).reshape(-1)
        out_of_plane = truncated = reads_hole = False
        for b in range(min(f.batch_size, len(ctx))):
            tokens = ctx[b] if f.is_decode else min(max(ctx[b], 0), S)
            truncated = truncated or _c_div(tokens + 127, 128) > M
            for plane in (0, 1):
                s = 0
                while s < M and s * 128 < tokens:
                    at = (b * 2 + plane) * M + s
                    s += 1
                    if at >= pt.size:
                        continue
                    pid = int(pt[at])
                    if pid == -1:
                        reads_hole = reads_hole or f.is_decode  # decode reads K- and V-tails: +0.0 reads
                    elif (pid < 0 or pid >= N) if plane == 0 else (pid < N or pid >= 2 * N):
                        out_of_plane = True
        reasons += [w for w, on in (("page ids outside their plane", out_of_plane),
                                    ("slots >= maxPagesPerSeq in use", truncated),
                                    ("decode reads -1 holes (+0.0)", reads_hole)) if on]
    return ("hardened" if reasons else "core"), ", ".join(reasons)


def _row_checks(f, a_idx):
    """The profile-independent checks on every row (K4 layout, padded / invalid rows all -1): (check,
    first violation) or None."""
    rows = f.batch_size * f.seq_len
    if a_idx.size != rows * WIDTH:
        return None
    A = a_idx.reshape(rows, WIDTH)
    for row in range(rows):
        r = row_info(f, row)
        v = layout_violation(r, A[row])
        if v:
            check = "Fixture.Layout" if not r.padded else "Fixture.InvalidDecodeRows" if f.is_decode \
                else "Fixture.PaddedRows"
            return check, f"row (b={r.b}, t={r.t}): {v}"
    return None


# Every Fixture.* check of checks/registry.tsv, in the report's order.
FIXTURE_CHECKS = ("Fixture.Differential", "Fixture.Layout", "Fixture.PaddedRows", "Fixture.InvalidDecodeRows",
                  "Fixture.PoolHygiene", "Fixture.Api")


class ReplayResult:
    """passed: no judged check failed; any_judged: False when no check was selected (the fixture is NOT a
    pass: summary "NOT JUDGED"); checks: the Fixture.* checks applied, as FixtureCheck."""

    def __init__(self, passed, summary, report="", contract="", any_judged=True, input_level="", checks=()):
        self.passed, self.summary, self.report, self.contract = passed, summary, report, contract
        self.any_judged, self.input_level, self.checks = any_judged, input_level, list(checks)

    def lines(self, fixture_name):
        """"QSA_NOT_JUDGED Fixture.X level=... fixture=<name>" for every check not selected and
        "QSA_CHECK_FAILED Fixture.X level=... fixture=<name>: <detail>" for every judged failure."""
        out = []
        for c in self.checks:
            if not c.judged:
                out.append(f"QSA_NOT_JUDGED {c.info.id} {levels.tags(c.info)} fixture={fixture_name}")
            elif c.failed:
                out.append(f"QSA_CHECK_FAILED {c.info.id} {levels.tags(c.info)} fixture={fixture_name}: {c.detail}")
        return out


class FixtureCheck:
    """One check of checks/registry.tsv ("Fixture.*") applied to one fixture, its level raised to the
    fixture's input level; failed whether judged or not, detail the first failure."""

    def __init__(self, info, judged, failed, detail):
        self.info, self.judged, self.failed, self.detail = info, judged, failed, detail


def _first_diff(e, a):
    n = min(len(e), len(a))
    d = np.flatnonzero(e[:n] != a[:n])
    if len(d):
        return int(d[0])
    return -1 if len(e) == len(a) else n


def compare_outputs(f, act, sel=None):
    """Compares `act` (a dict) with f.expected: out_idx, pool, split counters always; q_normed, kbar and
    logits when both sides have them (decode logits: each valid row's prefix ctx/4 only). Judges only
    what `sel` selects (default: QSA_LEVELS / QSA_PROFILE from the environment)."""
    sel = levels.selection_from_env() if sel is None else sel
    exp = f.expected
    o, state = [], {"inferred": "", "summary": ""}
    failed = {}  # check id -> first detail: every failure is also recorded against its registry check

    def note(contract, line):
        failed.setdefault({"api": "Fixture.Api", "pool hygiene": "Fixture.PoolHygiene"}.get(
            contract, "Fixture.Differential"), line)
        if not state["inferred"]:
            state["inferred"], state["summary"] = contract, line

    rows = f.batch_size * f.seq_len
    e_idx = _bits(exp["out_idx"], np.int32).view(np.int32)
    a_idx = _bits(act.get("out_idx", np.zeros(0, np.int32)), np.int32).view(np.int32)
    bad_row = _row_checks(f, a_idx)
    if bad_row:
        failed.setdefault(*bad_row)
    if f.pool is not None:  # pool hygiene on every cell, whatever the numerics
        e_pool = _bits(exp["pool"], np.uint16)
        a_pool = _bits(act.get("pool", np.zeros(0, np.uint16)), np.uint16)
        before = _bits(f.inputs["pool"], np.uint16)
        if a_pool.size == e_pool.size == before.size:
            hit = np.flatnonzero((e_pool == before) & (a_pool != e_pool))
            if len(hit):
                failed.setdefault("Fixture.PoolHygiene", f"pool element {int(hit[0])} changed although the "
                                  "contract leaves it unchanged")
    if a_idx.size != e_idx.size:
        o.append(f"  out_idx: {a_idx.size} elements, expected {e_idx.size}\n")
        note("api", "out_idx has the wrong size")
    else:
        E, A = e_idx.reshape(rows, WIDTH), a_idx.reshape(rows, WIDTH)
        bad_rows = np.flatnonzero((E != A).any(axis=1))
        if len(bad_rows):
            first = int(bad_rows[0])
            r = row_info(f, first)
            lv = layout_violation(r, A[first])
            which = "padding" if r.padded else "differential" if not lv else "layout"
            o.append(f"  out_idx: {len(bad_rows)} of {rows} rows differ\n")
            _report_row(o, f, r, first, E[first], A[first])
            if lv:
                o.append(f"    the actual row breaks the index layout: {lv}\n")
            note(which, f"out_idx row (b={r.b}, t={r.t}) differs ({len(bad_rows)} rows)")

    if f.pool is not None:  # e_pool, a_pool, before: as for the hygiene check above
        i = _first_diff(e_pool, a_pool)
        if e_pool.size != a_pool.size:
            o.append(f"  pool: {a_pool.size} elements, expected {e_pool.size}\n")
            note("api", "pool has the wrong size")
        elif i >= 0:
            d = f.pool
            col, head = i % d["pool_head_dim"], (i // d["pool_head_dim"]) % d["num_kv_heads"]
            prow = (i // (d["pool_head_dim"] * d["num_kv_heads"])) % TPP
            page = i // (d["pool_head_dim"] * d["num_kv_heads"] * TPP)
            untouched = e_pool[i] == before[i]
            o.append("  pool: %d cells differ; first (page %d, row %d, head %d, col %d): expected 0x%04x, actual "
                     "0x%04x, before the run 0x%04x\n" % (int((e_pool != a_pool).sum()), page, prow, head, col,
                                                         e_pool[i], a_pool[i], before[i]))
            if untouched:
                o.append("    the contract leaves this cell unchanged: a write outside section 3's cells\n")
            note("pool hygiene" if untouched else "differential", f"pool cell (page {page}, row {prow}, col {col}) differs")

    e_sc = _bits(exp["split_counters"], np.int32).view(np.int32) if "split_counters" in exp else np.zeros(0, np.int32)
    a_sc = _bits(act["split_counters"], np.int32).view(np.int32) if act.get("split_counters") is not None \
        else np.zeros(0, np.int32)
    if e_sc.size or a_sc.size:
        i = _first_diff(e_sc, a_sc)
        if i >= 0:
            ev = str(int(e_sc[i])) if i < e_sc.size else "<none>"
            av = str(int(a_sc[i])) if i < a_sc.size else "<none>"
            o.append(f"  split_counters: first difference at flat index {i}: expected {ev}, actual {av}\n")
            note("differential", "split_counters differ")

    def stage(name, dtype):
        if name not in exp or act.get(name) is None:
            return
        e, a = _bits(exp[name], dtype), _bits(act[name], dtype)
        i = _first_diff(e, a)
        if i >= 0:
            n = min(e.size, a.size)
            o.append(f"  {name}: {int((e[:n] != a[:n]).sum())} elements differ, first at flat index {i}"
                     + (" (sizes differ)" if e.size != a.size else "") + "\n")
            note("differential", f"{name} differs")

    stage("q_normed", np.uint16)
    stage("kbar", np.uint16)
    if "logits" in exp and act.get("logits") is not None:
        if f.is_decode:
            e, a = _bits(exp["logits"], np.float32), _bits(act["logits"], np.float32)
            mb = f.max_blocks
            if e.size == a.size:
                for b in range(f.batch_size):
                    n = row_info(f, b).n_vis  # 0 on invalid rows
                    d = np.flatnonzero(e[b * mb:b * mb + n] != a[b * mb:b * mb + n])
                    if len(d):
                        g = int(d[0])
                        o.append(f"  logits: row b={b} block {g}: expected {hex32(e[b * mb + g].view(np.float32))}, "
                                 f"actual {hex32(a[b * mb + g].view(np.float32))}\n")
                        note("differential", "logits differ")
                        break
        else:
            stage("logits", np.float32)

    level, why = fixture_input_level(f)
    checks, first_judged = [], ""
    for cid in FIXTURE_CHECKS:
        if (cid == "Fixture.PaddedRows" and f.is_decode) or (cid == "Fixture.InvalidDecodeRows" and not f.is_decode) \
                or (cid == "Fixture.PoolHygiene" and f.pool is None):
            continue  # not applicable to this fixture
        c = FixtureCheck(levels.raised_to(levels.lookup(cid), level), False, cid in failed, failed.get(cid, ""))
        c.judged = sel.judged(c.info)
        if c.judged and c.failed and not first_judged:
            first_judged = f"{levels.tags(c.info)} ({cid})"
        checks.append(c)
    any_judged = any(c.judged for c in checks)
    if not first_judged:
        return ReplayResult(True, "PASS" if any_judged else "NOT JUDGED", any_judged=any_judged, input_level=level,
                            checks=checks)
    declared = f.contract or ""
    contract = declared or state["inferred"]
    head = f"contract broken: {contract}"
    if declared and declared != state["inferred"]:
        head += f" (case.json); inferred from the failure: {state['inferred']}"
    head += f"\n  case: {f.description}\n  inputs: level {level}" + (f" ({why})" if why else "") + "\n"
    for c in checks:
        if c.failed:
            head += (f"  failed check {c.info.id} [{levels.tags(c.info)}]"
                     + ("" if c.judged else f" NOT JUDGED ({sel.describe()})") + f": {c.detail}\n")
    summary = state["summary"] or next(c.detail for c in checks if c.failed)  # only a row / hygiene check failed
    return ReplayResult(False, f"FAIL: {summary} [{contract}] {first_judged}", head + "".join(o), contract,
                        any_judged, level, checks)


def _api_failure(f, sel, detail, report_line):
    """A failure of Fixture.Api (contract 'api') at the fixture's input level (fixtures/replay.cc's
    result for an implementation that throws)."""
    level, _ = fixture_input_level(f)
    info = levels.raised_to(levels.lookup("Fixture.Api"), level)
    c = FixtureCheck(info, sel.judged(info), True, detail)
    summary = "NOT JUDGED" if not c.judged else f"FAIL: {c.detail} {levels.tags(info)} (Fixture.Api)"
    return ReplayResult(not c.judged, summary, f"contract broken: api [{levels.tags(info)}]\n  {report_line}\n", "api",
                        c.judged, level, [c])


def replay(f, impl, sel=None, timeout=None):
    """Runs impl on f (at most `timeout` seconds when given) and compares. An exception raised by impl, a
    call that does not return in time, and outputs of the wrong kind, dtype or shape (outputs.py) are
    failures of Fixture.Api (contract 'api'), judged at the fixture's input level."""
    sel = levels.selection_from_env() if sel is None else sel
    try:
        out = outputs.call_impl(impl, f, timeout)
    except outputs.ImplTimeout as e:
        return _api_failure(f, sel, str(e), str(e))
    except Exception as e:  # noqa: BLE001 (any failure of the implementation is reported, not raised)
        what = outputs.describe_exception(e)
        return _api_failure(f, sel, f"the implementation threw: {what}", what)
    try:
        out = outputs.normalize_outputs(f, out)
    except outputs.OutputError as e:
        return _api_failure(f, sel, str(e), str(e))
    return compare_outputs(f, out, sel)
