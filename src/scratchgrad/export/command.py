"""``scratchgrad export CHECKPOINT --format c|c-int8|onnx --out DIR``: a digits model trained
by ``scratchgrad train`` as C (float or int8) or ONNX, checked on the held-out digits.

The checkpoint's ``meta`` entry names the model and its configuration, so the model is rebuilt
from the file alone. The check compiles the C (with gcc, if there is one) or runs the ONNX file
(with onnxruntime, if installed) on the held-out digits of the training run's split.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import scratchgrad as sg
from scratchgrad import train
from scratchgrad.export.build import CFLAGS, compile_shared, run_compiled
from scratchgrad.export.c import to_c
from scratchgrad.export.quantize import QuantizedModel

FORMATS = ("c", "c-int8", "onnx")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", type=Path, help="a checkpoint written by scratchgrad train")
    parser.add_argument("--format", choices=FORMATS, default="c", help="default: c (float)")
    parser.add_argument("--out", type=Path, default=Path("export"), help="folder for the files")
    parser.add_argument("--name", help="the C prefix and file name (default: digits_MODEL)")


def main(args: argparse.Namespace) -> int:
    checkpoint = sg.load(args.checkpoint)
    if "model_name" in checkpoint:  # what `scratchgrad train --task charlm` writes
        raise ValueError(
            f"export: {args.checkpoint} holds a character-level language model; export supports "
            "the digits models (their attention and LSTM layers are not exportable yet)"
        )
    model = train.rebuild_model(checkpoint)
    meta = checkpoint["meta"]
    name = args.name or f"digits_{meta['model']}"
    (train_x, _), (test_x, test_y) = train.split_digits(meta.get("seed", 0))
    with sg.no_grad():
        logits = float_logits = model(test_x).numpy()
    if args.format == "onnx":
        from scratchgrad.onnx import export

        args.out.mkdir(parents=True, exist_ok=True)
        files = [args.out / f"{name}.onnx"]
        batch = {"image": {0: "batch"}, "logits": {0: "batch"}}  # any number of images
        export(
            model,
            test_x[:1],
            files[0],
            input_names=["image"],
            output_names=["logits"],
            dynamic_axes=batch,
        )
        check = _check_onnx(files[0], test_x.numpy(), logits)
    else:
        calibration = train_x[:256] if args.format == "c-int8" else None
        quantize = "int8" if calibration is not None else None
        files = to_c(model, test_x[:1], args.out, name, quantize, calibration)
        if calibration is not None:  # the int8 C must equal its NumPy reference exactly
            logits = QuantizedModel(model, calibration).forward(test_x.numpy())
        check = _check_c(files, name, test_x.numpy(), logits, exact=quantize is not None)
    for path in files:
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    if check is None:
        return 0
    outputs, how = check
    labels = test_y.numpy()
    same = int((outputs.argmax(1) == logits.argmax(1)).sum())
    accuracy = (outputs.argmax(1) == labels).mean()
    float_accuracy = (float_logits.argmax(1) == labels).mean()
    print(
        f"check: {how} on the {len(labels)} held-out digits: same class {same}/{len(labels)}, "
        f"largest difference {np.abs(outputs - logits).max():.2g}, accuracy {accuracy:.4f} "
        f"(float model: {float_accuracy:.4f})"
    )
    return 0 if same == len(labels) else 1


def _check_c(files, name, x, expected, exact):
    """The compiled C's outputs, or None (said) when there is no gcc."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            library = compile_shared(files[1:], Path(folder) / f"{name}.so")
        except FileNotFoundError:
            print("check: skipped, no gcc to compile the C with")
            return None
        outputs = run_compiled(library, name, x, expected.shape[1])
    reference = "the NumPy int8 reference" if exact else "scratchgrad"
    return outputs, f"gcc {' '.join(CFLAGS)} compiled it; against {reference}"


def _check_onnx(path, x, expected):
    """onnxruntime's outputs, or None (said) when it is not installed."""
    try:
        import onnxruntime
    except ImportError:
        print("check: onnx.checker passed; install onnxruntime to run the model too")
        return None
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"image": x})[
        0
    ], "onnx.checker passed; onnxruntime against scratchgrad"
