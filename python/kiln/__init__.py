"""kiln: JIT-compiled quantized GEMMs from a one-line spec, over libkiln.so (the C API).

    import torch, kiln
    rt = kiln.Runtime()
    plan = rt.plan("gemm a=bf16 b=bf16 out=bf16", n=7168, k=7168)
    y = plan.run(x, w)                 # x [M, 7168] bf16, w [7168, 7168] bf16 on the GPU

    kiln.canonicalize("gemm a=e4m3 b=e4m3 out=bf16")   # no GPU, no torch needed

Training layers (autograd, recipes, frozen packed weights): kiln.torch (docs/training.md).
torch is imported only by Plan.run and kiln.torch; parsing, canonicalizing and planning need neither torch nor a GPU.
Failures raise kiln.KilnError carrying kiln's status and message. Where libkiln.so is found:
kiln._lib (KILN_LIBRARY, then the wheel's own, then the checkout's build tree, then the system loader);
kiln.library_path(). kiln.include_dir(): the C/C++ headers; kiln.nvrtc_path(): the NVRTC kernels compile
with (a CUDA toolkit's, else pip's nvidia-cuda-nvrtc: `pip install "kiln[cu13]"`).
"""

from ._errors import KilnError, LibraryNotFoundError, Status
from ._recipes import LayerSpecs, Recipe, recipe
from ._runtime import (Plan, Runtime, canonicalize, derive_backward, grouped_copy_columns, include_dir, library_path,
                       nvrtc_path, version)

__version__ = "0.1.0"

__all__ = [
    "KilnError",
    "LayerSpecs",
    "LibraryNotFoundError",
    "Plan",
    "Recipe",
    "Runtime",
    "Status",
    "canonicalize",
    "derive_backward",
    "grouped_copy_columns",
    "include_dir",
    "library_path",
    "nvrtc_path",
    "recipe",
    "version",
]
