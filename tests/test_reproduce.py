"""``fusedml reproduce`` on a tiny configuration: every output file is written, the modes agree
with Base, a mode that disagrees is reported as such, Ctrl-C keeps what is done, and ``fusedml
explain`` shows an experiment's plan."""

import csv
import dataclasses
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

import fusedml as fm
from fusedml import cli, datasets
from fusedml.reproduce import experiments, tables
from fusedml.reproduce.main import write_outputs
from fusedml.reproduce.measure import difference
from fusedml.reproduce.report import markdown
from fusedml.reproduce.runner import Options, run


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    argv = ["reproduce", "--tiny", "--experiments", "cell,row-mmchain,L2SVM",
            "--formats", "dense,csr", "--out", str(out), "--no-progress"]  # fmt: skip
    assert cli.main(argv) == 0
    return out


def test_every_output_file_is_written(tiny_run, capsys):
    out = tiny_run
    records = json.loads((out / "runs.json").read_text())
    with open(out / "runs.csv") as f:
        assert len(list(csv.DictReader(f))) == len(records)
    # 2 micro-benchmarks and L2SVM on 2 formats each, every mode
    assert len(records) == 6 * len(fm.FUSION_MODES)
    pngs = {p.name for p in (out / "plots").iterdir()}
    assert {"cell.png", "row-mmchain.png", "L2SVM.png", "overheads.png"} <= pngs
    assert all((out / "plots" / p).stat().st_size > 5_000 for p in pngs)
    report = (out / "report.md").read_text()
    for part in ("## Findings", "Gen vs Base", "## End-to-end fits", "## Micro-benchmarks",
                 "## Beside the paper", "| L2SVM | dense 100M x 10",
                 "## Overheads of Gen", "plots/L2SVM.png"):  # fmt: skip
        assert part in report


def test_modes_agree_and_costs_are_measured(tiny_run):
    records = json.loads((tiny_run / "runs.json").read_text())
    assert all(r["agrees"] and r["difference"] <= 1e-9 for r in records if r["kind"] == "micro")
    assert all(r["agrees"] for r in records)
    for r in records:
        assert r["median_s"] > 0 and len(r["times_s"]) == 2  # --tiny: 2 timed calls
        assert r["first_s"] >= r["optimize_s"]  # compiles ran in the background meanwhile
        assert (r["compile_s"] > 0) == (r["kernels_compiled"] > 0)
        assert "warm_first_s" in r and r["warm_kernels_compiled"] == 0  # loaded from disk
    fused = [r for r in records if r["mode"] == "fuse_all"]
    assert sum(r["kernels_compiled"] for r in fused) > 0  # a fresh cache: cold compiles
    assert any(r["ops_awaiting_kernel"] > 0 for r in fused)  # run unfused while compiling
    assert all(r["ops_cell"] + r["ops_row"] + r["ops_magg"] > 0 for r in fused)
    assert any(r["warm_kernels_loaded"] > 0 for r in fused)
    assert all(r["ops_hand"] > 0 for r in records if r["mode"] == "hand" and r["kind"] == "fit")


def _fake(name, wrong_mode=None, interrupt_at=None, skip_mode=None):
    """A one-value experiment; ``wrong_mode`` gets a value 1% off, ``interrupt_at`` (a size)
    raises KeyboardInterrupt as if Ctrl-C came, ``skip_mode`` cannot run."""

    def run_(data, mode):
        if data[1] == interrupt_at:
            raise KeyboardInterrupt
        return np.array([1.0, 2.0]) * (1.01 if mode == wrong_mode else 1.0)

    return experiments.Experiment(
        name, "micro", "fake", lambda preset: [experiments.Case(name, "dense", "generated", s)
                                               for s in (10, 20)],
        lambda case: (np.zeros((int(case.size), 2)), case.size), run_,
        skip=lambda case, mode: "too big" if mode == skip_mode else None,
    )  # fmt: skip


def _options(tmp_path, **kw):
    return Options(preset="tiny", experiments=("fake",), repeat=1, out=str(tmp_path), cold=False,
                   progress=False, **kw)  # fmt: skip


def test_a_disagreeing_mode_is_reported(tmp_path):
    outcome = run(_options(tmp_path), {"fake": _fake("fake", wrong_mode="fuse_all")})
    assert {r["mode"] for r in outcome.records if not r["agrees"]} == {"fuse_all"}
    found = tables.rows(outcome.records)
    assert all(row.disagreeing == ["fuse_all"] for row in found)
    bad = next(r for r in outcome.records if r["mode"] == "fuse_all")
    assert bad["difference"] == pytest.approx(0.01)
    text = markdown(outcome.records, _meta(outcome), [], fm.FUSION_MODES)
    assert '<span style="color:red">**FA disagrees with Base' in text
    assert "NO: FA (0.01)" in text
    assert "NO: FA" in tables.console_table(found, fm.FUSION_MODES)


def _meta(outcome):
    return {"preset": "tiny", "command": "test", "date": "today", "seconds": outcome.seconds,
            "cases": 2, "repeat": 1, "fresh_cache": True, "cache_dir": "",
            "interrupted": outcome.interrupted}  # fmt: skip


def test_ctrl_c_keeps_the_cases_done(tmp_path, capsys):
    options = _options(tmp_path)
    outcome = run(options, {"fake": _fake("fake", interrupt_at=20)})
    assert outcome.interrupted
    assert {r["size"] for r in outcome.records} == {10}
    assert len(outcome.records) == len(fm.FUSION_MODES)
    files = write_outputs(outcome, options, "test")
    assert (tmp_path / "report.md").exists() and len(files) >= 3
    assert "interrupted" in (tmp_path / "report.md").read_text()


def test_difference_is_relative_and_strict_about_nan_and_inf():
    assert difference(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0
    assert difference(np.array([1.0, 4.0 + 4e-9]), np.array([1.0, 4.0])) == pytest.approx(1e-9)
    assert difference((1.0, np.ones(2)), (1.0, np.ones(2))) == 0.0
    assert difference(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) == 0.0
    assert difference(np.array([np.nan, 1.0]), np.array([1.0, 1.0])) == math.inf
    assert difference(np.array([np.inf]), np.array([-np.inf])) == math.inf
    assert difference(np.ones(2), np.ones(3)) == math.inf


@pytest.mark.parametrize("name", ["row-mmchain", "MLogReg", "ALS-CG"])
def test_explain_prints_an_experiments_plan(name, capsys):
    assert cli.main(["explain", name, "--rows", "2000", "--fusion", "fuse_all"]) in (0, None)
    out = capsys.readouterr().out
    assert "fused operator" in out
    if name == "ALS-CG":
        assert "OUTER" in out


def test_every_experiment_has_cases_in_every_preset():
    for experiment in experiments.EXPERIMENTS.values():
        for preset in ("quick", "full"):
            cases = experiment.cases(preset)
            assert cases and all(c.format in experiments.FORMATS for c in cases)
        assert experiment.kind in ("micro", "fit")


def test_the_registry_names_the_experiments_that_use_each_data_set():
    users: dict[str, set] = {}
    for experiment in experiments.EXPERIMENTS.values():
        for case in experiment.cases("full"):
            if case.data != "generated":
                users.setdefault(case.data, set()).add(experiment.name)
    for entry in datasets.list():
        assert users.get(entry.name, set()) <= set(entry.experiments), entry.name
        assert set(entry.experiments) <= set(experiments.EXPERIMENTS) | {"compression"}


TYPES = {"dense": np.ndarray, "csr": sp.sparray, "compressed": fm.CompressedMatrix}


@pytest.mark.parametrize("name", [e.name for e in experiments.FITS])
def test_every_fit_has_generated_data_in_every_format(name):
    """The asv estimator suite fits each experiment on each format's generated data set."""
    experiment = experiments.EXPERIMENTS[name]
    for fmt in experiments.FORMATS:
        case = experiments.generated_case(experiment, fmt, "tiny")
        assert name in datasets.REGISTRY[case.data].experiments
        X, y, _ = experiment.inputs(case)
        assert X.shape[0] > 0 and isinstance(X, TYPES[fmt])
        if experiment.label in ("ratings", "none"):
            assert y is None
        else:  # labels the estimator accepts: counts >= 0, two or more classes
            assert len(y) == X.shape[0] and len(np.unique(y)) >= 2
            assert experiment.label != "counts" or y.min() >= 0


@pytest.mark.parametrize(
    "argv", [["--repeat", "0"], ["--experiments", "nope"], ["--modes", "fast"], ["--formats", ""]]
)
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        cli.main(["reproduce", *argv])
    assert "error" in capsys.readouterr().err


def test_a_mode_that_cannot_run_a_case_is_reported_as_skipped(tmp_path):
    outcome = run(_options(tmp_path), {"fake": _fake("fake", skip_mode="none")})
    skipped = [r for r in outcome.records if r["skipped"]]
    assert {r["mode"] for r in skipped} == {"none"} and "median_s" not in skipped[0]
    assert all(r["agrees"] for r in outcome.records if not r["skipped"])  # against the next mode
    text = markdown(outcome.records, _meta(outcome), [], fm.FUSION_MODES)
    assert "skipped (too big)" in text


@pytest.mark.parametrize("kind", ["micro", "fit"])
def test_a_report_over_some_modes_only_is_written(tmp_path, kind):
    """Without Gen (``--modes none,hand``) there is no Gen column or overhead to report, and no
    failure either."""
    fake = dataclasses.replace(_fake("fake"), kind=kind)
    options = _options(tmp_path, modes=("none", "hand"))
    outcome = run(options, {"fake": fake})
    assert {r["mode"] for r in outcome.records} == {"none", "hand"}
    files = write_outputs(outcome, options, "test")
    assert (tmp_path / "report.md").exists() and len(files) >= 3
