"""A strict JSON (RFC 8259) parser with the verdicts of the C++ reader's parser (nlohmann::json 3.x as
fixtures/fixture.cc calls it), written here so that both readers accept and reject the same texts:

- numbers keep nlohmann's three kinds: Unsigned (no '-', fits uint64), Integer ('-', fits int64) and
  float (a fraction, an exponent, or an integer outside those ranges); so "-0" is an Integer, not an
  Unsigned, and 2.0 is no integer;
- NaN/Infinity literals, comments, trailing commas, lone or unpaired surrogate escapes, control
  characters and invalid UTF-8 in strings are errors; a leading UTF-8 BOM is skipped;
- a duplicate key is reported when its second occurrence is read, before anything after it, with the
  C++ reader's field (the key itself) and detail ("duplicate key").

Malformed text raises JsonSyntaxError; its wording is this parser's own (the C++ message quotes
nlohmann's exception text, which no other parser reproduces): the file and field ('<json>') agree.
"""
from .errors import FixtureError


class JsonSyntaxError(ValueError):
    pass


class Unsigned(int):
    """A JSON integer literal without a minus sign (nlohmann number_unsigned)."""


class Integer(int):
    """A JSON integer literal with a minus sign (nlohmann number_integer)."""


_WS = " \t\n\r"
_ESC = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Parser:
    def __init__(self, text, file):
        self.s, self.i, self.file = text, 0, file

    def err(self, why):
        raise JsonSyntaxError(f"{why} at offset {self.i}")

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in _WS:
            self.i += 1

    def value(self):
        self.ws()
        if self.i >= len(self.s):
            self.err("unexpected end of input")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            out = []
            if self.opened("]"):
                return out
            while True:
                out.append(self.value())
                if self.closed("]"):
                    return out
        if c == '"':
            return self.string()
        for lit, v in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(lit, self.i):
                self.i += len(lit)
                return v
        if c == "-" or c.isdigit():
            return self.number()
        self.err("invalid literal")

    def opened(self, close):
        """Past the opening bracket and white space: True (and past `close`) for an empty container."""
        self.i += 1
        self.ws()
        if self.s[self.i:self.i + 1] == close:
            self.i += 1
            return True
        return False

    def closed(self, close):
        """After an element: True past `close`, False past a ','; anything else is an error at its offset."""
        self.ws()
        c = self.s[self.i:self.i + 1]
        self.i += 1
        if c == close:
            return True
        if c != ",":
            self.i -= 1
            self.err(f"expected ',' or '{close}'")
        return False

    def obj(self):
        out = {}
        if self.opened("}"):
            return out
        while True:
            self.ws()
            if self.s[self.i:self.i + 1] != '"':
                self.err("expected a string key")
            k = self.string()
            if k in out:  # the C++ reader checks in nlohmann's key callback, before the ':'
                raise FixtureError(self.file, k, "duplicate key")
            self.ws()
            if self.s[self.i:self.i + 1] != ":":
                self.err("expected ':'")
            self.i += 1
            out[k] = self.value()
            if self.closed("}"):
                return out

    def hex4(self):
        h = self.s[self.i:self.i + 4]
        if len(h) != 4 or any(ch not in "0123456789abcdefABCDEF" for ch in h):
            self.err("bad \\u escape")
        self.i += 4
        return int(h, 16)

    def string(self):
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                self.err("unterminated string")
            c = self.s[self.i]
            self.i += 1
            if c == '"':
                return "".join(out)
            if ord(c) < 0x20:
                self.err("control character in a string")
            if "\udc80" <= c <= "\udcff":  # surrogateescape of a byte that is not valid UTF-8
                self.err("invalid UTF-8 in a string")
            if c != "\\":
                out.append(c)
                continue
            e = self.s[self.i:self.i + 1]
            self.i += 1
            if e in _ESC:
                out.append(_ESC[e])
            elif e == "u":
                u = self.hex4()
                if 0xD800 <= u <= 0xDBFF:
                    if self.s[self.i:self.i + 2] != "\\u":
                        self.err("unpaired high surrogate")
                    self.i += 2
                    lo = self.hex4()
                    if not 0xDC00 <= lo <= 0xDFFF:
                        self.err("high surrogate not followed by a low one")
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                elif 0xDC00 <= u <= 0xDFFF:
                    self.err("lone low surrogate")
                out.append(chr(u))
            else:
                self.err("invalid escape")

    def digits(self):
        """Past a run of decimal digits; the run."""
        d0 = self.i
        while self.i < len(self.s) and self.s[self.i] in "0123456789":
            self.i += 1
        return self.s[d0:self.i]

    def number(self):
        st = self.i
        if self.s[self.i] == "-":
            self.i += 1
        digits = self.digits()
        if not digits or (len(digits) > 1 and digits[0] == "0"):
            self.err("invalid number")
        is_float = False
        if self.s[self.i:self.i + 1] == ".":
            self.i += 1
            if not self.digits():  # a fraction needs a digit
                self.err("invalid number")
            is_float = True
        if self.s[self.i:self.i + 1] in ("e", "E"):
            self.i += 1
            if self.s[self.i:self.i + 1] in ("+", "-"):
                self.i += 1
            if not self.digits():  # so does an exponent
                self.err("invalid number")
            is_float = True
        text = self.s[st:self.i]
        if not is_float:
            v = int(text)
            if text[0] == "-" and v >= -(1 << 63):
                return Integer(v)
            if text[0] != "-" and v < (1 << 64):
                return Unsigned(v)
        return float(text)


def loads(data, file):
    """Parses bytes (or str) of a JSON document; raises JsonSyntaxError or FixtureError (duplicate)."""
    if isinstance(data, (bytes, bytearray)):
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        text = bytes(data).decode("utf-8", errors="surrogateescape")
    else:
        text = data
    p = _Parser(text, file)
    v = p.value()
    p.ws()
    if p.i != len(p.s):
        p.err("trailing characters after the JSON value")
    return v


def type_name(v):
    """nlohmann's type_name()."""
    for t, name in ((type(None), "null"), (bool, "boolean"), ((int, float), "number"), (str, "string"),
                    (list, "array")):
        if isinstance(v, t):
            return name
    return "object"


_DUMP_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _dump_str(s):
    return '"' + "".join(_DUMP_ESC.get(ch) or ("\\u%04x" % ord(ch) if ord(ch) < 0x20 else ch) for ch in s) + '"'


def dump(v):
    """nlohmann's compact dump() for the values the reader's messages quote (keys sorted)."""
    if v is None or v is True or v is False:
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return "null" if v != v or v in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, str):
        return _dump_str(v)
    if isinstance(v, list):
        return "[" + ",".join(dump(x) for x in v) + "]"
    keys = sorted(v, key=lambda k: k.encode("utf-8", "surrogatepass"))
    return "{" + ",".join(_dump_str(k) + ":" + dump(v[k]) for k in keys) + "}"
