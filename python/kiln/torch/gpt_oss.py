"""gpt-oss in transformers with kiln's experts, two ways:

- use_kiln_experts(model): registers kiln's experts forward with transformers' experts-implementation
  interface (transformers >= 5: `ALL_EXPERTS_FUNCTIONS`, read by the modules that
  `use_experts_implementation` decorates, gpt-oss's GptOssExperts among them) and selects it in the model's
  config. The modules and their parameters stay transformers' own: frozen expert weights (requires_grad
  False) are packed once into MXFP4 when they are exactly representable (the dequantization of a gpt-oss
  checkpoint) and read packed; trainable ones run kiln's bf16 grouped GEMMs with their gradients.
- swap_experts(model): replaces every gpt-oss experts module with a kiln.torch.MoEExperts holding the
  experts packed in MXFP4 (frozen), optionally with LoRA adapters, and releases the bf16 weights, so
  LoRA or any other training of the rest of the model runs without a bf16 copy of an expert.

    model = transformers.AutoModelForCausalLM.from_pretrained("openai/gpt-oss-20b", dtype=torch.bfloat16,
                                                              device_map="cuda")   # experts dequantized
    kiln.torch.gpt_oss.swap_experts(model)      # experts back to MXFP4, exactly the checkpoint's values

gpt-oss's checkpoint stores the experts in MXFP4, and transformers dequantizes them to bf16 for training:
every bf16 value is then an E2M1 code times a power of two, so kiln's MXFP4 quantizer gets the same values
back exactly (the block scale it picks is the one that represents the block). swap_experts checks this
and refuses a model whose experts do not round-trip, naming the layer.
"""

import torch

from .._errors import KilnError, Status
from ._functional import grouped_linear
from ._moe import MoEExperts, route
from ._modules import quantize_weight

IMPLEMENTATION = "kiln"  # the name use_kiln_experts registers and selects


def _is_gpt_oss_experts(module) -> bool:
    names = ("gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias", "alpha", "limit")
    return all(hasattr(module, n) for n in names) and isinstance(getattr(module, "gate_up_proj"), torch.Tensor)


def experts_modules(model: torch.nn.Module) -> list:
    """The gpt-oss experts modules of a transformers model (gate_up_proj, down_proj, their biases,
    alpha and limit), in module order."""
    return [m for m in model.modules() if _is_gpt_oss_experts(m)]


def _decode_mxfp4(packed):
    lut = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                       dtype=torch.float32, device=packed.codes.device)
    vals = torch.stack([lut[(packed.codes & 15).long()], lut[(packed.codes >> 4).long()]], dim=-1).flatten(-2)
    return (vals.unflatten(-1, (-1, 32)) * torch.exp2(packed.scale.float() - 127.0).unsqueeze(-1)).flatten(-2)


def to_mxfp4_values(weight: torch.Tensor, transposed: bool = True) -> torch.Tensor:
    """weight (bf16 [E, K, N] as gpt-oss holds its experts when transposed, else [E, N, K]) rounded to the
    values an MXFP4 checkpoint dequantizes to (kiln's MXFP4 quantizer along K, then decoded): what a
    randomly initialised model needs to stand in for the real checkpoint."""
    w = (weight.detach().transpose(1, 2) if transposed else weight.detach()).contiguous().to(torch.bfloat16)
    values = _decode_mxfp4(quantize_weight(w, "mxfp4")).to(weight.dtype)
    return values.transpose(1, 2) if transposed else values


def _exact_mxfp4(w: torch.Tensor):
    """kiln's MXFP4 packing of a bf16 [E, N, K] weight when it decodes back to exactly w, else None."""
    if w.shape[-1] % 32:
        return None
    packed = quantize_weight(w, "mxfp4")
    # Checked a row block at a time: a whole f32 decode of a large expert tensor would cost gigabytes.
    rows = w.reshape(-1, w.shape[-1])
    codes, scales = packed.codes.reshape(rows.shape[0], -1), packed.scale.reshape(rows.shape[0], -1)
    for r in range(0, rows.shape[0], 4096):
        part = type(packed)(codes[r:r + 4096], scales[r:r + 4096])
        if not torch.equal(_decode_mxfp4(part), rows[r:r + 4096].float()):
            return None
    return packed


def _packed(name: str, weight: torch.Tensor, transposed: bool):
    """MXFP4 of a transformers expert weight ([E, K, N] when transposed, else [E, N, K]) as kiln's
    [E, N, K], checked exact."""
    w = (weight.detach().transpose(1, 2) if transposed else weight.detach()).contiguous().to(torch.bfloat16)
    packed = _exact_mxfp4(w)
    if packed is None:
        raise KilnError(Status.INVALID_ARGUMENT,
                        f"swap_experts: {name} is not exactly representable in MXFP4 (its values are not the "
                        "dequantization of a gpt-oss checkpoint), so packing it would change the model")
    return packed


def _projection(module, which: str):
    """(weight, weight_scale, recipe) kiln reads one projection of a transformers experts module with.
    Trainable: the bf16 parameter as [E, N, K] (a transpose copy inside autograd, so dW reaches it).
    Frozen: packed MXFP4 when exact, else a bf16 [E, N, K] copy; made once per value of the parameter
    (cached on the module, remade when its version counter moves)."""
    param = getattr(module, which + "_proj")
    transposed = bool(getattr(module, "is_transposed", True))
    if param.requires_grad:
        w = param.transpose(1, 2) if transposed else param
        return w.to(torch.bfloat16).contiguous(), None, "bf16"
    cache = module.__dict__.setdefault("_kiln_projections", {})
    key = (param._version, param.data_ptr(), transposed)
    hit = cache.get(which)
    if hit is not None and hit[0] == key:
        return hit[1]
    with torch.inference_mode(False):  # made under inference_mode, the cache would poison a later training step
        w = (param.detach().transpose(1, 2) if transposed else param.detach()).to(torch.bfloat16).contiguous()
        packed = _exact_mxfp4(w)
    made = (w, None, "bf16") if packed is None else (packed.codes, packed.scale, "mxfp4_frozen")
    cache[which] = (key, made)
    return made


def experts_forward(module, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                    top_k_weights: torch.Tensor) -> torch.Tensor:
    """transformers' experts-implementation signature, for gpt-oss experts modules (gate_up_proj,
    down_proj, their biases, alpha, limit): the block of kiln.torch.MoEExperts on the module's own
    tensors, with gradients to the hidden states, the routing weights, the biases and trainable weights."""
    if not _is_gpt_oss_experts(module):
        raise KilnError(Status.UNSUPPORTED,
                        f"kiln experts implementation: {type(module).__name__} is not a gpt-oss experts module "
                        "(gate_up_proj, down_proj, their biases, alpha, limit)")
    if getattr(module, "is_concatenated", False):
        raise KilnError(Status.UNSUPPORTED,
                        f"kiln experts implementation: {type(module).__name__} stores gate and up concatenated; "
                        "kiln's gpt-oss block reads them interleaved (gate = columns 0::2, up = 1::2)")
    weights = {which: _projection(module, which) for which in ("gate_up", "down")}
    experts, hidden = weights["gate_up"][0].shape[0], weights["down"][0].shape[1]

    def project(which, rows, offsets):
        w, scale, recipe = weights[which]
        return grouped_linear(rows, w, offsets, getattr(module, which + "_proj_bias"), recipe, weight_scale=scale)

    return route(hidden_states, top_k_index, top_k_weights, experts, hidden, float(module.alpha),
                 float(module.limit), project, "kiln experts implementation")


def register(name: str = IMPLEMENTATION) -> str:
    """Registers experts_forward with transformers' experts-implementation interface under `name`."""
    try:
        from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS
    except ImportError as e:
        raise KilnError(Status.UNSUPPORTED,
                        f"kiln.torch.gpt_oss.register: transformers has no experts-implementation interface "
                        f"(transformers.integrations.moe.ALL_EXPERTS_FUNCTIONS, transformers >= 5): {e}") from e
    ALL_EXPERTS_FUNCTIONS.register(name, experts_forward)
    return name


def use_kiln_experts(model: torch.nn.Module, name: str = IMPLEMENTATION) -> int:
    """Registers kiln's experts forward and selects it for every experts module of `model` that reads
    its config's experts implementation (transformers' use_experts_implementation). Returns how many
    gpt-oss experts modules will run through kiln. transformers' own set_experts_implementation only
    accepts its built-in names, so the config's value is set directly (its setter reaches sub-configs)."""
    register(name)
    targets = [m for _, m in model.named_modules() if _is_gpt_oss_experts(m)]
    configs = {id(c): c for c in [getattr(model, "config", None)] + [getattr(m, "config", None) for m in targets]
               if c is not None}
    if not targets or not configs:
        raise KilnError(Status.INVALID_ARGUMENT,
                        f"use_kiln_experts: {type(model).__name__} has no gpt-oss experts module with a config "
                        "(transformers' GptOssExperts, decorated with use_experts_implementation)")
    for config in configs.values():
        config._experts_implementation = name
    return len(targets)


def swap_experts(model: torch.nn.Module, lora_rank: int = 0, lora_alpha=None) -> int:
    """Replaces each gpt-oss experts module of `model` (transformers' GptOssExperts with bf16 weights
    [E, H, 2I] / [E, I, H], interleaved gate|up) with a frozen MXFP4 kiln.torch.MoEExperts (optionally with
    LoRA adapters of lora_rank on both projections). Returns how many modules it replaced. The bf16 expert
    weights are released with the replaced modules."""
    targets = [(name, m) for name, m in model.named_modules() if _is_gpt_oss_experts(m)]
    for name, m in targets:
        gate_up, down = m.gate_up_proj, m.down_proj
        if gate_up.dim() != 3 or down.dim() != 3 or not gate_up.is_cuda:
            raise KilnError(Status.INVALID_ARGUMENT,
                            f"swap_experts: {name}.gate_up_proj must be a 3-D CUDA tensor [E, H, 2I], got "
                            f"{list(gate_up.shape)} on {gate_up.device}")
        transposed = bool(getattr(m, "is_transposed", True))  # gpt-oss keeps [E, in, out]
        experts, hidden, two_i = gate_up.shape if transposed else (gate_up.shape[0], gate_up.shape[2],
                                                                     gate_up.shape[1])
        block = MoEExperts(experts, hidden, two_i // 2, "mxfp4_frozen", alpha=float(m.alpha), limit=float(m.limit),
                           lora_rank=lora_rank, lora_alpha=lora_alpha, device=gate_up.device)
        block.gate_up.load_packed(_packed(name + ".gate_up_proj", gate_up, transposed), m.gate_up_proj_bias.detach())
        block.down.load_packed(_packed(name + ".down_proj", down, transposed), m.down_proj_bias.detach())
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        setattr(parent, name.rsplit(".", 1)[-1], block)
    return len(targets)
