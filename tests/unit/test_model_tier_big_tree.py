"""A user who turns the model tier on for everything, on a folder past its full-pass size (the
kernel's 1.28M chunks: ~21 hours of the packaged MiniLM on 2 cores), gets a bounded behaviour:
`codeask index --full` embeds no chunk with the model, and each question embeds at most
`embed.model_candidates` chunks, whatever `retrieve.model_tier_for` says, also with no static
tier at all (`embed.tiers = ["minilm"]`). The real CLI as processes; the threshold at 0 makes a
tiny repository stand for the kernel (tests/unit/test_model_on_demand.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_model_on_demand import ON_DEMAND, REPORT, Folder

CANDIDATES = 2
SETTINGS = {
    "typed questions too": {"CODEASK_RETRIEVE__MODEL_TIER_FOR": "all"},
    "reports in any language": {"CODEASK_RETRIEVE__MODEL_TIER_FOR": "reports"},
    "no static tier": {"CODEASK_EMBED__TIERS": '["minilm"]'},
}


def cached(folder: Folder) -> int:
    """Chunks the folder's on-demand cache holds, as `codeask status` says."""
    tier = folder.status()["model_tier"]
    assert tier.startswith("on demand: "), tier
    return int(tier.split()[2])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_model_tier_on_for_everything_on_a_big_folder_embeds_only_candidates(
    tmp_path: Path, name: str
) -> None:
    settings = SETTINGS[name] | {"CODEASK_EMBED__MODEL_CANDIDATES": str(CANDIDATES)}
    folder = Folder(tmp_path, **ON_DEMAND, **settings)
    indexed = folder.run("index", "--full", str(folder.root))
    assert "the model tier is filled on demand" in indexed.stderr
    status = folder.status()
    assert status["chunks"] > CANDIDATES and status["embedded"] == 0
    assert cached(folder) == 0
    answer = json.loads(folder.run("search", REPORT, "--json").stdout)
    assert "minilm" in answer["tiers_answered"]  # the model tier ranked the report
    assert 0 < cached(folder) <= CANDIDATES
    typed = json.loads(folder.run("search", "display name of a user", "--json").stdout)
    assert cached(folder) <= 2 * CANDIDATES
    if name != "reports in any language":
        assert "minilm" in typed["tiers_answered"]
    assert folder.status()["embedded"] == 0  # searches never write the index's model tier
