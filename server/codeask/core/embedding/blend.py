"""A pasted report's query vector leans toward its lead line (the issue's title).

The whole report is a poor dense query: MiniLM reads its first 256 word pieces, mostly the
reproducer and the log, and the summary that says what is wrong is a small part of them. The
lexical side already searches the lead on its own (`retrieve.lead_weight`); this is the same
idea for the dense side, as one blended vector rather than a second dense list (a second list
lifted recall but cost R@1 and MRR on the dev set, benchmarks/README.md).
"""

from __future__ import annotations

import numpy as np


def blend_lead(text_vector: np.ndarray, lead_vector: np.ndarray, weight: float) -> np.ndarray:
    """The unit vector of `text_vector + weight × lead_vector` (both unit vectors): the
    report's meaning with its summary counted again; weight 0 returns `text_vector`."""
    if weight <= 0:
        return text_vector
    blended = text_vector.astype(np.float32) + np.float32(weight) * lead_vector.astype(np.float32)
    norm = float(np.linalg.norm(blended))
    if norm == 0.0:
        return text_vector
    return (blended / norm).astype(text_vector.dtype)
