"""The format axis of the test suite, defined once (as scikit-learn's ``CSR_CONTAINERS``): one
constructor per built-in format, each building that format's value from a dense ndarray.

    @pytest.mark.parametrize("to_format", FORMATS)
    def test_x(to_format):
        X = fm.matrix(to_format(a))

Test ids are the constructors' names, "dense" and "csr".
"""

import numpy as np
import scipy.sparse as sp


def dense(a) -> np.ndarray:
    return np.asarray(a)


def csr(a) -> sp.csr_array:
    return sp.csr_array(a)


FORMATS = (dense, csr)
