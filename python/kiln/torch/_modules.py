"""Linear / GroupedLinear modules, weight packing for the frozen recipes, and prepare()."""

import math
from typing import NamedTuple, Optional

import torch

from .._errors import KilnError, Status
from .._recipes import recipe as _recipe
from . import _functional
from ._ops import plan, prepare_plan

_BLOCK = {"mxfp4": 32, "nvfp4": 16}


class PackedWeight(NamedTuple):
    """A 4-bit weight as the frozen recipes read it: codes uint8 [.., N, K/2] (even K index in the low
    nibble), scale uint8 [.., N, K/block] (E8M0 per 32 for mxfp4, UE4M3 per 16 for nvfp4) and, for nvfp4,
    global_scale f32 [1] (or [E]: one per expert)."""

    codes: torch.Tensor
    scale: torch.Tensor
    global_scale: Optional[torch.Tensor] = None


def quantize_weight(weight: torch.Tensor, fmt: str = "mxfp4", per_expert_global: bool = False) -> PackedWeight:
    """Quantizes a bf16 weight [N, K] or [E, N, K] on its GPU with kiln's quantizer (docs/formats.md,
    bitwise equal to kiln's reference): fmt "mxfp4" (E8M0 scales, rceil) or "nvfp4" (TransformerEngine's
    operation order; one global decode scale for the tensor, or per expert with per_expert_global)."""
    if fmt not in _BLOCK:
        raise KilnError(Status.INVALID_ARGUMENT, f"quantize_weight: fmt={fmt!r}; expected 'mxfp4' or 'nvfp4'")
    if not isinstance(weight, torch.Tensor) or weight.dim() not in (2, 3) or weight.dtype != torch.bfloat16:
        got = f"{weight.dtype} {list(weight.shape)}" if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise KilnError(Status.INVALID_ARGUMENT, f"quantize_weight: weight must be bfloat16 [N, K] or [E, N, K], got {got}")
    if not weight.is_cuda:
        raise KilnError(Status.INVALID_ARGUMENT, f"quantize_weight: weight is on {weight.device}; kiln runs on CUDA devices")
    k = weight.shape[-1]
    block = _BLOCK[fmt]
    if k % block:
        raise KilnError(Status.INVALID_ARGUMENT,
                        f"quantize_weight: K={k} is not a multiple of {block}, the {fmt} scale block along K")
    if per_expert_global and (fmt != "nvfp4" or weight.dim() != 3):
        raise KilnError(Status.INVALID_ARGUMENT, "quantize_weight: per_expert_global needs fmt='nvfp4' and [E, N, K]")
    lead = weight.shape[:-1]
    rows = math.prod(lead)
    p = plan(f"quantize a=bf16 out={fmt}", 0, k)  # n: unused by quantize specs
    w2 = weight.detach().contiguous().reshape(rows, k)
    codes = torch.empty(rows, k // 2, dtype=torch.uint8, device=weight.device)
    scale = torch.empty(rows, k // block, dtype=torch.uint8, device=weight.device)
    glob = None
    if fmt == "mxfp4":
        p.run(w2, out=codes, out_scale=scale)
    elif per_expert_global:
        experts, n = weight.shape[0], weight.shape[1]
        glob = torch.empty(experts, dtype=torch.float32, device=weight.device)
        for e in range(experts):
            rows_e = slice(e * n, (e + 1) * n)
            p.run(w2[rows_e], out=codes[rows_e], out_scale=scale[rows_e], out_global=glob[e:e + 1])
    else:
        glob = torch.empty(1, dtype=torch.float32, device=weight.device)
        p.run(w2, out=codes, out_scale=scale, out_global=glob)
    return PackedWeight(codes.reshape(*lead, k // 2), scale.reshape(*lead, k // block), glob)


class _KilnLayer(torch.nn.Module):
    """What Linear and GroupedLinear share: the recipe, the weight (a parameter, or the packed buffers of
    a frozen recipe), the bias, and the plans prepare() loads."""

    def __init__(self, experts, in_features, out_features, bias, recipe, fuse_wgrad_accumulation, device, dtype):
        super().__init__()
        self.recipe = _recipe(recipe)
        self.experts = experts
        self.in_features = in_features
        self.out_features = out_features
        self.fuse_wgrad_accumulation = fuse_wgrad_accumulation
        lead = (experts,) if experts else ()
        if self.recipe.x_format:  # a quantized recipe: bf16 master weight, quantized per optimizer step
            name = type(self).__name__
            if dtype != torch.bfloat16:
                raise KilnError(Status.INVALID_ARGUMENT,
                                f"{name}: recipe {self.recipe.name} keeps a bfloat16 master weight; got dtype={dtype}")
            _functional.check_quantized_sizes(name, self.recipe, out_features, in_features, experts)
        if self.recipe.frozen:
            block = _BLOCK[self.recipe.weight]
            if in_features % block:
                raise KilnError(Status.INVALID_ARGUMENT,
                                f"{type(self).__name__}: in_features={in_features} is not a multiple of {block}, "
                                f"the {self.recipe.weight} scale block along K")
            if fuse_wgrad_accumulation:
                raise KilnError(Status.INVALID_ARGUMENT,
                                f"{type(self).__name__}: recipe {self.recipe.name} has no weight gradient to accumulate")
            self.register_buffer("weight", torch.zeros(*lead, out_features, in_features // 2, dtype=torch.uint8,
                                                       device=device))
            self.register_buffer("weight_scale", torch.zeros(*lead, out_features, in_features // block,
                                                             dtype=torch.uint8, device=device))
            self.register_buffer("weight_global", torch.ones(1, dtype=torch.float32, device=device)
                                 if self.recipe.weight == "nvfp4" else None)
            self.register_buffer("bias", torch.zeros(*lead, out_features, dtype=dtype, device=device) if bias else None)
        else:
            self.weight = torch.nn.Parameter(torch.empty(*lead, out_features, in_features, dtype=dtype, device=device))
            self.bias = torch.nn.Parameter(torch.empty(*lead, out_features, dtype=dtype, device=device)) if bias else None
            self.weight_scale = None
            self.weight_global = None
            self.reset_parameters()

    def reset_parameters(self):
        """torch.nn.Linear's initialization, per expert."""
        if self.recipe.frozen:
            return
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            weights = self.weight if self.experts else self.weight.unsqueeze(0)
            for w in weights:
                torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def load_packed(self, packed: PackedWeight, bias: Optional[torch.Tensor] = None):
        """Copies a packed weight (quantize_weight's, or a checkpoint's codes and scales) into a frozen
        layer's buffers; gpt-oss's [.., N, K/32, 16] blocks are taken as [.., N, K/2]."""
        if not self.recipe.frozen:
            raise KilnError(Status.INVALID_ARGUMENT, f"load_packed: recipe {self.recipe.name} keeps a trainable weight")
        codes = packed.codes.reshape(self.weight.shape) if packed.codes.numel() == self.weight.numel() else packed.codes
        for name, src, dst in (("codes", codes, self.weight), ("scale", packed.scale, self.weight_scale)):
            if src.shape != dst.shape or src.dtype != torch.uint8:
                raise KilnError(Status.INVALID_ARGUMENT,
                                f"load_packed: {name} is {src.dtype} {list(src.shape)}; expected uint8 {list(dst.shape)}")
        with torch.no_grad():
            self.weight.copy_(codes)
            self.weight_scale.copy_(packed.scale)
            if self.recipe.weight == "nvfp4":
                if packed.global_scale is None:
                    raise KilnError(Status.INVALID_ARGUMENT, "load_packed: an nvfp4 weight needs its global_scale")
                self.weight_global = packed.global_scale.detach().to(torch.float32).clone()
            if bias is not None:
                if self.bias is None or bias.shape != self.bias.shape:
                    raise KilnError(Status.INVALID_ARGUMENT,
                                    f"load_packed: bias of shape {list(bias.shape)} for a layer with "
                                    f"{'no bias' if self.bias is None else list(self.bias.shape)}")
                self.bias.copy_(bias)
        return self

    def _main_grad(self):
        if not self.fuse_wgrad_accumulation:
            return None
        main_grad = getattr(self.weight, "main_grad", None)
        if main_grad is None:
            raise KilnError(Status.INVALID_ARGUMENT,
                            f"{type(self).__name__}: fuse_wgrad_accumulation is set but weight.main_grad is missing "
                            "(attach an fp32 tensor shaped like the weight)")
        return main_grad

    def _plans(self):
        """(spec, n, k) of every plan this layer runs (quantize specs take n = 0 and k = the input's columns)."""
        rec = self.recipe
        if rec.x_format:
            layer = _functional.quantized_layer(rec, self.out_features, self.in_features, self.bias is not None,
                                                self.fuse_wgrad_accumulation, self.weight.dtype, self.experts)
            return _functional.quantized_plans(rec, layer)
        layer = _functional.layer_of(self.recipe, self.weight, self.weight_global, self.bias is not None,
                                     self.fuse_wgrad_accumulation, self.experts)
        specs = [layer.forward, layer.dgrad] + ([layer.wgrad] if layer.wgrad else [])
        return [(s, layer.n, layer.k) for s in specs]

    def extra_repr(self):
        lead = f"experts={self.experts}, " if self.experts else ""
        return (f"{lead}in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, recipe={self.recipe.name}")


class Linear(_KilnLayer):
    """torch.nn.Linear through kiln: y = x Wᵀ + b with x [..., in_features] bfloat16 on a GPU.

    recipe "bf16": W a trainable bfloat16 parameter. "fp8_block": W a trainable bfloat16 parameter that
    kiln quantizes to FP8 128x128 blocks once per value (the optimizer step), X and dY quantized to
    1x128 blocks (and along M for wgrad) on every call; in_features a multiple of 128, out_features of 8. "mxfp4_frozen" / "nvfp4_frozen": W packed in
    buffers (load them with load_packed(quantize_weight(w, ...)) or from a checkpoint; or use
    Linear.from_float) with no gradient; x still gets its true gradient, so adapters around the layer
    train. fuse_wgrad_accumulation: dW is added to weight.main_grad (fp32) and weight.grad stays None."""

    def __init__(self, in_features, out_features, bias=True, recipe="bf16", *, fuse_wgrad_accumulation=False,
                 device=None, dtype=torch.bfloat16):
        super().__init__(0, in_features, out_features, bias, recipe, fuse_wgrad_accumulation, device, dtype)

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, recipe="mxfp4_frozen"):
        """A frozen layer holding kiln's quantization of a bf16 weight [N, K] (on its GPU)."""
        rec = _recipe(recipe)
        layer = cls(weight.shape[1], weight.shape[0], bias is not None, rec, device=weight.device)
        if rec.frozen:
            return layer.load_packed(quantize_weight(weight, rec.weight), bias)
        with torch.no_grad():
            layer.weight.copy_(weight)
            if bias is not None:
                layer.bias.copy_(bias)
        return layer

    def forward(self, x):
        return _functional.linear(x, self.weight, self.bias, self.recipe, weight_scale=self.weight_scale,
                                  weight_global=self.weight_global, main_grad=self._main_grad())


class GroupedLinear(_KilnLayer):
    """Per-expert linear layers over tokens sorted by expert: forward(x, offsets) with x [M, in_features]
    bfloat16 and offsets int32 [E] cumulative row ends (offsets[-1] == M). Weights [E, out, in]; the
    recipes and fuse_wgrad_accumulation as in Linear. "fp8_block" quantizes each expert's weight in its
    own 128x128 blocks and each expert's tokens in their own 128-token blocks for wgrad (the padded
    column-wise copies of X and dY: 128 x (ceil(M / 128) + E) columns each, docs/training.md)."""

    def __init__(self, num_experts, in_features, out_features, bias=True, recipe="bf16", *,
                 fuse_wgrad_accumulation=False, device=None, dtype=torch.bfloat16):
        if num_experts < 1:
            raise KilnError(Status.INVALID_ARGUMENT, f"GroupedLinear: num_experts={num_experts}; expected >= 1")
        super().__init__(num_experts, in_features, out_features, bias, recipe, fuse_wgrad_accumulation, device, dtype)

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, recipe="mxfp4_frozen",
                   per_expert_global: bool = False):
        """A frozen grouped layer holding kiln's quantization of bf16 weights [E, N, K]."""
        rec = _recipe(recipe)
        layer = cls(weight.shape[0], weight.shape[2], weight.shape[1], bias is not None, rec, device=weight.device)
        if rec.frozen:
            return layer.load_packed(quantize_weight(weight, rec.weight, per_expert_global), bias)
        with torch.no_grad():
            layer.weight.copy_(weight)
            if bias is not None:
                layer.bias.copy_(bias)
        return layer

    def forward(self, x, offsets):
        return _functional.grouped_linear(x, self.weight, offsets, self.bias, self.recipe,
                                          weight_scale=self.weight_scale, weight_global=self.weight_global,
                                          main_grad=self._main_grad())


def prepare(module: torch.nn.Module) -> int:
    """Compiles and loads every kernel the kiln layers in module run (forward, dgrad, wgrad), so that the
    first step does not compile and CUDA-graph capture can follow. Returns the number of plans prepared."""
    count = 0
    for layer in module.modules():
        if isinstance(layer, _KilnLayer):
            for spec, n, k in layer._plans():
                prepare_plan(spec, n, k)
                count += 1
    return count
