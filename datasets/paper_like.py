"""Seeded stand-ins for the paper's sparse data: Mnist8m (digits, about 25% non-zero pixels, 10
classes) and Amazon Books ratings (power-law popularity, about 1e-6 dense). Both scale by rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

MNIST_SHAPE = (100_000, 784)  # Mnist8m is 8.1M x 784; a 100k-row slice keeps its density
MNIST_DENSITY = 0.25
MNIST_CLASSES = 10
FOLLOW = 0.85  # share of a digit's pixels that follow its class prototype
CHUNK = 8192  # rows generated at a time

AMAZON_SHAPE = (800_000, 2_330_000)  # Amazon Books' 8.03M users / 10, all its 2.33M books
AMAZON_RATINGS = 2_250_000  # density 1.2e-6, as the full data
AMAZON_STARS = (0.06, 0.05, 0.09, 0.20, 0.60)  # share of 1..5 stars: skewed to 5


def _pixel_odds() -> np.ndarray:
    """Each pixel's chance to be inked: a Gaussian bump over the 28 x 28 grid with mean
    MNIST_DENSITY (the border stays near zero)."""
    r = np.arange(28) - 13.5
    bump = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * 6.0**2)).reshape(-1)
    return np.clip(bump * MNIST_DENSITY / bump.mean(), 0.0, 0.95)


def mnist8m_like(scale: float = 1.0, seed: int = 0) -> tuple[sp.csr_array, np.ndarray]:
    """(X, y): CSR digits with pixel values 1..255 (half of the inked ones 255) and classes
    1..10; each class has a prototype that FOLLOW of a digit's pixels copy."""
    rng = np.random.default_rng(seed)
    n, m = max(int(MNIST_SHAPE[0] * scale), 10), MNIST_SHAPE[1]
    odds = _pixel_odds()
    prototypes = rng.random((MNIST_CLASSES, m)) < odds
    y = rng.integers(0, MNIST_CLASSES, n)
    blocks = []
    for lo in range(0, n, CHUNK):
        k = min(CHUNK, n - lo)
        own = rng.random((k, m)) < odds
        inked = np.where(rng.random((k, m)) < FOLLOW, prototypes[y[lo : lo + k]], own)
        values = np.where(rng.random((k, m)) < 0.5, 255.0, rng.integers(1, 255, (k, m)))
        blocks.append(sp.csr_array(np.where(inked, values, 0.0)))
    return sp.csr_array(sp.vstack(blocks, format="csr")), (y + 1).astype(np.float64)


def amazon_like(scale: float = 1.0, seed: int = 0) -> sp.csr_array:
    """Ratings 1..5 (zeros: not rated) at user x book pairs drawn with Chung-Lu weights
    (lognormal users, Zipf 1.1 books), stars by a rank-10 affinity cut at AMAZON_STARS."""
    rng = np.random.default_rng(seed)
    n, m = max(int(AMAZON_SHAPE[0] * scale), 10), AMAZON_SHAPE[1]
    want = max(int(AMAZON_RATINGS * scale), 1)
    users = rng.lognormal(0.0, 1.5, n)
    books = 1.0 / np.arange(1, m + 1) ** 1.1
    rng.shuffle(books)
    keys = np.zeros(0, np.int64)
    while len(keys) < want:  # drop repeated pairs, then top up
        r = rng.choice(n, want, p=users / users.sum())
        c = rng.choice(m, want, p=books / books.sum())
        keys = np.unique(np.concatenate([keys, r.astype(np.int64) * m + c]))
    keys = rng.permutation(keys)[:want]
    rows, cols = np.divmod(np.sort(keys), m)
    rated, at = np.unique(cols, return_inverse=True)  # factors for the rated books only
    U, V = rng.standard_normal((n, 10)), rng.standard_normal((len(rated), 10))
    score = np.einsum("ij,ij->i", U[rows], V[at]) + rng.standard_normal(len(rows))
    cuts = np.quantile(score, np.cumsum(AMAZON_STARS)[:-1])
    stars = 1.0 + np.searchsorted(cuts, score, side="right")
    return sp.csr_array((stars, (rows, cols)), shape=(n, m))
