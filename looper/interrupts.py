"""An interrupt the user gave is never lost.

Python raises `KeyboardInterrupt` wherever the SIGINT handler happens to run.  Where that is a
callback whose exceptions Python prints and drops, the run goes on as if nothing had been asked:
logging's at-fork lock release, which runs in looper after every `subprocess` start, swallowed a
Ctrl-C in one of 25 interrupted `looper bench` runs (it then finished all 16 kernels and exited 0).
`__del__` methods and weakref finalizers drop it the same way.

The handler installed here also remembers the interrupt, and `raise_pending()` raises it again:
after every process looper starts, between units of work, and when a command returns.  The
dropped one is not printed (Python would print its traceback as "Exception ignored"): it is not
lost, only late.
"""
from __future__ import annotations

import signal
import sys
import threading

_pending = False
_python_hook = sys.__unraisablehook__


def _handler(signum, frame) -> None:
    global _pending
    _pending = True
    raise KeyboardInterrupt


def _unraisable(info) -> None:
    if not (_pending and isinstance(info.exc_value, KeyboardInterrupt)):
        _python_hook(info)


def install() -> None:
    """Remember every SIGINT from now on (in the main thread only, and only where SIGINT has
    Python's usual handler: a shell that ignores it for a background job is obeyed)."""
    global _pending, _python_hook
    _pending = False
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _handler):
        signal.signal(signal.SIGINT, _handler)
        if sys.unraisablehook is not _unraisable:
            _python_hook, sys.unraisablehook = sys.unraisablehook, _unraisable


def raise_pending() -> None:
    """Raise `KeyboardInterrupt` if one arrived since `install()`, even if something swallowed it."""
    if _pending:
        raise KeyboardInterrupt
