"""Reader, validator and writer of `qsa-fixture/1` (/work/shared/FIXTURE_FORMAT.md) with the rules,
check order, fields and messages of the C++ reader (fixtures/fixture.cc; fixtures/README.md "Reader
rules"): the same directory is accepted or rejected by both, naming the same file and field.
"""
import os
from dataclasses import dataclass, field as dc_field
from typing import Dict, List, Optional

import numpy as np

from . import strict_json
from .errors import FixtureError
from .npy import parse_npy, serialize_npy, shape_string

SCHEMA = "qsa-fixture/1"
QK_WIDTH, INDEX_WIDTH, ROPE_COLS, HEAD_DIM, NUM_HEADS, TOKENS_PER_PAGE, TOPK = 640, 2051, 64, 128, 4, 128, 512
I32_MAX = 2147483647
POOL_KEYS = ("num_pages", "max_pages_per_seq", "num_kv_heads", "pool_head_dim", "head_size")
TOP_KEYS = ("schema", "description", "pipeline", "dtype", "batch_size", "seq_len", "max_blocks",
            "rms_eps_bits", "pool", "split_counters", "contract", "seed", "provenance", "regions")
REGION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_<>")
FORMAT_FILES = ("case.json", "index_qk.npy", "cos_sin.npy", "context_lengths.npy", "w_q.npy", "w_k.npy",
                "page_table.npy", "pool.npy", "split_counters.npy", "expected_out_idx.npy",
                "expected_pool.npy", "expected_split_counters.npy", "expected_q_normed.npy",
                "expected_kbar.npy", "expected_logits.npy")
INPUTS = ("index_qk", "cos_sin", "context_lengths", "w_q", "w_k", "page_table", "pool", "split_counters")
EXPECTED = ("out_idx", "pool", "split_counters", "q_normed", "kbar", "logits")


@dataclass
class Fixture:
    """One run of one pipeline. `inputs` and `expected` map the format's array names (without .npy /
    expected_) to NumPy arrays of the format's dtype and shape; absent ones are missing."""
    description: str
    pipeline: str  # "prefill" | "decode"
    dtype: str  # "half" | "bf16"
    batch_size: int
    seq_len: int
    rms_eps_bits: int
    pool: Optional[Dict[str, int]]
    max_blocks: Optional[int] = None  # decode only
    split_counters: Optional[bool] = None  # decode only
    contract: Optional[str] = None
    seed: Optional[int] = None
    provenance: Optional[str] = None
    regions: Optional[List[str]] = None  # property regions the case reaches (`qsa corpus` writes them)
    inputs: Dict[str, np.ndarray] = dc_field(default_factory=dict)
    expected: Dict[str, np.ndarray] = dc_field(default_factory=dict)

    @property
    def is_decode(self):
        return self.pipeline == "decode"

    @property
    def rms_eps(self):
        return np.uint32(self.rms_eps_bits).view(np.float32)


def _join(d, name):
    return name if d == "" else d + "/" + name


class _Json:
    def __init__(self, obj, file, prefix=""):
        self.j, self.file, self.prefix = obj, file, prefix

    def fail(self, key, why):
        raise FixtureError(self.file, self.prefix + key, why)

    def at(self, key):
        if key not in self.j:
            self.fail(key, "required key is missing")
        return self.j[key]

    def str(self, key):
        v = self.at(key)
        if not isinstance(v, str):
            self.fail(key, "must be a string, got " + strict_json.type_name(v))
        return v

    def integer(self, key, lo, hi):
        v = self.at(key)
        if not isinstance(v, (strict_json.Unsigned, strict_json.Integer)):
            self.fail(key, f"must be an integer, got {strict_json.type_name(v)} {strict_json.dump(v)}")
        if not lo <= int(v) <= hi:
            self.fail(key, f"value {strict_json.dump(v)} outside [{lo}, {hi}]")
        return int(v)

    def boolean(self, key):
        v = self.at(key)
        if not isinstance(v, bool):
            self.fail(key, "must be true or false, got " + strict_json.type_name(v))
        return v

    def forbid(self, key, why):
        if key in self.j:
            self.fail(key, "not allowed " + why)

    def only_keys(self, allowed):
        for k in sorted(self.j, key=lambda k: k.encode("utf-8", "surrogatepass")):  # nlohmann's order: by bytes
            if k not in allowed:
                self.fail(k, "unknown key (a typo must not silently change a case)")


def parse_case_json(data, file="case.json"):
    """case.json checked for keys, types and ranges; returns a Fixture without arrays."""
    try:
        j = strict_json.loads(data, file)
    except strict_json.JsonSyntaxError as e:
        raise FixtureError(file, "<json>", f"malformed JSON: {e}") from None
    if not isinstance(j, dict):
        raise FixtureError(file, "<json>", "top level must be an object, got " + strict_json.type_name(j))
    r = _Json(j, file)
    r.only_keys(TOP_KEYS)
    if r.str("schema") != SCHEMA:
        r.fail("schema", f'must be "{SCHEMA}", got "{r.str("schema")}"')
    description = r.str("description")
    if "\r" in description or "\n" in description:
        r.fail("description", "must be one line")
    pipeline = r.str("pipeline")
    if pipeline not in ("prefill", "decode"):
        r.fail("pipeline", f'must be "prefill" or "decode", got "{pipeline}"')
    decode = pipeline == "decode"
    dtype = r.str("dtype")
    if dtype not in ("half", "bf16"):
        r.fail("dtype", f'must be "half" or "bf16", got "{dtype}"')
    batch_size = r.integer("batch_size", 1, I32_MAX)
    seq_len = r.integer("seq_len", 1, I32_MAX)
    if decode and seq_len != 1:
        r.fail("seq_len", f"must be 1 for decode (one step), got {seq_len}")
    max_blocks = None
    if decode:
        max_blocks = r.integer("max_blocks", 1, I32_MAX)
    else:
        r.forbid("max_blocks", "in prefill (decode only)")
    eps = r.str("rms_eps_bits")
    if len(eps.encode("utf-8", "surrogatepass")) != 8 or any(c not in "0123456789abcdefABCDEF" for c in eps):
        r.fail("rms_eps_bits", f'must be exactly 8 hex digits, got "{eps}"')
    pool = r.at("pool")
    pool_dims = None
    if pool is None:
        if decode:
            r.fail("pool", "decode needs a pool object, got null")
    elif isinstance(pool, dict):
        p = _Json(pool, file, "pool.")
        p.only_keys(POOL_KEYS)
        # Ranges of a valid pool state (contract section 2: the runners throw otherwise).
        pool_dims = {k: p.integer(k, 1, I32_MAX) for k in POOL_KEYS}
        if pool_dims["head_size"] + HEAD_DIM > pool_dims["pool_head_dim"]:
            r.fail("pool.head_size", f"head_size + 128 > pool_head_dim ({pool_dims['head_size']} + 128 > "
                                     f"{pool_dims['pool_head_dim']})")
    else:
        r.fail("pool", "must be an object or null, got " + strict_json.type_name(pool))
    split = None
    if decode:
        split = r.boolean("split_counters")
    else:
        r.forbid("split_counters", "in prefill (decode only)")
    contract = r.str("contract") if "contract" in j else None
    provenance = r.str("provenance") if "provenance" in j else None
    seed = None
    if "seed" in j:
        s = j["seed"]
        if not isinstance(s, strict_json.Unsigned):
            r.fail("seed", "must be a non-negative integer, got " + strict_json.dump(s))
        seed = int(s)
    regions = None
    if "regions" in j:  # optional (fixtures/README.md): region names as coverage.h spells them, each once
        v = j["regions"]
        if not isinstance(v, list):
            r.fail("regions", "must be an array of strings, got " + strict_json.type_name(v))
        regions = []
        for i, n in enumerate(v):
            if not isinstance(n, str):
                r.fail(f"regions[{i}]", "must be a string, got " + strict_json.type_name(n))
            if not n or any(c not in REGION_CHARS for c in n):
                r.fail(f"regions[{i}]", f'region name "{n}" is not [a-z0-9_<>]+')
            if n in regions:
                r.fail(f"regions[{i}]", f'region "{n}" listed twice')
            regions.append(n)
    return Fixture(description=description, pipeline=pipeline, dtype=dtype, batch_size=batch_size,
                   seq_len=seq_len, rms_eps_bits=int(eps, 16), pool=pool_dims, max_blocks=max_blocks,
                   split_counters=split, contract=contract, seed=seed, provenance=provenance, regions=regions)


def case_json_text(f):
    """Pretty JSON, keys sorted (as the C++ writer's nlohmann object), trailing newline."""
    j = {"schema": SCHEMA, "description": f.description, "pipeline": f.pipeline, "dtype": f.dtype,
         "batch_size": f.batch_size, "seq_len": f.seq_len, "rms_eps_bits": "%08x" % f.rms_eps_bits,
         "pool": None if f.pool is None else {k: f.pool[k] for k in POOL_KEYS}}
    for k in ("max_blocks", "split_counters", "contract", "seed", "provenance", "regions"):  # the optional keys
        if getattr(f, k) is not None:
            j[k] = getattr(f, k)
    import json
    return json.dumps(j, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


class _Arrays:
    def __init__(self, files, d):
        self.files, self.d = files, d

    def path(self, name):
        return _join(self.d, name)

    def present(self, name):
        return name in self.files

    def forbid(self, name, why):
        if self.present(name):
            raise FixtureError(self.path(name), "<file>", "must not be present " + why)

    def get(self, name, descr, shape):
        if name not in self.files:
            raise FixtureError(self.path(name), "<file>", "required file is missing")
        a = parse_npy(self.files[name], self.path(name))
        got = a.dtype.str
        if got != descr:
            raise FixtureError(self.path(name), "descr",
                               f"dtype '{got}' disagrees with case.json: expected '{descr}'")
        if tuple(a.shape) != tuple(shape):
            raise FixtureError(self.path(name), "shape", f"shape {shape_string(a.shape)} disagrees with "
                                                         f"case.json: expected {shape_string(shape)}")
        return a


def output_specs(f):
    """{output name: (descr, shape)}: the format of expected_<name>.npy (and of an output directory's)."""
    B, S, MB = f.batch_size, f.seq_len, (f.seq_len + 3) // 4
    specs = {"out_idx": ("<i4", (B, S, INDEX_WIDTH)), "q_normed": ("<u2", (B, S, NUM_HEADS, HEAD_DIM)),
             "kbar": ("<u2", (B, MB, HEAD_DIM)),
             "logits": ("<f4", (B, f.max_blocks) if f.is_decode else (B * S, MB))}
    if f.pool is not None:
        p = f.pool
        specs["pool"] = ("<u2", (2 * p["num_pages"], TOKENS_PER_PAGE, p["num_kv_heads"], p["pool_head_dim"]))
        specs["split_counters"] = ("<i4", (B, p["num_kv_heads"]))
    return specs


def _check_page_table(pt, d, file):
    """Contract section 5: a page id inside its plane appears at most once per plane."""
    B, n = pt.shape[0], d["num_pages"]
    for plane in (0, 1):
        lo, hi = (0, n) if plane == 0 else (n, 2 * n)
        vals = pt[:, plane, :].astype(np.int64)
        flat = (np.arange(B)[:, None] * 2 + plane) * d["max_pages_per_seq"] + np.arange(vals.shape[1])[None, :]
        keep = (vals >= lo) & (vals < hi)
        ids = sorted(zip(vals[keep].tolist(), flat[keep].tolist()))
        for (i0, f0), (i1, f1) in zip(ids, ids[1:]):
            if i0 == i1:
                raise FixtureError(file, "page_table",
                                   f"page id {i1} appears twice in plane {plane} (flat indices {f0} and {f1}): "
                                   "aliased pages violate the contract's precondition")


def parse_fixture_files(files, d):
    """A fixture from file contents keyed by name ("case.json", "index_qk.npy", ...); names outside the
    format are ignored; `d` prefixes the file names in error messages."""
    if "case.json" not in files:
        raise FixtureError(_join(d, "case.json"), "<file>", "required file is missing")
    f = parse_case_json(files["case.json"], _join(d, "case.json"))
    r = _Arrays(files, d)
    decode = f.is_decode
    B, S = f.batch_size, f.seq_len
    ins, exp, out = f.inputs, f.expected, output_specs(f)
    ins["index_qk"] = r.get("index_qk.npy", "<u2", (B, S, QK_WIDTH))
    ctx = r.get("context_lengths.npy", "<i4", (B,))
    ins["context_lengths"] = ctx
    ins["w_q"] = r.get("w_q.npy", "<u2", (HEAD_DIM,))
    ins["w_k"] = r.get("w_k.npy", "<u2", (HEAD_DIM,))
    max_ctx = 0
    for b in range(B):
        c = int(ctx[b])
        if not decode and (c < 0 or c > S):
            raise FixtureError(r.path("context_lengths.npy"), f"context_lengths[{b}]",
                               f"value {c} outside [0, S = {S}]")
        if decode and c < 1:
            raise FixtureError(r.path("context_lengths.npy"), f"context_lengths[{b}]",
                               f"decode context length {c} < 1 (it includes the new token)")
        max_ctx = max(max_ctx, c)
    need = max_ctx if decode else S
    if "cos_sin.npy" not in files:
        raise FixtureError(r.path("cos_sin.npy"), "<file>", "required file is missing")
    cs = parse_npy(files["cos_sin.npy"], r.path("cos_sin.npy"))
    if cs.ndim != 2 or cs.shape[1] != ROPE_COLS or cs.shape[0] < need:
        raise FixtureError(r.path("cos_sin.npy"), "shape",
                           f"shape {shape_string(cs.shape)} must be (P, 64) with P >= {need}"
                           + (" (max context length)" if decode else " (seq_len)"))
    if cs.dtype.str != "<f4":
        raise FixtureError(r.path("cos_sin.npy"), "descr", f"dtype is '{cs.dtype.str}', expected '<f4'")
    ins["cos_sin"] = cs
    if f.pool is not None:
        ins["page_table"] = r.get("page_table.npy", "<i4", (B, 2, f.pool["max_pages_per_seq"]))
        ins["pool"] = r.get("pool.npy", *out["pool"])
        _check_page_table(ins["page_table"], f.pool, r.path("page_table.npy"))
        exp["pool"] = r.get("expected_pool.npy", *out["pool"])
    else:
        for n in ("page_table.npy", "pool.npy", "expected_pool.npy"):
            r.forbid(n, 'when case.json has "pool": null')
    if f.split_counters:
        ins["split_counters"] = r.get("split_counters.npy", *out["split_counters"])
        exp["split_counters"] = r.get("expected_split_counters.npy", *out["split_counters"])
    else:
        why = 'when case.json has "split_counters": false' if decode else "in prefill"
        r.forbid("split_counters.npy", why)
        r.forbid("expected_split_counters.npy", why)
    exp["out_idx"] = r.get("expected_out_idx.npy", *out["out_idx"])
    for name in ("q_normed", "kbar", "logits"):  # in this order, as the C++ reader checks them
        if name == "kbar" and decode:
            r.forbid("expected_kbar.npy", "in decode (prefill stage output only)")
        elif r.present(f"expected_{name}.npy"):
            exp[name] = r.get(f"expected_{name}.npy", *out[name])
    return f


def read_fixture(d):
    """Reads and validates directory `d` (a path string; messages name files as `d`/<name>)."""
    if not os.path.isdir(d):
        raise FixtureError(d, "<dir>", "not a directory")
    files = {}
    for name in FORMAT_FILES:
        p = os.path.join(d, name)
        if not os.path.exists(p):
            continue
        if os.path.isdir(p):  # the C++ reader opens a directory and reads no bytes from it
            files[name] = b""
            continue
        try:
            with open(p, "rb") as fh:
                files[name] = fh.read()
        except OSError:
            raise FixtureError(p, "<file>", "cannot be opened") from None
    return parse_fixture_files(files, d)


def serialize_fixture(f):
    """Every file of the fixture as bytes, keyed by file name."""
    out = {"case.json": case_json_text(f).encode("utf-8")}
    for k in INPUTS:
        if k in f.inputs:
            out[k + ".npy"] = serialize_npy(f.inputs[k])
    for k in EXPECTED:
        if k in f.expected:
            out["expected_" + k + ".npy"] = serialize_npy(f.expected[k])
    return out


def validate_fixture(f, where="<fixture>"):
    """One source of truth, as in C++: serialize and run the reader on the bytes."""
    return parse_fixture_files(serialize_fixture(f), where)


def write_fixture(d, f):
    """Validates (nothing is written for an invalid fixture), writes every file, and removes format
    files of an earlier fixture in `d` that this one does not have."""
    validate_fixture(f, d)
    files = serialize_fixture(f)
    os.makedirs(d, exist_ok=True)
    for name in FORMAT_FILES:
        p = os.path.join(d, name)
        if name not in files:
            if os.path.exists(p):
                os.remove(p)
            continue
        with open(p, "wb") as fh:
            fh.write(files[name])
