"""An interrupt the user gave is never lost.

Python raises `KeyboardInterrupt` wherever the SIGINT handler happens to run.  Where that is a
callback whose exceptions Python prints and drops, the run goes on as if nothing had been asked:
logging's at-fork lock release, which runs in looper after every fork (isl's scheduler runs in
forked children), swallowed a Ctrl-C in one of 25 interrupted `looper bench` runs (it then
finished all 16 kernels and exited 0).
`__del__` methods and weakref finalizers drop it the same way.

The handler installed here also remembers the interrupt, and `raise_pending()` raises it again:
after every process looper starts, between units of work, and when a command returns.  The
dropped one is not printed (Python would print its traceback as "Exception ignored"): it is not
lost, only late.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Iterator

_pending = False
_python_hook = sys.__unraisablehook__


def _handler(signum, frame) -> None:
    global _pending
    _pending = True
    raise KeyboardInterrupt


def _unraisable(info) -> None:
    if not (_pending and isinstance(info.exc_value, KeyboardInterrupt)):
        _python_hook(info)


@contextlib.contextmanager
def remembered() -> Iterator[None]:
    """Remember every SIGINT inside the block (in the main thread only, and only where SIGINT has
    Python's usual handler: a shell that ignores it for a background job is obeyed).  The handler
    and hook before it are restored after it, and nothing is pending then: a program that called
    a command in-process (a test, a notebook) goes on as before."""
    global _pending, _python_hook
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield  # SIGINT ignored, or an enclosing block remembers it already
        return
    _pending = False
    handler, hook = signal.signal(signal.SIGINT, _handler), sys.unraisablehook
    _python_hook, sys.unraisablehook = hook, _unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        sys.unraisablehook = hook
        _pending = False


def raise_pending() -> None:
    """Raise `KeyboardInterrupt` if one arrived inside `remembered()`, even if something swallowed it."""
    if _pending:
        raise KeyboardInterrupt
