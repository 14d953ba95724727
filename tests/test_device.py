"""The device API against PyTorch's CPU build: parsing, printing, equality, the queries scripts
make before choosing a device, ``device=`` on factories, ``.to``/``.cpu``/``.cuda``."""

import pytest
import torch

import scratchgrad as sg

NAMES = ["cpu", "cuda", "cuda:0", "cuda:3", "mps", "meta", "cpu:0"]


@pytest.mark.parametrize("name", NAMES)
def test_device_parses_and_prints_as_torch(name):
    ours, theirs = sg.device(name), torch.device(name)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert sg.device(ours) == ours and hash(sg.device(name)) == hash(ours)


def test_device_equality_as_torch():
    pairs = [("cuda", "cuda:0"), ("cpu", "cpu"), ("cuda:1", "cuda:1"), ("cpu", "cuda")]
    for a, b in pairs:
        assert (sg.device(a) == sg.device(b)) == (torch.device(a) == torch.device(b))
    assert (sg.device("cpu") == "cpu") == (torch.device("cpu") == "cpu")  # False in both
    assert sg.device("cuda", 2) == sg.device("cuda:2")
    assert len({sg.device("cpu"), sg.device("cpu"), sg.device("cuda")}) == 2


@pytest.mark.parametrize("bad", ["foo", "cuda:x", "cuda:-1"])
def test_bad_device_strings_raise_runtime_error_as_torch(bad):
    with pytest.raises(RuntimeError):
        torch.device(bad)
    with pytest.raises(RuntimeError):
        sg.device(bad)


NO_GPU = pytest.mark.skipif(sg.cuda.is_available(), reason="CuPy sees a GPU here")


@NO_GPU
def test_queries_take_the_cpu_path():
    assert sg.cuda.is_available() is torch.cuda.is_available() is False
    assert sg.cuda.device_count() == torch.cuda.device_count() == 0
    assert sg.accelerator.is_available() is False and sg.accelerator.current_accelerator() is None
    assert sg.backends.mps.is_available() is False and sg.backends.cudnn.is_available() is False
    sg.cuda.manual_seed(0), sg.cuda.manual_seed_all(0), sg.cuda.empty_cache()  # quiet no-ops
    sg.backends.cudnn.benchmark = sg.backends.cudnn.deterministic = True  # accepted switches
    device = sg.device("cuda" if sg.cuda.is_available() else "cpu")
    assert sg.zeros(2, device=device).device == device == sg.device("cpu")


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.zeros(2, device="cuda"),
        lambda m: m.tensor([1.0], device="cuda:0"),
        lambda m: m.randn(2, device=m.device("cuda")),
        lambda m: m.ones(2).cuda(),
        lambda m: m.ones(2).to("cuda"),
        lambda m: m.nn.Linear(2, 2).cuda(),
        lambda m: m.nn.Linear(2, 2, device="cuda"),
        lambda m: m.cuda.synchronize(),
        lambda m: m.cuda.get_device_name(0),
    ],
)
@NO_GPU
def test_asking_for_cuda_raises_an_assertion_error_as_torch(make):
    with pytest.raises(AssertionError):
        make(torch)
    with pytest.raises(AssertionError, match="'cuda(:0)?' is not available"):
        make(sg)
    with pytest.raises(RuntimeError):  # also a RuntimeError, like every other device error
        make(sg)


FACTORIES = [
    lambda m, d: m.tensor([1.0, 2.0], device=d),
    lambda m, d: m.as_tensor([1, 2], device=d),
    lambda m, d: m.zeros(2, 3, device=d),
    lambda m, d: m.ones((2,), device=d),
    lambda m, d: m.empty(2, device=d),
    lambda m, d: m.full((2,), 7, device=d),
    lambda m, d: m.arange(5, device=d),
    lambda m, d: m.linspace(0, 1, 5, device=d),
    lambda m, d: m.eye(3, device=d),
    lambda m, d: m.rand(2, device=d),
    lambda m, d: m.randn(2, device=d),
    lambda m, d: m.randint(0, 4, (3,), device=d),
    lambda m, d: m.randperm(4, device=d),
    lambda m, d: m.zeros_like(m.ones(2), device=d),
    lambda m, d: m.full_like(m.ones(2), 3.0, device=d),
    lambda m, d: m.randn_like(m.ones(2), device=d),
]


@pytest.mark.parametrize("factory", FACTORIES)
def test_factories_accept_device(factory):
    for d in ("cpu", torch.device("cpu")):
        expected = factory(torch, d)
        ours = factory(sg, d if isinstance(d, str) else sg.device("cpu"))
        assert ours.device == sg.device("cpu") and str(ours.device) == str(expected.device)
        assert (
            ours.shape == tuple(expected.shape)
            and str(ours.dtype).split(".")[-1] in str(expected.dtype).split(".")[-1]
        )


def test_to_reads_device_dtype_and_tensor_arguments_as_torch():
    x = sg.ones(2, requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(sg.device("cpu")) is x
    y = x.to("cpu", sg.float64)
    assert y.dtype == sg.float64 and y.grad_fn is not None
    assert x.to(device="cpu", dtype=sg.float64).dtype == sg.float64
    assert x.to(sg.zeros(1, dtype=sg.float64)).dtype == sg.float64
    assert x.to("cpu", copy=True) is not x
    assert x.is_cpu and not x.is_cuda and x.get_device() == torch.ones(1).get_device() == -1


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.device(3),
        lambda lib: lib.ones(2).to(3),
        lambda lib: lib.ones(2).to(0, lib.float64),
        lambda lib: lib.nn.Linear(2, 2).to(3),
    ],
)
def test_an_index_alone_names_the_accelerator_as_torch(make):
    """An int is an accelerator's index in PyTorch: with none, a RuntimeError (it was our
    TypeError, "Cannot interpret '3' as a data type" from Module.to)."""
    with pytest.raises(RuntimeError) as theirs:
        make(torch)
    with pytest.raises(RuntimeError, match="^Cannot access accelerator device") as ours:
        make(sg)
    assert str(ours.value) == str(theirs.value)


@NO_GPU
@pytest.mark.parametrize("device", [0, 2, "cuda:0", "cpu", "cuda"])
def test_set_device_index_without_an_accelerator_raises_as_torch(device):
    """pytorch/examples' imagenet calls ``torch.accelerator.set_device_index(args.gpu)`` (it was
    missing here: an AttributeError); a negative index is a no-op in both."""
    with pytest.raises(RuntimeError) as theirs:
        torch.accelerator.set_device_index(device)
    with pytest.raises(RuntimeError) as ours:
        sg.accelerator.set_device_index(device)
    assert str(ours.value) == str(theirs.value)
    assert sg.accelerator.set_device_index(-1) is torch.accelerator.set_device_index(-1) is None


def test_module_to_device_keeps_parameters():
    model = sg.nn.Linear(3, 2)
    weight = model.weight
    assert model.to("cpu") is model and model.cpu() is model and model.weight is weight
    model.to(sg.device("cpu"), sg.float64)
    assert model.weight is weight and weight.dtype == sg.float64
    assert all(p.device == sg.device("cpu") for p in model.parameters())


def test_generator_takes_a_device_as_torch():
    g = sg.Generator("cpu").manual_seed(3)
    assert g.device == sg.device("cpu") == sg.Generator(device="cpu").device
    if not sg.cuda.is_available():
        with pytest.raises(AssertionError):
            sg.Generator(device="cuda")


def test_a_generator_is_made_at_its_first_draw_not_when_seeded():
    """Seeding a device's generator touches no device (as PyTorch's lazy CUDA seeding): a
    DataLoader worker forked from a process that used the GPU seeds every device's generator,
    and CUDA cannot start in a forked child. The first draw is the seeded one."""

    class NoDevice:
        def default_rng(self, seed):
            raise RuntimeError("the device cannot start here")

    g = sg.backend.Generator(device="cpu")
    g._random, real = NoDevice(), g._random
    g.manual_seed(3)  # nothing made yet
    g._random = real
    expected = sg.backend.Generator(3, "cpu").rng.integers(1000, size=4)
    assert sg.backend.to_host(g.rng.integers(1000, size=4)).tolist() == (
        sg.backend.to_host(expected).tolist()
    )


@pytest.fixture
def default_device_restored():
    yield
    sg.set_default_device(None)
    torch.set_default_device(None)


def _factories(lib):
    return [lib.zeros(1), lib.tensor([1.0]), lib.randn(2), lib.arange(3), lib.eye(2),
            lib.full((2,), 3.0), lib.empty(1), lib.linspace(0, 1, 3), lib.randperm(3)]  # fmt: skip


def test_set_default_device_moves_the_factories_as_pytorchs(default_device_restored):
    assert str(sg.get_default_device()) == str(torch.get_default_device()) == "cpu"
    for lib in (sg, torch):
        lib.set_default_device("meta")
    assert str(sg.get_default_device()) == str(torch.get_default_device()) == "meta"
    assert [str(t.device) for t in _factories(sg)] == [str(t.device) for t in _factories(torch)]
    assert all(t.is_meta for t in _factories(sg))
    assert sg.zeros(1, device="cpu").device == sg.device("cpu")  # an explicit device wins
    for lib in (sg, torch):
        lib.set_default_device(None)
    assert str(sg.get_default_device()) == "cpu" and not sg.zeros(1).is_meta


def test_a_device_as_a_context_manager_nests_and_restores(default_device_restored):
    seen = []
    for lib in (sg, torch):
        with lib.device("meta"):
            with lib.device("cpu"):
                inner = lib.zeros(1).device
            outer = [lib.zeros(1).device, lib.zeros(1, device="cpu").device]
        seen.append([str(d) for d in (inner, *outer, lib.zeros(1).device)])
    assert seen[0] == seen[1] == ["cpu", "meta", "cpu", "cpu"]


@NO_GPU
def test_a_default_device_without_a_backend_raises(default_device_restored):
    with pytest.raises(RuntimeError, match="'cuda' is not available"):  # an AssertionError too
        sg.set_default_device("cuda")
    assert sg.get_default_device() == sg.device("cpu")  # unchanged
