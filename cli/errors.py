"""The one place where errors become exit codes: usage → 2, any other ctxfold error → 1, and a
reader that stopped reading (``| head``) → 141, quietly."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

from ctxfold.errors import CtxfoldError, LineError, UsageError

if TYPE_CHECKING:  # not imported at start-up: `ctxfold --help` stays fast
    from ctxfold.settings import Setting

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONDITION = 3  # --fail-on: the asked-for condition was met
# stdout's reader went away (``ctxfold report FILE | head -1``): what a shell reports for a tool
# that SIGPIPE killed (128 + 13), as ``git log | head`` does. Not 0: under ``set -o pipefail``
# output nobody read (or a --fail-on verdict never seen) must not pass for success; not 1: no
# failure of ctxfold's.
EXIT_BROKEN_PIPE = 141
DEBUG_VAR = "CTXFOLD_DEBUG"  # set (or --debug): an internal error shows its traceback


def internal_error(err: BaseException) -> str:
    """One line for an exception ctxfold did not mean to raise: a bug, said as one."""
    where = f"{type(err).__name__}: {err}"[:300]
    return (
        f"internal error: {where} (a bug in ctxfold: please report it with the command you ran; "
        f"{DEBUG_VAR}=1 or --debug shows the traceback)"
    )


F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def attributed(settings: Mapping[str, Setting]) -> Iterator[None]:
    """A bad value that came from the environment or the config file is named with its source:
    the user typed no such flag, so "unknown provider 'bogus'" alone would not say where to look."""
    try:
        yield
    except UsageError as err:
        text = str(err)
        blamed = [
            f"{name} from {s.source}"
            for name, s in settings.items()
            if s.source not in ("flag", "default")
            and s.value is not None
            and (repr(s.value) in text or f" {s.value} " in f" {text} ")
        ]
        if not blamed:
            raise
        raise UsageError(f"{text} ({'; '.join(blamed)})") from None


SKIP_HINT = "--skip-invalid leaves bad lines out and reads on"


def with_hint(err: CtxfoldError, *, skipping: bool = False) -> str:
    """The error's line, and for a bad line of a log the way past it: one upstream-broken line
    in a long session should not be the end of the road. Not for a first line: a file that does
    not start as a log (a README, a binary) is no log to read past."""
    text = str(err)
    if isinstance(err, LineError) and err.line > 1 and not skipping:
        return f"{text} ({SKIP_HINT})"
    return text


def exit_code(err: CtxfoldError) -> int:
    return EXIT_USAGE if isinstance(err, UsageError) else EXIT_FAILURE


def handle_errors(func: F) -> F:
    """Run a command; a ctxfold error prints one line on stderr and exits, no traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = func(*args, **kwargs)
            if sys.stdout is not None:
                sys.stdout.flush()  # a broken pipe shows here, not as noise at interpreter exit
            return result
        except SystemExit as exit_:
            # Rich's console meets a broken pipe with SystemExit(1) (Console.on_broken_pipe)
            if isinstance(exit_.__context__, BrokenPipeError):
                _discard_stdout()
                raise SystemExit(EXIT_BROKEN_PIPE) from None
            _flush_or_discard()  # a command's own exit status (validate, --fail-on) stands
            raise
        except CtxfoldError as err:
            _flush_or_discard()
            print(
                f"ctxfold: error: {with_hint(err, skipping=bool(kwargs.get('skip_invalid')))}",
                file=sys.stderr,
            )
            raise SystemExit(exit_code(err)) from None
        except KeyboardInterrupt:
            _flush_or_discard()
            print("ctxfold: interrupted", file=sys.stderr)
            raise SystemExit(130) from None
        except BrokenPipeError:
            _discard_stdout()
            raise SystemExit(EXIT_BROKEN_PIPE) from None
        except Exception as err:
            if os.environ.get(DEBUG_VAR):
                raise
            _flush_or_discard()
            print(f"ctxfold: {internal_error(err)}", file=sys.stderr)
            raise SystemExit(EXIT_FAILURE) from None

    return wrapper  # type: ignore[return-value]


def _flush_or_discard() -> None:
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    except (OSError, ValueError):
        pass


def _discard_stdout() -> None:
    """Point stdout at the null device, so what is still buffered goes nowhere instead of
    failing again at exit ("Exception ignored ... BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
