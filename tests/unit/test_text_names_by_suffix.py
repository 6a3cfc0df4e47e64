"""Which file names are text by name: ``README``, and ``README.Debian`` with it."""

from __future__ import annotations

import pytest

from kbmcp_adapters.parsers.formats import READABLE_EXTENSIONS
from kbmcp_core.models import DOCUMENT_EXTENSIONS, extension_of


@pytest.mark.parametrize(("path", "extension"), [
    ("README", "txt"), ("doc/NEWS", "txt"), ("git/contrib/completion-README", "txt"),
    ("README.Debian", "txt"), ("debian/NEWS.Debian", "txt"), ("README.venv", "txt"),
    ("COPYING.LIB", "txt"), ("INSTALL.generic", "txt"), ("README.Debian-source", "txt"),
    ("README.md", "md"), ("LICENSE.txt", "txt"), ("CHANGELOG.rst", "rst"),
    ("NEWS.html", "html"), ("INSTALL.sh", "sh"), ("README.md.orig", "txt"),
    ("changelog.Debian.gz", "gz"), ("README.Debian.swp", "swp"), ("NEWS.gz", "gz"),
    ("LICENSE.sig", "sig"), ("notes.Debian", "debian"), (".README.Debian", "debian"),
    ("README.", ""), ("README..Debian", "debian"), ("README.tar.gz", "gz"),
])  # fmt: skip
def test_a_text_name_is_txt_bare_or_qualified_but_never_packed(path: str,
                                                                extension: str) -> None:
    assert extension_of(path) == extension


def test_the_core_knows_every_extension_a_format_reads() -> None:
    # The text-name rule must not turn README.<format> into text: the core's list of
    # format extensions is the parsers' list, extension for extension.
    assert DOCUMENT_EXTENSIONS == READABLE_EXTENSIONS
