"""codeask: a local code-understanding language server."""

import os as _os

__version__ = "0.1.0"

# One BLAS thread, unless the user chose otherwise: the one big product codeask computes is a
# query against a tier's vector matrix (core/storage/vectors.py): 2.3 ms median on one quiet core
# for
# 15k chunks;
# OpenBLAS's own threads made it 4x slower on a busy machine (28.7 vs 7.0 ms at load ~12),
# competing with the embedding runtime's threads. Set before numpy is first imported.
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_name, "1")
