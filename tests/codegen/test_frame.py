"""The frame: what ``frame.describe`` packs, the lines ``frame.unpack`` renders read back, bit
for bit, in a compiled function (ints, special floats, arrays of every dtype and rank kernels
read, empty and non-contiguous ones, tuples of arrays)."""

import numba
import numpy as np

from fusedml import _native as native
from fusedml.codegen import frame


def _reader(names, kinds, arrays):
    """A compiled ``read(frame, ints, floats, strides, *outs)`` that copies every value it reads
    from the frame into the outputs: ints and floats into two vectors, each array into its own
    output and its strides, one after the other, into ``strides``."""
    body = [f"    {line}" for line in frame.unpack(names, kinds)]
    ints = [n for n, k in zip(names, kinds, strict=True) if k == "i"]
    floats = [n for n, k in zip(names, kinds, strict=True) if k == "f"]
    body += [f"    ints[{i}] = {n}" for i, n in enumerate(ints)]
    body += [f"    floats[{i}] = {n}" for i, n in enumerate(floats)]
    body += [f"    out{i}[...] = {a}" for i, a in enumerate(arrays)]
    body += ["    at = 0"]
    for a in arrays:
        body += [f"    for s in {a}.strides:", "        strides[at] = s", "        at += 1"]
    outs = ", ".join(f"out{i}" for i in range(len(arrays)))
    source = "\n".join([f"def read(frame, ints, floats, strides, {outs}):", *body, "    return 0"])
    scope = {"native": native, "np": np}
    exec(source, scope)
    return numba.njit(scope["read"])


def test_every_value_reads_back_as_it_was_packed():
    rng = np.random.default_rng(0)
    grid = rng.standard_normal((5, 7))
    values = {
        "count": 123_456_789_012,
        "neg": -3,
        "zero": -0.0,
        "big": 1e300,
        "tiny": -1e-300,
        "nan": float("nan"),
        "inf": -np.inf,
        "flag": np.True_,
        "vector": rng.standard_normal(11),
        "matrix": grid[:, ::2],  # not contiguous: read through a copy
        "cube": rng.standard_normal((2, 3, 4)),
        "empty": np.empty((0, 4)),
        "indices": np.arange(9, dtype=np.int32)[::-1].copy(),
        "mask": rng.standard_normal(6) > 0,
        "codes": np.arange(10, dtype=np.uint8).reshape(2, 5),
        "parts": (rng.standard_normal(3), np.arange(4, dtype=np.int64)),
    }
    names = list(values)
    kinds, words, copies = frame.describe(list(values.values()))
    arrays, wanted = [], []  # each array read: its expression in the reader, its value
    for name, value in values.items():
        if isinstance(value, tuple):
            arrays += [f"{name}[{p}]" for p in range(len(value))]
            wanted += list(value)
        elif isinstance(value, np.ndarray):
            arrays.append(name)
            wanted.append(value)
    outs = [np.zeros_like(w) for w in wanted]
    ints, floats = np.zeros(3, dtype=np.int64), np.zeros(5)
    strides = np.zeros(sum(w.ndim for w in wanted), dtype=np.int64)
    packed = frame.pack(words)
    _reader(names, kinds, arrays)(frame.address(packed), ints, floats, strides, *outs)
    assert ints.tolist() == [123_456_789_012, -3, 1]
    want_floats = np.array([-0.0, 1e300, -1e-300, np.nan, -np.inf])
    assert floats.tobytes() == want_floats.tobytes()  # -0.0 and NaN's bits too
    for got, want in zip(outs, wanted, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # C order (numpy's own strides for an empty array are arbitrary)
    want_strides = [
        w.itemsize * int(np.prod(w.shape[d + 1 :])) for w in wanted for d in range(w.ndim)
    ]
    assert strides.tolist() == want_strides
    assert len(copies) == 1  # the strided matrix
