"""The URIs a resource body names carry its collection on a server of several
(decision 0042): a topic's list and the "read on" notice of a document cut at the read cap."""

from __future__ import annotations

from kbmcp_core.index_run import run_index
from kbmcp_core.offer import OfferRules, read_resource
from tests.fakes import FakeFileSystem, FakeIndexStore, FakeRegistry, fake_deps

BIG = b"# Big\n" + b"".join(b"line %d of a long log kept as text\n" % i
                             for i in range(40_000))


def _world() -> tuple[OfferRules, FakeFileSystem]:
    fs = FakeFileSystem({"guides/keys.md": b"# Keys\nrotate the keys\n", "logs/big.md": BIG})
    store = FakeIndexStore()
    run_index(fake_deps(fs, store=store))
    return OfferRules(store, FakeRegistry()), fs


def test_bodies_name_uris_in_their_collection_and_one_folder_as_before() -> None:
    rules, fs = _world()
    assert len(BIG) > 1024 * 1024
    listed = read_resource("kb://topic/guides", rules, fs, collection="handbook").text
    assert "(kb://doc/handbook/guides/keys.md)" in listed
    assert "(kb://doc/guides/keys.md)" in read_resource("kb://topic/guides", rules, fs).text
    cut = read_resource("kb://doc/logs/big.md", rules, fs, collection="handbook").text
    assert "Read kb://doc/handbook/logs/big.md#L" in cut
    assert "Read kb://doc/logs/big.md#L" in read_resource("kb://doc/logs/big.md", rules, fs).text
