"""GridSearchCV(n_jobs=2) over each estimator on an empty kernel cache: total time of the search
(background compile tier, the default), of the same search with ``fusion="none"``, and of a second
search on the warm cache; per process (the parent, which refits the best candidate, and the two
loky workers), after its background compiles are done: (compiles it sent to its compile worker,
kernels that worker compiled, kernels that worker found compiled by another process's worker,
kernels loaded from disk, kernels compiled in the process itself).

Run: .venv/bin/python asv_benches/gridsearch_coldstart.py [--rows 100000]"""

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

GRIDS = {
    "L2SVM": {"reg": [0.1, 1.0, 10.0]},
    "MLogReg": {"reg": [0.1, 1.0, 10.0]},
    "GLM": {"reg": [0.0, 0.1, 1.0]},
    "KMeans": {"n_clusters": [3, 5, 8]},
}


def search(name, rows, fusion):
    import joblib
    from sklearn.model_selection import GridSearchCV

    import fusedml as fm
    from fusedml.codegen import compiler
    from fusedml.estimator_bench import SPECS, case

    X, y = case(name, "dense", rows / 1_000_000)
    estimator = SPECS[name].make(fusion)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        GridSearchCV(estimator, GRIDS[name], cv=3, n_jobs=2).fit(X, y)
        seconds = time.perf_counter() - start

    def worker_stats():
        compiler.wait()  # the compiles this process started
        time.sleep(0.5)  # so that both workers take one
        return os.getpid(), {k: v for k, v in fm.stats().items() if k != "seconds"}

    workers = dict(joblib.Parallel(n_jobs=2)(joblib.delayed(worker_stats)() for _ in range(4)))
    parent = worker_stats()[1]
    return {"seconds": seconds, "parent": parent, "workers": workers}


def _child(name, rows, fusion, cache):
    env = dict(os.environ, FUSEDML_CACHE_DIR=cache)
    env.pop("FUSEDML_COMPILE", None)  # the user's default: background
    cmd = [sys.executable, __file__, "--child", name, str(rows), fusion]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def _compiles(stats):
    keys = (
        "background_compiles_started",
        "kernels_compiled_in_background",
        "kernels_loaded_by_worker",
        "kernels_loaded_from_disk",
        "kernels_compiled",
    )
    return "/".join(str(stats.get(k, 0)) for k in keys)  # fmt: skip


def main(rows):
    sys.path.insert(0, os.path.dirname(__file__))
    from benchmarks.common import wait_for_compile_workers

    print(f"GridSearchCV(cv=3, n_jobs=2), 3 candidates, dense {rows} x 10; seconds; per process: "
          "sent to its compile worker / compiled there / loaded there (another process's) / "
          "loaded from disk / compiled in the process")  # fmt: skip
    for name in GRIDS:
        none = _child(name, rows, "none", tempfile.mkdtemp())
        wait_for_compile_workers()
        cache = tempfile.mkdtemp()
        cold = _child(name, rows, "cost_based", cache)
        wait_for_compile_workers()  # the compile workers finish after their loky worker exits
        warm = _child(name, rows, "cost_based", cache)
        wait_for_compile_workers()
        per = " ".join(_compiles(s) for s in cold["workers"].values())
        print(f"{name:8} none {none['seconds']:5.2f} cold {cold['seconds']:5.2f} "
              f"warm {warm['seconds']:5.2f} | cold: parent {_compiles(cold['parent'])} "
              f"loky {per} | warm: parent {_compiles(warm['parent'])} loky "
              + " ".join(_compiles(s) for s in warm["workers"].values()),
              flush=True)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(search(sys.argv[2], int(sys.argv[3]), sys.argv[4])))
    else:
        main(int(sys.argv[sys.argv.index("--rows") + 1]) if "--rows" in sys.argv else 100_000)
