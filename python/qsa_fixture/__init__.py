"""qsa_fixture: read, validate, write and replay `qsa-fixture/1` fixtures from Python (python/README.md)."""
from .errors import FixtureError
from .fixture import Fixture, parse_case_json, parse_fixture_files, read_fixture, validate_fixture, write_fixture
from .npy import parse_npy, serialize_npy
from .replay import FixtureCheck, ReplayResult, compare_outputs, fixture_input_level, replay

__all__ = ["FixtureError", "Fixture", "parse_case_json", "parse_fixture_files", "read_fixture",
           "validate_fixture", "write_fixture", "parse_npy", "serialize_npy", "ReplayResult",
           "compare_outputs", "replay", "FixtureCheck", "fixture_input_level"]
