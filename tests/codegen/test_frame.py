"""The frame: what ``frame.describe`` packs, the lines ``frame.unpack`` renders read back, bit
for bit, in a compiled function (ints, special floats, arrays of every dtype and rank kernels
read, empty and non-contiguous ones, tuples of arrays and scalars)."""

import numba
import numpy as np

from fusedml import _native as native
from fusedml.codegen import frame


def _reader(names, kinds, arrays):
    """A compiled ``read(frame, ints, floats, fields, firsts)`` that stores what it reads from the
    frame: ints and floats into two vectors; of each array (expression, rank) its data address,
    shape and strides one after the other into ``fields``, and its first element into ``firsts``."""
    body = [f"    {line}" for line in frame.unpack(names, kinds)]
    scalars = list(_scalars(names, kinds))
    ints = [n for n, k in scalars if k in ("i", "b")]  # a bool stored as 0 or 1
    floats = [n for n, k in scalars if k == "f"]
    body += [f"    ints[{i}] = {n}" for i, n in enumerate(ints)]
    body += [f"    floats[{i}] = {n}" for i, n in enumerate(floats)]
    body += ["    at = 0"]
    for i, (a, ndim) in enumerate(arrays):
        body += [f"    fields[at] = {a}.ctypes.data", "    at += 1"]
        for attr in ("shape", "strides"):
            body += [f"    for s in {a}.{attr}:", "        fields[at] = s", "        at += 1"]
        body += [f"    if {a}.size:", f"        firsts[{i}] = {a}[{', '.join(['0'] * ndim)}]"]
    source = "\n".join(["def read(frame, ints, floats, fields, firsts):", *body, "    return 0"])
    scope = {"native": native, "np": np}
    exec(source, scope)
    return numba.njit(scope["read"])


def _scalars(names, kinds):
    """(expression, kind) of every int, bool and float, tuples' items included."""
    for name, kind in zip(names, kinds, strict=True):
        if isinstance(kind, str):
            yield name, kind
        elif not isinstance(kind[1], int):  # a tuple, not an array
            yield from _scalars([f"{name}[{p}]" for p in range(len(kind))], kind)


def test_every_value_reads_back_as_it_was_packed():
    rng = np.random.default_rng(0)
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
        "matrix": rng.standard_normal((5, 7))[:, ::2],  # not contiguous: read through a copy
        "cube": rng.standard_normal((2, 3, 4)),
        "empty": np.empty((0, 4)),
        "indices": np.arange(9, dtype=np.int32)[::-1] - 4,
        "mask": np.array([False, True, True]),
        "codes": np.arange(200, 210, dtype=np.uint8).reshape(2, 5),
        "parts": (rng.standard_normal(3), np.arange(-2, 2, dtype=np.int64)),
        "operand": (np.ones((2, 2)), 7, False, 2.5),
    }
    names = list(values)
    kinds, words, copies = frame.describe(list(values.values()))
    arrays, wanted = [], []  # each array read: (its expression in the reader, rank), its value
    for name, value in values.items():
        parts = value if isinstance(value, tuple) else (value,)
        for p, part in enumerate(parts):
            if isinstance(part, np.ndarray):
                where = f"{name}[{p}]" if isinstance(value, tuple) else name
                arrays.append((where, part.ndim))
                wanted.append(part)
    ints, floats = np.zeros(5, dtype=np.int64), np.zeros(6)
    fields = np.zeros(sum(1 + 2 * w.ndim for w in wanted), dtype=np.int64)
    firsts = np.zeros(len(wanted))
    packed = frame.pack(words)
    _reader(names, kinds, arrays)(frame.address(packed), ints, floats, fields, firsts)

    assert ints.tolist() == [123_456_789_012, -3, 1, 7, 0]
    assert kinds[names.index("flag")] == "b"
    want_floats = np.array([-0.0, 1e300, -1e-300, np.nan, -np.inf, 2.5])
    assert floats.tobytes() == want_floats.tobytes()  # -0.0 and NaN's bits too
    (copy,) = copies  # of the strided matrix, which the frame holds instead
    want_fields, want_firsts = [], []
    for w in wanted:
        read = copy if w is values["matrix"] else w
        want_fields.append(frame.address(read))
        want_fields += list(w.shape)
        # C order (numpy's own strides for an empty array are arbitrary)
        want_fields += [w.itemsize * int(np.prod(w.shape[d + 1 :])) for d in range(w.ndim)]
        want_firsts.append(float(w.flat[0]) if w.size else 0.0)
    assert fields.tolist() == want_fields
    assert firsts.tolist() == want_firsts  # each array read as its own dtype
