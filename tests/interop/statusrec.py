"""A status line command for the lab's harnesses that records what it is given and prints."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

LAUNCH = "import sys; sys.argv = ['ctxfold', 'statusline']; from ctxfold.cli.main import main; main()"
ANSI = re.compile(r"\x1b(\[[0-9;?>=]*[A-Za-z~]|\][^\x07]*\x07|[()][0-9A-B])")


def recorder(rec: Path) -> Path:
    """A shell command running ``ctxfold statusline`` that keeps, per call, the JSON it was given
    (``payload-N.json``) and the line it printed (``out-N.txt``) in ``rec``."""
    command = rec / "status.sh"
    py = shlex.quote(sys.executable)
    command.write_text(
        "#!/bin/sh\n"
        "n=$(date +%s%N)\n"
        f"tee {rec}/payload-$n.json | {py} -c {shlex.quote(LAUNCH)} | tee {rec}/out-$n.txt\n"
    )
    command.chmod(0o755)
    return command
