"""MoEExperts: a gpt-oss-style expert block (interleaved gate|up, clamped SwiGLU, biases) on kiln's grouped
layers, from the checkpoint's own tensors."""

from typing import Optional

import torch

from ._functional import _fail, grouped_linear
from ._modules import GroupedLinear, PackedWeight


class _GatherSlots(torch.autograd.Function):
    """rows = x[order // k]: each token's row once per routing slot, in expert order. The backward sums each
    token's k slot gradients in slot order (not an index_add: no atomics, so it is deterministic)."""

    @staticmethod
    def forward(ctx, x, order, inverse, top_k: int):
        ctx.save_for_backward(inverse)
        ctx.top_k = top_k
        return x[order // top_k]

    @staticmethod
    def backward(ctx, grad_rows):
        (inverse,) = ctx.saved_tensors
        return grad_rows[inverse].unflatten(0, (-1, ctx.top_k)).sum(dim=1), None, None, None


class MoEExperts(torch.nn.Module):
    """The experts of a gpt-oss MoE layer: per token t and slot j with expert e = router_indices[t, j],

        h = x[t] W_gate_up[e]ᵀ + b_gate_up[e]                    (2I columns, gate = h[0::2], up = h[1::2])
        g = min(gate, limit);  u = clamp(up, -limit, limit)
        y[t] = Σ_j routing_weights[t, j] · ((g · sigmoid(alpha · g) · (u + 1)) W_down[e]ᵀ + b_down[e])

    recipe "mxfp4_frozen" (the gpt-oss checkpoint: weights stay packed, no gradient; gradients reach the
    hidden states, the routing weights and the adapters), "nvfp4_frozen", or "bf16" (trainable experts).
    lora_rank > 0 adds trainable low-rank adapters to both projections, run as kiln grouped GEMMs around the
    frozen ones (y += B_e (A_e x) · lora_scale), never as W + ΔW.

    forward(hidden_states [..., H] bfloat16, router_indices int [T, k], routing_weights [T, k] (or [T, E],
    gpt-oss's scattered scores)) -> hidden_states' shape, T the number of tokens (the product of the leading
    dimensions); top_k_index / top_k_weights are accepted as the names of the last two. The tokens' rows are gathered by expert (a stable sort, so
    the order is fixed), and each token's k outputs are summed in slot order: gradients are
    deterministic."""

    def __init__(self, num_experts: int, hidden_size: int, intermediate_size: int, recipe="mxfp4_frozen", *,
                 alpha: float = 1.702, limit: float = 7.0, lora_rank: int = 0, lora_alpha: Optional[float] = None,
                 device=None, dtype=torch.bfloat16):
        super().__init__()
        self.num_experts = num_experts
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.alpha = float(alpha)
        self.limit = float(limit)
        self.gate_up = GroupedLinear(num_experts, hidden_size, 2 * intermediate_size, True, recipe,
                                     device=device, dtype=dtype)
        self.down = GroupedLinear(num_experts, intermediate_size, hidden_size, True, recipe, device=device, dtype=dtype)
        self.lora_rank = int(lora_rank)
        if self.lora_rank < 0 or self.lora_rank % 8:
            _fail(f"MoEExperts: lora_rank={lora_rank}; expected 0 or a multiple of 8 (kiln's rows are 16-byte "
                  "aligned, so a bf16 dimension is a multiple of 8)")
        self.lora_scale = (lora_alpha if lora_alpha is not None else self.lora_rank) / max(self.lora_rank, 1)
        if self.lora_rank:
            def a(n_in):  # A: random, B: zero, so the adapters start as the identity update (LoRA's init)
                return torch.nn.Parameter(torch.randn(num_experts, self.lora_rank, n_in, device=device, dtype=dtype)
                                          / n_in ** 0.5)

            def b(n_out):
                return torch.nn.Parameter(torch.zeros(num_experts, n_out, self.lora_rank, device=device, dtype=dtype))

            self.gate_up_lora_a, self.gate_up_lora_b = a(hidden_size), b(2 * intermediate_size)
            self.down_lora_a, self.down_lora_b = a(intermediate_size), b(hidden_size)

    @classmethod
    def from_gpt_oss(cls, gate_up_proj_blocks, gate_up_proj_scales, gate_up_proj_bias, down_proj_blocks,
                     down_proj_scales, down_proj_bias, **kwargs):
        """The block from a gpt-oss checkpoint's tensors as stored: `*_blocks` uint8 [E, N, K/32, 16],
        `*_scales` uint8 [E, N, K/32] (E8M0), `*_bias` [E, N]; gate|up interleaved along 2I."""
        experts, two_i = gate_up_proj_blocks.shape[0], gate_up_proj_blocks.shape[1]
        hidden = down_proj_blocks.shape[1]
        block = cls(experts, hidden, two_i // 2, "mxfp4_frozen", device=gate_up_proj_blocks.device, **kwargs)
        block.gate_up.load_packed(PackedWeight(gate_up_proj_blocks, gate_up_proj_scales), gate_up_proj_bias)
        block.down.load_packed(PackedWeight(down_proj_blocks, down_proj_scales), down_proj_bias)
        return block

    def _project(self, layer: GroupedLinear, name: str, rows, offsets):
        y = layer(rows, offsets)
        if self.lora_rank:
            low = grouped_linear(rows, getattr(self, name + "_lora_a"), offsets, recipe="bf16")
            y = y + grouped_linear(low, getattr(self, name + "_lora_b"), offsets, recipe="bf16") * self.lora_scale
        return y

    def forward(self, hidden_states: torch.Tensor, router_indices: Optional[torch.Tensor] = None,
                routing_weights: Optional[torch.Tensor] = None, *, top_k_index: Optional[torch.Tensor] = None,
                top_k_weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        # transformers' MoE blocks call their experts with either pair of names.
        router_indices = router_indices if router_indices is not None else top_k_index
        routing_weights = routing_weights if routing_weights is not None else top_k_weights
        return route(hidden_states, router_indices, routing_weights, self.num_experts, self.hidden_size, self.alpha,
                     self.limit, lambda which, rows, offsets: self._project(getattr(self, which), which, rows, offsets),
                     "MoEExperts")

    def extra_repr(self):
        lora = f", lora_rank={self.lora_rank}" if self.lora_rank else ""
        return (f"experts={self.num_experts}, hidden={self.hidden_size}, intermediate={self.intermediate_size}, "
                f"alpha={self.alpha}, limit={self.limit}{lora}")


def route(hidden_states, router_indices, routing_weights, num_experts: int, hidden_size: int, alpha: float,
          limit: float, project, where: str):
    """The gpt-oss expert block around two grouped projections: gathers each token's row once per routing
    slot in expert order (a stable sort), h = project("gate_up", rows, offsets), the clamped SwiGLU on the
    interleaved gate|up columns, y = project("down", act, offsets), the routing-weight multiply and each
    token's k outputs summed in slot order (deterministic). routing_weights may be [T, k] or gpt-oss's
    scattered [T, E]."""
    if router_indices is None or routing_weights is None:
        _fail(f"{where}: pass router_indices and routing_weights (or top_k_index and top_k_weights)")
    x = hidden_states
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.shape[-1] != hidden_size:
        _fail(f"{where}: hidden_states must be [..., {hidden_size}], got "
              f"{list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    lead = x.shape[:-1]
    x = x.reshape(-1, hidden_size)
    tokens, top_k = router_indices.shape if router_indices.dim() == 2 else (-1, -1)
    if tokens != x.shape[0]:
        _fail(f"{where}: router_indices must be [T, k] with T = {x.shape[0]} tokens, got {list(router_indices.shape)}")
    if routing_weights.shape == (tokens, num_experts) and top_k != num_experts:
        routing_weights = routing_weights.gather(1, router_indices.long())  # gpt-oss's scattered scores
    if routing_weights.shape != (tokens, top_k):
        _fail(f"{where}: routing_weights must be [T, k] = [{tokens}, {top_k}] or [T, E], "
              f"got {list(routing_weights.shape)}")
    flat = router_indices.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    offsets = torch.bincount(flat, minlength=num_experts).cumsum(0).to(torch.int32)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=order.device)
    h = project("gate_up", _GatherSlots.apply(x, order, inverse, top_k), offsets)
    gate = h[:, 0::2].clamp(max=limit)
    up = h[:, 1::2].clamp(-limit, limit)
    act = (gate * torch.sigmoid(alpha * gate) * (up + 1)).contiguous()
    y = project("down", act, offsets)
    y = y * routing_weights.reshape(-1)[order, None].to(y.dtype)
    return y[inverse].unflatten(0, (tokens, top_k)).sum(dim=1).reshape(*lead, hidden_size)
