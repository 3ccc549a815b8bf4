"""The map options' schema, from the library (surfgrad/map_options.hpp): each option's name in
every front end, type, default, range and documentation. The estimators take their parameters'
checks and docstrings from it, and python/tests/test_map_option_schema.py holds the estimators,
the distributed CLI and the JavaScript types to it."""

from __future__ import annotations

import json
import numbers
from typing import Any, Dict, List

import numpy as np

from . import _core
from ._core import ArgumentError

SCHEMA: List[Dict[str, Any]] = json.loads(_core.map_option_schema_json())


def options_for(method: str) -> List[Dict[str, Any]]:
    """The options that apply to ``method`` ("tsne" or "umap") and have a Python name."""
    return [s for s in SCHEMA if s["method"] in ("", method) and s["python"]]


def checked(owner: str, spec: Dict[str, Any], value: Any) -> Any:
    """``value`` as the library takes it (int, float or str), its Python type checked strictly:
    ``perplexity="30"`` or ``n_neighbors=15.0`` or ``True`` is an ArgumentError naming it."""
    name = spec["python"]
    if spec["type"] == "choice":
        if not isinstance(value, str) or value not in spec["choices"]:
            raise ArgumentError(f"{owner}: {name} must be one of {spec['range']}, got {value!r}")
        return value
    if spec["automatic"] and isinstance(value, str) and value == "auto":
        return value
    whole = spec["type"] == "integer"
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or (whole and not isinstance(value, numbers.Integral))):
        raise ArgumentError(f"{owner}: {name} must be {spec['range']}, got {value!r} "
                            f"({type(value).__name__})")
    return int(value) if whole else float(value)


def parameters_doc(method: str) -> str:
    """The estimator's options as a numpydoc Parameters list, from the schema."""
    lines = ["", "    Map options (from the library's schema; the same ranges as ``surfgrad map``):", ""]
    for s in options_for(method):
        auto = f"; auto: {s['automaticDoc']}" if s["automatic"] else ""
        lines.append(f"    {s['python']} : {s['range']}, default {s['default']}")
        lines.append(f"        {s['doc']}{auto} (CLI {s['cli']}).")
    return "\n".join(lines) + "\n"


def markdown_table() -> str:
    """The schema as docs/map_options.md shows it (a test holds the page to this)."""
    rows = ["| option | CLI | Python (`TSNE` / `UMAP`) | JavaScript | range | default |",
            "|---|---|---|---|---|---|"]
    for s in SCHEMA:
        method = {"": "both", "tsne": "t-SNE", "umap": "UMAP"}[s["method"]]
        auto = f" (auto: {s['automaticDoc']})" if s["automatic"] else ""
        python = f"`{s['python']}`" if s["python"] else "the class"
        js = f"`{s['js']}`" if s["js"] != "method" else "`tsne()` / `umap()`"
        rows.append(f"| `{s['key']}` ({method}) | `{s['cli']}` | {python} | {js} | {s['range']}{auto} | "
                    f"{s['default']} |")
    return "\n".join(rows) + "\n"
