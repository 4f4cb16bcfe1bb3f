"""Training recipes: which kiln specs a layer's forward, dgrad and wgrad run (no torch, no GPU).

A recipe names the weight's format, whether the weight trains, and the backward mode
(docs/training.md). kiln.torch builds its autograd functions from these specs; they are plain
spec texts, so they can be planned, compiled or tuned like any other (`kiln tune`, kiln.Runtime).

    r = kiln.recipe("mxfp4_frozen")
    specs = r.specs(experts=32, bias=True)
    specs.forward   # 'grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 epilogue="out = acc + bias[e,n]"'
    specs.dgrad     # 'grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad'
    specs.wgrad     # None: a frozen weight has no gradient

    kiln.recipe("fp8_block").specs().dgrad
    # 'gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad'
    kiln.recipe("mxfp8").specs().wgrad
    # 'gemm a=mxfp8 b=mxfp8 out=f32 pass=wgrad' (on the column-wise copies of dY and X)
    kiln.recipe("fp8_rowwise").specs().wgrad
    # 'gemm a=e4m3:m b=e4m3:n out=f32 pass=wgrad' (dYᵀ and Xᵀ, one scale per row of each copy)
"""

from dataclasses import dataclass
from typing import Optional

from ._errors import KilnError, Status


@dataclass(frozen=True)
class LayerSpecs:
    """The canonical specs of one layer: forward (with the bias epilogue when the layer has a bias),
    dgrad, and wgrad (None for a frozen weight)."""

    forward: str
    dgrad: str
    wgrad: Optional[str]


@dataclass(frozen=True)
class Recipe:
    """name: the recipe's name. weight: the format the layer holds W in ("bf16", "mxfp4", "nvfp4").
    frozen: W has no gradient (its packed codes are buffers, not parameters). backward: the backward
    mode ("high_precision", "dequantized" or "quantized"). x_format / w_format: for the quantized
    recipes, the formats the GEMMs read X (and dY) and W in, made by kiln's quantizers from the bf16
    tensors (W once per optimizer step; for mxfp8 also W's column-wise copy, which dgrad reads); empty
    when the GEMMs read the held tensors. xt_format: the format of X's column-wise copy as wgrad's b, when
    not x_format (a per-token X's copy is scaled per row of the copy: the kernel's n side, "e4m3:n")."""

    name: str
    weight: str
    frozen: bool
    backward: str
    activation: str = "bf16"  # x, dY and dX
    x_format: str = ""
    w_format: str = ""
    xt_format: str = ""

    def specs(self, experts: int = 0, bias: bool = False, wgrad_out: str = "f32",
              nvfp4_global: str = "tensor", wgrad_accumulate: bool = False) -> LayerSpecs:
        """The layer's specs: dense for experts == 0, else grouped over `experts` with the offsets
        layout. bias: the forward adds a bias (per expert when grouped) in its epilogue. wgrad_out: dW's
        format ("f32", "bf16" or "f16"). nvfp4_global: "tensor" or "expert" (NVFP4 weights' global
        decode scale, grouped only). wgrad_accumulate: the wgrad adds dW into its output
        (accumulate=true: an fp32 main_grad)."""
        if experts < 0:
            raise KilnError(Status.INVALID_ARGUMENT, f"recipe {self.name}: experts={experts}; expected >= 0")
        if nvfp4_global not in ("tensor", "expert"):
            raise KilnError(Status.INVALID_ARGUMENT,
                            f"recipe {self.name}: nvfp4_global={nvfp4_global!r}; expected 'tensor' or 'expert'")
        if self.weight == "nvfp4" and nvfp4_global == "expert" and not experts:
            raise KilnError(Status.INVALID_ARGUMENT,
                            f"recipe {self.name}: nvfp4_global='expert' needs a grouped layer (experts > 0)")
        if wgrad_out not in ("f32", "bf16", "f16"):
            raise KilnError(Status.INVALID_ARGUMENT,
                            f"recipe {self.name}: wgrad_out={wgrad_out!r}; expected 'f32', 'bf16' or 'f16'")
        # The canonical texts are written here directly, with no call into libkiln, so that torch.compile
        # traces through them; tests/test_recipes.py checks each against canonicalize and derive_backward.
        op = f"grouped_gemm[experts={experts},layout=offsets]" if experts else "gemm"
        act = self.activation
        glob = " nvfp4_global=expert" if self.weight == "nvfp4" and nvfp4_global == "expert" else ""
        if self.x_format:  # quantized: X and dY in x_format (the column-wise copies for wgrad), W in w_format
            plain = f"{op} a={self.x_format} b={self.w_format} out={act}"
            wgrad = f"{op} a={self.x_format} b={self.xt_format or self.x_format} out={wgrad_out} pass=wgrad"
        else:
            plain = f"{op} a={act} b={self.weight} out={act}"
            wgrad = f"{op} a={act} b={act} out={wgrad_out} pass=wgrad"
        if self.frozen:
            wgrad = None
        forward = plain + glob
        if bias:
            forward += f' epilogue="out = acc + bias[{"e,n" if experts else "n"}]"'
        dgrad = f"{plain} pass=dgrad{glob}"
        if wgrad is not None and wgrad_accumulate:
            wgrad += " accumulate=true"
        return LayerSpecs(forward=forward, dgrad=dgrad, wgrad=wgrad)


RECIPES = {
    "bf16": Recipe("bf16", weight="bf16", frozen=False, backward="high_precision"),
    "mxfp4_frozen": Recipe("mxfp4_frozen", weight="mxfp4", frozen=True, backward="dequantized"),
    "nvfp4_frozen": Recipe("nvfp4_frozen", weight="nvfp4", frozen=True, backward="dequantized"),
    "fp8_block": Recipe("fp8_block", weight="bf16", frozen=False, backward="quantized",
                        x_format="e4m3:block1x128", w_format="e4m3:block128x128"),
    "mxfp8": Recipe("mxfp8", weight="bf16", frozen=False, backward="quantized", x_format="mxfp8", w_format="mxfp8"),
    # Per-tensor current scaling: "e4m3" is e4m3 with one f32 scale (the implied granularity).
    "fp8_tensor": Recipe("fp8_tensor", weight="bf16", frozen=False, backward="quantized", x_format="e4m3",
                         w_format="e4m3"),
    # Row-wise scaling: X and dY per token, W per output channel; dgrad on W's column-wise copy (one scale per
    # column of W), wgrad on the column-wise copies of dY and X (one scale per column of each).
    "fp8_rowwise": Recipe("fp8_rowwise", weight="bf16", frozen=False, backward="quantized", x_format="e4m3:m",
                          w_format="e4m3:n", xt_format="e4m3:n"),
}

# Recipes of the training design that kiln does not run yet, with what is missing.
_NOT_YET = {
    "nvfp4": "trainable NVFP4 weights need the fused row + column quantize pass",
}


def recipe(name) -> Recipe:
    """The Recipe named `name` (a Recipe passes through). Unknown names are INVALID_ARGUMENT listing the
    known ones; recipes kiln does not run yet are UNSUPPORTED with the reason."""
    if isinstance(name, Recipe):
        return name
    if not isinstance(name, str):
        raise KilnError(Status.INVALID_ARGUMENT, f"recipe must be a name or a kiln.Recipe, got {type(name).__name__}")
    found = RECIPES.get(name)
    if found is not None:
        return found
    if name in _NOT_YET:
        raise KilnError(Status.UNSUPPORTED, f"recipe {name!r}: {_NOT_YET[name]}; available: {', '.join(RECIPES)}")
    raise KilnError(Status.INVALID_ARGUMENT, f"unknown recipe {name!r}; available: {', '.join(RECIPES)}")
