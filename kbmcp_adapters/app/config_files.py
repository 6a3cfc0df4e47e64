"""Which config files apply, in which order (decisions 0021 and 0047): a file the user named,
or the user's own config with the knowledge base's found ``kb-mcp.toml`` layered over it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kbmcp_adapters.app import trust
from kbmcp_core.errors import ConfigError
from kbmcp_core.settings import CONFIG_FILE_NAME

#: Names a config file, as --config does (which wins over it): decision 0021.
CONFIG_ENV = trust.CONFIG_ENV
#: How a file was found by looking, not chosen (``ConfigOrigin.implicit``).
IN_KB, IN_WORKING_FOLDER = "found in the knowledge base", "found in the working folder"


@dataclass(frozen=True, slots=True)
class Layer:
    """One config file in effect: where it is, how it was found, its bytes and owner."""

    path: Path
    found_by: str
    read: trust.ConfigBytes

    @property
    def found(self) -> bool:
        """Found by looking (in the knowledge base or the working folder), not chosen."""
        return self.found_by in (IN_KB, IN_WORKING_FOLDER)


def config_layers(explicit: Path | None, cwd: Path | None = None, *,
                  kb_path: str | Path | None = None, env: Mapping[str, str] | None = None,
                  user_config: bool = True) -> list[Layer]:
    """The config files in effect, the lowest first. A file the user named (``--config``,
    else ``$KB_MCP_CONFIG``) alone; else the user's ``$XDG_CONFIG_HOME/kb-mcp/config.toml``
    (when ``user_config``) and over it the knowledge base's own ``kb-mcp.toml`` (in
    ``kb_path``; with no ``kb_path``, the working folder's, whose ``kb_path`` key says
    where the knowledge base is). A found file that is a symbolic link is refused."""
    env = os.environ if env is None else env
    base = cwd or Path.cwd()
    if explicit is not None:
        return [_named(base / explicit, "named by --config")]
    named = env.get(CONFIG_ENV, "")
    if named:
        return [_named(base / Path(named).expanduser(), f"named by {CONFIG_ENV}")]
    layers = []
    mine = trust.user_config_dir(env) / trust.USER_CONFIG_NAME
    if user_config and mine.is_file():
        layers.append(Layer(mine, "your user config", trust.read_file(mine, "config")))
    if kb_path is not None:
        candidate, found_by = base / Path(kb_path).expanduser() / CONFIG_FILE_NAME, IN_KB
    else:
        candidate, found_by = base / CONFIG_FILE_NAME, IN_WORKING_FOLDER
    if candidate.is_symlink():
        raise ConfigError(f"the config file {candidate}, {found_by}, is a symbolic link: "
                          "kb-mcp does not read a config file it finds through a link (its "
                          "trust and its relative paths would be another file's); name it "
                          "with --config, or put a copy there")
    if candidate.is_file():
        # the path trusted and the folder relative paths resolve against are the same
        path = Path(trust.key(candidate))
        layers.append(Layer(path, found_by, trust.read_file(path, "config", follow=False)))
    return layers


def _named(path: Path, found_by: str) -> Layer:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path} ({found_by})")
    path = Path(os.path.abspath(path))
    return Layer(path, found_by, trust.read_file(path, "config"))


__all__ = ["CONFIG_ENV", "IN_KB", "IN_WORKING_FOLDER", "Layer", "config_layers"]
