"""The code ``dataclasses`` compiles for each class, kept between runs of a short-lived command.

``@dataclass`` writes the source of ``__init__``, ``__eq__``, ``__repr__`` (and a frozen
class's ``__setattr__``) and compiles it every time the module is imported: on Python 3.11,
about 1 ms a class, 60 ms of the statusline's 0.2 s for the 49 classes it loads, 40-50 ms of a
small ``estimate`` (3.13 compiles a class's methods in one call, cheaper, but still each time).
The same source always compiles to the same code, so :func:`kept_class_code` keeps the
compiled code in the user's cache folder (``marshal``, the format of ``.pyc`` files, in a file
named for the exact interpreter) and hands ``dataclasses`` the kept code for a source it has
seen (``transcript/frozen.py`` compiles the model's faster ``__init__`` through the same hook
when it is there). Only the ``ctxfold`` command's own process opts in (``cli/main.py``, and the
statusline's measuring in ``cli/statusline.py``); importing ctxfold as a library never changes
``dataclasses``.

The file is trusted as Python trusts the ``.pyc`` files beside the code: whoever can write the
user's cache folder can already run code through them. A file that cannot be read back (cut
short, another format) is ignored and written again; with ``CTXFOLD_NO_CACHE`` set nothing is
kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import sys
from types import CodeType

TYPE_CHECKING = False  # typing's, without importing typing: the statusline must start fast
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

LIMIT = 2000  # sources kept: a few hundred a version


def code_file() -> Path:
    from ctxfold.paths import cache_dir

    # named for the interpreter's exact version (marshal's format, the bytecode) and its -O level
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}-O{sys.flags.optimize}"
    return cache_dir() / f"class-code-{tag}.marshal"


class _Kept:
    """Compiled code by source text, read from and written back to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.added = 0
        self.used: set[str] = set()
        try:
            kept = marshal.loads(path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):  # none yet, or not a file marshal wrote
            kept = None
        self.code: dict[str, CodeType] = kept if isinstance(kept, dict) else {}

    def exec(self, source: object, globals: dict | None = None, locals: dict | None = None) -> None:
        """``exec(source, globals, locals)`` as ``dataclasses`` calls it, compiled once."""
        if not isinstance(source, str):  # not how dataclasses calls it today: run it as given
            exec(source, globals, locals)  # type: ignore[arg-type]
            return
        self.used.add(source)
        code = self.code.get(source)
        if type(code) is not CodeType:
            # dont_inherit: exec of a string in dataclasses takes that module's (empty) flags,
            # never this module's ``from __future__ import annotations``
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.code[source] = code
            self.added += 1
        exec(code, globals, locals)

    def save(self) -> None:
        """Write the file again, with this run's code; past ``LIMIT`` sources (code of classes
        older ctxfold versions had), with this run's alone."""
        from ctxfold.atomic import write_unsynced

        code = self.code
        if len(code) > LIMIT:
            code = {k: v for k, v in code.items() if k in self.used}
        with contextlib.suppress(OSError, ValueError):
            write_unsynced(self.path, (marshal.dumps(code),), prefix=f".{self.path.name}.", suffix=".tmp")


@contextlib.contextmanager
def kept_class_code() -> Iterator[None]:
    """While inside, ``dataclasses`` compiles each method's source once across runs. Saved on
    leaving when a class was new to the file (the first run, or a new ctxfold or Python)."""
    from ctxfold.paths import cache_off

    if cache_off() or hasattr(dataclasses, "exec"):  # someone else's patch stays as it is
        yield
        return
    try:
        kept = _Kept(code_file())
    except Exception:  # no home folder to find the cache in, say: the classes compile as ever
        yield
        return
    dataclasses.exec = kept.exec  # type: ignore[attr-defined]  # a module global before the builtin
    try:
        yield
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
        if kept.added:
            kept.save()
