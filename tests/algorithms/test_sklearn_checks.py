"""scikit-learn's estimator checks for every fusedml estimator."""

from fusedml.algorithms import L2SVM, KMeans, MLogReg
from sklearn.utils.estimator_checks import parametrize_with_checks

# expected failures: none so far (sklearn declares none for LinearSVC / LogisticRegression that
# apply here)
EXPECTED_FAILED: dict[str, dict[str, str]] = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED.get(type(estimator).__name__, {})


@parametrize_with_checks(
    [L2SVM(max_iter=50), MLogReg(max_iter=30), KMeans(n_clusters=3, n_init=2, random_state=0)],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
