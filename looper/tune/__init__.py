"""One home for a tuning run: what it searches, what it keeps (`records`), and how a kept
answer is applied again without searching (`apply`) or at several sizes at once (`versions`)."""
