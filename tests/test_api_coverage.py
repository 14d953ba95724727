"""Which of PyTorch's most used names scratchgrad has: the list (``torch_api_names.txt``,
written from PyTorch's documentation) is walked against both libraries, and
``docs/api_coverage.md`` reports the result. Run this file with Python to rewrite the report.
"""

from pathlib import Path

import pytest
import torch
import torch.utils.data  # noqa: F401  (a submodule the list names)

import scratchgrad as sg

HERE = Path(__file__).parent
NAMES = [
    line.strip()
    for line in (HERE / "torch_api_names.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
REPORT = HERE.parent / "docs" / "api_coverage.md"


def _has(root, dotted: str) -> bool:
    """Whether ``root`` (torch or scratchgrad) has the name ``torch.a.b`` (first part dropped)."""
    obj = root
    for part in dotted.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def missing() -> list[str]:
    return [name for name in NAMES if not _has(sg, name)]


def test_the_list_names_only_what_torch_has():
    assert len(NAMES) == len(set(NAMES)) > 500
    assert [name for name in NAMES if not _has(torch, name)] == []


def test_the_report_claims_no_name_that_is_missing():
    """Every name the report counts as covered is there; a name added since (by anyone) only
    makes the report conservative until it is rewritten (``python tests/test_api_coverage.py``).
    """
    reported = {
        line.strip("- `\n") for line in REPORT.read_text().splitlines() if line.startswith("- `")
    }
    not_reported = set(missing()) - reported
    assert not not_reported, f"missing but reported as covered: {sorted(not_reported)}"


def test_the_readme_counts_the_names_of_the_list():
    """The README's "What is missing" names the length of the list it points to (it said 606
    after the list had grown to 615)."""
    readme = " ".join((HERE.parent / "README.md").read_text().split())
    assert f"walks a list of {len(NAMES)} of PyTorch's most used names" in readme


@pytest.mark.parametrize(
    "name",
    [
        "torch.device",
        "torch.Tensor.new_zeros",
        "torch.einsum",
        *("torch.polar", "torch.complex", "torch.view_as_complex", "torch.view_as_real"),
        *("torch.complex64", "torch.cfloat", "torch.cdouble", "torch.Tensor.imag"),
        *("torch.fft.rfft", "torch.fft.irfft", "torch.fft.fftn", "torch.fft.fftshift"),
        *("torch.fft.hfft", "torch.fft.ihfft", "torch.fft.hfftn", "torch.fft.ihfft2"),
        *("torch.stft", "torch.istft", "torch.Tensor.stft", "torch.Tensor.istft"),
        *("torch.range", "torch.linalg.eig", "torch.linalg.eigvals", "torch.geqrf"),
        *("torch.Tensor.geqrf", "torch.orgqr", "torch.Tensor.orgqr", "torch.ormqr"),
        "torch.Tensor.ormqr",
        *("torch.linalg.ldl_factor", "torch.linalg.ldl_factor_ex", "torch.linalg.ldl_solve"),
    ],
)
def test_names_this_work_added_are_found(name):
    assert _has(sg, name)


def write_report() -> None:
    absent = missing()
    groups: dict[str, list[str]] = {}
    for name in absent:
        groups.setdefault(name.rsplit(".", 1)[0], []).append(name)
    lines = [
        "# PyTorch API coverage",
        "",
        f"scratchgrad has **{len(NAMES) - len(absent)} of the {len(NAMES)}** names of PyTorch's "
        "most used API listed in `tests/torch_api_names.txt` (written from PyTorch 2.13's "
        "documentation: `torch.*`, `Tensor.*`, `linalg`, `nn.*`, `nn.functional.*`, `nn.init`, "
        "`optim`, `utils.data`, `autograd`, `cuda`, `backends`). `tests/test_api_coverage.py` "
        "checks that "
        "every name counted as covered exists; `python tests/test_api_coverage.py` rewrites this "
        "page.",
        "",
        "Having a name is not the same as matching PyTorch everywhere: what is checked against "
        "PyTorch is in the op table and the tests; what differs is in the README's "
        '"Porting a PyTorch script".',
        "",
        f"## Missing ({len(absent)})",
        "",
    ]
    for prefix, names in groups.items():
        lines += [f"### `{prefix}`", "", *(f"- `{name}`" for name in names), ""]
    REPORT.write_text("\n".join(lines))


if __name__ == "__main__":
    write_report()
    print(f"{REPORT}: {len(NAMES) - len(missing())} of {len(NAMES)} covered")
