"""What an implementation returned, checked and converted to the format's NumPy arrays (python/README.md,
"The implementation interface"), and the call itself with an optional time limit. Every problem is ONE
OutputError / ImplTimeout line naming the output and what is wrong, which replay() reports as a failure
of Fixture.Api (never a traceback from inside this package).

Accepted per output: NumPy arrays, anything np.asarray takes, PyTorch tensors on any device (detached and
copied to the host; found by duck typing, torch is never imported here) and CuPy arrays (.get()).
  out_idx, split_counters: any integer dtype whose values fit int32
  pool, q_normed, kbar:    uint16 / int16 bit patterns of T, or float16 values (half fixtures) or
                           torch.bfloat16 values (bf16 fixtures), taken bit for bit
  logits:                  float32 only (a float64 logit would be rounded here, not by the implementation)
Any shape with the format's number of elements is taken in C order.
"""
import sys
import threading

import numpy as np

from .fixture import EXPECTED as OUTPUT_NAMES, output_specs

T_BITS = ("pool", "q_normed", "kbar")
_TORCH_T = {"half": "torch.float16", "bf16": "torch.bfloat16"}


class OutputError(Exception):
    """One line: the output and the problem."""


class ImplTimeout(Exception):
    """The implementation did not return within the time limit."""


def _torch_to_host(name, x, dtype):
    """A torch tensor (any device) as a NumPy array; half / bf16 tensors as their uint16 bits."""
    tdt, dev = str(x.dtype), str(getattr(x, "device", "cpu"))
    try:
        x = x.detach().cpu()  # a CUDA tensor is copied to the host (this synchronizes its stream)
    except Exception as e:  # noqa: BLE001
        raise OutputError(f"output {name}: cannot copy the {dev} tensor to the host: {e}") from None
    if tdt in _TORCH_T.values():
        if name not in T_BITS:
            raise OutputError(f"output {name}: dtype {tdt}, expected {_expected(name, dtype)}")
        if tdt != _TORCH_T[dtype]:
            raise OutputError(f"output {name}: dtype {tdt} in a {dtype} fixture, expected {_expected(name, dtype)}")
        torch = sys.modules["torch"]  # loaded: the tensor exists
        return x.contiguous().view(torch.int16).numpy().view(np.uint16)
    try:
        return x.numpy()
    except Exception as e:  # noqa: BLE001 (a dtype NumPy lacks, ...)
        raise OutputError(f"output {name}: cannot convert the {tdt} tensor to NumPy: {e}") from None


def _expected(name, dtype):
    if name in T_BITS:
        return f"uint16 bit patterns of {dtype} (or {'float16' if dtype == 'half' else 'torch.bfloat16'} values)"
    return "float32" if name == "logits" else "int32 (any integer dtype whose values fit)"


def _as_array(name, x, dtype):
    mod = type(x).__module__ or ""
    if mod.startswith("torch") and hasattr(x, "detach"):
        return _torch_to_host(name, x, dtype)
    if mod.startswith("cupy") and hasattr(x, "get"):
        x = x.get()
    try:
        a = np.asarray(x)
    except Exception as e:  # noqa: BLE001
        raise OutputError(f"output {name}: a {type(x).__name__} that NumPy cannot convert: {e}") from None
    if a.dtype == object:
        raise OutputError(f"output {name}: a {type(x).__name__} of Python objects, expected an array")
    return a


def _convert(name, a, dtype, descr):
    """a in the format's dtype `descr`, or OutputError."""
    k = a.dtype.kind
    if name in T_BITS:
        if a.dtype in (np.uint16, np.int16) or (a.dtype == np.float16 and dtype == "half"):
            return np.ascontiguousarray(a).view(np.uint16)
    elif name == "logits":
        if a.dtype == np.float32:
            return a
    elif k in "iu":
        if a.size and (a.min() < -2**31 or a.max() > 2**31 - 1):
            raise OutputError(f"output {name}: values outside int32 ({int(a.min())} .. {int(a.max())})")
        return a.astype(np.int32)
    raise OutputError(f"output {name}: dtype {a.dtype}, expected {_expected(name, dtype)}")


def normalize_outputs(f, out):
    """{name: array in the format's dtype and shape} from what the implementation returned for fixture f,
    or OutputError. out_idx is required, pool when the fixture has a pool, split_counters when it has
    them; the stage outputs are optional; an unknown key is an error (a typo must not skip a check)."""
    if not hasattr(out, "keys") or not hasattr(out, "get"):
        raise OutputError(f"the implementation returned a {type(out).__name__}, expected a dict of outputs "
                          f"({', '.join(OUTPUT_NAMES)})")
    unknown = sorted(str(k) for k in out.keys() if k not in OUTPUT_NAMES)
    if unknown:
        raise OutputError(f"unknown output {', '.join(repr(k) for k in unknown)} (outputs: {', '.join(OUTPUT_NAMES)})")
    need = ["out_idx"] + (["pool"] if f.pool is not None else []) + (["split_counters"] if f.split_counters else [])
    for name in need:
        if out.get(name) is None:
            raise OutputError(f"no output {name} (required for this fixture; got {', '.join(sorted(out.keys())) or 'none'})")
    specs, res = output_specs(f), {}
    for name in OUTPUT_NAMES:
        if out.get(name) is None or name not in specs:
            continue
        descr, shape = specs[name]
        a = _convert(name, _as_array(name, out[name], f.dtype), f.dtype, descr)
        if a.size != int(np.prod(shape)):
            raise OutputError(f"output {name}: shape {list(a.shape)}, expected {list(shape)}")
        res[name] = np.ascontiguousarray(a).reshape(shape)
    return res


def call_impl(impl, f, timeout=None):
    """impl(f), or ImplTimeout after `timeout` seconds (None or 0: no limit). Python cannot stop a thread:
    a call that hangs keeps running in a daemon thread (and the process exits without waiting for it)."""
    if not timeout:
        return impl(f)
    box = {}

    def target():
        try:
            box["out"] = impl(f)
        except BaseException as e:  # noqa: BLE001 (re-raised in the caller's thread)
            box["err"] = e
    th = threading.Thread(target=target, name="qsa-impl", daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        raise ImplTimeout(f"the implementation did not return within {timeout:g} s (timeout)")
    if "err" in box:
        raise box["err"]
    return box["out"]


def describe_exception(e):
    """The text after "the implementation threw: ": what() for a plain RuntimeError (fixtures/replay.cc
    prints a std::runtime_error's what()), else "<Type>: <message>" (a KeyError's message alone is just
    a quoted key)."""
    msg = str(e)
    if type(e) is RuntimeError and msg:
        return msg
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__
