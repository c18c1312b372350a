"""looper: a learned polyhedral autoscheduler for loop-nest programs."""

__version__ = "0.1.0"
