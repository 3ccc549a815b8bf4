"""The README stays short and honest: at most 200 lines, the two set-up commands as .ci/run and the
scripts expect them, every link in it (and in docs/) pointing at a file that exists, and its
Python example running as written (on the default adapter; the GLES pass skips it)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COMMANDS = (
    "bash scripts/build.sh && ./build/surfgrad info && ./build/surfgrad",
    "bash scripts/run_tests.sh",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _blocks(text: str, lang: str) -> list:
    return re.findall(r"^```" + lang + r"\n(.*?)^```", text, re.S | re.M)


def test_readme_is_at_most_200_lines():
    lines = _text(README).count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move detail to docs/ (limit 200)"


def test_readme_keeps_the_two_commands():
    sh = [line.strip() for block in _blocks(_text(README), "sh") for line in block.splitlines()]
    for command in COMMANDS:
        assert command in sh, f"README.md lost its command: {command}"


@pytest.mark.parametrize("page", ["README.md", "bench/README.md", "bench/results/README.md"]
                         + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
def test_links_point_at_files(page):
    path = ROOT / page
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _text(path)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        if not (path.parent / target.split("#")[0]).exists():
            missing.append(target)
    assert not missing, f"{page} links to files that do not exist: {missing}"


def test_readme_cli_options_exist():
    """Every option the README's command-line examples use is one `surfgrad CMD --help` lists."""
    cli = ROOT / "build" / "surfgrad"
    if not cli.exists():
        pytest.skip("build/surfgrad is not built")
    checked = 0
    for block in _blocks(_text(README), "sh"):
        for line in block.splitlines():
            m = re.search(r"\./build/surfgrad ([a-z-]+)\s(.*?)(?:\s#\s|$)", line.lstrip("# "))
            if not m:
                continue
            helped = subprocess.run([str(cli), m.group(1), "--help"], capture_output=True, text=True, timeout=60)
            for option in re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", m.group(2)):
                if option != "--help":
                    assert option in helped.stdout, f"README: `surfgrad {m.group(1)}` has no {option}"
                    checked += 1
    assert checked, "no command-line example found in README.md"


@pytest.mark.skipif(os.environ.get("SURFGRAD_BACKEND", "").lower() == "gles",
                    reason="once is enough: the default adapter's pass runs it")
def test_readme_python_example_runs(tmp_path):
    blocks = _blocks(_text(README), "python")
    assert blocks, "README.md has no ```python example"
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"README's Python example failed:\n{done.stdout}\n{done.stderr}"
