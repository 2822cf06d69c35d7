# Shared by the Python tests (run by scripts/test.sh); oracle.py has the helpers.
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(18)
