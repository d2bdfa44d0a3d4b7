"""The one place where errors become exit codes: usage → 2, any other ctxfold error → 1."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from ctxfold.core.errors import CtxfoldError, UsageError

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONDITION = 3  # --fail-on: the asked-for condition was met

F = TypeVar("F", bound=Callable[..., Any])


def exit_code(err: CtxfoldError) -> int:
    return EXIT_USAGE if isinstance(err, UsageError) else EXIT_FAILURE


def handle_errors(func: F) -> F:
    """Run a command; a ctxfold error prints one line on stderr and exits, no traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CtxfoldError as err:
            print(f"ctxfold: error: {err}", file=sys.stderr)
            raise SystemExit(exit_code(err)) from None
        except KeyboardInterrupt:
            print("ctxfold: interrupted", file=sys.stderr)
            raise SystemExit(130) from None
        except BrokenPipeError:
            raise SystemExit(EXIT_FAILURE) from None

    return wrapper  # type: ignore[return-value]
