"""Cross-test of the two readers: a corpus of malformed fixtures (generated here from curated ones,
which both accept: writer_test) get the same verdict from the Python reader and the C++ reader (`qsa show`):
both accept, or both reject naming the same file and the same field with the same detail. The one
exception is malformed JSON (field '<json>'), whose detail quotes each parser's own error text. Random
byte mutations of case.json and of .npy headers (fixed seeds; QSA_MUTATIONS=N runs more) too."""
import json
import os
import pathlib
import random
import shutil

import numpy as np
import pytest

from common import cpp_verdict, cases_dir, py_verdict

PF = "prefill_ctx_0_1_3_4_5_half"  # prefill, no pool (C++-written)
PP = "prefill_ctx_0_1_3_4_5_bf16_pool"  # prefill with a pool
DS = "decode_ctx_1_3_4_5_split_half"  # decode with split counters
HD = "hand_prefill_ctx_0_1_2_3"  # hand-written (npy 2.0, other header styles)


def npy_bytes(data, descr, shape, fortran="False", version=(1, 0), dict_text=None, pad_to=64, tail=b"\n"):
    """A .npy file with a hand-made header (so that any header defect can be written)."""
    if dict_text is None:
        shp = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        dict_text = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shp}, }}"
    h = dict_text.encode("latin-1") if isinstance(dict_text, str) else dict_text
    nlen = 2 if version[0] == 1 else 4
    pre = 8 + nlen
    total = pre + len(h) + len(tail)
    pad = (-total) % pad_to if pad_to else 0
    h = h + b" " * pad + tail
    return b"\x93NUMPY" + bytes(version) + len(h).to_bytes(nlen, "little") + h + data


def arr(d, name):
    return np.load(os.path.join(d, name))


def put(d, name, content):
    pathlib.Path(d, name).write_bytes(content)


def case(d):
    return json.loads(pathlib.Path(d, "case.json").read_bytes())


def set_case(d, _in=None, **kv):
    """Sets (or, for DELETE, removes) keys of case.json, or of its object `_in` ("pool")."""
    c = case(d)
    obj = c[_in] if _in else c
    for k, v in kv.items():
        if v is DELETE:
            obj.pop(k, None)
        else:
            obj[k] = v
    put(d, "case.json", json.dumps(c, indent=2).encode())


def replace_in_json(old, new):
    def f(t):
        assert old.encode() in t, (old, t)
        return t.replace(old.encode(), new.encode(), 1)
    return bytes_edit("case.json", f)


DELETE = object()


def with_npy(name, cut=0, extra=b"", cast=None, **header):
    """Rewrite `name` from its own array (cast to `cast`, `cut` bytes cut off the end, `extra` ones added)
    with npy_bytes' header overrides."""
    def f(d):
        a = arr(d, name)
        raw = (a.astype(cast) if cast else a).tobytes()
        put(d, name, npy_bytes(raw[:len(raw) - cut] + extra, **{"descr": a.dtype.str, "shape": a.shape, **header}))
    return f


def w_q_dict(descr="<u2", shape="(128,)", extra="", after=""):
    """w_q.npy with the header dict {'descr': DESCR, 'fortran_order': False, 'shape': SHAPE EXTRA} AFTER."""
    return with_npy("w_q.npy",
                    dict_text=f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}{extra}}}{after}")


def set_array(name, fn):
    def f(d):
        a = arr(d, name).copy()
        a = fn(a)
        put(d, name, npy_bytes(np.ascontiguousarray(a).tobytes(), a.dtype.str, a.shape))
    return f


def set_ctx(b, v):
    return set_array("context_lengths.npy", lambda a: np.where(np.arange(len(a)) == b, v, a).astype(np.int32))


def remove(name):
    return lambda d: os.remove(os.path.join(d, name))


def copy_from(other, name):
    return lambda d: shutil.copy(os.path.join(cases_dir(), other, name), os.path.join(d, name))


def bytes_edit(name, fn):
    return lambda d: put(d, name, fn(pathlib.Path(d, name).read_bytes()))


def pt_dup(plane):
    """Copies the last id of `plane` that is not -1 over the first -1 of that plane (or its first id)."""
    def f(a):
        v = a[:, plane, :].reshape(-1)
        used, holes = np.flatnonzero(v >= 0), np.flatnonzero(v < 0)
        v[holes[0] if len(holes) else used[0]] = v[used[-1]]
        a[:, plane, :] = v.reshape(a.shape[0], -1)
        return a
    return f


CORPUS = [
    # --- .npy files ---------------------------------------------------------------------------------
    ("npy_truncated_data", PF, with_npy("index_qk.npy", cut=1)),
    ("npy_truncated_data_w", DS, with_npy("w_q.npy", cut=2)),
    ("npy_trailing_byte", PF, with_npy("w_k.npy", extra=b"\0")),
    ("npy_empty_file", PF, lambda d: put(d, "w_q.npy", b"")),
    ("npy_before_header_len", PF, lambda d: put(d, "w_q.npy", b"\x93NUMPY\x01\x00\x10")),
    ("npy_truncated_header", PP, bytes_edit("pool.npy", lambda b: b[:40])),
    ("npy_bad_magic", PF, bytes_edit("cos_sin.npy", lambda b: b"\x93NUMPZ" + b[6:])),
    ("npy_version_3", PF, with_npy("w_q.npy", version=(3, 0))),
    ("npy_version_1_1", PF, with_npy("w_q.npy", version=(1, 1))),
    ("npy_version_2_ok", PF, with_npy("index_qk.npy", version=(2, 0))),
    ("npy_unaligned_padding_ok", PF, with_npy("index_qk.npy", pad_to=0)),
    ("npy_big_endian", PF, with_npy("w_q.npy", descr=">u2")),
    ("npy_pipe_dtype", PF, with_npy("w_q.npy", descr="|u1", cut=128)),
    ("npy_f8_dtype", PF, with_npy("cos_sin.npy", descr="<f8", extra=b"\0" * 0, cast="<f8")),
    ("npy_wrong_dtype_i4_for_u2", PF, with_npy("w_k.npy", descr="<i4", cast="<i4")),
    ("npy_wrong_dtype_u2_for_i4", DS, with_npy("context_lengths.npy", descr="<u2", cast="<u2")),
    ("npy_wrong_dtype_cos_sin", PF, with_npy("cos_sin.npy", descr="<i4", cast="<i4")),
    ("npy_wrong_dtype_logits", PP, with_npy("expected_logits.npy", descr="<i4", cast="<i4")),
    ("npy_fortran", PF, with_npy("w_q.npy", fortran="True")),
    ("npy_fortran_bad_bool", PF, with_npy("w_q.npy", fortran="false")),
    ("npy_wrong_shape", PF, set_array("index_qk.npy", lambda a: a.reshape(-1, 640))),
    ("npy_wrong_shape_out_idx", DS, set_array("expected_out_idx.npy", lambda a: a.reshape(a.shape[0], -1))),
    ("npy_wrong_shape_q_normed", PP, set_array("expected_q_normed.npy", lambda a: a.reshape(-1, 128))),
    ("npy_wrong_shape_kbar", PP, set_array("expected_kbar.npy", lambda a: a[:, :1])),
    ("npy_wrong_shape_pool", PP, set_array("pool.npy", lambda a: a[:-1])),
    ("npy_wrong_shape_split", DS, set_array("split_counters.npy", lambda a: a[:, :0])),
    ("npy_wrong_shape_logits", DS, set_array("expected_logits.npy", lambda a: a[:, :-1])),
    ("npy_scalar_shape", PF, set_array("w_q.npy", lambda a: np.array(a[0]))),
    ("npy_unknown_key", PF, w_q_dict(extra=", 'x': 1")),
    ("npy_missing_shape", PF, with_npy("w_q.npy", dict_text="{'descr': '<u2', 'fortran_order': False}")),
    ("npy_missing_descr", PF, with_npy("w_q.npy", dict_text="{'fortran_order': False, 'shape': (128,)}")),
    ("npy_dup_key", PF, with_npy("w_q.npy", dict_text="{'descr': '<u2', 'descr': '<u2', 'fortran_order': "
                                                      "False, 'shape': (128,)}")),
    ("npy_escape", PF, w_q_dict(descr="<u\\2")),
    ("npy_junk_after_dict", PF, w_q_dict(after=" x")),
    ("npy_double_quotes_long_ok", PF, with_npy("w_q.npy", dict_text='{"shape": (128L,), "descr": "<u2", '
                                                                    '"fortran_order": False}')),
    ("npy_shape_not_int", PF, w_q_dict(shape="(12a,)")),
    ("npy_shape_huge", PF, w_q_dict(shape="(99999999999999,)")),
    ("npy_shape_too_many_elems", PF, w_q_dict(shape="(1099511627776, 1099511627776)")),
    ("npy_rank_9", PF, w_q_dict(shape="(1,1,1,1,1,1,1,1,128)")),
    ("npy_missing_comma", PF, with_npy("w_q.npy", dict_text="{'descr': '<u2' 'fortran_order': False, "
                                                            "'shape': (128,)}")),
    ("npy_unterminated", PF, with_npy("w_q.npy", dict_text="{'descr': '<u2")),
    ("npy_no_brace", PF, with_npy("w_q.npy", dict_text="['descr']")),
    # --- files --------------------------------------------------------------------------------------
    ("missing_case_json", PF, remove("case.json")),
    ("missing_index_qk", PF, remove("index_qk.npy")),
    ("missing_cos_sin", DS, remove("cos_sin.npy")),
    ("missing_ctx", PF, remove("context_lengths.npy")),
    ("missing_w_k", PP, remove("w_k.npy")),
    ("missing_page_table", PP, remove("page_table.npy")),
    ("missing_pool", DS, remove("pool.npy")),
    ("missing_expected_pool", PP, remove("expected_pool.npy")),
    ("missing_split", DS, remove("split_counters.npy")),
    ("missing_expected_split", DS, remove("expected_split_counters.npy")),
    ("missing_expected_out_idx", PF, remove("expected_out_idx.npy")),
    ("missing_optional_ok", PP, lambda d: [os.remove(os.path.join(d, n)) for n in
                                           ("expected_q_normed.npy", "expected_kbar.npy", "expected_logits.npy")]),
    ("forbidden_page_table", PF, copy_from(PP, "page_table.npy")),
    ("forbidden_expected_pool", PF, copy_from(PP, "expected_pool.npy")),
    ("forbidden_split_in_prefill", PP, copy_from(DS, "split_counters.npy")),
    ("forbidden_split_when_false", DS, lambda d: set_case(d, split_counters=False)),
    ("forbidden_kbar_in_decode", DS, copy_from(PP, "expected_kbar.npy")),
    ("other_file_ignored_ok", PF, lambda d: put(d, "notes.txt", b"hello")),
    ("format_file_is_directory", PF, lambda d: (os.remove(os.path.join(d, "w_q.npy")),
                                                os.mkdir(os.path.join(d, "w_q.npy")))),
    # --- case.json ----------------------------------------------------------------------------------
    ("json_truncated", PF, bytes_edit("case.json", lambda b: b[:len(b) // 2])),
    ("json_trailing_comma", PF, replace_in_json('"pool": null', '"pool": null,\n"x": 1,')),
    ("json_trailing_comma2", PF, bytes_edit("case.json", lambda b: b.rstrip()[:-1] + b",}")),
    ("json_nan", PF, replace_in_json('"pool": null', '"pool": NaN')),
    ("json_comment", PF, bytes_edit("case.json", lambda b: b"// c\n" + b)),
    ("json_bom_ok", PF, bytes_edit("case.json", lambda b: b"\xef\xbb\xbf" + b)),
    ("json_top_array", PF, lambda d: put(d, "case.json", b"[1, 2]")),
    ("json_empty", PF, lambda d: put(d, "case.json", b"")),
    ("json_trailing_garbage", PF, bytes_edit("case.json", lambda b: b + b"x")),
    ("json_unclosed_object", PF, bytes_edit("case.json", lambda b: b.rstrip()[:-1])),  # ends after a value
    ("json_spaced_empty_containers", PF, replace_in_json('"pool": null', '"pool": null, "zeta": [ ], "alpha": { }')),
    ("json_dup_top", PF, replace_in_json('"pool": null', '"pool": null, "dtype": "half"')),
    ("json_dup_pool", PP, replace_in_json('"head_size"', '"num_pages": 1, "head_size"')),
    ("json_dup_before_syntax_error", PF, replace_in_json('"pool": null', '"pool": null, "pool": nul')),
    ("json_lone_surrogate", PF, replace_in_json('"description": "', '"description": "\\ud800')),
    ("json_pair_surrogate_ok", PF, replace_in_json('"description": "', '"description": "\\ud83d\\ude00')),
    ("json_invalid_utf8", PF, bytes_edit("case.json", lambda b: b.replace(b'"description": "',
                                                                           b'"description": "\xff', 1))),
    ("json_control_char", PF, bytes_edit("case.json", lambda b: b.replace(b'"description": "',
                                                                           b'"description": "\x01', 1))),
    ("json_unknown_key", PF, lambda d: set_case(d, zeta=1, alpha=2)),
    ("json_missing_schema", PF, lambda d: set_case(d, schema=DELETE)),
    ("json_missing_pool", PF, lambda d: set_case(d, pool=DELETE)),
    ("json_missing_eps", DS, lambda d: set_case(d, rms_eps_bits=DELETE)),
    ("json_missing_split", DS, lambda d: set_case(d, split_counters=DELETE)),
    ("json_missing_max_blocks", DS, lambda d: set_case(d, max_blocks=DELETE)),
    ("json_missing_description", PF, lambda d: set_case(d, description=DELETE)),
    ("json_bad_schema", PF, lambda d: set_case(d, schema="qsa-fixture/2")),
    ("json_schema_number", PF, lambda d: set_case(d, schema=1)),
    ("json_bad_pipeline", PF, lambda d: set_case(d, pipeline="Prefill")),
    ("json_bad_dtype", PF, lambda d: set_case(d, dtype="fp16")),
    ("json_dtype_null", PF, lambda d: set_case(d, dtype=None)),
    ("json_batch_float", PF, replace_in_json('"batch_size": 5', '"batch_size": 5.0')),
    ("json_batch_exp", PF, replace_in_json('"batch_size": 5', '"batch_size": 5e0')),
    ("json_batch_bool", PF, lambda d: set_case(d, batch_size=True)),
    ("json_batch_string", PF, lambda d: set_case(d, batch_size="5")),
    ("json_batch_zero", PF, lambda d: set_case(d, batch_size=0)),
    ("json_batch_negative", PF, lambda d: set_case(d, batch_size=-5)),
    ("json_batch_2p31", PF, lambda d: set_case(d, batch_size=2**31)),
    ("json_batch_huge", PF, lambda d: set_case(d, batch_size=2**64)),
    ("json_batch_mismatch", PF, lambda d: set_case(d, batch_size=4)),
    ("json_seq_len_decode_2", DS, lambda d: set_case(d, seq_len=2)),
    ("json_seq_len_mismatch", PF, lambda d: set_case(d, seq_len=8)),
    ("json_max_blocks_in_prefill", PF, lambda d: set_case(d, max_blocks=4)),
    ("json_max_blocks_zero", DS, lambda d: set_case(d, max_blocks=0)),
    ("json_split_in_prefill", PF, lambda d: set_case(d, split_counters=False)),
    ("json_split_not_bool", DS, lambda d: set_case(d, split_counters=1)),
    ("json_eps_7_digits", PF, lambda d: set_case(d, rms_eps_bits="358637b")),
    ("json_eps_0x", PF, lambda d: set_case(d, rms_eps_bits="0x358637")),
    ("json_eps_upper_ok", PF, lambda d: set_case(d, rms_eps_bits="358637BD")),
    ("json_eps_unicode", PF, lambda d: set_case(d, rms_eps_bits="358637\u00e9")),
    ("json_eps_number", PF, lambda d: set_case(d, rms_eps_bits=12345678)),
    ("json_description_newline", PF, lambda d: set_case(d, description="two\nlines")),
    ("json_contract_null", PF, lambda d: set_case(d, contract=None)),
    ("json_provenance_number", PF, lambda d: set_case(d, provenance=3)),
    ("json_regions_ok", PF, lambda d: set_case(d, regions=["nvis_gt_512", "bf16", "tie_at_rank_512"])),
    ("json_regions_empty_ok", DS, lambda d: set_case(d, regions=[])),
    ("json_regions_string", PF, lambda d: set_case(d, regions="bf16")),
    ("json_regions_null", PF, lambda d: set_case(d, regions=None)),
    ("json_regions_number_item", DS, lambda d: set_case(d, regions=["bf16", 3])),
    ("json_regions_bad_name", PF, lambda d: set_case(d, regions=["huge", "Bf16"])),
    ("json_regions_empty_name", PF, lambda d: set_case(d, regions=[""])),
    ("json_regions_twice", PF, lambda d: set_case(d, regions=["huge", "bf16", "huge"])),
    ("json_seed_negative", PF, lambda d: set_case(d, seed=-1)),
    ("json_seed_minus_zero", PF, lambda d: put(d, "case.json", json.dumps(dict(case(d), seed=0), indent=2)
                                               .replace('"seed": 0', '"seed": -0').encode())),
    ("json_seed_float", PF, lambda d: set_case(d, seed=1.5)),
    ("json_seed_2p64", PF, lambda d: set_case(d, seed=2**64)),
    ("json_seed_max_ok", PF, lambda d: set_case(d, seed=2**64 - 1)),
    ("json_seed_string", PF, lambda d: set_case(d, seed="1")),
    ("json_pool_null_in_decode", DS, lambda d: set_case(d, pool=None)),
    ("json_pool_array", PP, lambda d: set_case(d, pool=[1])),
    ("json_pool_extra_key", PP, lambda d: set_case(d, "pool", numPages=1)),
    ("json_pool_missing_key", PP, lambda d: set_case(d, "pool", num_kv_heads=DELETE)),
    ("json_pool_zero_pages", PP, lambda d: set_case(d, "pool", num_pages=0)),
    ("json_pool_head_size_too_big", PP,
     lambda d: set_case(d, "pool", head_size=case(d)["pool"]["pool_head_dim"] - 127)),
    ("json_pool_head_size_float", DS, lambda d: set_case(d, "pool", head_size=1.0)),
    ("json_pool_heads_mismatch", DS, lambda d: set_case(d, "pool", num_kv_heads=case(d)["pool"]["num_kv_heads"] + 1)),
    # --- values -------------------------------------------------------------------------------------
    ("ctx_above_s", PF, set_ctx(2, 99)),
    ("ctx_negative", PP, set_ctx(1, -1)),
    ("ctx_decode_zero", DS, set_ctx(3, 0)),
    ("cos_sin_too_few_rows", PF, set_array("cos_sin.npy", lambda a: a[:4])),
    ("cos_sin_decode_too_few", DS, set_array("cos_sin.npy", lambda a: a[:4])),
    ("cos_sin_wrong_cols", PF, set_array("cos_sin.npy", lambda a: a[:, :32])),
    ("cos_sin_rank3", PF, set_array("cos_sin.npy", lambda a: a[None])),
    ("cos_sin_more_rows_ok", PF, set_array("cos_sin.npy", lambda a: np.concatenate([a, a]))),
    ("page_table_dup_in_plane", PP, set_array("page_table.npy", pt_dup(1))),
    ("page_table_dup_k_plane", DS, set_array("page_table.npy", pt_dup(0))),
    ("page_table_dup_minus1_ok", DS, set_array("page_table.npy",
                                               lambda a: (a.__setitem__((slice(None), 0, -1), -1), a)[1])),
    ("page_table_dup_out_of_plane_ok", PP, set_array("page_table.npy",
                                                     lambda a: (a.__setitem__((slice(None), 0, -1), 10**6), a)[1])),
    ("hand_npy_truncated", HD, with_npy("expected_out_idx.npy", cut=4)),
    ("hand_json_uppercase_eps_dup", HD, replace_in_json('"pool": null', '"pool": null, "schema": "x"')),
]


def same_verdict(d, what=""):
    """Both readers' verdict on `d`, asserted equal; returns it."""
    cv, pv = cpp_verdict(d), py_verdict(d)
    if cv[0] == "error" and cv[2] == "<json>":
        assert pv[:3] == cv[:3], (cv, pv)  # same file and field; the parsers word the syntax error apart
    else:
        assert pv == cv, f"\nC++:    {cv}\nPython: {pv}{what}"
    return cv


def test_corpus_names_unique():
    names = [c[0] for c in CORPUS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name,base,mutate", CORPUS, ids=[c[0] for c in CORPUS])
def test_malformed_same_verdict(tmp_path, name, base, mutate):
    d = str(tmp_path / name)
    shutil.copytree(os.path.join(cases_dir(), base), d)
    mutate(d)
    cv = same_verdict(d)
    if name.endswith("_ok"):
        assert cv == ("ok",), cv
    else:
        assert cv[0] == "error", f"{name} was meant to be malformed but both readers accept it"


def test_not_a_directory(tmp_path):
    p = str(tmp_path / "nope")
    assert cpp_verdict(p) == py_verdict(p) == ("error", p, "<dir>", "not a directory")


MUTATION_BASES = ["prefill_ctx_0_1_3_4_5_half", "decode_ctx_1_3_4_5_split_half", "hand_prefill_pool_ctx_3_2"]
ALPHABET = b" \t\n\r{}[]:,\"'0123456789-+.eEtrufalsnTFL\\/<>|iufx\x00\x80\xff"


def mutate_bytes(data, rng, lo, hi):
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(3)
        i = rng.randrange(lo, min(hi, len(b)) or 1)
        if op == 0 and i < len(b):
            b[i] = rng.choice(ALPHABET)
        elif op == 1:
            b.insert(i, rng.choice(ALPHABET))
        elif i < len(b):
            del b[i]
    return bytes(b)


@pytest.mark.parametrize("seed", range(int(os.environ.get("QSA_MUTATIONS", "60"))))
def test_random_mutation_same_verdict(tmp_path, seed):
    rng = random.Random(seed)
    d = str(tmp_path / "m")
    shutil.copytree(os.path.join(cases_dir(), MUTATION_BASES[seed % len(MUTATION_BASES)]), d)
    name = rng.choice(["case.json", "case.json", "w_q.npy", "context_lengths.npy", "index_qk.npy"])
    with open(os.path.join(d, name), "rb") as fh:
        data = fh.read()
    if name == "case.json":
        data = mutate_bytes(data, rng, 0, len(data))
    else:  # the header: magic, version, length and the dict
        hl = 10 + int.from_bytes(data[8:10], "little") if data[6] == 1 else 12 + int.from_bytes(data[8:12], "little")
        data = mutate_bytes(data, rng, 0, hl)
    put(d, name, data)
    same_verdict(d, f"\nmutated {name}: {data[:400]!r}")
