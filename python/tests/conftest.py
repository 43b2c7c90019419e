import importlib
import os

import pytest


def pytest_configure(config):
    # The package must be installed: a missing package fails the run, never skips it.
    import torchrs  # noqa: F401


@pytest.fixture(scope="session")
def pytorch():
    """PyTorch, the live reference. CI installs it and sets TORCHRS_REQUIRE_PYTORCH=1, so there
    a missing PyTorch fails the tests that use it; elsewhere they are skipped, with that reason
    in pytest's summary (the recorded expectations still run without it)."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        if os.environ.get("TORCHRS_REQUIRE_PYTORCH") == "1":
            raise AssertionError(f"TORCHRS_REQUIRE_PYTORCH=1 but PyTorch does not import: {e}") from e
        pytest.skip("PyTorch is not installed (CI installs it as the reference)")
