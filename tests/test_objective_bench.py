"""The time-to-objective benchmark's protocol: the target it sets from scikit-learn's fit, and
timed fits that start on an idle process."""

import threading

import numpy as np
import sklearn.linear_model

from fusedml import _timing
from fusedml import objective_bench as ob


def test_a_negative_objective_gets_a_target_above_it():
    # large counts: sum(exp(eta) - y * eta) is negative at the optimum; a target of
    # value * (1 + RTOL) would lie below scikit-learn's own value, out of reach
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3)) * 0.3
    y = rng.poisson(np.exp(2.0 + X @ np.array([0.5, -0.2, 0.1]))).astype(float)
    X = np.hstack([X, np.ones((400, 1))])  # the intercept as a column (no intercept fitted)
    target, _ = ob.target_of(ob.RACES["GLM-poisson"], X, y)
    ref = sklearn.linear_model.PoissonRegressor(alpha=ob.REG / len(y), fit_intercept=False)
    value = ob.poisson_objective(X, y, ref.fit(X, y).coef_)
    assert value < 0
    assert target > value
    assert np.isclose(target - value, ob.RTOL * abs(value), rtol=1e-6)


def test_timed_fits_wait_for_lingering_threads_to_go_idle():
    # a thread that keeps a core busy after the call that started it returned, as scipy's
    # OpenBLAS workers do after scikit-learn's L-BFGS-B fits
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        assert not _timing.idle(timeout=0.1)
    finally:
        stop.set()
        spinner.join()
    assert _timing.idle(timeout=1.0)
