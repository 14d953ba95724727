"""Checkpoints: save/load round trips, PyTorch reading our files, clear errors, atomic writes,
and no pickle anywhere."""

import io
import json
import math
import os
import pickle
import stat
import time
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import scratchgrad as sg
from scratchgrad import nn, optim
from scratchgrad.serialization import load, save

RNG = np.random.default_rng(0)


def make_model():
    sg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))


def assert_same(ours, expected):
    """Same structure, container types, key types, dtypes and values (nan equals nan)."""
    assert type(ours) is type(expected), (ours, expected)
    if isinstance(expected, sg.Tensor):
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        np.testing.assert_array_equal(ours.numpy(), expected.detach().numpy())
    elif isinstance(expected, dict):
        assert list(ours) == list(expected)
        for key in expected:
            assert type(key) is type(next(k for k in ours if k == key))
            assert_same(ours[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            assert_same(a, b)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(ours)
    else:
        assert ours == expected


# ---- round trips ------------------------------------------------------------------------------


def test_model_state_dict_round_trip_and_pytorch_reads_it(tmp_path):
    model = make_model()
    model(sg.randn(5, 4))  # move the batch-norm running statistics off their start
    path = tmp_path / "model.safetensors"
    save(model.state_dict(), path)

    loaded = load(path)
    assert_same(loaded, model.state_dict())  # an OrderedDict, as torch.load gives
    assert loaded._metadata == model.state_dict()._metadata  # the modules' versions

    # PyTorch reads the file with safetensors alone: the same keys, dtypes and values ...
    tensors = safetensors.torch.load_file(path)
    assert sorted(tensors) == sorted(model.state_dict())
    for key, value in model.state_dict().items():
        assert tensors[key].dtype == getattr(torch, value.dtype.name)
        np.testing.assert_array_equal(tensors[key].numpy(), value.numpy())
    # ... and a torch model of the same architecture loads them and computes the same outputs.
    twin = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    )
    twin.load_state_dict(tensors)
    x = RNG.normal(size=(5, 4)).astype(np.float32)
    model.eval(), twin.eval()
    np.testing.assert_allclose(
        model(sg.tensor(x)).detach().numpy(), twin(torch.tensor(x)).detach().numpy(), rtol=1e-5
    )


def test_every_dtype_and_shape_round_trips(tmp_path):
    tensors = {
        "f64": sg.tensor(RNG.normal(size=(2, 3)), dtype=sg.float64),
        "f32": sg.randn(4),
        "f16": sg.randn(3, 2, dtype=sg.float16),
        "bf16": sg.randn(5, dtype=sg.bfloat16),
        "i64": sg.arange(6),
        "i32": sg.tensor([1, -2, 3], dtype=sg.int32),
        "bool": sg.tensor([True, False, True]),
        "scalar": sg.tensor(2.5),
        "empty": sg.zeros(0, 3),
        "transposed": sg.tensor(np.arange(6.0).reshape(2, 3)).T,  # not contiguous in memory
    }
    save(tensors, tmp_path / "t")
    loaded = load(tmp_path / "t")
    assert_same(loaded, tensors)
    for t in loaded.values():  # loaded tensors are independent and writable
        assert t.array.flags.writeable
    theirs = safetensors.torch.load_file(tmp_path / "t")
    assert theirs["bf16"].dtype == torch.bfloat16
    np.testing.assert_array_equal(
        theirs["bf16"].float().numpy(), tensors["bf16"].numpy().astype(np.float32)
    )
    np.testing.assert_array_equal(theirs["transposed"].numpy(), [[0, 3], [1, 4], [2, 5]])


def test_nested_structure_round_trips(tmp_path):
    weight = sg.randn(2, 2)
    obj = {
        "state": {0: {"step": 3, "exp_avg": sg.randn(2)}, 1: {"momentum_buffer": None}},
        "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "amsgrad": False, "params": [0, 1]}],
        "floats": [1.0, 2, -0.0, math.inf, -math.inf, math.nan, 1e-300],
        "strings": ("a", "", "ü"),
        "nesting": [[sg.ones(1)], {"deep": (weight, [weight])}],
        (1, "tuple key"): 1.5,
        2.5: "float key",
        None: True,
        "numpy scalar": np.float32(0.5),
        "a.b": sg.zeros(1),
        "a": {"b": sg.ones(1)},  # the same dotted path as "a.b"
        "__metadata__": sg.ones(2),  # a name safetensors reserves
        "looks like a marker": {"__tensor__": "a.b"},
        "empty": {},
        "empty list": [],
    }
    save(obj, tmp_path / "nested")
    expected = {**obj, "numpy scalar": 0.5}
    assert_same(load(tmp_path / "nested"), expected)


def test_optimizer_tensors_get_dotted_names(tmp_path):
    w = sg.ones(3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1, amsgrad=True)
    w.grad = sg.ones(3)
    opt.step()
    save(opt.state_dict(), tmp_path / "opt")
    with safetensors.safe_open(tmp_path / "opt", framework="np") as f:
        assert sorted(f.keys()) == [
            "state.0.exp_avg",
            "state.0.exp_avg_sq",
            "state.0.max_exp_avg_sq",
        ]
        metadata = f.metadata()
    assert metadata["format"] == "pt" and "scratchgrad" in metadata
    loaded = load(tmp_path / "opt")
    assert loaded["state"][0]["step"] == 1 and loaded["param_groups"][0]["betas"] == (0.9, 0.999)


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
        lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True),
        lambda ps: optim.AdamW(ps, lr=0.01),
        lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
        lambda ps: optim.Adagrad(ps, lr=0.05, lr_decay=0.01),
        lambda ps: optim.Adadelta(ps),
        lambda ps: optim.Adamax(ps, lr=0.01),
        lambda ps: optim.NAdam(ps, lr=0.01),  # mu_product: a float32 0-d tensor
        lambda ps: optim.RAdam(ps, lr=0.01),
        lambda ps: optim.ASGD(ps, lr=0.05, t0=2),  # eta and mu: float32 0-d tensors
    ],
)
def test_training_resumes_identically(make_optimizer, tmp_path):
    """Train 5 steps, checkpoint model and optimizer, train 5 more; restoring the checkpoint
    into a fresh model and optimizer and training the same 5 steps gives the same weights,
    bit for bit."""
    x, y = sg.tensor(RNG.normal(size=(16, 4))).float(), sg.tensor(RNG.normal(size=(16, 3))).float()

    def train(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()

    model = make_model()
    opt = make_optimizer(model.parameters())
    train(model, opt, 5)
    path = tmp_path / "ckpt.safetensors"
    save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 5}, path)
    train(model, opt, 5)

    checkpoint = load(path)
    sg.manual_seed(123)  # the fresh model starts from other weights
    fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))
    fresh.load_state_dict(checkpoint["model"])
    fresh_opt = make_optimizer(fresh.parameters())
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    assert checkpoint["epoch"] == 5
    train(fresh, fresh_opt, 5)
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_file_written_by_pytorch_loads_as_a_flat_dict(tmp_path):
    tensors = {
        "z.weight": torch.randn(3, 2),
        "a.bias": torch.randn(2, dtype=torch.bfloat16),
        "count": torch.tensor(7),
    }
    safetensors.torch.save_file(tensors, tmp_path / "torch.safetensors")
    loaded = load(tmp_path / "torch.safetensors")
    assert sorted(loaded) == sorted(tensors)
    assert loaded["a.bias"].dtype == sg.bfloat16 and loaded["count"].dtype == sg.int64
    for key, value in tensors.items():
        np.testing.assert_array_equal(
            loaded[key].numpy().astype(np.float64), value.double().numpy()
        )


def test_save_accepts_only_plain_values(tmp_path):
    with pytest.raises(TypeError, match="cannot save a function .*'hooks.0'"):
        save({"hooks": [lambda: None]}, tmp_path / "bad")
    with pytest.raises(TypeError, match="cannot save a NumPy array of dtype object .*'w'"):
        save({"w": np.array([None])}, tmp_path / "bad")
    with pytest.raises(TypeError, match="cannot save a NumPy array of dtype complex128 .*'z.0'"):
        save({"z": [np.zeros(2, np.complex128)]}, tmp_path / "bad")
    assert not os.listdir(tmp_path)  # nothing was written


def test_complex64_tensors_round_trip_and_torch_reads_them():
    z = sg.tensor([1 + 2j, -3.5j], dtype=sg.complex64)
    buffer = io.BytesIO()
    save({"z": z}, buffer)
    assert_same(load(io.BytesIO(buffer.getvalue())), {"z": z})
    theirs = safetensors.torch.load(buffer.getvalue())["z"]
    assert theirs.dtype == torch.complex64 and theirs.tolist() == z.tolist()


# ---- broken and foreign files ------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.safetensors"):
        load(tmp_path / "nowhere.safetensors")


def good_bytes(tmp_path):
    save({"w": sg.randn(4, 4), "epoch": 3}, tmp_path / "good")
    return (tmp_path / "good").read_bytes()


def test_truncated_files_raise_a_clear_error(tmp_path):
    data = good_bytes(tmp_path)
    header_end = 8 + int.from_bytes(data[:8], "little")
    for cut in [0, 3, 8, 20, header_end - 1, header_end, header_end + 5, len(data) - 1]:
        path = tmp_path / f"cut{cut}"
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=f"load: .*cut{cut} is not a safetensors file: "):
            load(path)


@pytest.mark.parametrize(
    "content, detail",
    [
        (b"hello world, this is not a checkpoint", "header should have"),
        (RNG.bytes(1000), "header should have"),
        ((12).to_bytes(8, "little") + b"not json!!!!", "not JSON"),
        ((4).to_bytes(8, "little") + b"[12]", "not a JSON object"),
        ((2).to_bytes(8, "little") + b"{}" + b"extra", ""),  # bytes no tensor covers
        (pickle.dumps({"w": [1.0, 2.0]}), "looks like a pickle"),
    ],
)
def test_foreign_files_raise_a_clear_error(tmp_path, content, detail):
    path = tmp_path / "foreign.bin"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"foreign.bin is not a safetensors file: .*{detail}"):
        load(path)


def test_zip_and_torch_save_files_are_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "archive.zip", "w") as z:
        z.writestr("data.pkl", b"anything")
    torch.save({"w": torch.ones(2)}, tmp_path / "model.pt")
    for name in ("archive.zip", "model.pt"):
        with pytest.raises(ValueError, match=f"{name} is not a safetensors file: .*zip archive"):
            load(tmp_path / name)


def test_damaged_metadata_and_unknown_dtypes(tmp_path):
    def write(name, tensors, scratchgrad_entry):
        data = safetensors.numpy.save(tensors, {"scratchgrad": scratchgrad_entry})
        (tmp_path / name).write_bytes(data)
        return tmp_path / name

    w = {"w": np.ones(2, np.float32)}
    with pytest.raises(ValueError, match="metadata of .*bad_json is damaged"):
        load(write("bad_json", w, "{not json"))
    with pytest.raises(ValueError, match="metadata of .*lost is damaged .*KeyError"):
        load(write("lost", w, '{"version": 1, "tree": {"__tensor__": "elsewhere"}}'))
    with pytest.raises(
        ValueError, match="format version 99; this scratchgrad reads versions 1 to 4"
    ):
        load(write("newer", w, '{"version": 99, "tree": null}'))
    safetensors.torch.save_file(
        {"f8": torch.zeros(2, dtype=torch.float8_e4m3fn)}, tmp_path / "f8.safetensors"
    )
    with pytest.raises(ValueError, match="tensor 'f8' in .* has dtype F8_E4M3"):
        load(tmp_path / "f8.safetensors")


# ---- atomic writes -----------------------------------------------------------------------------


@pytest.mark.parametrize("broken", ["fsync", "replace"])
def test_a_crash_mid_write_leaves_the_old_file(tmp_path, monkeypatch, broken):
    path = tmp_path / "ckpt.safetensors"
    save({"w": sg.ones(3)}, path)
    before = path.read_bytes()

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, broken, crash)
    with pytest.raises(OSError, match="disk full"):
        save({"w": sg.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temporary file left behind
    np.testing.assert_array_equal(load(path)["w"].numpy(), np.ones(3))


def test_overwrite_leaves_one_file_with_the_umasks_permissions(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    old_umask = os.umask(0o022)
    try:
        save({"w": sg.ones(3)}, path)
        save({"w": sg.zeros(2)}, str(path))
    finally:
        os.umask(old_umask)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    assert load(path)["w"].shape == (2,)
    if os.name == "posix":
        assert path.stat().st_mode & 0o777 == 0o644


# ---- no pickle ---------------------------------------------------------------------------------


def test_no_pickle_is_used(tmp_path, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("pickle was used")

    for name in ("dump", "dumps", "load", "loads", "Pickler", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    model = make_model()
    opt = optim.Adam(model.parameters(), lr=0.01)
    nn.functional.mse_loss(model(sg.randn(4, 4)), sg.randn(4, 3)).backward()
    opt.step()
    checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    save(checkpoint, tmp_path / "ckpt")
    assert_same(load(tmp_path / "ckpt"), checkpoint)
    # The safetensors library itself reads every tensor of the file.
    arrays = safetensors.numpy.load((tmp_path / "ckpt").read_bytes())
    assert len(arrays) == len(checkpoint["model"]) + 2 * len(opt.state)
    assert arrays["model.0.weight"].dtype == np.float32


# ---- any structure of tensors, arrays and plain values (as torch.save) ------------------------


def general_object(lib):
    """The same checkpoint-like object built with either library's tensors."""
    return {
        "weights": [lib.tensor([[1.0, 2.0]]), lib.tensor([3, 4])],
        "arrays": (np.arange(6.0).reshape(2, 3).T, np.zeros((), np.int16), np.array([True])),
        "numbers": {"int": -7, "big": 2**70, "float": 0.1, "bool": False, "none": None},
        "text": ["", "ü", "__tensor__"],
        "not a marker": {"__weird__": 1},
        3: (1, "three", [None]),
    }


def plain(value):
    """Either library's loaded object with tensors as ("tensor", dtype name, values) and
    arrays as ("array", dtype, values), for comparing the two."""
    if isinstance(value, sg.Tensor | torch.Tensor):
        return ("tensor", str(value.dtype).split(".")[-1], value.tolist())
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype).split(".")[-1], value.tolist(), value.shape)
    if isinstance(value, dict):
        return {key: plain(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(plain(v) for v in value)
    return value


@pytest.mark.parametrize("target", ["path", "bytesio", "open file"])
def test_any_structure_round_trips_as_with_torch(tmp_path, target):
    buffer = io.BytesIO()
    torch.save(general_object(torch), buffer)
    buffer.seek(0)
    expected = plain(torch.load(buffer, weights_only=False))

    obj, path = general_object(sg), tmp_path / "obj.safetensors"
    if target == "path":
        save(obj, path)
        loaded = load(path)
    elif target == "bytesio":
        ours = io.BytesIO()
        save(obj, ours)
        ours.seek(0)
        loaded = load(ours)
        assert ours.read() == b""  # exactly the checkpoint was read
    else:
        with open(path, "wb") as f:
            save(obj, f)
        with open(path, "rb") as f:
            loaded = load(f)
    assert plain(loaded) == expected
    assert type(loaded["arrays"][0]) is np.ndarray and loaded["arrays"][0].flags.writeable


def test_the_same_checkpoint_saved_twice_is_the_same_bytes(tmp_path):
    """safetensors writes the metadata entries in a random order at each call (safetensors
    #584): save sorts them, so a checkpoint's bytes (and its hash) depend only on what it holds."""
    model = make_model()
    opt = optim.Adam(model.parameters())
    model(sg.randn(5, 4)).sum().backward()
    opt.step()
    checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}
    for i in range(8):  # two entries: the same order 8 times by chance would be 1 in 128
        save(checkpoint, tmp_path / f"{i}.safetensors")
    (data,) = {(tmp_path / f"{i}.safetensors").read_bytes() for i in range(8)}

    # The file is the one safetensors itself writes when its random order is the sorted one.
    metadata = safetensors.safe_open(tmp_path / "0.safetensors", "np").metadata()
    assert sorted(metadata) == ["format", "scratchgrad"]
    tensors = safetensors.numpy.load(data)
    for _ in range(100):
        written = safetensors.numpy.save(tensors, metadata)
        header = json.loads(written[8 : 8 + int.from_bytes(written[:8], "little")])
        if list(header["__metadata__"]) == sorted(metadata):
            break
    assert written == data


def test_file_objects_are_read_and_written_at_their_position(tmp_path):
    buffer = io.BytesIO(b"prefix")
    buffer.seek(0, io.SEEK_END)
    save({"w": sg.ones(2)}, buffer)
    buffer.seek(len(b"prefix"))
    assert load(buffer)["w"].tolist() == [1.0, 1.0]
    buffer.write(b"trailing")
    buffer.seek(len(b"prefix"))
    with pytest.raises(ValueError, match="not a safetensors file: .*more"):
        load(buffer)


@pytest.mark.parametrize(
    "map_location", [None, "cpu", sg.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: s]
)
def test_map_location_and_weights_only_are_accepted_as_by_torch(tmp_path, map_location):
    save({"w": sg.ones(2)}, tmp_path / "ours")
    torch.save({"w": torch.ones(2)}, tmp_path / "theirs")
    torch_location = sg_to_torch_location(map_location)
    for weights_only in (True, False):
        theirs = torch.load(tmp_path / "theirs", torch_location, weights_only=weights_only)
        ours = load(tmp_path / "ours", map_location, weights_only=weights_only)
        assert plain(ours) == plain(theirs)


def test_mmap_is_accepted_with_a_path_and_refused_with_a_file_object_as_by_torch(tmp_path):
    save({"w": sg.ones(2)}, tmp_path / "ours")
    torch.save({"w": torch.ones(2)}, tmp_path / "theirs")
    for mmap in (True, False, None):
        theirs = torch.load(tmp_path / "theirs", mmap=mmap, weights_only=True)
        assert plain(load(tmp_path / "ours", mmap=mmap)) == plain(theirs)
    for lib, name in ((sg, "ours"), (torch, "theirs")):
        with open(tmp_path / name, "rb") as file, pytest.raises(ValueError, match="file path"):
            lib.load(file, mmap=True)


def sg_to_torch_location(map_location):
    if isinstance(map_location, sg.device):
        return torch.device(str(map_location))
    return map_location


@pytest.mark.skipif(sg.cuda.is_available(), reason="a GPU is there: cuda is not missing")
def test_map_location_to_a_missing_device_raises_as_torch(tmp_path):
    save({"w": sg.ones(2)}, tmp_path / "ours")
    torch.save({"w": torch.ones(2)}, tmp_path / "theirs")
    for location in ("cuda", "cuda:1", {"cpu": "cuda:0"}):
        with pytest.raises(RuntimeError):
            torch.load(tmp_path / "theirs", map_location=location)
        with pytest.raises(RuntimeError, match="not available"):
            load(tmp_path / "ours", map_location=location)
    with pytest.raises(TypeError, match="map_location"):
        load(tmp_path / "ours", map_location=3)


def test_a_whole_module_is_refused_with_a_pointer_to_state_dict(tmp_path):
    model = make_model()
    for obj in (model, {"model": model, "epoch": 3}, optim.SGD(model.parameters(), lr=0.1)):
        with pytest.raises(TypeError, match=r"cannot save a whole .*state_dict\(\)"):
            save(obj, tmp_path / "model.pt")
    assert not os.listdir(tmp_path)


# ---- reading only what it must (issue 10) -------------------------------------------------------


def test_load_refuses_what_is_not_a_regular_file_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading the usual way would wait for a writer forever
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(100 * 2**30)  # 100 GB of zeros that take no disk space
    start = time.monotonic()
    for path, message in [
        ("/dev/zero", "not a regular file but a character device"),
        (fifo, r"not a regular file but a FIFO"),
        (tmp_path, "not a regular file but a directory"),
        (sparse, "the header is not JSON"),
    ]:
        with pytest.raises(ValueError, match=message):
            load(path)
    with open("/dev/zero", "rb") as stream, pytest.raises(ValueError, match="character device"):
        load(stream)
    assert time.monotonic() - start < 2


def test_load_reads_the_header_before_any_data(tmp_path):
    """A header that claims more data than the file holds is refused before the data is read,
    and an endless stream claiming a huge header is refused without reading it."""

    class Counting(io.BytesIO):
        def read(self, size=-1):
            self.requested = getattr(self, "requested", 0) + (size if size >= 0 else 10**18)
            return super().read(size)

    header = json.dumps({"w": {"dtype": "F32", "shape": [2**30], "data_offsets": [0, 2**32]}})
    lying = len(header).to_bytes(8, "little") + header.encode() + b"\0" * 16
    (tmp_path / "lying").write_bytes(lying)
    with pytest.raises(ValueError, match="need 4294967296 bytes of data, found 16"):
        load(tmp_path / "lying")
    stream = Counting((2**62).to_bytes(8, "little") + b"{}" * 100)
    with pytest.raises(ValueError, match="more than the 100000000 safetensors allows"):
        load(stream)
    assert stream.requested == 8


def test_deep_nesting_is_a_value_error_not_a_recursion_error(tmp_path):
    deep = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="nested more than 100 levels"):
        save({"deep": deep}, tmp_path / "deep")
    cycle = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="contains itself"):
        save(cycle, tmp_path / "cycle")
    assert not os.listdir(tmp_path)
    for depth in (400, 100_000):  # too deep for our reader / for Python's JSON parser
        tree = "[" * depth + "]" * depth
        entry = json.dumps({"version": 2, "tree": "PLACEHOLDER"}).replace('"PLACEHOLDER"', tree)
        (tmp_path / "deep").write_bytes(safetensors.numpy.save({}, {"scratchgrad": entry}))
        with pytest.raises(ValueError, match="metadata of .* is damaged .*nested"):
            load(tmp_path / "deep")
    header = ("[" * 100_000 + "]" * 100_000).encode()
    (tmp_path / "deep_header").write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(ValueError, match="not a safetensors file: the header is not JSON"):
        load(tmp_path / "deep_header")


def test_unknown_markers_are_rejected(tmp_path):
    for tree in ('{"__pickle__": "os.system"}', '{"a": [{"__tensr__": "w"}]}'):
        entry = f'{{"version": 2, "tree": {tree}}}'
        (tmp_path / "odd").write_bytes(safetensors.numpy.save({}, {"scratchgrad": entry}))
        with pytest.raises(ValueError, match="damaged .*unknown marker '__"):
            load(tmp_path / "odd")


def test_version_1_files_still_load(tmp_path):
    entry = '{"version": 1, "tree": {"w": {"__tensor__": "w"}, "k": {"__tuple__": [1]}}}'
    data = safetensors.numpy.save({"w": np.ones(2, np.float32)}, {"scratchgrad": entry})
    (tmp_path / "v1").write_bytes(data)
    loaded = load(tmp_path / "v1")
    assert loaded["w"].tolist() == [1.0, 1.0] and loaded["k"] == (1,)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")
def test_save_keeps_the_mode_and_writes_through_a_symlink_as_torch(tmp_path):
    for lib, write in ((torch, torch.save), (sg, save)):
        folder = tmp_path / lib.__name__
        folder.mkdir()
        target, link = folder / "real.pt", folder / "link.pt"
        write({"w": lib.ones(1)}, target)
        os.chmod(target, 0o600)
        link.symlink_to(target)
        write({"w": lib.zeros(3)}, link)
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        assert sorted(os.listdir(folder)) == ["link.pt", "real.pt"]
    assert load(tmp_path / "scratchgrad" / "real.pt")["w"].shape == (3,)


def test_a_failed_save_leaves_no_temporary_file_and_stale_ones_are_ignored(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    stale = tmp_path / ".ckpt.safetensors.0123456789abcdef.tmp"  # of a save killed earlier
    stale.write_bytes(b"half a checkpoint")
    save({"w": sg.ones(2)}, path)
    assert load(path)["w"].tolist() == [1.0, 1.0]

    def broken_write(*args):
        raise OSError("no space left on device")

    monkeypatch.setattr(os, "fsync", broken_write)
    with pytest.raises(OSError, match="no space left"):
        save({"w": sg.zeros(2)}, path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == [stale.name, path.name]
    assert load(path)["w"].tolist() == [1.0, 1.0]


def test_a_state_dict_keeps_its_module_versions_so_loading_it_is_as_after_torch_save(tmp_path):
    # Without the versions, load_state_dict takes the checkpoint for one from PyTorch before
    # 0.4: running statistics given to a BatchNorm that tracks none are then an error even
    # with strict=False, instead of unexpected keys.
    results = []
    for lib, save_, load_ in ((sg, save, load), (torch, torch.save, torch.load)):
        state = lib.nn.BatchNorm1d(3).state_dict()
        save_(state, tmp_path / "bn")
        loaded = load_(tmp_path / "bn")
        assert type(loaded) is OrderedDict and dict(loaded._metadata) == dict(state._metadata)
        untracked = lib.nn.BatchNorm1d(3, track_running_stats=False)
        results.append(tuple(untracked.load_state_dict(loaded, strict=False)))
    assert results[0] == results[1]
    assert results[0][1] == ["running_mean", "running_var", "num_batches_tracked"]


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 2)])
def test_complex128_tensors_round_trip_as_through_torch_save(tmp_path, shape):
    # safetensors has no complex128: the file holds view_as_real's float64 pairs
    values = np.arange(np.prod(shape, dtype=int)).reshape(shape)
    z = sg.tensor(values + 1j * (values - 0.5), dtype=sg.complex128)
    for saved in (z, z.t() if len(shape) == 2 else z):
        save({"z": [saved]}, tmp_path / "z")
        ours = load(tmp_path / "z")["z"][0]
        theirs = torch.tensor(saved.numpy())
        torch.save(theirs, tmp_path / "t")
        assert_same(ours, saved)
        assert torch.load(tmp_path / "t").tolist() == ours.tolist()
    pairs = safetensors.torch.load_file(tmp_path / "z")["z.0"]
    assert pairs.dtype == torch.float64 and tuple(pairs.shape) == (*saved.shape, 2)


def tied_model(nn):
    """An embedding whose table is also the output layer's weight, as in a language model."""
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    model[1].weight = model[0].weight
    return model


def test_a_tied_weight_comes_back_on_one_memory_as_from_torch_load(tmp_path):
    ours, theirs = tied_model(nn).state_dict(), tied_model(torch.nn).state_dict()
    save(ours, tmp_path / "ours")
    torch.save(theirs, tmp_path / "theirs")
    for loaded, module in [(load(tmp_path / "ours"), sg), (torch.load(tmp_path / "theirs"), torch)]:
        first, second = loaded["0.weight"], loaded["1.weight"]
        assert first is not second and first.data_ptr() == second.data_ptr()
        with module.no_grad():
            first[0, 0] = 123.0
        assert second[0, 0].item() == 123.0
    # torch still reads both names from the flat table
    assert sorted(safetensors.torch.load_file(tmp_path / "ours")) == ["0.weight", "1.weight"]


def test_equal_tensors_on_different_memory_stay_apart(tmp_path):
    x = sg.arange(6.0)
    save({"a": x, "b": x.clone(), "c": x.view(2, 3), "d": x[:3]}, tmp_path / "f")
    loaded = load(tmp_path / "f")
    assert len({loaded[key].data_ptr() for key in "abcd"}) == 4


def test_loading_into_a_tied_model_keeps_the_tie():
    """Copied, as PyTorch's (the later name's values win); assigned, scratchgrad keeps the
    parameter objects, so the tie too (PyTorch's assign puts two new Parameters in)."""
    untied = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    with sg.no_grad():
        untied[0].weight.fill_(1.0), untied[1].weight.fill_(2.0)
    for assign in (False, True):
        model = tied_model(nn)
        model.load_state_dict(untied.state_dict(), assign=assign)
        assert model[0].weight is model[1].weight and len(list(model.parameters())) == 1
        assert model[0].weight.unique().tolist() == [2.0]


def test_parameters_and_tensors_that_require_grad_load_as_they_were(tmp_path):
    """As torch.save's: they came back as plain tensors that did not require grad, so an
    optimizer given them after a resume silently updated nothing."""
    weight = nn.Parameter(sg.ones(2))
    frozen = nn.Parameter(sg.ones(2), requires_grad=False)
    save(
        {"w": weight, "f": frozen, "z": sg.zeros(3, requires_grad=True), "c": sg.ones(1)},
        tmp_path / "f",
    )
    loaded = load(tmp_path / "f")
    assert type(loaded["w"]) is nn.Parameter and loaded["w"].requires_grad
    assert type(loaded["f"]) is nn.Parameter and not loaded["f"].requires_grad
    assert type(loaded["z"]) is sg.Tensor and loaded["z"].requires_grad and loaded["z"].is_leaf
    assert not loaded["c"].requires_grad


def test_safe_globals_are_accepted_and_change_nothing_as_torchs_weights_only_load():
    """pytorch/examples' super_resolution loads inside ``torch.serialization.safe_globals``;
    newer scripts call ``add_safe_globals`` first (both were missing: an AttributeError)."""
    assert callable(torch.serialization.add_safe_globals) and torch.serialization.safe_globals
    f = io.BytesIO()
    sg.save({"epoch": 3, "weights": nn.Linear(2, 1).state_dict()}, f)
    f.seek(0)
    assert sg.serialization.add_safe_globals([nn.Linear]) is None
    with sg.serialization.safe_globals([nn.Linear, np.dtype]):
        loaded = sg.load(f)
    assert loaded["epoch"] == 3 and sorted(loaded["weights"]) == ["bias", "weight"]
    with pytest.raises(TypeError, match="cannot save a whole Sequential"):
        sg.save(make_model(), io.BytesIO())  # (what the allowed classes would have let load)
