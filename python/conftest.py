"""`python3 -m pytest python` from the repository root imports the package beside this file as
`cd python && python3 -m pytest` does (there `-m` puts the current folder on sys.path). Bazel's py_tests
do not carry this file: they import the package through //python:qsa_fixture's `imports`."""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
