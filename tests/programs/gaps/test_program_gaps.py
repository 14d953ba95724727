"""PyTorch programs that do not yet run the same under scratchgrad, each kept here unchanged with
the gap it hits, checked exactly as ``tests/test_programs.py`` checks the programs that do: the
strict xfail turns into a failure the day the gap is closed, and the program then moves up to
``tests/programs/``."""

from pathlib import Path

import pytest
from test_programs import test_program_gives_torchs_losses as check_program

GAPS: dict[str, str] = {}  # program name: the gap it hits
PROGRAMS = sorted(p for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("test_"))


def test_every_gap_program_names_its_gap():
    assert sorted(p.stem for p in PROGRAMS) == sorted(GAPS)


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=GAPS[p.stem])) for p in PROGRAMS],
    ids=lambda p: p.stem,
)
def test_gap_program_gives_torchs_losses(path, capsys):
    check_program(path, capsys)
