"""Checkpoints: save/load round trips, PyTorch reading our files, clear errors, atomic writes,
and no pickle anywhere."""

import math
import os
import pickle
import zipfile

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
    assert_same(loaded, dict(model.state_dict()))

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
    with pytest.raises(TypeError, match="cannot save a ndarray"):
        save({"w": np.zeros(2)}, tmp_path / "bad")
    assert not os.listdir(tmp_path)  # nothing was written


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
    with pytest.raises(ValueError, match="format version 99; this scratchgrad reads version 1"):
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
    assert_same(load(tmp_path / "ckpt"), {**checkpoint, "model": dict(checkpoint["model"])})
    # The safetensors library itself reads every tensor of the file.
    arrays = safetensors.numpy.load((tmp_path / "ckpt").read_bytes())
    assert len(arrays) == len(checkpoint["model"]) + 2 * len(opt.state)
    assert arrays["model.0.weight"].dtype == np.float32
