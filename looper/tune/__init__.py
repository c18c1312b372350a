"""One home for a tuning run: the answers it keeps (`records`, `recording`), which record answers a
program (`match`), applying a kept answer without searching (`apply`), and one program tuned at
several sizes written as one piece of code (`versions`)."""
