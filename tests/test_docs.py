"""The code blocks of README.md and docs/*.md, checked as a reader would use them.

Every fenced block names its language:

- `python` blocks run as written, each on its own (none relies on an earlier block), in an empty
  directory of their own.
- `sh` and `console` blocks are command lines (a `console` block's commands start with `$ `, the
  other lines are what they print). They are not run: each has a `<!-- not run: REASON -->`
  line right above it, and the test reports REASON as its skip reason after checking what it
  can without running anything: every `scratchgrad ...` line parses with the command line's own
  parser, every `make TARGET` is a target of the Makefile, and every `benchmarks/*.py` and
  `examples/*.py` named exists.
- `c` and `cpp` blocks carry the same marker (they need a C compiler or a board).
- `text` blocks are output, listings and file formats: nothing to run.

Every link between the pages, and to files of the repository, leads somewhere that exists, down
to the heading a `#anchor` names; so does every repository path the prose names in backticks.
"""

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from scratchgrad.cli import build_parser

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.S | re.M)
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\n*$")  # searched up to a block's start
LANGUAGES = {"python", "sh", "console", "text", "c", "cpp"}


@dataclass
class Block:
    page: str
    line: int
    language: str
    code: str
    not_run: str | None  # the reason given in the marker above the block, if any

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            marker = NOT_RUN.search(text, 0, m.start())
            before = text[: m.start()]
            found.append(
                Block(
                    page=str(page.relative_to(ROOT)),
                    line=before.count("\n") + 1,
                    language=m.group(1),
                    code=m.group(2),
                    not_run=marker.group(1) if marker else None,
                )
            )
    return found


BLOCKS = blocks()
PYTHON = [b for b in BLOCKS if b.language == "python"]
COMMANDS = [b for b in BLOCKS if b.language in ("sh", "console", "c", "cpp")]


def test_every_block_names_a_known_language():
    unknown = [f"{b.id} ({b.language or 'none'})" for b in BLOCKS if b.language not in LANGUAGES]
    assert not unknown, f"give these blocks one of {sorted(LANGUAGES)}: {unknown}"


def test_python_blocks_carry_no_not_run_marker():
    marked = [b.id for b in PYTHON if b.not_run]
    assert not marked, f"Python blocks must run; make these whole instead: {marked}"


def test_there_are_blocks_to_check():
    assert len(PYTHON) >= 25 and len(COMMANDS) >= 10


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block_runs(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files (a checkpoint, exported C)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(block.code, block.page, "exec"), {"__name__": "__docs__"})


def commands(block: Block) -> list[list[str]]:
    """The block's command lines as argument lists (a console block's output lines dropped)."""
    lines = block.code.splitlines()
    if block.language == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    return [shlex.split(line, comments=True) for line in lines if line.strip()]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w-]+):", text, re.M))


def check_command(argv: list[str]) -> None:
    while argv and re.fullmatch(r"\w+=\S*|env|-u|[A-Z_]+", argv[0]):  # env -u X, VAR=value
        argv = argv[1:]
    if not argv:
        return
    if argv[0] == "scratchgrad":
        with contextlib.redirect_stdout(io.StringIO()):  # --help prints and exits 0
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit as stop:
                assert stop.code == 0, f"`{shlex.join(argv)}` does not parse"
    elif argv[0] == "make":
        assert set(argv[1:]) <= make_targets(), f"`{shlex.join(argv)}`: no such Makefile target"
    for arg in argv:
        if re.fullmatch(r"(benchmarks|examples)/\w+\.py", arg):
            assert (ROOT / arg).is_file(), f"`{shlex.join(argv)}`: {arg} does not exist"


@pytest.mark.parametrize("block", COMMANDS, ids=[b.id for b in COMMANDS])
def test_command_block_is_checked_then_marked_not_run(block):
    assert block.not_run, f"{block.id}: put `<!-- not run: REASON -->` right above the block"
    if block.language in ("sh", "console"):
        for argv in commands(block):
            check_command(argv)
    pytest.skip(f"not run: {block.not_run}")


def test_deploy_header_is_what_to_c_writes(tmp_path):
    """docs/deploy.md shows the header of its XOR example: it is to_c's output, not a sketch."""
    import scratchgrad as sg
    from scratchgrad import nn
    from scratchgrad.export import to_c

    (shown,) = [b.code for b in BLOCKS if b.page == "docs/deploy.md" and b.language == "c"]
    model = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    to_c(model, sg.zeros(1, 2), tmp_path, "xor")
    assert (tmp_path / "xor.h").read_text() == shown


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def prose(page: Path) -> str:
    """The page without its code blocks (a `# comment` in a block is not a heading)."""
    return FENCE.sub("", page.read_text())


def test_links_lead_to_files_and_headings_that_exist():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = page.parent / path if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", prose(linked), re.M)
                if anchor not in {slug(h) for h in headings}:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


# Paths the prose names that a run writes, so a fresh clone does not have them.
WRITTEN_BY_RUNS = {"benchmarks/results/latest.md"}
PACKAGE = ROOT / "src" / "scratchgrad"


def test_paths_named_in_the_prose_exist():
    """`tests/test_ops.py`, `benchmarks/run.py`, `ops/fused.py`, `nn/conv_functional.py`, ...
    (a package path may leave out `src/scratchgrad/`)."""
    top = r"(?:tests|benchmarks|examples|src|scripts|docs)/[\w/.-]+"
    package = r"(?:scratchgrad/)?(?:ops|nn|autograd|func|optim|evo|export|amp|jit|utils)/[\w/.-]*"
    missing = []
    for page in PAGES:
        text = prose(page)
        for path in set(re.findall(rf"`({top})`", text)) - WRITTEN_BY_RUNS:
            if not (ROOT / path).exists() and not (PACKAGE / path).exists():
                missing.append(f"{page.name}: {path}")
        for path in set(re.findall(rf"`({package})`", text)):
            if not (PACKAGE / path.removeprefix("scratchgrad/")).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, missing
