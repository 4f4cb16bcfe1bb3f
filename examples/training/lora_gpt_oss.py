#!/usr/bin/env python3
"""LoRA fine-tuning of a gpt-oss model whose MXFP4 experts stay frozen and packed, through kiln's
transformers experts implementation; peft's LoRA adapters on the attention projections, the router
trained in full (its gradient comes through the routing weights kiln's expert block returns).

    KILN_LIBRARY=build/capi/libkiln.so python3 examples/training/lora_gpt_oss.py [--steps 50]
        [--compare-eager] [--out DIR]

The model is a randomly initialised small GptOssForCausalLM (nothing is downloaded) whose expert weights
are rounded to MXFP4 values, as the real checkpoint's are. With a real checkpoint the same three calls
apply: load it with transformers (experts dequantized to bf16), freeze it, add peft adapters, then
kiln.torch.gpt_oss.use_kiln_experts(model).

--compare-eager trains a second copy of the same model (same initial weights and adapters) with
transformers' eager experts in lockstep, prints both loss curves and their largest relative
difference, and with --out writes them to DIR/lora_curves.json. Needs transformers 5 and peft.
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kiln.torch import gpt_oss  # noqa: E402


def build(seed: int, experts_implementation: str, rank: int):
    import peft
    import transformers

    torch.manual_seed(seed)
    config = transformers.GptOssConfig(
        vocab_size=2048, hidden_size=512, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=2, head_dim=64, num_local_experts=8, num_experts_per_tok=2,
        layer_types=["sliding_attention", "full_attention"], sliding_window=64)
    model = transformers.GptOssForCausalLM(config).to("cuda", torch.bfloat16)
    with torch.no_grad():
        for module in gpt_oss.experts_modules(model):
            for name in ("gate_up_proj", "down_proj"):
                w = getattr(module, name)
                w.copy_(gpt_oss.to_mxfp4_values(w * (0.02 / w.float().std())))
    model.requires_grad_(False)
    torch.manual_seed(seed + 1)  # the adapters' initialisation, the same for both copies
    lora = peft.LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                           modules_to_save=["router"])
    model = peft.get_peft_model(model, lora)
    if experts_implementation == "kiln":
        replaced = gpt_oss.use_kiln_experts(model)
        assert replaced == config.num_hidden_layers
    else:
        model.config._experts_implementation = experts_implementation
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--compare-eager", action="store_true")
    ap.add_argument("--out", help="directory for lora_curves.json (with --compare-eager)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("lora_gpt_oss.py: needs a CUDA GPU")
    names = ["kiln"] + (["eager"] if args.compare_eager else [])
    models = {name: build(0, name, args.rank) for name in names}
    opts = {name: torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=args.lr)
            for name, m in models.items()}
    trainable = sum(p.numel() for p in models["kiln"].parameters() if p.requires_grad)
    print(f"trainable parameters: {trainable} (LoRA rank {args.rank} on attention, the router in full); "
          "experts frozen, read packed in MXFP4 by kiln")
    gen = torch.Generator(device="cuda").manual_seed(1234)
    batch = torch.randint(0, 2048, (4, 128), device="cuda", generator=gen)  # one batch, learnt by heart
    curves = {name: [] for name in names}
    for step in range(args.steps):
        for name, model in models.items():
            loss = model(input_ids=batch, labels=batch).loss
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            opts[name].step()
            curves[name].append(loss.item())
        line = "  ".join(f"{name} {curves[name][-1]:.5f}" for name in names)
        print(f"step {step:3d}  {line}")
    if args.compare_eager:
        rel = [abs(a - b) / abs(b) for a, b in zip(curves["kiln"], curves["eager"])]
        print(f"largest relative difference of the loss, kiln vs eager: {max(rel):.2e} (step {rel.index(max(rel))})")
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "lora_curves.json"), "w") as f:
                json.dump({"gpu": torch.cuda.get_device_name(), "steps": args.steps, "rank": args.rank,
                           "lr": args.lr, "kiln": curves["kiln"], "eager": curves["eager"], "rel": rel}, f, indent=1)


if __name__ == "__main__":
    main()
