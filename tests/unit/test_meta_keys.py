"""The index_meta key names: stored in every index, so a rename is a format change."""

from __future__ import annotations

from kbmcp_core import meta_keys


def test_the_stored_key_names_stay_what_older_indexes_hold() -> None:
    assert meta_keys.META_KEYS == (
        "embedding_model",
        "embedding_dimension",
        "last_run",
        "vector_fingerprint",
        "run_in_progress",
        "embed_text",
        "copy_from",
        "converted_text_filled",
        "ready_since",
        "parsed_with",
        "declared_fields",
        "vector_labels",
    )


def test_every_key_constant_is_listed_once() -> None:
    constants = {name: value for name, value in vars(meta_keys).items()
                 if name.startswith("META_") and isinstance(value, str)}
    assert sorted(constants.values()) == sorted(meta_keys.META_KEYS)
    assert len(set(meta_keys.META_KEYS)) == len(meta_keys.META_KEYS)
