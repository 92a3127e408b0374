import os
import tempfile

# Tests use the documented cost constants, not a calibration file this machine may have, and
# compile every kernel they run (a fresh cache, shared by the xdist workers of one run, which
# inherit it from the controller). FUSEDML_TEST_CACHE_DIR names a cache to reuse instead, for
# quick local reruns; CI never sets it.
# Tests compare kernels with the reference: they compile in-process (the background tier has its
# own tests, which ask for it).
os.environ["FUSEDML_COMPILE"] = "eager"
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ["FUSEDML_CACHE_DIR"] = os.environ.get("FUSEDML_TEST_CACHE_DIR") or tempfile.mkdtemp(
        prefix="fusedml-test-cache-"
    )

import pytest
from hypothesis import HealthCheck, settings

import fusedml as fm

# Locally every run explores new random examples; CI (CI=true) replays a fixed, derandomized set,
# so that its duration (each new fused structure is a numba compile) and its verdict are stable.
# FUSEDML_HYPOTHESIS_PROFILE=dev runs fewer examples.
settings.register_profile(
    "random", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("ci", parent=settings.get_profile("random"), derandomize=True)
settings.register_profile("dev", parent=settings.get_profile("random"), max_examples=50)
default_profile = "ci" if os.environ.get("CI") else "random"
settings.load_profile(os.environ.get("FUSEDML_HYPOTHESIS_PROFILE", default_profile))


@pytest.fixture
def fresh_stats():
    fm.reset_stats()
    yield fm.stats
    fm.reset_stats()
