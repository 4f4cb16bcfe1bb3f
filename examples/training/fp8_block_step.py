#!/usr/bin/env python3
"""FP8 training with DeepSeek-V3's block scaling through kiln.torch: an MLP whose two Linear layers use
recipe fp8_block (X and dY quantized to 1x128 blocks, W to 128x128 blocks once per optimizer step; the
forward, dgrad and wgrad GEMMs in FP8), with bf16 master weights, dW added into fp32 main_grad over
two micro-batches, and AdamW. The same MLP on recipe bf16 runs beside it from the same weights.
With --experts E the MLP is a mixture of E experts (GroupedLinear layers; each token routed to one
expert, the tokens sorted by expert), trained the same way through the grouped FP8 kernels. --recipe
mxfp8, fp8_tensor or fp8_rowwise (dense only) trains with MXFP8 blocks, per-tensor current scaling or
row-wise (per-token x per-channel) scaling instead.

    KILN_LIBRARY=build/capi/libkiln.so python3 examples/training/fp8_block_step.py [--steps 30] [--experts 8]
        [--recipe fp8_block|mxfp8|fp8_tensor|fp8_rowwise]

Prints both losses every 5 steps and the median time of a training step (two micro-batches' forward
and backward and the optimizer step) for each recipe.
"""

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kiln.torch as kt  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self, hidden: int, inner: int, recipe: str, experts: int = 0):
        super().__init__()
        self.experts = experts
        if experts:
            self.up = kt.GroupedLinear(experts, hidden, inner, bias=False, recipe=recipe,
                                       fuse_wgrad_accumulation=True, device="cuda")
            self.down = kt.GroupedLinear(experts, inner, hidden, bias=False, recipe=recipe,
                                         fuse_wgrad_accumulation=True, device="cuda")
        else:
            self.up = kt.Linear(hidden, inner, bias=False, recipe=recipe, fuse_wgrad_accumulation=True, device="cuda")
            self.down = kt.Linear(inner, hidden, bias=False, recipe=recipe, fuse_wgrad_accumulation=True,
                                  device="cuda")
        for p in self.parameters():
            p.main_grad = torch.zeros(p.shape, dtype=torch.float32, device="cuda")

    def forward(self, x, offsets=None):
        if self.experts:  # x: tokens sorted by expert, offsets: each expert's end row
            return self.down(torch.nn.functional.gelu(self.up(x, offsets)), offsets)
        return self.down(torch.nn.functional.gelu(self.up(x)))


def routed_batch(tokens: int, hidden: int, experts: int):
    """x [tokens, hidden] with its rows sorted by a random expert choice, and the int32 offsets."""
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    if not experts:
        return x, None
    choice = torch.randint(experts, (tokens,), device="cuda")
    order = torch.argsort(choice, stable=True)
    offsets = torch.bincount(choice, minlength=experts).cumsum(0).to(torch.int32)
    return x[order], offsets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--inner", type=int, default=14336)
    ap.add_argument("--tokens", type=int, default=4096, help="tokens per micro-batch")
    ap.add_argument("--experts", type=int, default=0, help="a mixture of this many experts (grouped layers)")
    ap.add_argument("--recipe", default="fp8_block", choices=["fp8_block", "mxfp8", "fp8_tensor", "fp8_rowwise"],
                    help="the quantized recipe trained beside bf16")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("fp8_block_step.py: needs a CUDA GPU")
    torch.manual_seed(0)
    if args.experts < 0:
        sys.exit(f"fp8_block_step.py: --experts {args.experts}; expected 0 (a dense MLP) or more")
    models = {name: MLP(args.hidden, args.inner, name, args.experts) for name in (args.recipe, "bf16")}
    models["bf16"].load_state_dict(models[args.recipe].state_dict())
    opts = {}
    for name, model in models.items():
        kt.prepare(model)
        opts[name] = torch.optim.AdamW(model.parameters(), lr=1e-4)
    teacher = torch.randn(args.hidden, args.hidden, device="cuda", dtype=torch.bfloat16) / args.hidden ** 0.5
    times = {name: [] for name in models}
    for step in range(args.steps):
        batches = [routed_batch(args.tokens, args.hidden, args.experts) for _ in range(2)]
        losses = {}
        for name, model in models.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            total = 0.0
            for x, offsets in batches:  # two micro-batches: the FP8 weights quantized once, dW into main_grad
                loss = (model(x, offsets) - x @ teacher).float().square().mean()
                loss.backward()
                total = total + loss.detach()
            for p in model.parameters():  # the optimizer reads main_grad
                p.grad = p.main_grad.to(p.dtype)
                p.main_grad.zero_()
            opts[name].step()
            opts[name].zero_grad(set_to_none=True)
            end.record()
            end.synchronize()
            if step >= 3:
                times[name].append(start.elapsed_time(end))
            losses[name] = (total / len(batches)).item()
        if step % 5 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {args.recipe} {losses[args.recipe]:.5f}  bf16 {losses['bf16']:.5f}")
    for name, t in times.items():
        if t:
            print(f"{name}: {statistics.median(t):.2f} ms per step (median of {len(t)})")


if __name__ == "__main__":
    main()
