"""Layering that import-linter cannot see: algorithms/ and datasets/ (mapped into the package with
package-dir) use fusedml's public API only (datasets' iteration bodies may also use the estimators'
arithmetic, never the other way), and the engine never imports them (but the top layer: the CLI,
the estimator benchmarks and the reproduction runner)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def imports_of(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


ALLOWED = {
    "algorithms": ("fusedml.algorithms",),
    "datasets": ("fusedml.datasets", "fusedml.algorithms"),
}


def test_algorithms_and_datasets_use_only_the_public_api():
    for folder, allowed in ALLOWED.items():
        for path in (ROOT / folder).rglob("*.py"):
            for name in imports_of(path):
                if name.startswith("fusedml"):
                    assert name == "fusedml" or name.startswith(allowed), f"{path}: imports {name}"


def test_engine_does_not_import_algorithms_or_datasets():
    for path in (ROOT / "fusedml").rglob("*.py"):
        top_layer = path.parent.name == "reproduce" or path.name in (
            "cli.py",
            "estimator_bench.py",
            "objective_bench.py",
            "warmup.py",
        )
        if top_layer and path.parent.name in ("fusedml", "reproduce"):
            continue
        for name in imports_of(path):
            assert not name.startswith(("fusedml.algorithms", "fusedml.datasets")), path
