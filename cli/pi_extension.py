"""``ctxfold statusline --install-pi``: ctxfold's status line in pi's footer.

pi has no status command to configure; it loads TypeScript extensions from
``~/.pi/agent/extensions/`` (``$PI_CODING_AGENT_DIR/extensions``) at start, and an extension may
set a text in its footer. ctxfold ships one (``ctxfold-statusline.ts``, beside this module) that
runs ``ctxfold statusline`` after each turn; this copies it there. A file of that name that is
not the same is the user's: it is replaced only with ``--force``, and the output says so.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ctxfold.atomic import create_atomic, write_atomic
from ctxfold.errors import OutputError
from ctxfold.paths import pi_agent_dir

EXTENSION = Path(__file__).with_name("ctxfold-statusline.ts")
COMMAND_VAR = "CTXFOLD_STATUSLINE_CMD"  # the extension runs this shell command instead, when set


@dataclass(frozen=True)
class Installed:
    """Where the extension is now, and what installing it did."""

    kind: ClassVar[str] = "pi-extension"
    path: Path
    action: str  # installed (new), replaced (--force over a different file), unchanged


def install(*, force: bool = False, home: Path | None = None) -> Installed:
    """Copy the extension into pi's global extensions folder, atomically."""
    data = EXTENSION.read_bytes()
    target = pi_agent_dir(home) / "extensions" / EXTENSION.name
    try:
        old: bytes | None = target.read_bytes()
    except FileNotFoundError:
        old = None
    except OSError as err:
        raise OutputError(f"{target}: cannot read: {err.strerror or err}") from None
    if old == data:
        return Installed(target, "unchanged")
    if old is not None and not force:
        raise OutputError(
            f"{target} exists and is not ctxfold's pi extension as this version ships it: "
            "left as it is (--force replaces it)"
        )
    if old is None:
        create_atomic(target, data)
    else:
        write_atomic(target, data)
    return Installed(target, "installed" if old is None else "replaced")


def report(done: Installed) -> list[str]:
    """What to tell the user: what happened, when pi picks it up, and whether pi will find
    ``ctxfold`` to run."""
    lines = {
        "installed": [f"installed ctxfold's status line for pi: {done.path}"],
        "replaced": [f"replaced {done.path} (it differed) with ctxfold's status line for pi"],
        "unchanged": [f"already installed, unchanged: {done.path}"],
    }[done.action]
    lines.append("pi shows it in its footer from its next start (/reload in a running pi).")
    if not os.environ.get(COMMAND_VAR) and shutil.which("ctxfold") is None:
        command = f"{shlex.quote(sys.executable)} -m ctxfold statusline"
        lines.append(
            f"note: ctxfold is not on PATH here, and pi runs `ctxfold statusline`: put it on PATH, "
            f"or start pi with {COMMAND_VAR}={shlex.quote(command)}"
        )
    return lines
