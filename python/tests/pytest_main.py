"""Entry point of the py_test targets: runs pytest on the test file named in argv[1] (next to this file)."""
import os
import sys

import pytest

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", os.path.join(here, sys.argv[1])] + sys.argv[2:]))
