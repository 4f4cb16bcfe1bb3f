"""pytest setup for the binding's tests: the package under test is the installed one
(`pip install -e python/`, what scripts/test.sh does); without an install, the checkout's copy."""

import os
import sys

try:
    import kiln  # noqa: F401
except ImportError:
    if os.environ.get("KILN_PYTEST_REQUIRE_INSTALLED") == "1":
        raise  # CI: a broken install must fail, not fall back to the source tree
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
