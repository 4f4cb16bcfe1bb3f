"""gpt-oss in transformers with kiln's experts: swap_experts(model) replaces every gpt-oss experts module of a
transformers model with a kiln.torch.MoEExperts holding the experts packed in MXFP4 (frozen), so LoRA or
any other training of the rest of the model runs without a bf16 copy of an expert.

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
from ._moe import MoEExperts
from ._modules import quantize_weight


def _is_gpt_oss_experts(module) -> bool:
    names = ("gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias", "alpha", "limit")
    return all(hasattr(module, n) for n in names) and isinstance(getattr(module, "gate_up_proj"), torch.Tensor)


def _decode_mxfp4(packed):
    lut = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                       dtype=torch.float32, device=packed.codes.device)
    vals = torch.stack([lut[(packed.codes & 15).long()], lut[(packed.codes >> 4).long()]], dim=-1).flatten(-2)
    return (vals.unflatten(-1, (-1, 32)) * torch.exp2(packed.scale.float() - 127.0).unsqueeze(-1)).flatten(-2)


def _packed(name: str, weight: torch.Tensor, transposed: bool):
    """MXFP4 of a transformers expert weight ([E, K, N] when transposed, else [E, N, K]) as kiln's
    [E, N, K], checked exact."""
    w = (weight.detach().transpose(1, 2) if transposed else weight.detach()).contiguous().to(torch.bfloat16)
    packed = quantize_weight(w, "mxfp4")
    if not torch.equal(_decode_mxfp4(packed), w.float()):
        raise KilnError(Status.INVALID_ARGUMENT,
                        f"swap_experts: {name} is not exactly representable in MXFP4 (its values are not the "
                        "dequantization of a gpt-oss checkpoint), so packing it would change the model")
    return packed


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
