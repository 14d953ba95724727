"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

README = (Path(__file__).parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files (a checkpoint)
    exec(compile(block, "README.md", "exec"), {})


def test_readme_has_examples():
    assert len(BLOCKS) >= 4
