"""The packaged model's chunk copy, made in a child process of the one that wants it (issue 29).

The packaged file keeps its weights as int8 behind Cast/Mul nodes. Loading it, onnxruntime folds
them into float32 weights: ~110 MB more than the session keeps, for a moment, in the process that
loads it (a language server's peak during a cold index was that moment). This child does the
folding once, on disk, and writes a copy that loads without it:

- the word-piece table (30,522 × 384, 47 MB as float32) stays int8: the rows a text uses are
  gathered first, then cast and scaled (per row, as the file's own Cast/Mul do), so every value
  is the same float as before;
- every other weight is folded to float32 by onnxruntime's own basic pass and written to a
  file beside the model (external data), which onnxruntime maps into memory at load instead of
  copying.

Usage: python -m codeask.core.embedding.chunk_fold SOURCE OUTPUT
OUTPUT's folder receives OUTPUT and OUTPUT's name + ".data". Exit 0: done; 3: the `onnx`
package is missing; else failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

MISSING_ONNX = 3
#: The packaged model's word-piece table and how its file dequantizes it.
WORD_TABLE = "inner.embeddings.word_embeddings.weight"
#: Weights smaller than this stay inside the .onnx file (biases, norms, scales).
EXTERNAL_MIN_BYTES = 1024


def data_name(output: Path) -> str:
    """The external-data file's name beside `output`."""
    return output.name + ".data"


def gather_word_table_int8(source: Path, rewritten: Path) -> None:
    """Write `source` with the word-piece table's dequantization moved after its Gather."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    nodes = list(graph.node)
    dequant = [n for n in nodes if WORD_TABLE in n.output or WORD_TABLE + "_f" in n.output]
    users = [n for n in nodes if WORD_TABLE in n.input]
    if len(dequant) != 2 or len(users) != 1 or users[0].op_type != "Gather":
        raise ValueError(f"{source} does not dequantize {WORD_TABLE} as expected")
    gather = users[0]
    ids, out = gather.input[1], gather.output[0]
    at = nodes.index(gather)
    replacement = [
        helper.make_node("Gather", [WORD_TABLE + "_q", ids], [out + "_q"], axis=0),
        helper.make_node("Gather", [WORD_TABLE + "_scale", ids], [out + "_scale"], axis=0),
        helper.make_node("Cast", [out + "_q"], [out + "_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [out + "_f", out + "_scale"], [out]),
    ]
    kept = [n for n in nodes if n is not gather and not any(n is d for d in dequant)]
    del graph.node[:]
    graph.node.extend(kept[:at] + replacement + kept[at:])
    onnx.save(model, str(rewritten))


def fold(source: Path, output: Path) -> None:
    """Rewrite, then let onnxruntime's basic pass fold the rest into OUTPUT + its data file."""
    import onnxruntime as ort

    rewritten = output.with_name("rewritten.onnx")
    gather_word_table_int8(source, rewritten)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(output)
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", data_name(output)
    )
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes",
        str(EXTERNAL_MIN_BYTES),
    )
    ort.InferenceSession(str(rewritten), options, providers=["CPUExecutionProvider"])
    rewritten.unlink()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m codeask.core.embedding.chunk_fold SOURCE OUTPUT", file=sys.stderr)
        return 2
    try:
        import onnx  # noqa: F401  (the rewrite needs it: say so plainly when it is missing)
    except ImportError as exc:
        print(f"the chunk model's copy needs the onnx package ({exc})", file=sys.stderr)
        return MISSING_ONNX
    fold(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
