"""kiln.torch: PyTorch training layers whose forward, dgrad and wgrad are kiln plans (docs/training.md).

    import torch, kiln.torch as kt
    layer = kt.Linear(4096, 14336, recipe="bf16", device="cuda")          # trainable bf16 weight
    y = layer(x)                                                          # x [..., 4096] bfloat16
    y.sum().backward()                                                    # dX, dW, db through kiln

    base = kt.GroupedLinear.from_float(w_bf16, recipe="mxfp4_frozen")     # packed MXFP4 experts, frozen
    y = base(x_sorted, offsets)                                           # gradients still reach x

    experts = kt.MoEExperts.from_gpt_oss(*checkpoint_tensors, lora_rank=16)  # gpt-oss block, packed
    y = experts(hidden, router_indices, routing_weights)

    fp8 = kt.Linear(7168, 16384, recipe="fp8_block", device="cuda")       # DeepSeek 1x128 / 128x128 FP8

Recipes (kiln.recipe): "bf16", "fp8_block", "fp8_tensor", "fp8_rowwise", "mxfp8", "mxfp4_frozen",
"nvfp4_frozen". The operators torch.ops.kiln.gemm, torch.ops.kiln.gemm_into (into an existing output, e.g. dW added into main_grad)
and torch.ops.kiln.quantize have fake implementations, so torch.compile traces the layers; call prepare(model) before CUDA-graph capture.
Importing this module imports torch; `import kiln` alone does not.
"""

from .._recipes import RECIPES, LayerSpecs, Recipe, recipe
from ._functional import drop_quantized_copies, grouped_linear, linear
from ._moe import MoEExperts
from ._modules import GroupedLinear, Linear, PackedWeight, prepare, quantize_weight
from ._ops import quantize, runtime

__all__ = [
    "RECIPES",
    "drop_quantized_copies",
    "GroupedLinear",
    "LayerSpecs",
    "Linear",
    "MoEExperts",
    "PackedWeight",
    "Recipe",
    "grouped_linear",
    "linear",
    "prepare",
    "quantize",
    "quantize_weight",
    "recipe",
    "runtime",
]
