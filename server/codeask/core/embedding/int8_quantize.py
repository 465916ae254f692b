"""The int8 query model's quantization, run as a child process of the one that wants the copy.

The quantizer holds the float model, its folded copy and the output at once (~500 MB peak).
Run inside the language server, that peak would stay in the editor's process for the rest of
its life (VmHWM), so `query_encoder.derive_int8` runs this module in a process of its own and only
publishes what it writes. This module writes only `output` and `output`'s folder's
`folded.onnx`; it never decides where a copy lives or whether one is current.

Usage: python -m codeask.core.embedding.int8_quantize SOURCE OUTPUT
Exit 0: OUTPUT is the int8 model. Exit 3: the `onnx` package is missing. Else: failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

MISSING_ONNX = 3


def quantize(source: Path, output: Path) -> None:
    """Fold the packaged model's Cast/Mul weights, then quantize them per channel to int8."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = output.with_name("folded.onnx")
    options = ort.SessionOptions()
    # The packaged file stores int8 weights behind Cast/Mul nodes: the basic pass folds them into
    # constant float weights, which the quantizer can then see and quantize.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    quantize_dynamic(folded, output, weight_type=QuantType.QInt8, per_channel=True)
    folded.unlink()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: python -m codeask.core.embedding.int8_quantize SOURCE OUTPUT", file=sys.stderr
        )
        return 2
    try:
        import onnx  # noqa: F401  (the quantizer imports it; say so plainly when it is missing)
    except ImportError as exc:
        print(f"the int8 query model needs the onnx package ({exc})", file=sys.stderr)
        return MISSING_ONNX
    quantize(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
