"""The tiers line names the model tier by the model it is (round 3 item 19, with item 12's
remote providers): "MiniLM" only for the packaged MiniLM."""

from __future__ import annotations

from codeask.config import DEFAULT_EMBED_MODEL
from codeask.core.search.tiers import TierCount, describe, incomplete, model_label


def test_the_packaged_model_is_minilm_and_another_is_named() -> None:
    assert model_label({DEFAULT_EMBED_MODEL}) == "MiniLM"
    assert model_label(set()) == "MiniLM"
    assert model_label({"code-embed-v2"}) == "model 'code-embed-v2'"


def test_a_remote_model_tier_is_never_called_minilm() -> None:
    coverage = [
        TierCount("static", 900, 900),
        TierCount("minilm", 300, 900, model_label({"code-embed-v2"})),
    ]
    line = describe(["lexical", "static"], coverage)
    assert line == (
        "answered by lexical + static (static: all 900 chunks; "
        "model 'code-embed-v2': 300 of 900 chunks (33%), filling in, not used here)"
    )
    assert "MiniLM" not in incomplete(coverage)
    answered = describe(["lexical", "static", "minilm"], coverage)
    assert answered.startswith("answered by lexical + static + model 'code-embed-v2' (")


def test_the_packaged_tier_keeps_its_name() -> None:
    coverage = [TierCount("static", 10, 10), TierCount("minilm", 0, 10)]
    assert "MiniLM: 0 of 10 chunks (0%), filling in" in describe(["lexical", "static"], coverage)
