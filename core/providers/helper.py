"""The digest's readings in a helper process, beside the reading of a long session.

When ``compact`` streams a long context (the summary strategy with the offline digest), each
message goes to the digest's three readings (:class:`~ctxfold.providers.streamed.Digesting`:
files, commands, errors and values; where things stand; the todo list). On a large log that is
most of the command's time, all of it on the one core that also parses: 6 of the 8 s of a
200 MB Codex log. :class:`HelperDigesting` sends the messages, in batches, to a process of its
own that runs the same readings, and gets them back at the end: the same ``Digested``, read on
the second core while the first one reads and counts.

The helper is ``python -m ctxfold.providers.helper FD`` (POSIX), fed on its stdin and answering
on the pipe ``FD``: a fresh interpreter (a fork would copy the reading's threads in whatever
state they are), and no multiprocessing, whose ``spawn`` runs the caller's main script again.
A helper that fails raises :class:`~ctxfold.providers.streamed.Unknowable`, which makes
``compact`` read the session again whole and fold it in its own process, as it does when a
streamed reading cannot tell.
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
# messages read here before the readings are handed to a helper: a context the reading lets go
# sooner (a compaction the log recorded starts the next one) never starts a process
HANDOVER = 2048
_LENGTH = 8  # bytes of each batch's length, before it


class HelperDigesting:
    """:class:`Digesting`'s ``add`` and ``result``: read here at first, then, past
    ``HANDOVER`` messages, by a helper process the readings so far are handed to."""

    def __init__(self) -> None:
        self._local: Digesting | None = Digesting()
        self._process: subprocess.Popen[bytes] | None = None
        self._answers: IO[bytes] | None = None
        self._batch: list[tuple[Message, str | None]] = []
        self._broken = False
        self.count = 0

    def add(self, m: Message, words: str | None = None) -> None:
        self.count += 1
        if self._local is not None:
            self._local.add(m, words)
            if self.count >= HANDOVER:
                self._hand_over(self._local)
                self._local = None
            return
        self._batch.append((m, words))
        if len(self._batch) >= BATCH:
            self._send()

    def _hand_over(self, readings: Digesting) -> None:
        """Start the helper and send it the readings so far, as its first batch."""
        # the helper imports ctxfold from where this process did (a checkout on sys.path too);
        # it answers on a pipe of its own, so that nothing an import prints can garble it
        path = os.pathsep.join(p for p in sys.path if p)
        answers, end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "ctxfold.providers.helper", str(end)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": path},
                pass_fds=(end,),
            )
        except OSError:
            os.close(answers)
            self._broken = True  # no helper: result() says so
            return
        finally:
            os.close(end)
        self._answers = os.fdopen(answers, "rb")
        self._write(pickle.dumps(readings, protocol=pickle.HIGHEST_PROTOCOL))

    def _send(self) -> None:
        if self._batch:
            self._write(pickle.dumps(self._batch, protocol=pickle.HIGHEST_PROTOCOL))
        self._batch = []

    def _write(self, data: bytes) -> None:
        if self._process is None or self._process.stdin is None or self._broken:
            return
        try:
            _write(self._process.stdin, data)
        except OSError:
            self._broken = True  # the helper is gone: result() says so

    def result(self, recorded: str | None) -> Digested:
        if self._local is not None:
            return self._local.result(recorded)
        self._send()
        answer: object = None
        try:
            if self._process is None or self._process.stdin is None or self._answers is None:
                raise OSError("it did not start")
            _write(self._process.stdin, b"")
            self._process.stdin.close()
            answer = pickle.load(self._answers)  # read as it is unpickled: no copy of it all
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
        process = self._process
        if process is None:
            return
        if process.poll() is None and process.stdin is not None and not process.stdin.closed:
            process.kill()
        for pipe in (process.stdin, self._answers):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(OSError):
                    pipe.close()
        process.wait()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # late in the interpreter's exit: nothing to stop
            if self._process is not None and self._process.returncode is None:
                self.close()


def _write(out: IO[bytes], data: bytes) -> None:
    out.write(len(data).to_bytes(_LENGTH, "little"))
    out.write(data)
    if not data:
        out.flush()


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """The helper: take the readings so far (the first batch), read every batch after them,
    then write the readings back (or what went wrong)."""
    readings: Digesting | None = None
    try:
        while True:
            head = inp.read(_LENGTH)
            if len(head) < _LENGTH:
                return  # the reading let its context go: nothing to answer
            size = int.from_bytes(head, "little")
            if not size:
                break
            data = pickle.loads(inp.read(size))
            if readings is None:
                readings = data
                continue
            for m, words in data:
                readings.add(m, words)
        answer: object = readings
    except Exception as err:  # what the reading in one process would have raised
        answer = f"{type(err).__name__}: {err}"
    out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    out.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, os.fdopen(int(sys.argv[1]), "wb"))
