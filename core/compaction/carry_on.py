"""Carrying on after ``compact``: the command that resumes the compacted session in its harness,
and, with ``--install``, the compacted session placed where that harness looks for it.

A format whose harness can resume a session has a ``resume.py`` in its folder (``ctxfold.formats
.NAME.resume``) with ``HARNESS`` (its name for users), ``store(home)`` (the folder the harness
keeps its sessions in) and ``plan(transcript, written, home)`` → :class:`CarryOn` (in
``ctxfold.formats.base``). Installing
never replaces a file: the compacted session has a new session id, so its file is a new one, and
a name already taken means something is wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from ctxfold.atomic import create_atomic
from ctxfold.errors import OutputError
from ctxfold.formats.base import CarryOn
from ctxfold.formats.registry import FORMATS
from ctxfold.transcript.model import Transcript


def resume_module(fmt: str) -> ModuleType | None:
    """The format's ``resume`` module, or None when its harness cannot resume a session."""
    if fmt not in FORMATS:
        return None
    name = f"{FORMATS[fmt]}.resume"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def plan(fmt: str, compacted: Transcript, written: Path, home: Path | None = None) -> CarryOn | None:
    module = resume_module(fmt)
    if module is None:
        return None
    result: CarryOn = module.plan(compacted, written, home or Path.home())
    return result


def install(carry: CarryOn, written: Path) -> CarryOn:
    """Copy the compacted session to where its harness looks for it (never over a file)."""
    if carry.install_to is None:
        return carry
    try:
        data = written.read_bytes()
    except OSError as err:
        raise OutputError(f"{written}: cannot read it back to install: {err.strerror or err}") from None
    create_atomic(carry.install_to, data)
    return replace(carry, installed=True)


def in_a_store(path: Path, home: Path | None = None) -> str | None:
    """The harness whose session folder holds ``path`` (outputs written there would show up as
    sessions of their own), or None."""
    home = home or Path.home()
    resolved = path.resolve()
    for fmt in FORMATS:
        module = resume_module(fmt)
        if module is None:
            continue
        store = Path(module.store(home)).resolve()
        if store == resolved or store in resolved.parents:
            return str(module.HARNESS)
    return None
