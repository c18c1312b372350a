"""Child process for the isl peer: JSON {source, path, sizes} on stdin -> the C program on stdout.

A separate process so that a scheduler run that takes too long can simply be killed.
"""
from __future__ import annotations

import json
import sys

from ..codegen.harness import program_c
from ..lang.parse import parse_source
from .peers import isl_kernel


def main() -> int:
    job = json.load(sys.stdin)
    program = parse_source(job["source"], job["path"], None, job["sizes"])
    sys.stdout.write(program_c(program, [isl_kernel(program)], comments=["isl's own scheduler, tiled"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
