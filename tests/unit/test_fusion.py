"""Fusion of the two search legs (decision 0015): the parameters and what each one does."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_core.errors import ConfigError
from kbmcp_core.fusion import DEFAULT_FUSION, Fusion, fuse, tuning_grid


def ids(ranked: list[tuple[int, float]]) -> list[int]:
    return [cid for cid, _ in ranked]


def test_relative_vector_scale_lets_the_best_semantic_match_weigh_as_much_as_the_best_word_match(
) -> None:
    # chunk 1: the best lexical match; chunk 2: the best semantic one, at a modest cosine
    lexical = [(1, 1.0)]
    vector = [(2, 0.45), (3, 0.30)]
    cosine = Fusion("weighted", 0.5, 0.5, "cosine")
    relative = Fusion("weighted", 0.5, 0.5, "relative")
    assert ids(fuse(vector, lexical, fusion=cosine))[0] == 1
    top = fuse(vector, lexical, fusion=relative)
    assert top[0][1] == pytest.approx(top[1][1]) == pytest.approx(0.5)
    assert ids(top)[2] == 3


def test_rrf_uses_ranks_only_and_weighs_the_legs() -> None:
    lexical = [(1, 1.0), (2, 0.01)]
    vector = [(2, 0.99), (1, 0.10)]
    even = fuse(vector, lexical, fusion=Fusion("rrf", 0.5, rrf_k=10))
    assert even[0][1] == pytest.approx(even[1][1])  # 1st + 2nd place each
    assert ids(fuse(vector, lexical, fusion=Fusion("rrf", 0.7, rrf_k=10))) == [1, 2]
    assert ids(fuse(vector, lexical, fusion=Fusion("rrf", 0.3, rrf_k=10))) == [2, 1]


@pytest.mark.parametrize("method", ["weighted", "rrf"])
def test_a_query_the_model_cannot_read_is_ranked_by_the_lexical_leg(method: str) -> None:
    lexical = [(1, 1.0), (2, 0.2)]
    vector = [(2, 0.9), (3, 0.8)]
    fusion = Fusion(method, 0.5)  # type: ignore[arg-type]
    assert ids(fuse(vector, lexical, coverage=0.0, fusion=fusion))[:2] == [1, 2]


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "max"}, "fusion must be one of weighted, rrf"),
    ({"lexical_weight": 1.5}, "lexical_weight must be between 0 and 1"),
    ({"vector_scale": "z"}, "vector_scale must be one of cosine, relative"),
    ({"rrf_k": 0}, "rrf_k must be at least 1"),
])
def test_bad_parameters_are_refused_with_the_key_named(kwargs: dict[str, object],
                                                       message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Fusion(**kwargs)  # type: ignore[arg-type]


def test_the_search_section_sets_the_fusion(tmp_path: Path) -> None:
    config = tmp_path / "kb-mcp.toml"
    config.write_text('[search]\nfusion = "rrf"\nlexical_weight = 0.6\nrrf_k = 20\n',
                      encoding="utf-8")
    s = build_settings(config, kb_path=tmp_path)
    assert s.fusion == Fusion("rrf", 0.6, DEFAULT_FUSION.lexical_weight_min,
                              DEFAULT_FUSION.vector_scale, 20)


def test_a_bad_search_key_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "kb-mcp.toml"
    config.write_text("[search]\nlexical_weight = 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[search\]\.lexical_weight must be between 0 and 1"):
        build_settings(config, kb_path=tmp_path)


def test_the_tune_grid_prints_back_as_config_it_reads(tmp_path: Path) -> None:
    for fusion in tuning_grid():
        config = tmp_path / "kb-mcp.toml"
        config.write_text("[search]\n" + "\n".join(fusion.as_toml()) + "\n", encoding="utf-8")
        read = build_settings(config, kb_path=tmp_path).fusion
        assert (read.method, read.lexical_weight) == (fusion.method, fusion.lexical_weight)
        if fusion.method == "weighted":
            assert read.vector_scale == fusion.vector_scale
            assert read.lexical_weight_min == fusion.lexical_weight_min
        else:
            assert read.rrf_k == fusion.rrf_k


def test_a_weak_word_match_gives_way_to_a_strong_semantic_one() -> None:
    # the best lexical match holds half of the query (relevance 0.5); another chunk is a
    # clear semantic match that shares none of its words
    lexical = [(1, 0.5)]
    vector = [(2, 0.55)]
    fixed = Fusion(lexical_weight=0.55, lexical_weight_min=0.55)  # decision 0007
    assert ids(fuse(vector, lexical, fusion=fixed)) == [1, 2]
    assert ids(fuse(vector, lexical, fusion=DEFAULT_FUSION)) == [2, 1]
    assert ids(fuse(vector, lexical)) == [1, 2]  # no fusion given: 0007's fixed weight


def test_a_query_matched_whole_by_the_words_keeps_the_full_lexical_weight() -> None:
    lexical = [(1, 1.0), (3, 0.4)]
    vector = [(2, 0.9), (3, 0.5)]
    fixed = Fusion(lexical_weight=0.55, lexical_weight_min=0.55)
    assert fuse(vector, lexical, fusion=DEFAULT_FUSION) == fuse(vector, lexical, fusion=fixed)
    assert ids(fuse(vector, lexical, fusion=DEFAULT_FUSION))[0] == 1


def test_lexical_weight_alone_below_the_minimum_is_a_fixed_weight(tmp_path: Path) -> None:
    config = tmp_path / "kb-mcp.toml"
    config.write_text("[search]\nlexical_weight = 0.2\n", encoding="utf-8")
    # lexical_weight_min (0.3 by default) above lexical_weight: a fixed weight of 0.2
    fusion = build_settings(config, kb_path=tmp_path).fusion
    lexical, vector = [(1, 0.5)], [(2, 0.3)]
    ranked = fuse(vector, lexical, fusion=fusion)
    assert ids(ranked) == [2, 1]
    assert [s for _, s in ranked] == pytest.approx([0.8 * 0.3, 0.2 * 0.5])


def test_chunks_with_equal_scores_keep_the_order_their_leg_gave_them() -> None:
    """With the vector leg weighed 0, every vector-only hit scores 0: they must come in the
    vector leg's order (best similarity first), not in the order of their random ids."""
    vector = [(900, 0.8), (5, 0.6), (70, 0.4)]
    fused = fuse(vector, [], fusion=Fusion(lexical_weight=1.0, lexical_weight_min=1.0))
    assert [cid for cid, _ in fused] == [900, 5, 70]
    assert {score for _, score in fused} == {0.0}
