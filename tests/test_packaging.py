"""core/ installs as ctxfold and cli/ as ctxfold.cli, with every subpackage, never a top-level core or cli."""

from __future__ import annotations

import sys

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_subpackage_is_listed() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    for top, name in (("core", "ctxfold"), ("cli", "ctxfold.cli")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            assert ".".join((name, *rel)) in listed, f"{init.parent} is not installed"
    assert "core" not in listed and "cli" not in listed
    assert conf["package-dir"] == {"ctxfold": "core", "ctxfold.cli": "cli"}


def test_imports_resolve_to_the_repository() -> None:
    import ctxfold
    import ctxfold.cli

    assert ctxfold.__file__ and ctxfold.__file__.startswith(str(ROOT / "core"))
    assert ctxfold.cli.__file__ and ctxfold.cli.__file__.startswith(str(ROOT / "cli"))
