"""Random byte mutations of case.json and of .npy headers (fixed seeds): both readers give the same
verdict, file and field (and detail, except for malformed JSON). QSA_MUTATIONS=N runs more."""
import os
import random
import shutil

import pytest

from common import cases_dir, cpp_verdict, py_verdict

N = int(os.environ.get("QSA_MUTATIONS", "60"))
BASES = ["prefill_ctx_0_1_3_4_5_half", "decode_ctx_1_3_4_5_split_half", "hand_prefill_pool_ctx_3_2"]
ALPHABET = b" \t\n\r{}[]:,\"'0123456789-+.eEtrufalsnTFL\\/<>|iufx\x00\x80\xff"


def mutate(data, rng, lo, hi):
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


@pytest.mark.parametrize("seed", range(N))
def test_random_mutation_same_verdict(tmp_path, seed):
    rng = random.Random(seed)
    base = BASES[seed % len(BASES)]
    d = str(tmp_path / "m")
    shutil.copytree(os.path.join(cases_dir(), base), d)
    name = rng.choice(["case.json", "case.json", "w_q.npy", "context_lengths.npy", "index_qk.npy"])
    p = os.path.join(d, name)
    with open(p, "rb") as fh:
        data = fh.read()
    if name == "case.json":
        data = mutate(data, rng, 0, len(data))
    else:  # the header: magic, version, length and the dict
        hl = 10 + int.from_bytes(data[8:10], "little") if data[6] == 1 else 12 + int.from_bytes(data[8:12], "little")
        data = mutate(data, rng, 0, hl)
    with open(p, "wb") as fh:
        fh.write(data)
    cv, pv = cpp_verdict(d), py_verdict(d)
    if cv[0] == "error" and cv[2] == "<json>":
        assert pv[:3] == cv[:3], (cv, pv)
    else:
        assert pv == cv, f"\nC++:    {cv}\nPython: {pv}\nmutated {name}: {data[:400]!r}"
