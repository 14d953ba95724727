"""Checkpoints: ``save`` and ``load`` any structure of tensors as a safetensors file, never with
pickle.

A safetensors file (https://github.com/huggingface/safetensors) holds a flat table of named
arrays and a small ``str -> str`` metadata table, and nothing executable, so loading a file
from a stranger cannot run code (``torch.load`` of a pickle can). What ``torch.save`` is given
is usually nested (an optimizer's state dict is ``{"state": {0: {"exp_avg": tensor}},
"param_groups": [...]}``), so ``save`` flattens it:

- every tensor and NumPy array goes into the table under its dotted path: a model's keys stay
  as they are (``"fc.weight"``), an optimizer's become e.g. ``"state.0.exp_avg"``;
- everything else (the nesting, numbers, strings, flags) goes into the metadata entry
  ``"scratchgrad"`` as JSON, with ``{"__tensor__": name}`` (or ``{"__ndarray__": name}``) where
  each array was (``{"__complex128__": name}`` for a complex128 tensor, whose entry holds
  ``view_as_real``'s float64 pairs), ``{"__tuple__": [...]}`` for tuples,
  ``{"__dict__": [[key, value], ...]}`` for dicts whose keys are not all strings, and
  ``{"__state_dict__": [items, metadata]}`` for a Module's state dict (an ``OrderedDict`` whose
  ``_metadata`` holds its modules' versions, which ``load_state_dict`` reads; it comes back as
  one). A one-key dict whose key looks like a marker (``"__x__"``) is written in the
  ``__dict__`` form, so markers are never ambiguous and ``load`` rejects any it does not know.

The same structure always saves to the same bytes (``_sorted_metadata``).

``load`` rebuilds the same structure with scratchgrad Tensors (and NumPy arrays where arrays
were saved). What comes back equals what went in, with these exceptions: tensors do not require
grad; an array that appeared twice (or a view of another) comes back as two, each contiguous,
except tensors on one array (a tied weight under its two names in a state dict), which come
back as two tensors on one memory, as from ``torch.load``; dict subclasses
(``OrderedDict``, ``Counter``) but state dicts come back as plain dicts and NumPy scalars as
Python numbers. Ints stay ints (dict keys included), floats floats (``inf``
and ``nan`` too), tuples tuples. Tensors keep their dtype (complex128 ones, which safetensors
cannot hold, are written as ``view_as_real``'s float64 pairs; NumPy arrays of it are
refused). Structures nested more than ``MAX_DEPTH`` levels deep are refused by both with a
ValueError (so are cycles).

``load`` reads a file in three steps and checks each before the next: the 8-byte header length
(against the file's size, and at most ``MAX_HEADER_BYTES``), the JSON header, then exactly the
data the header describes. So ``/dev/zero``, a FIFO, a huge sparse file or a file with a lying
header fail at once with a ValueError instead of filling the memory; only regular files and
file objects are read.

PyTorch reads the tensors with ``safetensors.torch.load_file(path)``; a file written by
another library (without the ``"scratchgrad"`` entry) loads as its flat dict of tensors.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections import OrderedDict
from typing import IO, Any

import numpy as np
import safetensors
import safetensors.numpy

from scratchgrad import backend
from scratchgrad.complex_numbers import view_as_complex, view_as_real
from scratchgrad.creation import from_numpy
from scratchgrad.nn.parameter import Parameter
from scratchgrad.tensor import Tensor

FileLike = str | os.PathLike | IO[bytes]

# 2 added NumPy arrays ("__ndarray__"), 3 state dicts' metadata ("__state_dict__") and
# complex128 tensors ("__complex128__"), 4 Parameters and tensors that require grad
# ("__leaf__"); files of the earlier versions still load
_VERSION = 4
_MARKERS = (
    "__tensor__",
    "__leaf__",
    "__complex128__",
    "__ndarray__",
    "__tuple__",
    "__dict__",
    "__state_dict__",
)

MAX_DEPTH = 100  # levels of nesting save and load accept; state dicts use about 5
MAX_HEADER_BYTES = 100_000_000  # the largest header safetensors itself accepts

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
    "C64": backend.complex64,  # (safetensors has no complex128)
}


def save(obj: Any, f: FileLike) -> None:
    """Write ``obj`` to ``f`` (a path or a binary file object) as a safetensors file, as
    ``torch.save`` does: a state dict, a checkpoint of several, or any nesting of dicts, lists
    and tuples holding tensors, NumPy arrays, numbers, strings, bools and None.

    A whole ``Module`` (or optimizer) is refused: save its ``state_dict()`` instead. Writing to
    a path is atomic: the data goes to a temporary file beside the target (through a symlink, to
    its target), is flushed to disk, takes the replaced file's permissions, and only then
    replaces it, so a crash mid-write leaves the old file intact. A file object is written at
    its position.

    >>> import io
    >>> import scratchgrad as sg
    >>> buffer = io.BytesIO()
    >>> sg.save({"weight": sg.ones(2, 3), "epoch": 7}, buffer)
    >>> checkpoint = sg.load(io.BytesIO(buffer.getvalue()))
    >>> checkpoint["weight"].shape, checkpoint["epoch"]
    (scratchgrad.Size([2, 3]), 7)
    """
    tensors = _Table()
    tree = _encode(obj, "", tensors, 0)  # before any writing: a TypeError leaves no file
    metadata = {
        "format": "pt",  # the tensors' layout is PyTorch's; Hugging Face loaders check this key
        "scratchgrad": json.dumps({"version": _VERSION, "tree": tree}),
    }
    data = _sorted_metadata(safetensors.numpy.save(tensors, metadata))
    if hasattr(f, "write"):
        f.write(data)
    else:
        _write_atomically(os.fspath(f), data)


def _sorted_metadata(data: bytes) -> bytes:
    """``data`` (a safetensors file) with its header's ``__metadata__`` entries in sorted order.

    safetensors writes them in the order of a Rust HashMap, which differs from one call to the
    next (safetensors issue #584), so the same checkpoint saved twice would differ in those
    bytes; sorted, it is the same file every time. The data does not move: its offsets count
    from the end of the header, whose length stays a multiple of 8 as safetensors pads it.
    """
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + size :]


def load(
    f: FileLike,
    map_location: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
) -> Any:
    """Read what ``save`` wrote (or any safetensors file) from a path or a binary file object.

    ``map_location`` is accepted as in ``torch.load``: a device or its name, a dict from saved
    to wanted locations, or a function ``(tensor, "cpu") -> tensor or None``; every tensor is
    saved from the host (a GPU tensor is copied there first, so the file is the same), loads
    on the CPU unless ``map_location`` says otherwise, and asking for a device scratchgrad
    cannot use raises. ``weights_only``
    is accepted and changes nothing: nothing in the file is ever executed, whatever its value.
    ``mmap`` is accepted as well (with a file object, ``mmap=True`` raises, as in PyTorch); the
    tensors are read into memory whatever its value.

    Raises FileNotFoundError if the path does not exist, and ValueError naming the file if it
    is not a regular file or not a complete safetensors file (truncated, garbage, a zip or
    pickle from ``torch.save``).
    """
    if hasattr(f, "read"):
        if mmap:
            raise ValueError("load: f must be a file path in order to use the mmap argument")
        where = str(getattr(f, "name", None) or type(f).__name__)
        data, header = _read_checked(f, where, size=_remaining_size(f, where))
    else:
        where = os.fspath(f)
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(where, flags)
        try:
            info = os.fstat(fd)
            _check_regular(info.st_mode, where)
        except BaseException:
            os.close(fd)
            raise
        with open(fd, "rb") as file:
            data, header = _read_checked(file, where, size=info.st_size)
    move = _mover(map_location)
    tensors = {name: move(tensor) for name, tensor in _arrays(data, where).items()}

    metadata = header.get("__metadata__") or {}
    if "scratchgrad" not in metadata:  # written by another library: its flat table, in file order
        names = sorted(tensors, key=lambda name: header[name]["data_offsets"])
        return {name: tensors[name] for name in names}
    try:
        document = _parse_json(metadata["scratchgrad"])
        version, tree = document["version"], document["tree"]
    except (ValueError, KeyError, TypeError) as error:
        raise _damaged(where, error) from None
    if version not in range(1, _VERSION + 1):
        raise ValueError(
            f"load: {where} is in checkpoint format version {version}; this scratchgrad reads "
            f"versions 1 to {_VERSION} (was it written by a newer one?)"
        )
    try:
        return _decode(tree, tensors, 0)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _damaged(where, error) from None


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Accepted, as ``torch.serialization.add_safe_globals``, and changes nothing: PyTorch's
    list allows those classes in a ``weights_only`` unpickling, and ``load`` never unpickles
    (what ``save`` cannot write, such as a whole model, it refuses by name)."""


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Any:
    """``with torch.serialization.safe_globals([...]): torch.load(f)``: accepted, and changes
    nothing, as ``add_safe_globals``.

    >>> import io, scratchgrad as sg
    >>> f = io.BytesIO()
    >>> sg.save({"epoch": 3}, f)
    >>> _ = f.seek(0)
    >>> with sg.serialization.safe_globals([dict]):
    ...     sg.load(f)
    {'epoch': 3}
    """
    yield


def _arrays(data: bytes, where: str) -> dict[str, Tensor]:
    """The tensors of a whole safetensors file, checked by the safetensors library."""
    try:
        views = safetensors.deserialize(data)
    except safetensors.SafetensorError as error:
        raise _not_safetensors(where, str(error)) from None
    tensors = {}
    for name, view in views:
        if view["dtype"] not in _DTYPES:
            raise ValueError(
                f"load: tensor {name!r} in {where} has dtype {view['dtype']}, which scratchgrad "
                f"cannot hold (it reads {', '.join(_DTYPES)})"
            )
        # Each view's data is a fresh bytearray, so the arrays are writable and need no copy.
        array = np.frombuffer(view["data"], dtype=_DTYPES[view["dtype"]])
        tensors[name] = from_numpy(array.reshape(view["shape"]))
    return tensors


def _mover(map_location: Any) -> Any:
    """What ``map_location`` does to each loaded (CPU) tensor; raises at once for a device that
    cannot hold tensors, or a ``map_location`` of a kind ``torch.load`` does not take."""
    if map_location is None:
        return lambda tensor: tensor
    if callable(map_location):

        def move(tensor: Tensor) -> Tensor:
            moved = map_location(tensor, "cpu")
            return tensor if moved is None else moved

        return move
    if isinstance(map_location, dict):
        map_location = map_location.get("cpu", "cpu")
    if not isinstance(map_location, (str, backend.device)):
        raise TypeError(
            "load: map_location should be a device, a string, a dict or a function, "
            f"but got {type(map_location).__name__}"
        )
    backend.array_module(backend.device(map_location))  # raises for "cuda" and the like
    return lambda tensor: tensor.to(map_location)


# ---- the structure <-> JSON with array placeholders ---------------------------------------------


class _Table(dict):
    """The arrays to write, by name, and the name under which each tensor's array (by id:
    ``obj`` keeps them all alive while it is saved) was first written."""

    def __init__(self) -> None:
        super().__init__()
        self.first_names: dict[int, str] = {}


def _encode(value: Any, path: str, tensors: _Table, depth: int) -> Any:
    """``value`` as JSON-ready data; each array is moved into ``tensors`` under its path."""
    if depth > MAX_DEPTH:
        raise ValueError(
            f"save: the structure is nested more than {MAX_DEPTH} levels deep (or contains "
            f"itself), at {_shorten(path)!r}"
        )
    if isinstance(value, Tensor) and (value.requires_grad or isinstance(value, Parameter)):
        # what torch.save keeps too: a Parameter stays one, requires_grad stays set
        inner = _encode(value.detach(), path, tensors, depth + 1)
        return {"__leaf__": [inner, isinstance(value, Parameter), value.requires_grad]}
    if isinstance(value, Tensor) and value.dtype == backend.complex128:
        # safetensors has no complex128: the (..., 2) float64 pairs of view_as_real
        pairs = view_as_real(value.detach()).array
        return {"__complex128__": _add_array(pairs, path, tensors, "tensor")}
    if isinstance(value, Tensor):
        name = _add_array(value.array, path, tensors, "tensor")
        # A tensor on the array of one saved before (a tied weight's second name in a state
        # dict) points to that one's entry, so that load gives the two one memory, as
        # torch.load does; its own entry stays for readers of the flat table.
        return {"__tensor__": tensors.first_names.setdefault(id(value.array), name)}
    if isinstance(value, np.ndarray):
        return {"__ndarray__": _add_array(value, path, tensors, "NumPy array")}
    if isinstance(value, dict) and isinstance(getattr(value, "_metadata", None), dict):
        # A Module's state dict: its modules' versions, which load_state_dict reads (a
        # checkpoint without them is taken for one from an old PyTorch), as torch.save keeps them
        items = _encode(dict(value), path, tensors, depth + 1)
        metadata = _encode(dict(value._metadata), _join(path, "_metadata"), tensors, depth + 1)
        return {"__state_dict__": [items, metadata]}
    if isinstance(value, dict):
        items = [
            (key, _encode(v, _join(path, key), tensors, depth + 1)) for key, v in value.items()
        ]
        plain_keys = all(isinstance(key, str) for key in value)
        if plain_keys and not (len(value) == 1 and _is_marker(next(iter(value)))):
            return dict(items)
        # JSON objects have only string keys: keep the real keys (ints, for optimizer state).
        return {"__dict__": [[_encode(key, path, tensors, depth + 1), v] for key, v in items]}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, _join(path, i), tensors, depth + 1) for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if callable(getattr(value, "state_dict", None)):
        kind = type(value).__name__
        raise TypeError(
            f"save: cannot save a whole {kind} object (at {_shorten(path) or 'the top level'!r});"
            f" save its state_dict() instead: sg.save(model.state_dict(), path), then "
            f"model.load_state_dict(sg.load(path)) into a {kind} built by your code"
        )
    raise TypeError(
        f"save: cannot save a {type(value).__name__} (at {_shorten(path) or 'the top level'!r}); "
        "checkpoints may hold tensors, NumPy arrays, dicts, lists, tuples, str, int, float, bool "
        "and None"
    )


def _add_array(array: np.ndarray, path: str, tensors: _Table, kind: str) -> str:
    """Put ``array`` (of a ``kind``: tensor or NumPy array) into the table under a free name
    derived from its path; return the name."""
    if array.dtype not in _DTYPES.values():  # checked here: safetensors' error names no path
        raise TypeError(
            f"save: cannot save a {kind} of dtype {array.dtype} (at {_shorten(path)!r}); "
            f"safetensors files hold {', '.join(str(dtype) for dtype in _DTYPES.values())}"
        )
    name = base = path or "tensor"
    suffix = 0
    while name in tensors or name == "__metadata__":  # {"a.b": x, "a": {"b": y}} collide
        suffix += 1
        name = f"{base}_{suffix}"
    # safetensors copies raw memory from the array's pointer: a strided view (a transposed
    # weight) must be made contiguous first or its bytes would be written in the wrong order.
    # (np.ascontiguousarray would also do it, but turns 0-d arrays into 1-d ones.)
    # A device's array is copied to the host first, so a file saved from a GPU is the file
    # saved from the CPU (the device is not recorded: ``load`` puts tensors on map_location).
    tensors[name] = np.asarray(backend.to_host(array), order="C")
    return name


def _is_marker(key: str) -> bool:
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _shorten(path: str) -> str:
    return path if len(path) <= 80 else f"{path[:40]}...{path[-37:]}"


def _decode(node: Any, tensors: dict[str, Tensor], depth: int) -> Any:
    """The inverse of ``_encode``."""
    if depth > 3 * MAX_DEPTH:  # a level of the structure is at most three of JSON
        raise ValueError(f"the structure is nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, list):
        return [_decode(v, tensors, depth + 1) for v in node]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        ((key, value),) = node.items()
        if key == "__tensor__":  # (a new Tensor each time: two names may share an entry)
            return tensors[value].detach()
        if key == "__complex128__":
            return view_as_complex(tensors[value])
        if key == "__leaf__":
            inner, is_parameter, requires_grad = value
            tensor = _decode(inner, tensors, depth + 1)
            if is_parameter:
                return Parameter(tensor, requires_grad=requires_grad)
            return tensor.requires_grad_(requires_grad)
        if key == "__ndarray__":
            return tensors[value].array
        if key == "__tuple__":
            return tuple(_decode(v, tensors, depth + 1) for v in value)
        if key == "__dict__":
            return {
                _decode(k, tensors, depth + 1): _decode(v, tensors, depth + 1) for k, v in value
            }
        if key == "__state_dict__":
            items, metadata = (_decode(v, tensors, depth + 1) for v in value)
            state = OrderedDict(items)
            state._metadata = OrderedDict(metadata)
            return state
        if _is_marker(key):
            raise ValueError(f"unknown marker {key!r} (known: {', '.join(_MARKERS)})")
    return {key: _decode(value, tensors, depth + 1) for key, value in node.items()}


def _parse_json(text: str | bytes) -> Any:
    """``json.loads``, with nesting too deep for Python's parser a ValueError like any other
    bad JSON (the parser recurses; a hostile header could otherwise raise RecursionError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None


# ---- files --------------------------------------------------------------------------------


def _read_checked(file: IO[bytes], where: str, size: int | None) -> tuple[bytes, dict]:
    """The whole safetensors file from ``file`` and its header, read in three checked steps
    (header length, header, data) so that no step reads more than the file should hold.
    ``size`` is the file's size when known (a regular file), ``None`` for a stream."""
    prefix = file.read(8)
    if len(prefix) < 8:
        raise _not_safetensors(where, f"it has {len(prefix)} bytes, too few for the header length")
    header_size = int.from_bytes(prefix, "little")
    available = None if size is None else size - 8
    if available is not None and header_size > available:
        _refuse(
            where,
            prefix,
            f"the header should have {header_size} bytes but only "
            f"{available} follow (truncated, or another format)",
        )
    if header_size > MAX_HEADER_BYTES:
        _refuse(
            where,
            prefix,
            f"the header would have {header_size} bytes, more than the "
            f"{MAX_HEADER_BYTES} safetensors allows (another format?)",
        )
    header_bytes = file.read(header_size)
    if len(header_bytes) < header_size:
        _refuse(
            where,
            prefix,
            f"the header should have {header_size} bytes but only "
            f"{len(header_bytes)} follow (truncated, or another format)",
        )
    header = _parse_header(header_bytes, where, prefix)
    data_size = _data_size(header, where)
    if available is not None and available - header_size != data_size:
        found = available - header_size
        problem = "truncated" if found < data_size else "extra bytes that no tensor covers"
        raise _not_safetensors(
            where, f"its tensors need {data_size} bytes of data, found {found} ({problem})"
        )
    data = file.read(data_size)
    if len(data) < data_size or (size is None and file.read(1)):
        raise _not_safetensors(
            where,
            f"its tensors need {data_size} bytes of data, the stream has "
            f"{'fewer' if len(data) < data_size else 'more'}",
        )
    return prefix + header_bytes + data, header


def _remaining_size(file: IO[bytes], where: str) -> int | None:
    """The bytes left to read in ``file`` if it is an OS file, which must then be a regular
    one (a FIFO or a device could stream forever); ``None`` for in-memory files."""
    try:
        info = os.fstat(file.fileno())
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both of the last
        return None
    _check_regular(info.st_mode, where)
    return info.st_size - file.tell()


def _check_regular(mode: int, where: str) -> None:
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"load: {where} is not a regular file but a {_file_kind(mode)}; checkpoints are "
            "read from regular files or file objects"
        )


def _parse_header(header_bytes: bytes, where: str, prefix: bytes) -> dict[str, Any]:
    try:
        header = _parse_json(header_bytes)
    except (UnicodeDecodeError, ValueError) as error:
        _refuse(where, prefix, f"the header is not JSON ({error})")
    if not isinstance(header, dict):
        _refuse(where, prefix, "the header is not a JSON object")
    return header


def _data_size(header: dict[str, Any], where: str) -> int:
    """The bytes of data the header describes: the end of the last tensor's data."""
    ends = [0]
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = entry["data_offsets"]
            ends.append(int(end))
        except (TypeError, KeyError, ValueError):
            raise _not_safetensors(
                where, f"the header entry of {name!r} has no data_offsets"
            ) from None
    return max(ends)


def _refuse(where: str, prefix: bytes, problem: str) -> None:
    """Raise the error of a file whose header is unreadable, naming the usual suspects. Only
    then: a valid header of 128 bytes also starts with 0x80, as a pickle does."""
    if prefix.startswith(b"PK\x03\x04"):
        problem += "; it is a zip archive, as torch.save writes (scratchgrad never unpickles)"
    elif prefix.startswith(b"\x80"):
        problem += "; it looks like a pickle, which scratchgrad never loads"
    raise _not_safetensors(where, problem)


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ]
    return next((kind for test, kind in kinds if test(mode)), "special file")


def _not_safetensors(where: str, reason: str) -> ValueError:
    return ValueError(f"load: {where} is not a safetensors file: {reason}")


def _damaged(where: str, error: Exception) -> ValueError:
    return ValueError(
        f"load: the 'scratchgrad' metadata of {where} is damaged ({type(error).__name__}: {error})"
    )


def _write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to a new file beside ``path``, sync it, then rename it over ``path``.

    A rename within one directory is atomic, so readers see the old file or the new one,
    never half of one; the temporary file is removed if anything fails before the rename.
    A symlink is written through to its target (the link stays a link), and a replaced file's
    permission bits are kept, as ``torch.save`` (which writes into the file) keeps them. A save
    killed outright (SIGKILL, power cut) can leave its temporary file,
    ``.<name>.<16 hex digits>.tmp``, beside the target: ``load`` never reads it, and it can be
    deleted.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None  # a new file: the umask decides, as for open()
    temporary = os.path.join(directory, f".{os.path.basename(target)}.{secrets.token_hex(8)}.tmp")
    # os.open with mode 0o666 lets the umask decide the permissions, as a plain open() would.
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
    )
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.chmod(temporary, mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
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
