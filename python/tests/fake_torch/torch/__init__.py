"""A tiny NumPy stand-in for the part of PyTorch that qsa_fixture.torch_impl uses (CPU only, float32 math
in NumPy), so that its code path (indexing, shapes, pool writes, selection, K4, the conversion of its
tensors by outputs.py) runs where PyTorch is not installed. NOT PyTorch: its numerics say nothing about
torch's; torch_impl_test runs the real one when it is installed. bfloat16 tensors hold float32 values
that are bf16 numbers (their bits are the top half)."""
import contextlib
from collections import namedtuple

import numpy as np

from qsa_fixture.numerics import f32_to_bf16


class dtype:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, np.dtype(np_dtype)

    def __repr__(self):
        return "torch." + self.name

    @property
    def itemsize(self):
        return 2 if self.name == "bfloat16" else self.np.itemsize


float16, bfloat16 = dtype("float16", np.float16), dtype("bfloat16", np.float32)
float32, int16, int32, int64 = dtype("float32", np.float32), dtype("int16", np.int16), dtype("int32", np.int32), \
    dtype("int64", np.int64)
bool = dtype("bool", np.bool_)  # noqa: A001 (torch's name)
_BY_NP = {np.dtype(np.float16): float16, np.dtype(np.float32): float32, np.dtype(np.float64): float32,
          np.dtype(np.int16): int16, np.dtype(np.int32): int32, np.dtype(np.int64): int64,
          np.dtype(np.bool_): bool, np.dtype(np.uint16): int16}


class device:
    def __init__(self, name):
        self.type = str(name)

    def __str__(self):
        return self.type


class cuda:
    @staticmethod
    def is_available():
        return False


class _Matmul:
    allow_tf32 = False


class backends:
    class cuda:
        matmul = _Matmul()


@contextlib.contextmanager
def no_grad():
    yield


def _arr(x):
    return x.a if isinstance(x, Tensor) else x


class Tensor:
    def __init__(self, a, dt=None):
        a = np.asarray(a)
        if dt is None:
            dt = _BY_NP[a.dtype]
            a = a.astype(dt.np, copy=False)
        self.a, self.dtype, self.device = a, dt, device("cpu")

    shape = property(lambda self: self.a.shape)

    def __getitem__(self, k):
        return Tensor(self.a[_index(k)], self.dtype)

    def __setitem__(self, k, v):
        assert not isinstance(v, Tensor) or v.dtype is self.dtype, (v.dtype, self.dtype)
        self.a[_index(k)] = _arr(v)

    def float(self):
        return Tensor(self.a.astype(np.float32), float32)

    def to(self, target):
        if isinstance(target, device):
            return self
        if target is bfloat16:
            bits = f32_to_bf16(self.a.astype(np.float32))
            return Tensor((bits.astype(np.uint32) << 16).view(np.float32), bfloat16)
        with np.errstate(all="ignore"):
            return Tensor(self.a.astype(target.np), target)

    def view(self, target):
        if target is self.dtype:
            return self
        assert self.dtype.itemsize == target.itemsize == 2, (self.dtype, target)
        if self.dtype is bfloat16:
            bits = (self.a.view(np.uint32) >> 16).astype(np.uint16)
        else:
            bits = self.a.view(np.uint16)
        if target is bfloat16:
            return Tensor((bits.astype(np.uint32) << 16).view(np.float32), bfloat16)
        return Tensor(bits.view(target.np), target)

    def reshape(self, *shape):
        return Tensor(self.a.reshape(*shape), self.dtype)

    def expand(self, *shape):
        return Tensor(np.broadcast_to(self.a, shape), self.dtype)

    def transpose(self, i, j):
        return Tensor(np.swapaxes(self.a, i, j), self.dtype)

    def mean(self, dim, keepdim=False):
        return Tensor(self.a.mean(axis=dim, keepdims=keepdim, dtype=np.float32), float32)

    def sum(self, dim):
        return Tensor(self.a.sum(axis=dim, dtype=self.a.dtype), self.dtype)

    def detach(self):
        return self

    def cpu(self):
        return self

    def contiguous(self):
        return Tensor(np.ascontiguousarray(self.a), self.dtype)

    def numpy(self):
        if self.dtype is bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self.a

    def _bin(self, o, f):
        with np.errstate(all="ignore"):
            return Tensor(f(self.a, _arr(o)))

    __add__ = lambda s, o: s._bin(o, np.add)  # noqa: E731
    __radd__ = __add__
    __sub__ = lambda s, o: s._bin(o, np.subtract)  # noqa: E731
    __mul__ = lambda s, o: s._bin(o, np.multiply)  # noqa: E731
    __rmul__ = __mul__
    __mod__ = lambda s, o: s._bin(o, np.remainder)  # noqa: E731
    __lt__ = lambda s, o: s._bin(o, np.less)  # noqa: E731
    __gt__ = lambda s, o: s._bin(o, np.greater)  # noqa: E731
    __ge__ = lambda s, o: s._bin(o, np.greater_equal)  # noqa: E731
    __and__ = lambda s, o: s._bin(o, np.logical_and)  # noqa: E731


Tensor.__module__ = "torch"


def _index(k):
    if isinstance(k, tuple):
        return tuple(_arr(x) for x in k)
    return _arr(k)


def from_numpy(a):
    return Tensor(a)


def tensor(v, dtype=None, device=None):
    a = np.asarray(v)
    return Tensor(a.astype(dtype.np), dtype) if dtype is not None else Tensor(a)


def zeros(shape, dtype=float32, device=None):
    return Tensor(np.zeros(shape, dtype.np), dtype)


def full(shape, value, dtype=float32, device=None):
    return Tensor(np.full(shape, value, dtype.np), dtype)


def zeros_like(x):
    return Tensor(np.zeros_like(x.a), x.dtype)


def full_like(x, value):
    return Tensor(np.full_like(x.a, value), x.dtype)


def arange(*args, device=None):
    return Tensor(np.arange(*args, dtype=np.int64))


def cat(xs, dim=0):
    assert len({x.dtype for x in xs}) == 1
    return Tensor(np.concatenate([x.a for x in xs], axis=dim), xs[0].dtype)


def where(c, a, b):
    dt = a.dtype if isinstance(a, Tensor) else b.dtype
    assert not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.dtype is b.dtype, (a.dtype, b.dtype)
    return Tensor(np.where(_arr(c), _arr(a), _arr(b)).astype(dt.np), dt)


def isnan(x):
    return Tensor(np.isnan(x.a))


def rsqrt(x):
    with np.errstate(all="ignore"):
        return Tensor((np.float32(1) / np.sqrt(x.a)).astype(np.float32), float32)


def matmul(a, b):
    assert a.dtype is float32 and b.dtype is float32
    return Tensor(np.matmul(a.a, b.a), float32)


_Sorted = namedtuple("_Sorted", "values indices")


def sort(x, dim=-1, descending=False, stable=False):
    assert stable or not descending
    a = x.a
    idx = np.argsort(-a if descending else a, axis=dim, kind="stable")
    return _Sorted(Tensor(np.take_along_axis(a, idx, axis=dim), x.dtype), Tensor(idx.astype(np.int64)))


def gather(x, dim, idx):
    return Tensor(np.take_along_axis(x.a, idx.a, axis=dim), x.dtype)


def clamp(x, max=None):  # noqa: A002 (torch's name)
    return Tensor(np.minimum(x.a, max), x.dtype)


def div(a, b, rounding_mode=None):
    assert rounding_mode == "floor"
    return Tensor(np.floor_divide(_arr(a), _arr(b)))
