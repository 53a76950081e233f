"""Levels and profiles of every check (contract section 8) from the one registry checks/registry.tsv,
and the selection of what is judged, as checks/levels.cc reads them:
  QSA_LEVELS   comma list of core, hardened (default: all)
  QSA_PROFILE  ieee | fast | none (default ieee; none judges no numerics-profile check; fast: contract section 9)
A check is judged iff its level is selected and its profile is "none" or the selected profile. The file
is read at run time (python/README.md says from where; REGISTRY_PATH overrides it).
"""
import functools
import os
from dataclasses import dataclass, replace

REGISTRY_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "checks", "registry.tsv")
LEVELS, PROFILES = ("core", "hardened"), ("ieee", "fast", "none")


@dataclass(frozen=True)
class CheckInfo:
    id: str  # "Suite.Name" as asked
    pattern: str = ""  # the registry row that matched ("Suite.Name" or "Suite.*"); "" when none
    level: str = ""  # core | hardened ("" when not registered)
    profile: str = ""  # none | ieee | fast
    contract: int = 0  # section 7 number, 0 for none
    what: str = ""

    @property
    def registered(self):
        return self.pattern != ""


def _split(s, sep):
    """std::getline pieces: no final empty piece (so "" -> [] and "core," -> ["core"])."""
    parts = s.split(sep)
    if parts[-1] == "":
        parts.pop()
    return parts


def _parse_registry(text):
    rows = []
    for n, line in enumerate(text.split("\n"), 1):
        if line == "" or line[0] == "#":
            continue
        f = _split(line, "\t")
        if len(f) != 5 or f[1] not in LEVELS or f[2] not in PROFILES or not f[3].lstrip("-").isdigit():
            raise ValueError(f"checks registry: line {n} is not 'check<TAB>core|hardened<TAB>none|ieee|fast<TAB>contract"
                             f"<TAB>what': {line}")
        rows.append(CheckInfo(f[0], f[0], f[1], f[2], int(f[3]), f[4]))
    return rows


@functools.lru_cache(maxsize=None)
def registry():
    """Every row of the registry, in file order (read once)."""
    try:
        with open(REGISTRY_PATH, encoding="utf-8") as fh:
            return _parse_registry(fh.read())
    except OSError as e:
        raise ValueError(f"checks registry: cannot read {REGISTRY_PATH}: {e.strerror}") from None


def _find(suite, name):
    wildcard = None
    for c in registry():
        if c.pattern == suite + "." + name:
            return c
        if c.pattern == suite + ".*":
            wildcard = c
    return wildcard


def lookup(check_id):
    """The row for a gtest / property id: exact "Suite.Name", else "Suite.*"; the suite of a typed or
    parameterized test ("QPrepTest/half", "Keys/SortTest") and a value suffix ("Shapes/3") are stripped."""
    suite, dot, name = check_id.partition(".")
    name = name.split("/", 1)[0]
    for part in _split(suite, "/"):
        c = _find(part, name)
        if c is not None:
            return replace(c, id=check_id)
    return CheckInfo(check_id)


def raised_to(info, level):
    """`info` with its level raised to hardened (a fixture whose inputs are hardened)."""
    return replace(info, level="hardened") if level == "hardened" else info


@dataclass(frozen=True)
class Selection:
    levels: frozenset  # subset of {core, hardened}
    profile: str  # ieee | fast | none

    def judged(self, c):
        return c.registered and c.level in self.levels and c.profile in ("none", self.profile)

    def describe(self):
        lv = ",".join(v for v in LEVELS if v in self.levels)
        return f"levels={lv or 'none'} profile={self.profile}"


def parse_selection(levels, profile):
    p = profile or "ieee"
    if p not in PROFILES:
        raise ValueError(f"QSA_PROFILE must be ieee, fast or none, got '{profile}'")
    if levels in ("", "all"):
        return Selection(frozenset(LEVELS), p)
    chosen = _split(levels, ",")
    if any(v not in LEVELS for v in chosen):
        raise ValueError(f"QSA_LEVELS must be a comma list of core, hardened (or all), got '{levels}'")
    return Selection(frozenset(chosen), p)


def selection_from_env():
    """From QSA_LEVELS / QSA_PROFILE (defaults: every level, ieee); a bad value raises ValueError naming
    the variable and the value, in the C++ words."""
    return parse_selection(os.environ.get("QSA_LEVELS", ""), os.environ.get("QSA_PROFILE", ""))


def tags(c):
    """"level=core profile=ieee contract=1"."""
    if not c.registered:
        return "level=unregistered profile=unregistered"
    return f"level={c.level} profile={c.profile} contract={c.contract}"
