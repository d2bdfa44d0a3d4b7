"""A status line command for the lab's harnesses that records what it is given and prints."""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxfold.cli.statusline import status_line

ANSI = re.compile(r"\x1b(\[[0-9;?>=]*[A-Za-z~]|\][^\x07]*\x07|[()][0-9A-B])")
# `ctxfold statusline` as the console script runs it, noting the transcript's size once it has
# the JSON: the harness may write on before the run reads the file, and a test recomputes the
# line on the file as that run found it
_LAUNCH = """\
import json, os, sys
sys.argv = ["ctxfold", "statusline"]
import ctxfold.cli.statusline as statusline
read = statusline._read_stdin
def recorded():
    raw = read()
    try:
        size = os.path.getsize(json.loads(raw)["transcript_path"])
    except Exception:
        size = -1
    with open(os.environ["REC_SIZE"], "w") as f:
        f.write(str(size))
    return raw
statusline._read_stdin = recorded
from ctxfold.cli.main import main
main()
"""


def recorder(rec: Path) -> Path:
    """A shell command running ``ctxfold statusline`` that keeps, per call, the JSON it was given
    (``payload-N.json``), the size of the transcript it read (``size-N.txt``) and the line it
    printed (``out-N.txt``) in ``rec``."""
    launch = rec / "launch.py"
    launch.write_text(_LAUNCH)
    command = rec / "status.sh"
    py = shlex.quote(sys.executable)
    command.write_text(
        "#!/bin/sh\n"
        "n=$(date +%s%N)\n"
        f"tee {rec}/payload-$n.json | REC_SIZE={rec}/size-$n.txt {py} {launch} | tee {rec}/out-$n.txt\n"
    )
    command.chmod(0o755)
    return command


@dataclass(frozen=True)
class Run:
    payload: dict[str, Any]
    out: str  # the line printed, stripped
    size: int  # the transcript's bytes when the run read it (-1: none yet)

    def read(self) -> bytes:
        """The transcript as this run found it."""
        if self.size < 0:
            return b""
        with open(self.payload["transcript_path"], "rb") as f:
            return f.read(max(0, self.size))

    def expected(self, tmp: Path) -> str:
        """The line ctxfold makes of the transcript as this run found it."""
        copy = tmp / f"as-read-{self.size}{Path(self.payload['transcript_path']).suffix}"
        copy.write_bytes(self.read())
        return status_line(json.dumps({**self.payload, "transcript_path": str(copy)}).encode(), color=False)


def finished(rec: Path) -> list[Run]:
    """Each call that finished, in the order they ran."""
    out = []
    for p in sorted(rec.glob("out-*.txt")):
        text, n = p.read_text(), p.name[4:-4]
        size = rec / f"size-{n}.txt"
        if text.endswith("\n") and size.is_file() and size.read_text().strip():
            payload = json.loads((rec / f"payload-{n}.json").read_text())
            out.append(Run(payload, text.strip(), int(size.read_text())))
    return out
