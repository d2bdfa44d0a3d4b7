"""The digest's readings in a helper process, beside the reading of a long session.

When ``compact`` streams a long context (the summary strategy with the offline digest), each
message goes to the digest's three readings (:class:`~ctxfold.providers.streamed.Digesting`:
files, commands, errors and values; where things stand; the todo list). On a large log that is
most of the command's time, all of it on the one core that also parses: 6 of the 8 s of a
200 MB Codex log. :class:`HelperDigesting` sends the messages, in batches, to a process of its
own that runs the same readings, and gets them back at the end: the same ``Digested``, read on
the second core while the first one reads and counts.

The helper is ``python -m ctxfold.providers.helper`` on pipes: a fresh interpreter (a fork
would copy the reading's threads in whatever state they are), and no multiprocessing, whose
``spawn`` runs the caller's main script again in the child. A helper that fails raises
:class:`~ctxfold.providers.streamed.Unknowable`, which makes ``compact`` read the session again
whole and fold it in its own process, as it does when a streamed reading cannot tell.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
from typing import IO, BinaryIO

from ctxfold.providers.streamed import Digested, Digesting, Unknowable
from ctxfold.transcript.model import Message

BATCH = 256  # messages per batch sent: few writes, little held here
_LENGTH = 8  # bytes of each batch's length, before it


class HelperDigesting:
    """:class:`Digesting`'s ``add`` and ``result``, with the readings made by a helper process."""

    def __init__(self) -> None:
        # the helper imports ctxfold from where this process did (a checkout on sys.path too)
        path = os.pathsep.join(p for p in sys.path if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "ctxfold.providers.helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": path},
        )
        self._batch: list[tuple[Message, str | None]] = []
        self._broken = False
        self.count = 0

    def add(self, m: Message, words: str | None = None) -> None:
        self.count += 1
        self._batch.append((m, words))
        if len(self._batch) >= BATCH:
            self._send()

    def _send(self) -> None:
        if self._batch and not self._broken:
            try:
                _write(self._stdin, pickle.dumps(self._batch, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                self._broken = True  # the helper is gone: result() says so
        self._batch = []

    @property
    def _stdin(self) -> IO[bytes]:
        assert self._process.stdin is not None
        return self._process.stdin

    def result(self, recorded: str | None) -> Digested:
        self._send()
        answer: object = None
        try:
            _write(self._stdin, b"")
            self._stdin.close()
            assert self._process.stdout is not None
            answer = pickle.load(self._process.stdout)  # read as it is unpickled: no copy of it all
        except (OSError, EOFError, pickle.UnpicklingError) as err:
            answer = f"it stopped ({err or type(err).__name__})"
        finally:
            self.close()
        if not isinstance(answer, Digesting):
            raise Unknowable(f"the digest's helper process failed: {answer}")
        return answer.result(recorded)

    def close(self) -> None:
        """Stop the helper: once it answered, or when the reading lets its context go (a later
        compaction in the log), when what it read is of no use."""
        if self._process.poll() is None and not self._stdin.closed:
            self._process.kill()
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._process.wait()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # late in the interpreter's exit: nothing to stop
            if self._process.returncode is None:
                self.close()


def _write(out: IO[bytes], data: bytes) -> None:
    out.write(len(data).to_bytes(_LENGTH, "little"))
    out.write(data)
    if not data:
        out.flush()


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """The helper: read every batch, then write the readings back (or what went wrong)."""
    readings = Digesting()
    try:
        while True:
            head = inp.read(_LENGTH)
            if len(head) < _LENGTH:
                return  # the reading let its context go: nothing to answer
            size = int.from_bytes(head, "little")
            if not size:
                break
            for m, words in pickle.loads(inp.read(size)):
                readings.add(m, words)
        answer: object = readings
    except Exception as err:  # what the reading in one process would have raised
        answer = f"{type(err).__name__}: {err}"
    out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    out.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
