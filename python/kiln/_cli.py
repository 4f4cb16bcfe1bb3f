"""The `kiln` console script of an installed wheel: runs the CLI binary the wheel carries (kiln/bin/kiln)."""

import os
import sys
from pathlib import Path


def cli_path() -> Path:
    return Path(__file__).resolve().parent / "bin" / "kiln"


def main():
    path = cli_path()
    if not path.is_file():
        sys.exit(f"kiln: no CLI binary at {path}; it ships in the wheel built from the repository root "
                 "(`pip install .`), not in `pip install -e python/` (there, run build/tools/kiln)")
    from . import _lib

    _lib.find_nvrtc()  # the CLI reads KILN_NVRTC_PATH as libkiln does
    os.execv(str(path), [str(path)] + sys.argv[1:])
