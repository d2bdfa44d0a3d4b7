"""``ctxfold statusline --codex`` as Codex runs it, noting each message it answers.

Run as ``python providerrec.py OUT``: for each message Codex sends, one JSON line as it comes
(the wall time, its method) and one once answered (with how long the answer took and, for a
status line read, the text answered), appended to ``OUT``. A test then tells a provider that
answered late or wrong from a Codex that stopped asking.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import ctxfold.cli.codex_statusline as provider


def main(out: str) -> int:
    answer = provider.handle

    def note(**fields: Any) -> None:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps(fields) + "\n")

    def noted(raw: bytes, lines: provider.Lines) -> dict[str, Any] | None:
        came = time.time()
        try:
            method = json.loads(raw).get("method")
        except (ValueError, AttributeError):
            method = None
        note(at=came, method=method)  # as it comes: Codex may stop this process before the answer
        reply = answer(raw, lines)
        text = None
        if method == "resources/read" and reply is not None and "result" in reply:
            text = reply["result"]["contents"][0]["text"]
        note(at=came, method=method, took=time.time() - came, text=text)
        return reply

    provider.handle = noted
    return provider.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
