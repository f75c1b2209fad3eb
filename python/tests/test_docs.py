"""The Python examples of docs/python-package.md run, as written, in a
folder holding what they name (``data/report.csv``, ``out/``). A block
that starts with ``# With your model`` needs a model and is skipped."""

import os
import pathlib
import re

import pytest

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python-package.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
RUN = [b for b in BLOCKS if not b.startswith("# With your model")]


def test_the_page_has_examples():
    assert len(RUN) >= 4 and len(BLOCKS) > len(RUN)


@pytest.mark.parametrize("source", RUN, ids=lambda s: s.splitlines()[0][:40])
def test_an_example_runs(source, tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "report.csv").write_text("quarter,revenue\nQ3,42\nQ4,44\n")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    exec(compile(source, str(PAGE), "exec"), {"__name__": "__doc_example__"})
