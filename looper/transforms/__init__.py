"""The transformations (one class each, `registry.py` says what a class declares) and the
`Schedule` they build.  Importing this package registers every transformation."""
from .registry import LEVELS, TRANSFORMS, Candidate, CandidateContext, Encoding, Transform, register
from .fusion import Distribute, Fission, Fuse, Shift  # noqa: E402  (registration order is candidate order)
from .expansion import Expand
from .isl_schedule import IslSchedule
from .affine import Interchange, Reverse, Skew
from .parallel import ParallelRegion, Parallelize
from .parallel_blocks import ParallelBlocks
from .tiling import Tile
from .register_tiling import RegisterTile
from .packing import Pack
from .time_tiling import TimeTile
from .sink_tiling import SinkTile
from .unroll import Unroll
from .vectorize import Vectorize
from .schedule import Schedule

__all__ = ["LEVELS", "TRANSFORMS", "Candidate", "CandidateContext", "Encoding", "Transform", "register",
           "Distribute", "Fission", "Fuse", "Shift", "Expand", "IslSchedule", "Interchange", "Reverse", "Skew", "Parallelize", "ParallelBlocks", "ParallelRegion", "Tile", "TimeTile", "SinkTile", "RegisterTile", "Pack", "Unroll", "Vectorize",
           "Schedule"]
