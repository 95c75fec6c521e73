"""docs/results/README.md is the one index of measured numbers: every percentage, TB/s figure and
speed ratio that README.md quotes must appear there (with its command, commit and raw file)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
FIGURE = re.compile(r"\b\d+(?:\.\d+)?(?:\s?%|\s?TB/s|x\b)")


def _figures(text: str) -> set[str]:
    return {m.group(0).replace(" ", "") for m in FIGURE.finditer(text)}


def test_every_figure_in_the_readme_is_in_the_results_index():
    index = (ROOT / "docs" / "results" / "README.md").read_text()
    indexed = _figures(index) | {m.group(0) for m in re.finditer(r"\b\d+\.\d+\b", index)}
    missing = sorted(f for f in _figures((ROOT / "README.md").read_text())
                     if f not in indexed and f.rstrip("x%").replace("TB/s", "") not in indexed)
    assert not missing, f"README.md quotes {missing}, which docs/results/README.md does not list"


def test_the_figure_pattern_finds_what_readmes_quote():
    assert (_figures("0.904x cuBLAS, 4.25 TB/s, 92% and 6.04x; not 3.11 or sm_90") == {"0.904x", "4.25TB/s", "92%", "6.04x"})


def test_results_folders_are_named_by_date_gpu_commit_and_what():
    names = [p.name for p in (ROOT / "docs" / "results").iterdir() if p.is_dir()
             and p.name != "archive"]
    pattern = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9]+-[0-9a-f]{7}-[a-z0-9-]+$")
    assert names and all(pattern.match(n) for n in names), names
