"""Every front end against the library's map-option schema (surfgrad/map_options.hpp): the
estimators' parameters and defaults, the JavaScript types, the distributed CLI; the ranges the
front ends once disagreed on; strict types; checks before any copy; NotFittedError; and tensor
truthiness as numpy's."""

import inspect
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import surfgrad as sg
from surfgrad._map_options import SCHEMA, options_for

ROOT = Path(__file__).resolve().parents[2]
# Parameters the estimators have beside the schema's options (scikit-learn's, and the device).
EXTRA = {"n_components", "verbose", "device", "n_iter"}
# Parameters whose default is None by scikit-learn's convention: the schema's default then.
NONE_MEANS_DEFAULT = {"random_state", "max_iter", "n_epochs"}


def _same_default(python_default, schema_default):
    if isinstance(python_default, str):
        return python_default == schema_default
    return float(python_default) == float(schema_default)


@pytest.mark.parametrize("estimator, method", [(sg.TSNE, "tsne"), (sg.UMAP, "umap")])
def test_estimators_have_every_option_with_its_default(estimator, method):
    params = inspect.signature(estimator.__init__).parameters
    specs = options_for(method)
    names = {s["python"] for s in specs}
    assert set(params) - {"self"} - EXTRA == names, "estimator parameters vs the schema"
    for s in specs:
        default = params[s["python"]].default
        if default is None:
            assert s["python"] in NONE_MEANS_DEFAULT, s["python"]
        else:
            assert _same_default(default, s["default"]), (s["python"], default, s["default"])
        # The docstring lists it with its range.
        assert f"{s['python']} : {s['range']}" in estimator.__doc__


def _dts_fields(text, interface):
    body = re.search(r"export interface " + interface + r"\b[^{]*\{(.*?)\n\}", text, re.S).group(1)
    return set(re.findall(r"^\s+(\w+)\?:", body, re.M))


def test_javascript_types_have_every_option():
    text = (ROOT / "web/package/surfgrad.d.ts").read_text()
    control = {"progressEvery", "onProgress", "signal"}
    shared = _dts_fields(text, "MapOptions") - control
    for method, interface in (("tsne", "TsneOptions"), ("umap", "UmapOptions")):
        names = {s["js"] for s in SCHEMA if s["method"] in ("", method) and s["js"] != "method"}
        assert shared | _dts_fields(text, interface) == names, interface


def test_cli_names_and_the_distributed_cli():
    out = subprocess.run([sys.executable, "-m", "surfgrad.distributed", "map", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for s in SCHEMA:
        if s["method"]:
            assert s["cli"] in out, s["cli"]


def test_the_ranges_front_ends_disagreed_on():
    x = np.random.default_rng(0).normal(size=(200, 5)).astype(np.float32)
    # early exaggeration below 1 was refused by Python alone; (0, 1000] everywhere now.
    sg.TSNE(early_exaggeration=0.5, max_iter=20, random_state=0).fit(x)
    with pytest.raises(sg.ArgumentError, match=r"early_exaggeration \(--early-exaggeration\) must be a number in "
                                               r"\(0, 1000\]"):
        sg.TSNE(early_exaggeration=0).fit(x)
    with pytest.raises(sg.ArgumentError, match=r"min_dist \(--min-dist\) must be a number in \[0, 1\]"):
        sg.UMAP(min_dist=5).fit(x)
    with pytest.raises(sg.ArgumentError, match=r"n_neighbors \(--n-neighbors\) must be an integer in \[2, 128\]"):
        sg.UMAP(n_neighbors=1000).fit(x)
    with pytest.raises(sg.ArgumentError, match=r"\(1, 43\)"):
        sg.TSNE(perplexity=43).fit(x)
    # UMAP's learning rate and negative sample rate and the metric reach the library.
    with pytest.raises(sg.ArgumentError, match=r"learning_rate \(--learning-rate\) must be a number in \(0, 1000\]"):
        sg.UMAP(learning_rate=5000).fit(x)
    with pytest.raises(sg.ArgumentError, match="metric"):
        sg.UMAP(metric="manhattan").fit(x)


@pytest.mark.parametrize("estimator, name, value", [
    (sg.TSNE, "perplexity", "30"), (sg.TSNE, "perplexity", True), (sg.UMAP, "n_neighbors", 15.0),
    (sg.UMAP, "n_neighbors", "15"), (sg.TSNE, "learning_rate", "fast"), (sg.TSNE, "repulsion", 3),
    (sg.UMAP, "min_dist", [0.1]), (sg.TSNE, "early_exaggeration_iter", 2.5)])
def test_numeric_parameters_are_typed_strictly(estimator, name, value):
    x = np.random.default_rng(1).normal(size=(100, 4)).astype(np.float32)
    with pytest.raises(sg.ArgumentError, match=name):
        estimator(**{name: value}).fit(x)


def test_a_job_too_large_is_refused_from_its_shape_before_any_copy():
    # A stride-0 view: a few KiB of real memory that claims more rows than the host can hold
    # (at least 5e6 × 768, the case; more on a larger machine).
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    rows = max(5_000_000, int(available * 1.5 / (768 * 4)) + 1)
    fake = np.lib.stride_tricks.as_strided(np.zeros(768, dtype=np.float64), shape=(rows, 768), strides=(0, 8))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    with pytest.raises(sg.OutOfMemoryError, match="host memory"):
        sg.TSNE(random_state=0).fit(fake)
    assert time.perf_counter() - t0 < 1.0
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < 100 * 2**20, f"the peak resident set grew by {grown / 2**20:.0f} MiB"


def test_fitted_attributes_before_fit_are_not_fitted_errors():
    est = sg.UMAP()
    with pytest.raises(sg.NotFittedError, match="not fitted"):
        est.embedding_
    assert isinstance(sg.NotFittedError("x"), ValueError) and isinstance(sg.NotFittedError("x"), AttributeError)
    assert not hasattr(est, "embedding_")
    with pytest.raises(AttributeError):
        est.no_such_thing
    try:
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted
    except ImportError:
        return
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError):
        est.n_neighbors_


def test_tensor_truthiness_is_numpys():
    assert bool(sg.tensor([2.0])) is True
    assert bool(sg.tensor([0.0])) is False
    assert bool(sg.tensor(np.float32(0.0))) is False
    assert bool(sg.tensor(np.float32(-1.5))) is True
    assert bool(sg.tensor([[0]], dtype="int32")) is False
    for many in (sg.tensor([1.0, 2.0]), sg.zeros(0)):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(many)
    if sg.tensor([3.0]):
        pass
    else:
        pytest.fail("a tensor of [3.0] is true")


def test_the_docs_table_is_the_schema():
    from surfgrad._map_options import markdown_table

    assert markdown_table() in (ROOT / "docs/map_options.md").read_text(), \
        "docs/map_options.md is out of date: regenerate its table (the command is on the page)"


def test_the_map_pages_fields_are_schema_options():
    html = (ROOT / "web/page/index.html").read_text()
    fields = re.findall(r'data-option="(\w+)"', html)
    names = {s["js"] for s in SCHEMA}
    assert fields and set(fields) <= names, set(fields) - names
    assert "data-name=" not in html, "fields are named by their options (data-option), not by hand"
