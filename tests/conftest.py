import os
import tempfile

# Tests use the documented cost constants, not a calibration file this machine may have.
os.environ["FUSEDML_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusedml-test-cache-")

import pytest
from hypothesis import HealthCheck, settings

import fusedml as fm

# CI runs the full example counts; FUSEDML_HYPOTHESIS_PROFILE=dev runs fewer locally.
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", parent=settings.get_profile("ci"), max_examples=50)
settings.load_profile(os.environ.get("FUSEDML_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def fresh_stats():
    fm.reset_stats()
    yield fm.stats
    fm.reset_stats()
