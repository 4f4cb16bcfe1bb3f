#!/usr/bin/env python3
"""LoRA over frozen MXFP4 experts with kiln.torch: the experts stay packed (4.25 bits per weight), the
gradient reaches the input and the low-rank adapters, and no bf16 copy of an expert is made.

    KILN_LIBRARY=build/capi/libkiln.so python3 examples/training/lora_frozen_mxfp4.py

A teacher with the same frozen base plus a hidden low-rank term makes the targets; the adapters learn
that term, so the loss falls towards zero. Prints the loss every 20 steps.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kiln.torch as kt  # noqa: E402

EXPERTS, HIDDEN, OUT, RANK, TOKENS = 8, 1024, 2048, 16, 2048


class LoRAExperts(torch.nn.Module):
    """y = base(x) + B_e (A_e x) per expert, with base a frozen packed MXFP4 GroupedLinear."""

    def __init__(self, base: kt.GroupedLinear, rank: int):
        super().__init__()
        self.base = base
        self.lora_a = torch.nn.Parameter(torch.randn(base.experts, rank, base.in_features, device="cuda",
                                                     dtype=torch.bfloat16) / base.in_features ** 0.5)
        self.lora_b = torch.nn.Parameter(torch.zeros(base.experts, base.out_features, rank, device="cuda",
                                                     dtype=torch.bfloat16))

    def forward(self, x, offsets):
        low = kt.grouped_linear(x, self.lora_a, offsets, recipe="bf16")
        return self.base(x, offsets) + kt.grouped_linear(low, self.lora_b, offsets, recipe="bf16")


def main():
    if not torch.cuda.is_available():
        sys.exit("lora_frozen_mxfp4.py: needs a CUDA GPU")
    torch.manual_seed(0)
    w = torch.randn(EXPERTS, OUT, HIDDEN, device="cuda", dtype=torch.bfloat16) / HIDDEN ** 0.5
    base = kt.GroupedLinear.from_float(w, recipe="mxfp4_frozen")  # kiln's MXFP4 quantizer, on the GPU
    del w
    model = LoRAExperts(base, RANK)
    hidden_a = torch.randn(EXPERTS, RANK, HIDDEN, device="cuda", dtype=torch.bfloat16) / HIDDEN ** 0.5
    hidden_b = torch.randn(EXPERTS, OUT, RANK, device="cuda", dtype=torch.bfloat16) / RANK ** 0.5
    counts = torch.full((EXPERTS,), TOKENS // EXPERTS, dtype=torch.int32)
    offsets = counts.cumsum(0).to(torch.int32).cuda()
    opt = torch.optim.Adam([model.lora_a, model.lora_b], lr=3e-3)
    packed = base.weight.numel() + base.weight_scale.numel()
    print(f"frozen base: {EXPERTS} experts x {OUT} x {HIDDEN}, {packed / 1e6:.1f} MB packed "
          f"(a bf16 copy would be {2 * EXPERTS * OUT * HIDDEN / 1e6:.1f} MB)")
    for step in range(101):
        x = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            target = base(x, offsets) + kt.grouped_linear(kt.grouped_linear(x, hidden_a, offsets), hidden_b, offsets)
        loss = (model(x, offsets) - target).float().square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"step {step:3d}  loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
