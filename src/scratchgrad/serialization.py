"""Checkpoints: ``save`` and ``load`` state dicts as safetensors files, never with pickle.

A safetensors file (https://github.com/huggingface/safetensors) holds a flat table of named
arrays and a small ``str -> str`` metadata table, and nothing executable, so loading a file
from a stranger cannot run code (``torch.load`` of a pickle can). State dicts are nested
(an optimizer's is ``{"state": {0: {"exp_avg": tensor}}, "param_groups": [...]}``), so
``save`` flattens them:

- every tensor goes into the table under its dotted path: a model's keys stay as they are
  (``"fc.weight"``), an optimizer's become e.g. ``"state.0.exp_avg"``;
- everything else (the nesting, numbers, strings, flags) goes into the metadata entry
  ``"scratchgrad"`` as JSON, with ``{"__tensor__": name}`` where each tensor was.

``load`` rebuilds the same structure with scratchgrad Tensors. What comes back equals what went
in, with these exceptions: tensors do not require grad; a tensor that appeared twice comes back
as two tensors; dict subclasses (``OrderedDict``, ``Counter``) come back as plain dicts and
NumPy scalars as Python numbers. Ints stay ints (dict keys included), floats floats (``inf``
and ``nan`` too), tuples tuples.

PyTorch reads the tensors with ``safetensors.torch.load_file(path)``; a file written by
another library (without the ``"scratchgrad"`` entry) loads as its flat dict of tensors.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from typing import Any

import numpy as np
import safetensors
import safetensors.numpy

from scratchgrad import backend
from scratchgrad.creation import from_numpy
from scratchgrad.tensor import Tensor

PathLike = str | os.PathLike

_VERSION = 1
_MARKERS = ("__tensor__", "__tuple__", "__dict__")

# safetensors' dtype names; safetensors.numpy knows all but bfloat16, which ml_dtypes provides.
_DTYPES = {
    "F64": backend.float64,
    "F32": backend.float32,
    "F16": backend.float16,
    "BF16": backend.bfloat16,
    "I64": backend.int64,
    "I32": backend.int32,
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U64": np.dtype(np.uint64),
    "U32": np.dtype(np.uint32),
    "U16": np.dtype(np.uint16),
    "U8": np.dtype(np.uint8),
    "BOOL": backend.bool_,
}


def save(obj: Any, path: PathLike) -> None:
    """Write a state dict (or any nesting of dicts, lists and tuples holding tensors, numbers,
    strings, bools and None) to ``path`` as a safetensors file.

    The write is atomic: the data goes to a temporary file in the same directory, is flushed
    to disk, and only then replaces ``path``, so a crash mid-write leaves the old file intact.

    >>> import os, tempfile
    >>> import scratchgrad as sg
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> sg.save({"weight": sg.ones(2, 3), "epoch": 7}, path)
    >>> checkpoint = sg.load(path)
    >>> checkpoint["weight"].shape, checkpoint["epoch"]
    ((2, 3), 7)
    """
    tensors: dict[str, np.ndarray] = {}
    tree = _encode(obj, "", tensors)
    metadata = {
        "format": "pt",  # the tensors' layout is PyTorch's; Hugging Face loaders check this key
        "scratchgrad": json.dumps({"version": _VERSION, "tree": tree}),
    }
    _write_atomically(os.fspath(path), safetensors.numpy.save(tensors, metadata))


def load(path: PathLike) -> Any:
    """Read a file written by ``save`` (or any safetensors file) back into scratchgrad Tensors.

    Raises FileNotFoundError if ``path`` does not exist, and ValueError naming the file if it
    is not a complete safetensors file (truncated, garbage, a zip or pickle from
    ``torch.save``). Nothing in the file is ever executed.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    header = _read_header(data, path)
    try:
        views = safetensors.deserialize(data)
    except safetensors.SafetensorError as error:
        raise _not_safetensors(path, str(error)) from None
    tensors = {}
    for name, view in views:
        if view["dtype"] not in _DTYPES:
            raise ValueError(
                f"load: tensor {name!r} in {path} has dtype {view['dtype']}, which scratchgrad "
                f"cannot hold (it reads {', '.join(_DTYPES)})"
            )
        # Each view's data is a fresh bytearray, so the arrays are writable and need no copy.
        array = np.frombuffer(view["data"], dtype=_DTYPES[view["dtype"]])
        tensors[name] = from_numpy(array.reshape(view["shape"]))

    metadata = header.get("__metadata__") or {}
    if "scratchgrad" not in metadata:  # written by another library: its flat table, in file order
        names = sorted(tensors, key=lambda name: header[name]["data_offsets"])
        return {name: tensors[name] for name in names}
    try:
        document = json.loads(metadata["scratchgrad"])
        version, tree = document["version"], document["tree"]
    except (ValueError, KeyError, TypeError) as error:
        raise _damaged(path, error) from None
    if version != _VERSION:
        raise ValueError(
            f"load: {path} is in checkpoint format version {version}; this scratchgrad reads "
            f"version {_VERSION} (was it written by a newer one?)"
        )
    try:
        return _decode(tree, tensors)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _damaged(path, error) from None


# ---- the structure <-> JSON with tensor placeholders ------------------------------------------


def _encode(value: Any, path: str, tensors: dict[str, np.ndarray]) -> Any:
    """``value`` as JSON-ready data; each tensor is moved into ``tensors`` under its path."""
    if isinstance(value, Tensor):
        name = base = path or "tensor"
        suffix = 0
        while name in tensors or name == "__metadata__":  # {"a.b": x, "a": {"b": y}} collide
            suffix += 1
            name = f"{base}_{suffix}"
        # safetensors copies raw memory from the array's pointer: a strided view (a transposed
        # weight) must be made contiguous first or its bytes would be written in the wrong order.
        # (np.ascontiguousarray would also do it, but turns 0-d arrays into 1-d ones.)
        tensors[name] = np.asarray(value.array, order="C")
        return {"__tensor__": name}
    if isinstance(value, dict):
        items = [(key, _encode(v, _join(path, key), tensors)) for key, v in value.items()]
        plain_keys = all(isinstance(key, str) for key in value)
        looks_like_marker = len(value) == 1 and next(iter(value)) in _MARKERS
        if plain_keys and not looks_like_marker:
            return dict(items)
        # JSON objects have only string keys: keep the real keys (ints, for optimizer state).
        return {"__dict__": [[_encode(key, path, tensors), v] for key, v in items]}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, _join(path, i), tensors) for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(
        f"save: cannot save a {type(value).__name__} (at {path or 'the top level'!r}); state "
        "dicts may hold tensors, dicts, lists, tuples, str, int, float, bool and None"
    )


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _decode(node: Any, tensors: dict[str, Tensor]) -> Any:
    """The inverse of ``_encode``."""
    if isinstance(node, list):
        return [_decode(v, tensors) for v in node]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        ((key, value),) = node.items()
        if key == "__tensor__":
            return tensors[value]
        if key == "__tuple__":
            return tuple(_decode(v, tensors) for v in value)
        if key == "__dict__":
            return {_decode(k, tensors): _decode(v, tensors) for k, v in value}
    return {key: _decode(value, tensors) for key, value in node.items()}


# ---- files --------------------------------------------------------------------------------


def _read_header(data: bytes, path: str) -> dict[str, Any]:
    """The JSON header, checked enough to say clearly what is wrong with a file that is not
    safetensors: 8 bytes of little-endian header length, then that many bytes of JSON."""
    size = int.from_bytes(data[:8], "little")
    if len(data) < 8:
        problem = f"it has {len(data)} bytes, too few for the header length"
    elif size > len(data) - 8:
        problem = (
            f"the header should have {size} bytes but only {len(data) - 8} follow "
            "(truncated, or another format)"
        )
    else:
        try:
            header = json.loads(data[8 : 8 + size])
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            problem = f"the header is not JSON ({error})"
        else:
            if isinstance(header, dict):
                return header
            problem = "the header is not a JSON object"
    # Name the usual suspects. Only now: a valid header of 128 bytes also starts with 0x80.
    if data.startswith(b"PK\x03\x04"):
        problem += "; it is a zip archive, as torch.save writes (scratchgrad never unpickles)"
    elif data.startswith(b"\x80"):
        problem += "; it looks like a pickle, which scratchgrad never loads"
    raise _not_safetensors(path, problem)


def _not_safetensors(path: str, reason: str) -> ValueError:
    return ValueError(f"load: {path} is not a safetensors file: {reason}")


def _damaged(path: str, error: Exception) -> ValueError:
    return ValueError(
        f"load: the 'scratchgrad' metadata of {path} is damaged ({type(error).__name__}: {error})"
    )


def _write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to a new file beside ``path``, sync it, then rename it over ``path``.

    A rename within one directory is atomic, so readers see the old file or the new one,
    never half of one; the temporary file is removed if anything fails before the rename.
    """
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as a plain open() would.
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise
    if (
        os.name == "posix"
    ):  # make the rename itself durable (directories cannot be opened on Windows)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
