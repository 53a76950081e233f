""".npy reader/writer with exactly the rules of fixtures/npy.cc (fixtures/README.md, "Reader rules").

Read: format 1.0 and 2.0, a header that is a Python dict literal with exactly the keys descr,
fortran_order, shape (any order, either quote, optional trailing comma, Python 2 `L` suffixes), any
whitespace padding after the dict, dtypes exactly '<u2', '<i4', '<f4', C order, data exactly
shape x itemsize bytes. Write: version 1.0, header padded with spaces to a multiple of 64 bytes, '\n'.
Error fields and messages are the C++ reader's, word for word.
"""
import numpy as np

from .errors import FixtureError

MAGIC = b"\x93NUMPY"
MAX_DIM = 1 << 40
MAX_RANK = 8
DTYPES = {"<u2": np.dtype("<u2"), "<i4": np.dtype("<i4"), "<f4": np.dtype("<f4")}
_WS = b" \t\n\r"
HEADER_KEYS = ("descr", "fortran_order", "shape")


def shape_string(shape):
    """'(2, 3)' / '(128,)' / '()' as the C++ shapeString."""
    s = ", ".join(str(int(d)) for d in shape)
    return "(" + s + ("," if len(shape) == 1 else "") + ")"


def descr_of(dtype):
    return {"uint16": "<u2", "int32": "<i4", "float32": "<f4"}[np.dtype(dtype).name]


class _Header:
    def __init__(self, text, file):
        self.s, self.file, self.i = text, file, 0

    def fail(self, field, why):
        raise FixtureError(self.file, field, why)

    def peek(self):
        return self.s[self.i:self.i + 1] if self.i < len(self.s) else b"\0"

    def skip_ws(self):
        while self.i < len(self.s) and self.s[self.i] in _WS:
            self.i += 1

    def expect(self, c, field):
        if self.peek() != c or self.i >= len(self.s):
            self.fail(field, f"expected '{c.decode('latin-1')}' in the header")
        self.i += 1

    def string(self, field):
        q = self.peek()
        if q not in (b"'", b'"'):
            self.fail(field, "expected a quoted string in the header")
        self.i += 1
        out = bytearray()
        while self.i < len(self.s) and self.s[self.i:self.i + 1] != q:
            if self.s[self.i:self.i + 1] in (b"\\", b"\n"):
                self.fail(field, "escapes and newlines are not allowed in header strings")
            out += self.s[self.i:self.i + 1]
            self.i += 1
        if self.i >= len(self.s):
            self.fail(field, "unterminated string in the header")
        self.i += 1
        # surrogateescape keeps any byte: the message carries the header's bytes as the C++ one does
        return bytes(out).decode("utf-8", "surrogateescape")

    def boolean(self, field):
        for word, v in ((b"True", True), (b"False", False)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return v
        self.fail(field, "expected True or False")

    def descr(self, d):
        if d in DTYPES:
            return d
        if d.startswith(">"):
            self.fail("descr", f"big-endian dtype '{d}' is not supported (write little-endian)")
        self.fail("descr", f"unsupported dtype '{d}' (expected '<u2', '<i4' or '<f4')")

    def shape(self):
        shape = []
        self.expect(b"(", "shape")
        self.skip_ws()
        while self.peek() != b")":
            if self.i >= len(self.s) or not (b"0" <= self.peek() <= b"9"):
                self.fail("shape", "expected a non-negative integer in the shape tuple")
            v = 0
            while b"0" <= self.peek() <= b"9":
                v = v * 10 + (self.s[self.i] - 48)
                self.i += 1
                if v > MAX_DIM:
                    self.fail("shape", "dimension too large")
            if self.peek() == b"L":  # Python 2 long suffix
                self.i += 1
            shape.append(v)
            if len(shape) > MAX_RANK:
                self.fail("shape", "too many dimensions")
            self.skip_ws()
            if self.peek() == b",":
                self.i += 1
                self.skip_ws()
            elif self.peek() != b")":
                self.fail("shape", "expected ',' or ')' in the shape tuple")
        self.i += 1
        return tuple(shape)

    def parse(self):
        got = {}  # descr, fortran_order, shape
        self.skip_ws()
        self.expect(b"{", "header")
        while True:
            self.skip_ws()
            if self.peek() == b"}":
                self.i += 1
                break
            key = self.string("header")
            self.skip_ws()
            self.expect(b":", key)
            self.skip_ws()
            if key not in HEADER_KEYS:
                self.fail("header", f"unknown header key '{key}'")
            if key in got:
                self.fail(key, "duplicate header key")
            if key == "descr":
                got[key] = self.descr(self.string(key))
            elif key == "fortran_order":
                got[key] = self.boolean(key)
                if got[key]:
                    self.fail(key, "fortran_order True is not supported (arrays must be C order)")
            else:
                got[key] = self.shape()
            self.skip_ws()
            if self.peek() == b",":
                self.i += 1
            elif self.peek() != b"}":
                self.fail("header", "expected ',' or '}' in the header dict")
        if self.s[self.i:].strip(_WS):  # NumPy pads with spaces and ends with '\n'
            self.fail("header", "unexpected bytes after the header dict")
        for key in HEADER_KEYS:
            if key not in got:
                self.fail(key, "missing from the header")
        return got["descr"], got["shape"]


def parse_npy(data, file):
    """Parses the bytes of one .npy file into a NumPy array (dtype <u2/<i4/<f4, C order)."""
    data = bytes(data)
    if len(data) < 8 or data[:6] != MAGIC:
        raise FixtureError(file, "magic", "not a .npy file (missing \\x93NUMPY magic)")
    major, minor = data[6], data[7]
    if major not in (1, 2) or minor != 0:
        raise FixtureError(file, "version", f"format version {major}.{minor} is not supported (1.0 or 2.0)")
    nlen = 2 if major == 1 else 4
    pre = 8 + nlen
    if len(data) < pre:
        raise FixtureError(file, "header", "truncated before the header length")
    hlen = int.from_bytes(data[8:pre], "little")
    if len(data) - pre < hlen:
        raise FixtureError(file, "header",
                           f"truncated header ({hlen} bytes announced, {len(data) - pre} present)")
    descr, shape = _Header(data[pre:pre + hlen], file).parse()
    n = 1
    for d in shape:
        if d != 0 and n > (1 << 60) // d:
            raise FixtureError(file, "shape", "too many elements " + shape_string(shape))
        n *= d
    item = DTYPES[descr].itemsize
    want, have = n * item, len(data) - pre - hlen
    if have < want:
        raise FixtureError(file, "data", f"truncated: shape {shape_string(shape)} needs {want} data bytes, "
                                         f"file has {have}")
    if have > want:
        raise FixtureError(file, "data",
                           f"{have - want} trailing bytes after the array data of shape {shape_string(shape)}")
    return np.frombuffer(data, dtype=DTYPES[descr], count=n, offset=pre + hlen).reshape(shape).copy()


def serialize_npy(a):
    """An array as NumPy writes it: version 1.0, header padded with spaces to 64 bytes, ending in '\n' (an
    array has at most 64 dimensions: the header always fits version 1.0's 2-byte length)."""
    a = np.ascontiguousarray(a)
    descr = descr_of(a.dtype)
    d = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_string(a.shape)}, }}".encode()
    hlen = (10 + len(d) + 1 + 63) // 64 * 64 - 10
    head = MAGIC + b"\x01\x00" + hlen.to_bytes(2, "little")
    return head + d + b" " * (hlen - len(d) - 1) + b"\n" + a.astype(DTYPES[descr], copy=False).tobytes()
