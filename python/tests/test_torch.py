"""kiln.torch: shapes and argument checks through fake tensors (torch, no GPU), and the layers' forward
and backward against float64 autograd on the GPU."""

import pytest

import kiln

torch = pytest.importorskip("torch")
kt = pytest.importorskip("kiln.torch")

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


# ---- shapes and argument checks without a GPU (fake tensors) -------------------------------------------


def _fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


def test_forward_shapes_through_fake_tensors():
    # Fake tensors give shapes without a GPU; the autograd engine needs a device, so the backward's
    # shapes are checked by the GPU tests below.
    with _fake_mode():
        x = torch.empty(3, 5, 64, dtype=torch.bfloat16, device="cuda")
        w = torch.empty(96, 64, dtype=torch.bfloat16, device="cuda")
        b = torch.empty(96, dtype=torch.float32, device="cuda")
        y = kt.linear(x, w, b)
        assert y.shape == (3, 5, 96) and y.dtype == torch.bfloat16
        xg = torch.empty(40, 64, dtype=torch.bfloat16, device="cuda")
        codes = torch.empty(4, 96, 32, dtype=torch.uint8, device="cuda")
        scales = torch.empty(4, 96, 2, dtype=torch.uint8, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        y = kt.grouped_linear(xg, codes, offsets, recipe="mxfp4_frozen", weight_scale=scales)
        assert y.shape == (40, 96)
        # gpt-oss's blocks layout [E, N, K/32, 16] is the same bytes
        y = kt.grouped_linear(xg, codes.view(4, 96, 2, 16), offsets, recipe="mxfp4_frozen", weight_scale=scales)
        assert y.shape == (40, 96)
        dx = torch.ops.kiln.gemm("grouped_gemm[experts=4,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad",
                                 96, 64, torch.empty(40, 96, dtype=torch.bfloat16, device="cuda"), codes, scales)
        assert dx.shape == (40, 64)
        dw = torch.ops.kiln.gemm("grouped_gemm[experts=4,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad",
                                 96, 64, torch.empty(40, 96, dtype=torch.bfloat16, device="cuda"), xg)
        assert dw.shape == (4, 96, 64) and dw.dtype == torch.float32


def test_fp8_block_shapes_through_fake_tensors():
    with _fake_mode():
        layer = kt.Linear(256, 384, recipe="fp8_block", device="cuda")
        x = torch.empty(2, 50, 256, dtype=torch.bfloat16, device="cuda")
        y = layer(x)
        assert y.shape == (2, 50, 384) and y.dtype == torch.bfloat16
        a = torch.empty(200, 256, dtype=torch.bfloat16, device="cuda")
        codes, scales = torch.ops.kiln.quantize("quantize a=bf16 out=e4m3:block1x128", a)
        assert codes.shape == (200, 256) and codes.dtype == torch.uint8 and scales.shape == (200, 2)
        codes, scales = torch.ops.kiln.quantize("quantize a=bf16 out=e4m3:block1x128 transpose=true", a[:128])
        assert codes.shape == (256, 128) and scales.shape == (256, 1) and scales.dtype == torch.float32
        codes, scales = torch.ops.kiln.quantize("quantize a=bf16 out=e4m3:block128x128:ue8m0", a)
        assert codes.shape == (200, 256) and scales.shape == (2, 2) and scales.dtype == torch.uint8
    with pytest.raises(kiln.KilnError, match="the operator takes"):
        kt.quantize("quantize a=bf16 out=nvfp4", torch.empty(4, 64, dtype=torch.bfloat16))
    with pytest.raises(kiln.KilnError, match="a is on cpu; kiln runs on CUDA devices"):
        kt.quantize("quantize a=bf16 out=mxfp8", torch.empty(4, 64, dtype=torch.bfloat16))


def test_grouped_fp8_block_shapes_through_fake_tensors():
    grouped_t = "quantize[experts=4,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true"
    with _fake_mode():
        layer = kt.GroupedLinear(4, 256, 200, recipe="fp8_block", device="cuda")
        x = torch.empty(300, 256, dtype=torch.bfloat16, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        y = layer(x, offsets)
        assert y.shape == (300, 200) and y.dtype == torch.bfloat16
        # the padded column-wise copy: 128 x (ceil(300 / 128) + 4) columns, each expert in whole blocks
        codes, scales = torch.ops.kiln.quantize(grouped_t, x, offsets)
        assert codes.shape == (256, 128 * 7) and scales.shape == (256, 7) and scales.dtype == torch.float32
        codes, scales = torch.ops.kiln.quantize(grouped_t.replace("block1x128", "block1x128:ue8m0"), x[:0], offsets)
        assert codes.shape == (256, 512) and scales.dtype == torch.uint8
    a = torch.empty(8, 128, dtype=torch.bfloat16)
    with pytest.raises(kiln.KilnError, match=r"needs offsets, int32 \[4\]") as info:
        kt.quantize(grouped_t, a)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    with pytest.raises(kiln.KilnError, match=r"needs offsets, int32 \[4\].*torch.int64 \[4\]"):
        kt.quantize(grouped_t, a, torch.zeros(4, dtype=torch.int64))
    with pytest.raises(kiln.KilnError, match="takes no offsets"):
        kt.quantize("quantize a=bf16 out=e4m3:block1x128", a, torch.zeros(4, dtype=torch.int32))
    with pytest.raises(kiln.KilnError, match="the operator takes") as info:  # grouped row-wise: not a torch op
        kt.quantize("quantize[experts=4,layout=offsets] a=bf16 out=e4m3:block1x128", a, torch.zeros(4, dtype=torch.int32))
    assert info.value.status == kiln.Status.UNSUPPORTED


def test_fp8_block_layers_check_their_sizes():
    with pytest.raises(kiln.KilnError, match=r"in_features=192 is not a multiple of 128"):
        kt.Linear(192, 256, recipe="fp8_block")
    with pytest.raises(kiln.KilnError, match=r"out_features=100 is not a multiple of 8"):
        kt.Linear(256, 100, recipe="fp8_block")
    with pytest.raises(kiln.KilnError, match="bfloat16 master weight"):
        kt.Linear(256, 256, recipe="fp8_block", dtype=torch.float32)
    with pytest.raises(kiln.KilnError, match=r"in_features=64 is not a multiple of 128"):
        kt.GroupedLinear(4, 64, 256, recipe="fp8_block")
    with _fake_mode():
        x = torch.empty(8, 256, dtype=torch.bfloat16, device="cuda")
        with pytest.raises(kiln.KilnError, match=r"in_features \(the weight's K\) to be a multiple of 128"):
            kt.linear(x[:, :200], torch.empty(96, 200, dtype=torch.bfloat16, device="cuda"), recipe="fp8_block")
        # N needs no 128: dgrad pads dY's columns and W's rows with zeros
        assert kt.linear(x, torch.empty(200, 256, dtype=torch.bfloat16, device="cuda"),
                         recipe="fp8_block").shape == (8, 200)


# (recipe, K, a K off its rule, the row quantize spec, its scales' shape and dtype for a [64, K] input)
_RECIPE_SIZES = [("mxfp8", 96, 80, "quantize a=bf16 out=mxfp8", (64, 3), torch.uint8),
                 ("fp8_tensor", 48, 40, "quantize a=bf16 out=e4m3", (1,), torch.float32),
                 ("fp8_rowwise", 48, 40, "quantize a=bf16 out=e4m3:m", (64,), torch.float32)]


@pytest.mark.parametrize("recipe,k,bad_k,row,scale_shape,scale_dtype", _RECIPE_SIZES)
def test_mxfp8_and_fp8_tensor_shapes_and_errors(recipe, k, bad_k, row, scale_shape, scale_dtype):
    with _fake_mode():
        layer = kt.Linear(k, 200, recipe=recipe, device="cuda")  # K in its blocks / 16-byte rows; N any multiple of 8
        y = layer(torch.empty(3, 50, k, dtype=torch.bfloat16, device="cuda"))
        assert y.shape == (3, 50, 200) and y.dtype == torch.bfloat16
        a = torch.empty(64, k, dtype=torch.bfloat16, device="cuda")
        codes, scales = torch.ops.kiln.quantize(row, a)
        assert codes.shape == (64, k) and scales.shape == scale_shape and scales.dtype == scale_dtype
        if recipe == "mxfp8":
            codes, scales = torch.ops.kiln.quantize(row + " transpose=true", a)
            assert codes.shape == (k, 64) and scales.shape == (k, 2)
        if recipe == "fp8_rowwise":  # the per-column copy, padded to 16 columns: [K, 16 * ceil(M / 16)], [K]
            codes, scales = torch.ops.kiln.quantize(row + " transpose=true", a[:50])
            assert codes.shape == (k, 64) and scales.shape == (k,) and scales.dtype == torch.float32
    block = 32 if recipe == "mxfp8" else 16
    with pytest.raises(kiln.KilnError, match=rf"in_features={bad_k} is not a multiple of {block}"):
        kt.Linear(bad_k, 64, recipe=recipe)
    with pytest.raises(kiln.KilnError, match=f"recipe {recipe} on a grouped layer") as info:
        kt.GroupedLinear(4, 64, 64, recipe=recipe)
    assert info.value.status == kiln.Status.UNSUPPORTED


def test_grouped_bias_grad_sums_each_experts_rows():
    from kiln.torch._functional import _bias_grad

    dy = torch.randn(30, 6, dtype=torch.bfloat16)
    counts = [4, 0, 20, 3]  # 3 rows past offsets[-1] belong to no expert
    offsets = torch.tensor(counts).cumsum(0).to(torch.int32)
    got = _bias_grad(dy, offsets, 4)
    starts = [0, 4, 4, 24]
    ref = torch.stack([dy[s:s + c].float().sum(0) for s, c in zip(starts, counts)])
    assert got.shape == (4, 6)
    torch.testing.assert_close(got, ref)


def test_argument_errors_name_the_argument():
    x = torch.empty(4, 64, dtype=torch.bfloat16)
    w = torch.empty(32, 64, dtype=torch.bfloat16)
    with pytest.raises(kiln.KilnError, match="kiln runs on CUDA devices"):
        kt.linear(x, w)
    with _fake_mode():
        xc = torch.empty(4, 64, dtype=torch.float32, device="cuda")
        wc = torch.empty(32, 64, dtype=torch.bfloat16, device="cuda")
        with pytest.raises(kiln.KilnError, match="takes bfloat16 x, got torch.float32"):
            kt.linear(xc, wc)
        with pytest.raises(kiln.KilnError, match=r"last dimension must be the weight's in_features 48"):
            kt.linear(xc.to(torch.bfloat16), wc[:, :48])
        with pytest.raises(kiln.KilnError, match=r"offsets must be an int32 tensor \[2\]"):
            kt.grouped_linear(xc.to(torch.bfloat16), wc.view(2, 16, 64), torch.empty(2, dtype=torch.int64,
                                                                                       device="cuda"))
        with pytest.raises(kiln.KilnError, match="needs the weight's block scales"):
            kt.linear(xc.to(torch.bfloat16), torch.empty(32, 32, dtype=torch.uint8, device="cuda"),
                      recipe="mxfp4_frozen")
        codes = torch.empty(32, 64, dtype=torch.uint8, device="cuda")[:, :32]  # rows 64 bytes apart
        with pytest.raises(kiln.KilnError, match=r"weight is not contiguous .* pass weight.contiguous\(\)"):
            kt.linear(xc.to(torch.bfloat16), codes, recipe="mxfp4_frozen",
                      weight_scale=torch.empty(32, 2, dtype=torch.uint8, device="cuda"))


def test_modules_hold_what_the_recipe_says():
    layer = kt.Linear(64, 32, recipe="bf16", device="cpu")
    assert isinstance(layer.weight, torch.nn.Parameter) and layer.weight.dtype == torch.bfloat16
    frozen = kt.GroupedLinear(4, 64, 32, recipe="nvfp4_frozen", device="cpu")
    assert [n for n, _ in frozen.named_parameters()] == []
    assert frozen.weight.shape == (4, 32, 32) and frozen.weight_scale.shape == (4, 32, 4)
    assert "recipe=nvfp4_frozen" in repr(frozen)
    with pytest.raises(kiln.KilnError, match="not a multiple of 32"):
        kt.Linear(48, 32, recipe="mxfp4_frozen")
    with pytest.raises(kiln.KilnError, match="no weight gradient"):
        kt.Linear(64, 32, recipe="mxfp4_frozen", fuse_wgrad_accumulation=True)


# ---- GPU: against float64 autograd -------------------------------------------------------------------

_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _dequantize(packed, fmt):
    """float64 decode of kiln's packed FP4 weight (docs/numerics.md): E2M1 x E8M0 or E2M1 x UE4M3 x global."""
    codes, scale = packed.codes, packed.scale
    lut = torch.tensor(_E2M1, dtype=torch.float64, device=codes.device)
    vals = torch.stack([lut[(codes & 0xF).long()], lut[(codes >> 4).long()]], dim=-1).flatten(-2)
    if fmt == "mxfp4":
        s = torch.exp2(scale.double() - 127.0)
        return vals * s.repeat_interleave(32, dim=-1)
    s = scale.view(torch.float8_e4m3fn).double().repeat_interleave(16, dim=-1)
    g = packed.global_scale.double()
    g = g.view(-1, 1, 1) if vals.dim() == 3 and g.numel() > 1 else g
    return vals * s * g


def _close(got, ref, tol=1e-2):
    got, ref = got.double(), ref.double()
    err = (got - ref).norm() / ref.norm().clamp_min(1e-30)
    assert err < tol, f"relative error {err:.3g} >= {tol}"


def _offsets(counts, device):
    return torch.tensor(counts, dtype=torch.int32, device=device).cumsum(0).to(torch.int32)


@cuda
@pytest.mark.parametrize("m", [1, 37, 256])
def test_bf16_linear_matches_float64_autograd(m):
    torch.manual_seed(m)
    layer = kt.Linear(256, 192, recipe="bf16", device="cuda")
    x = torch.randn(m, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = layer(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    x64 = x.detach().double().requires_grad_()
    w64 = layer.weight.detach().double().requires_grad_()
    b64 = layer.bias.detach().double().requires_grad_()
    y64 = torch.nn.functional.linear(x64, w64, b64)
    y64.backward(dy.double())
    _close(y, y64)
    _close(x.grad, x64.grad)
    _close(layer.weight.grad, w64.grad)
    _close(layer.bias.grad, b64.grad)


@cuda
def test_bf16_grouped_linear_with_an_empty_expert():
    torch.manual_seed(1)
    counts = [5, 0, 64, 1]
    layer = kt.GroupedLinear(4, 128, 96, recipe="bf16", device="cuda")
    offsets = _offsets(counts, "cuda")
    x = torch.randn(sum(counts), 128, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = layer(x, offsets)
    dy = torch.randn_like(y)
    y.backward(dy)
    x64 = x.detach().double().requires_grad_()
    w64 = layer.weight.detach().double().requires_grad_()
    b64 = layer.bias.detach().double().requires_grad_()
    outs, start = [], 0
    for e, c in enumerate(counts):
        outs.append(x64[start:start + c] @ w64[e].T + b64[e])
        start += c
    y64 = torch.cat(outs)
    y64.backward(dy.double())
    _close(y, y64)
    _close(x.grad, x64.grad)
    _close(layer.weight.grad, w64.grad)
    assert torch.all(layer.weight.grad[1] == 0)  # the empty expert
    _close(layer.bias.grad, b64.grad)


@cuda
@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
@pytest.mark.parametrize("grouped", [False, True])
def test_frozen_fp4_passes_true_gradients_to_the_input(fmt, grouped):
    torch.manual_seed(7)
    n, k = 160, 256
    counts = [3, 17, 0, 44]
    if grouped:
        w = torch.randn(len(counts), n, k, dtype=torch.bfloat16, device="cuda")
        layer = kt.GroupedLinear.from_float(w, torch.randn(len(counts), n, device="cuda", dtype=torch.bfloat16),
                                            recipe=f"{fmt}_frozen")
        offsets = _offsets(counts, "cuda")
        m = sum(counts)
    else:
        w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
        layer = kt.Linear.from_float(w, torch.randn(n, device="cuda", dtype=torch.bfloat16), recipe=f"{fmt}_frozen")
        m = 33
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = layer(x, offsets) if grouped else layer(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    wd = _dequantize(kt.PackedWeight(layer.weight, layer.weight_scale, layer.weight_global), fmt)
    x64 = x.detach().double().requires_grad_()
    if grouped:
        outs, start = [], 0
        for e, c in enumerate(counts):
            outs.append(x64[start:start + c] @ wd[e].T + layer.bias[e].double())
            start += c
        y64 = torch.cat(outs)
    else:
        y64 = x64 @ wd.T + layer.bias.double()
    y64.backward(dy.double())
    _close(y, y64)
    _close(x.grad, x64.grad)
    assert not any(p.requires_grad for p in layer.parameters())


@cuda
def test_lora_over_a_frozen_mxfp4_base_trains_the_adapters():
    torch.manual_seed(3)
    n, k, r = 128, 256, 8
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    base = kt.Linear.from_float(w, recipe="mxfp4_frozen")
    a = torch.randn(r, k, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    b = torch.randn(n, r, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    x = torch.randn(64, k, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = base(x) + (x @ a.T) @ b.T
    dy = torch.randn_like(y)
    y.backward(dy)
    wd = _dequantize(kt.PackedWeight(base.weight, base.weight_scale), "mxfp4")
    x64, a64, b64 = (t.detach().double().requires_grad_() for t in (x, a, b))
    y64 = x64 @ wd.T + (x64 @ a64.T) @ b64.T
    y64.backward(dy.double())
    _close(x.grad, x64.grad)
    _close(a.grad, a64.grad)
    _close(b.grad, b64.grad)


@cuda
def test_main_grad_accumulates_across_micro_batches():
    torch.manual_seed(5)
    layer = kt.Linear(128, 64, bias=False, recipe="bf16", fuse_wgrad_accumulation=True, device="cuda")
    layer.weight.main_grad = torch.zeros(64, 128, dtype=torch.float32, device="cuda")
    xs = [torch.randn(32, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3)]
    ref = torch.zeros(64, 128, dtype=torch.float64, device="cuda")
    for x in xs:
        dy = torch.randn(32, 64, dtype=torch.bfloat16, device="cuda")
        layer(x).backward(dy)
        ref += dy.double().T @ x.double()
    assert layer.weight.grad is None
    _close(layer.weight.main_grad, ref, tol=1e-5)


@cuda
def test_grouped_main_grad_is_added_to_by_the_wgrad_kernel():
    # accumulate=true: dW lands in main_grad's existing values; the empty expert's slice is left as it was.
    torch.manual_seed(6)
    counts = [7, 0, 100, 21]
    layer = kt.GroupedLinear(4, 128, 64, bias=False, recipe="bf16", fuse_wgrad_accumulation=True, device="cuda")
    start = torch.randn(4, 64, 128, dtype=torch.float32, device="cuda")
    layer.weight.main_grad = start.clone()
    assert any(spec.endswith("pass=wgrad accumulate=true") for spec, _, _ in layer._plans())
    offsets = _offsets(counts, "cuda")
    x = torch.randn(sum(counts), 128, dtype=torch.bfloat16, device="cuda")
    dy = torch.randn(sum(counts), 64, dtype=torch.bfloat16, device="cuda")
    layer(x, offsets).backward(dy)
    ref, row = start.double().clone(), 0
    for e, c in enumerate(counts):
        ref[e] += dy[row:row + c].double().T @ x[row:row + c].double()
        row += c
    assert layer.weight.grad is None
    assert torch.equal(layer.weight.main_grad[1], start[1])
    _close(layer.weight.main_grad, ref, tol=1e-5)


@cuda
def test_ops_pass_opcheck():
    # torch.library.opcheck: schema, fake (meta) kernel and autograd registration of both operators.
    torch.manual_seed(9)
    n, k, m = 64, 128, 48
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    torch.library.opcheck(torch.ops.kiln.gemm.default, ("gemm a=bf16 b=bf16 out=bf16", n, k, a, w))
    dy = torch.randn(m, n, dtype=torch.bfloat16, device="cuda")
    main_grad = torch.randn(n, k, dtype=torch.float32, device="cuda")
    torch.library.opcheck(torch.ops.kiln.gemm_into.default,
                          ("gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true", n, k, dy, a, main_grad))


@cuda
def test_repeat_backward_is_bitwise_equal():
    torch.manual_seed(11)
    counts = [40, 0, 9, 300]
    layer = kt.GroupedLinear(4, 256, 128, recipe="bf16", device="cuda")
    offsets = _offsets(counts, "cuda")
    x = torch.randn(sum(counts), 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    dy = torch.randn(sum(counts), 128, dtype=torch.bfloat16, device="cuda")
    grads = []
    for _ in range(2):
        x.grad = None
        layer.zero_grad(set_to_none=True)
        layer(x, offsets).backward(dy)
        grads.append((x.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone()))
    for g0, g1 in zip(*grads):
        assert torch.equal(g0, g1)


@cuda
@pytest.mark.parametrize("recipe", ["bf16", "fp8_block", "mxfp8", "fp8_tensor", "fp8_rowwise"])
def test_activation_checkpointing_recomputes_the_same_forward(recipe):
    # torch.utils.checkpoint runs the forward again in the backward: the gradients equal the plain run's
    # bitwise (kiln is deterministic; fp8_block's weight quantization is reused, X's recomputed).
    torch.manual_seed(8)
    layer = kt.Linear(256, 256, recipe=recipe, device="cuda")
    x = torch.randn(96, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    dy = torch.randn(96, 256, dtype=torch.bfloat16, device="cuda")
    grads = []
    for checkpointed in (False, True):
        x.grad = None
        layer.zero_grad(set_to_none=True)
        def block(t):
            return layer(torch.nn.functional.gelu(layer(t)))
        y = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
        y.backward(dy)
        grads.append((y.detach().clone(), x.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone()))
    for plain, ckpt in zip(*grads):
        assert torch.equal(plain, ckpt)


def _graph_replay(layer, x):
    """layer(x) captured into a CUDA graph (after one warm-up call on the capture stream) and replayed once."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        layer(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        y = layer(x)
    graph.replay()
    torch.cuda.synchronize()
    return y


@cuda
def test_cuda_graph_capture_after_prepare():
    torch.manual_seed(2)
    layer = kt.Linear(128, 64, recipe="bf16", device="cuda")
    assert kt.prepare(layer) == 3
    x = torch.randn(16, 128, dtype=torch.bfloat16, device="cuda")
    ref = layer(x).detach().clone()
    assert torch.equal(_graph_replay(layer, x), ref)


@cuda
@pytest.mark.parametrize("recipe", ["fp8_block", "mxfp8", "fp8_tensor", "fp8_rowwise"])
def test_quantized_recipes_capture_and_compile(recipe):
    # After prepare() the forward (quantizers and GEMM) captures into a CUDA graph and replays bitwise; the
    # compiled forward and backward equal eager bitwise.
    torch.manual_seed(5)
    layer = kt.Linear(256, 192, recipe=recipe, device="cuda")
    assert kt.prepare(layer) >= 6
    x = torch.randn(40, 256, dtype=torch.bfloat16, device="cuda")
    with torch.no_grad():
        ref = layer(x).clone()
    assert torch.equal(_graph_replay(layer, x), ref)
    xg = x.clone().requires_grad_()
    eager = layer(xg)
    eager.sum().backward()
    dx, dw = xg.grad.clone(), layer.weight.grad.clone()
    xg.grad = None
    layer.weight.grad = None
    out = torch.compile(layer)(xg)
    out.sum().backward()
    assert torch.equal(out, eager) and torch.equal(xg.grad, dx) and torch.equal(layer.weight.grad, dw)


@cuda
def test_torch_compile_matches_eager():
    torch.manual_seed(4)
    layer = kt.Linear(128, 96, recipe="bf16", device="cuda")
    x = torch.randn(24, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    eager = layer(x)
    eager.sum().backward()
    dx_eager = x.grad.clone()
    x.grad = None
    compiled = torch.compile(layer, fullgraph=True)
    y = compiled(x)
    y.sum().backward()
    assert torch.equal(y, eager)
    assert torch.equal(x.grad, dx_eager)
    # With main_grad the compiled backward adds dW in place (torch.ops.kiln.gemm_into mutates it).
    acc = kt.Linear(128, 96, bias=False, recipe="bf16", fuse_wgrad_accumulation=True, device="cuda")
    acc.weight.main_grad = torch.zeros(96, 128, dtype=torch.float32, device="cuda")
    step = torch.compile(lambda t: acc(t).sum().backward())
    for _ in range(2):
        step(x.detach())
    ref = 2 * torch.ones(24, 96, dtype=torch.float64, device="cuda").T @ x.detach().double()
    _close(acc.weight.main_grad, ref, tol=1e-5)


# ---- fp8_block: FP8 1x128 / 128x128 training ----------------------------------------------------------


def _fp8_decode(codes, scales, block_rows, block_cols):
    """float64 values of FP8 codes with f32 scales, one per block_rows x block_cols block."""
    vals = codes.view(torch.float8_e4m3fn).double()
    s = scales.double().repeat_interleave(block_rows, 0).repeat_interleave(block_cols, 1)
    return vals * s[:vals.shape[0], :vals.shape[1]]


@cuda
@pytest.mark.parametrize("m,n", [(1, 384), (200, 384), (512, 384), (130, 200)])
def test_fp8_block_linear_computes_on_its_quantized_operands(m, n):
    # Each of the three GEMMs against float64 products of the FP8 operands kiln's quantizers made (their
    # bytes are checked against the CPU reference by the quantize gpu tier), and the whole against the
    # float64 math on the bf16 tensors, whose error is the recipe's (reported on failure).
    from kiln.torch._functional import quantized_weight

    torch.manual_seed(m)
    layer = kt.Linear(256, n, recipe="fp8_block", device="cuda")
    x = torch.randn(m, 256, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = layer(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    row = "quantize a=bf16 out=e4m3:block1x128"
    xq, xs = torch.ops.kiln.quantize(row, x.detach())
    wq, ws = quantized_weight(layer.recipe, layer.weight)[:2]
    dyq, dys = torch.ops.kiln.quantize(row, torch.nn.functional.pad(dy, (0, -n % 128)))  # N' = N up to 128
    pad = -m % 128
    xt, xts = torch.ops.kiln.quantize(row + " transpose=true", torch.nn.functional.pad(x.detach(), (0, 0, 0, pad)))
    dyt, dyts = torch.ops.kiln.quantize(row + " transpose=true", torch.nn.functional.pad(dy, (0, 0, 0, pad)))
    w64 = _fp8_decode(wq, ws, 128, 128)  # [N', K], zero rows past N
    assert wq.shape == (n + (-n % 128), 256) and not w64[n:].any()
    _close(y, _fp8_decode(xq, xs, 1, 128) @ w64[:n].T + layer.bias.double(), tol=5e-3)
    _close(x.grad, _fp8_decode(dyq, dys, 1, 128) @ w64, tol=5e-3)
    _close(layer.weight.grad, _fp8_decode(dyt, dyts, 1, 128) @ _fp8_decode(xt, xts, 1, 128).T, tol=5e-3)
    _close(layer.bias.grad, dy.double().sum(0), tol=1e-2)
    assert layer.weight.grad.dtype == torch.bfloat16
    # The recipe's error against the float64 math on the bf16 tensors: FP8 E4M3 keeps 3 mantissa bits.
    _recipe_error_within(layer, x, y, dy, tol=0.08)


def _step(recipe, m, n, k):
    """A fresh Linear(k, n) of the recipe, run forward and backward on random x [m, k] and dY: (layer, x, y, dy)."""
    torch.manual_seed(m + n)
    layer = kt.Linear(k, n, recipe=recipe, device="cuda")
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = layer(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    return layer, x, y, dy


def _recipe_error_within(layer, x, y, dy, tol):
    """The layer's y, dX and dW against the float64 math on its bf16 x and weight (a quantized recipe's own
    error, relative Frobenius, within tol)."""
    x64 = x.detach().double().requires_grad_()
    wt64 = layer.weight.detach().double().requires_grad_()
    y64 = x64 @ wt64.T + layer.bias.double()
    y64.backward(dy.double())
    _close(y, y64, tol=tol)
    _close(x.grad, x64.grad, tol=tol)
    _close(layer.weight.grad, wt64.grad, tol=tol)


def _expert_rows(counts):
    """(row slice, padded column slice) of each expert: its tokens in x, its blocks in a column-wise copy."""
    row = col = 0
    for c in counts:
        yield slice(row, row + c), slice(col, col + -(-c // 128) * 128)
        row, col = row + c, col + -(-c // 128) * 128


@cuda
@pytest.mark.parametrize("n,accumulate", [(256, False), (200, False), (384, True)])
def test_grouped_fp8_block_computes_on_its_quantized_operands(n, accumulate):
    # Ragged experts (an empty one, partial blocks, one of more than 128 rows): the grouped forward, dgrad
    # and wgrad against float64 products of the FP8 operands kiln's quantizers made, per expert, and the
    # whole against the float64 math on the bf16 tensors.
    from kiln.torch._functional import quantized_weight

    torch.manual_seed(n)
    counts = [37, 0, 130, 1, 96]
    E, K, M = len(counts), 256, sum(counts)
    offsets = torch.tensor(counts, device="cuda").cumsum(0).to(torch.int32)
    layer = kt.GroupedLinear(E, K, n, recipe="fp8_block", fuse_wgrad_accumulation=accumulate, device="cuda")
    if accumulate:
        layer.weight.main_grad = torch.randn(E, n, K, dtype=torch.float32, device="cuda")
        start = layer.weight.main_grad.clone()
    x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    y = layer(x, offsets)
    dy = torch.randn_like(y)
    y.backward(dy)
    row = "quantize a=bf16 out=e4m3:block1x128"
    grouped_t = f"quantize[experts={E},layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true"
    xq, xs = torch.ops.kiln.quantize(row, x.detach())
    dyq, dys = torch.ops.kiln.quantize(row, torch.nn.functional.pad(dy, (0, -n % 128)))
    xt, xts = torch.ops.kiln.quantize(grouped_t, x.detach(), offsets)
    dyt, dyts = torch.ops.kiln.quantize(grouped_t, dy, offsets)
    wq, ws = quantized_weight(layer.recipe, layer.weight)[:2]
    assert wq.shape == (E, n + (-n % 128), K) and ws.shape == (E, -(-n // 128), K // 128)
    x64, dy64, xt64, dyt64 = (_fp8_decode(xq, xs, 1, 128), _fp8_decode(dyq, dys, 1, 128),
                              _fp8_decode(xt, xts, 1, 128), _fp8_decode(dyt, dyts, 1, 128))
    dw = layer.weight.main_grad - start if accumulate else layer.weight.grad
    assert (layer.weight.grad is None) == accumulate
    for e, (rows, cols) in enumerate(_expert_rows(counts)):
        w64 = _fp8_decode(wq[e], ws[e], 128, 128)  # [N', K], zero rows past N
        assert not w64[n:].any()
        if counts[e]:
            _close(y[rows], x64[rows] @ w64[:n].T + layer.bias[e].double(), tol=5e-3)
            _close(x.grad[rows], dy64[rows] @ w64, tol=5e-3)
            _close(dw[e], dyt64[:, cols] @ xt64[:, cols].T, tol=5e-3)
            _close(layer.bias.grad[e], dy[rows].double().sum(0), tol=1e-2)
        else:
            assert torch.all(dw[e] == 0) and torch.all(layer.bias.grad[e] == 0)
    # The recipe's error against the float64 math on the bf16 tensors.
    for e, (rows, _) in enumerate(_expert_rows(counts)):
        if not counts[e]:
            continue
        xe = x.detach()[rows].double()
        we = layer.weight.detach()[e].double()
        _close(y[rows], xe @ we.T + layer.bias[e].double(), tol=0.08)
        _close(x.grad[rows], dy[rows].double() @ we, tol=0.08)
        _close(dw[e], dy[rows].double().T @ xe, tol=0.08)


def _mx_decode(codes, scales):
    """float64 values of MXFP8 codes with E8M0 scales, one per 32 along each row."""
    vals = codes.view(torch.float8_e4m3fn).double()
    s = torch.pow(2.0, scales.double() - 127).repeat_interleave(32, 1)
    return vals * s[:, :vals.shape[1]]


@cuda
@pytest.mark.parametrize("m,n", [(1, 256), (200, 384), (77, 200)])
def test_mxfp8_linear_computes_on_its_quantized_operands(m, n):
    # The three GEMMs against float64 products of the MXFP8 operands kiln's quantizers made: the forward on
    # X and W along K, dgrad on dY along N and W's column-wise copy, wgrad on the column-wise copies of dY
    # and X (blocks of 32 tokens); then the whole against the float64 math on the bf16 tensors.
    from kiln.torch._functional import quantized_weight

    layer, x, y, dy = _step("mxfp8", m, n, 160)
    row = "quantize a=bf16 out=mxfp8"
    pad_n, pad_m = -n % 32, -m % 32
    xq, xs = torch.ops.kiln.quantize(row, x.detach())
    wq, ws, wtq, wts = quantized_weight(layer.recipe, layer.weight)
    assert wq.shape == (n + pad_n, 160) and wtq.shape == (160, n + pad_n)
    dyq, dys = torch.ops.kiln.quantize(row, torch.nn.functional.pad(dy, (0, pad_n)))
    xt, xts = torch.ops.kiln.quantize(row + " transpose=true", torch.nn.functional.pad(x.detach(), (0, 0, 0, pad_m)))
    dyt, dyts = torch.ops.kiln.quantize(row + " transpose=true", torch.nn.functional.pad(dy, (0, 0, 0, pad_m)))
    w64 = _mx_decode(wq, ws)[:n]
    _close(y, _mx_decode(xq, xs) @ w64.T + layer.bias.double(), tol=5e-3)
    _close(x.grad, _mx_decode(dyq, dys) @ _mx_decode(wtq, wts).T, tol=5e-3)
    _close(layer.weight.grad, _mx_decode(dyt, dyts) @ _mx_decode(xt, xts).T, tol=5e-3)
    assert layer.weight.grad.dtype == torch.bfloat16
    _recipe_error_within(layer, x, y, dy, tol=0.08)


@cuda
@pytest.mark.parametrize("m,n", [(1, 256), (200, 392)])
def test_fp8_tensor_linear_computes_on_its_quantized_operands(m, n):
    # Per-tensor current scaling: X, W and dY each quantized with one scale from their amax; wgrad on the
    # transposed codes of X and dY (exact), against float64 products of the same codes and scales.
    from kiln.torch._functional import quantized_weight

    layer, x, y, dy = _step("fp8_tensor", m, n, 96)

    def dec(codes, scale):
        return codes.view(torch.float8_e4m3fn).double() * scale.double()

    row = "quantize a=bf16 out=e4m3"
    xq, xs = torch.ops.kiln.quantize(row, x.detach())
    wq, ws = quantized_weight(layer.recipe, layer.weight)[:2]
    dyq, dys = torch.ops.kiln.quantize(row, dy)
    assert xs.shape == (1,) and wq.shape == (n + (-n % 16), 96)
    _close(y, dec(xq, xs) @ dec(wq, ws)[:n].T + layer.bias.double(), tol=5e-3)
    _close(x.grad, dec(dyq, dys) @ dec(wq, ws)[:n], tol=5e-3)
    _close(layer.weight.grad, dec(dyq, dys).T @ dec(xq, xs), tol=5e-3)
    _recipe_error_within(layer, x, y, dy, tol=0.1)


@cuda
@pytest.mark.parametrize("m,n", [(1, 256), (200, 392), (77, 200)])
def test_fp8_rowwise_linear_computes_on_its_quantized_operands(m, n):
    # Row-wise scaling: X and dY per token, W per output channel for the forward; dgrad on dY per token and
    # W's column-wise copy (one scale per column of W), wgrad on the column-wise copies of dY and X (one scale
    # per column of each, padded to 16 tokens with zero codes); against float64 products of the same codes
    # and scales, then the float64 math on the bf16 tensors.
    from kiln.torch._functional import quantized_weight

    layer, x, y, dy = _step("fp8_rowwise", m, n, 96)

    def rows(codes, scale):  # one scale per row
        return codes.view(torch.float8_e4m3fn).double() * scale.double()[:, None]

    row = "quantize a=bf16 out=e4m3:m"
    xq, xs = torch.ops.kiln.quantize(row, x.detach())
    wq, ws, wtq, wts = quantized_weight(layer.recipe, layer.weight)
    n16 = n + (-n % 16)
    assert wq.shape == (n16, 96) and ws.shape == (n16,) and wtq.shape == (96, n16) and wts.shape == (96,)
    dyq, dys = torch.ops.kiln.quantize(row, dy)
    xt, xts = torch.ops.kiln.quantize(row + " transpose=true", x.detach())
    dyt, dyts = torch.ops.kiln.quantize(row + " transpose=true", dy)
    assert xt.shape == (96, m + (-m % 16)) and torch.all(xt[:, m:] == 0)
    _close(y, rows(xq, xs) @ rows(wq, ws)[:n].T + layer.bias.double(), tol=5e-3)
    _close(x.grad, rows(dyq, dys) @ rows(wtq, wts)[:, :n].T, tol=5e-3)
    _close(layer.weight.grad, rows(dyt, dyts) @ rows(xt, xts).T, tol=5e-3)
    _recipe_error_within(layer, x, y, dy, tol=0.1)


@cuda
def test_fp8_block_weight_is_quantized_once_per_value():
    from kiln.torch._functional import quantized_weight

    torch.manual_seed(3)
    layer = kt.Linear(128, 256, bias=False, recipe="fp8_block", fuse_wgrad_accumulation=True, device="cuda")
    layer.weight.main_grad = torch.zeros(256, 128, dtype=torch.float32, device="cuda")
    first = quantized_weight(layer.recipe, layer.weight)
    xs = [torch.randn(130, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2)]
    ref = torch.zeros(256, 128, dtype=torch.float64, device="cuda")
    for x in xs:  # two micro-batches: one quantization of W, dW added into main_grad by the kernel
        dy = torch.randn(130, 256, dtype=torch.bfloat16, device="cuda")
        layer(x).backward(dy)
        ref += dy.double().T @ x.double()
        assert quantized_weight(layer.recipe, layer.weight) is first
    assert layer.weight.grad is None
    _close(layer.weight.main_grad, ref, tol=0.08)
    with torch.no_grad():
        layer.weight.mul_(2)  # the optimizer's in-place step moves the version counter
    again = quantized_weight(layer.recipe, layer.weight)
    assert again is not first
    assert torch.equal(again[0], first[0]) and torch.equal(again[1], 2 * first[1])
    with torch.no_grad():
        layer.weight.data.mul_(0.5)  # through .data: the version counter does not move
    assert quantized_weight(layer.recipe, layer.weight) is again
    assert kt.drop_quantized_copies(layer) == 1
    assert torch.equal(quantized_weight(layer.recipe, layer.weight)[1], first[1])
    with torch.inference_mode():  # a copy made under inference_mode can still be saved for backward later
        kt.drop_quantized_copies(layer)
        layer(xs[0])
    layer(xs[0]).sum().backward()


@cuda
def test_quantize_op_passes_opcheck():
    a = torch.randn(256, 384, dtype=torch.bfloat16, device="cuda")
    for spec in ("quantize a=bf16 out=e4m3:block1x128", "quantize a=bf16 out=e4m3:block1x128 transpose=true",
                 "quantize a=bf16 out=e4m3:block128x128", "quantize a=bf16 out=mxfp8",
                 "quantize a=bf16 out=mxfp8 transpose=true", "quantize a=bf16 out=e4m3:m",
                 "quantize a=bf16 out=e4m3:m transpose=true"):
        torch.library.opcheck(torch.ops.kiln.quantize.default, (spec, a))
    # The grouped column-wise copy leaves the columns past the last expert's blocks as allocated, so the
    # checks that compare two runs' outputs byte for byte do not apply to it.
    offsets = torch.tensor([100, 100, 256], dtype=torch.int32, device="cuda")
    torch.library.opcheck(torch.ops.kiln.quantize.default,
                          ("quantize[experts=3,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true", a, offsets),
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))


@cuda
def test_grouped_quantized_wgrad_through_the_runtime():
    # The grouped transposed quantizer's padded copies of dY and X, then the grouped FP8 wgrad on them,
    # against float64 sums of the dequantized copies over each expert's columns; the padding is zero codes.
    E, M, N, K = 6, 700, 256, 384
    rt = kiln.Runtime()
    counts = torch.tensor([0, 1, 128, 300, 0, 271], dtype=torch.int32)
    offsets = counts.cumsum(0).to(torch.int32).cuda()
    dy = torch.randn(M, N, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
    W = kiln.grouped_copy_columns(M, E)
    spec = f"quantize[experts={E},layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true"
    copies = []
    for t in (dy, x):
        codes = torch.full((t.shape[1], W), 0xFF, dtype=torch.uint8, device="cuda")
        scales = torch.empty(t.shape[1], W // 128, dtype=torch.float32, device="cuda")
        rt.plan(spec, 0, t.shape[1]).run(t, out=codes, out_scale=scales, offsets=offsets)
        copies.append((codes, scales))
    wg = rt.plan(f"grouped_gemm[experts={E},layout=offsets] a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad",
                 n=N, k=K)
    dw = wg.run(copies[0][0], copies[1][0], a_scale=copies[0][1], b_scale=copies[1][1], offsets=offsets)
    assert dw.shape == (E, N, K) and dw.dtype == torch.float32

    def dequant(codes, scales):
        v = codes.view(torch.float8_e4m3fn).double()
        return v * scales.double().repeat_interleave(128, dim=1)

    a, b = dequant(*copies[0]), dequant(*copies[1])
    start = 0
    for e, c in enumerate(counts.tolist()):
        padded = -(-c // 128) * 128
        cols = slice(start, start + padded)
        assert torch.all(copies[0][0][:, start + c:start + padded] == 0) and torch.all(copies[1][0][:, start + c:start + padded] == 0)
        row0 = int(counts[:e].sum())
        # the copies hold the tokens: within FP8's rounding of the bf16 values
        assert torch.allclose(a[:, start:start + c], dy[row0:row0 + c].double().T, rtol=0.07, atol=1e-3)
        ref = a[:, cols] @ b[:, cols].T
        err = (dw[e].double() - ref).norm() / max(ref.norm().item(), 1e-30)
        assert (err < 1e-5 if c else torch.all(dw[e] == 0)), (e, c, float(err))
        start += padded


# ---- MoEExperts: the gpt-oss expert block ------------------------------------------------------------


def test_moe_experts_argument_errors():
    block = kt.MoEExperts(4, 64, 32, device="cpu")
    with pytest.raises(kiln.KilnError, match=r"hidden_states must be \[..., 64\]"):
        block(torch.empty(3, 32, dtype=torch.bfloat16), torch.zeros(3, 2, dtype=torch.int64), torch.ones(3, 2))
    with pytest.raises(kiln.KilnError, match=r"routing_weights must be \[T, k\]"):
        block(torch.empty(3, 64, dtype=torch.bfloat16), torch.zeros(3, 2, dtype=torch.int64), torch.ones(3, 3))
    with pytest.raises(kiln.KilnError, match="multiple of 8"):
        kt.MoEExperts(4, 64, 32, lora_rank=4)


def _gpt_oss_tensors(experts, hidden, inter, device):
    """Random gpt-oss expert tensors in the checkpoint's layout, with small scales (2^-9 .. 2^-7) so that
    the pre-activations stay far inside the SwiGLU clamps (no mask flips between bf16 and float64)."""
    g = torch.Generator(device=device).manual_seed(0)

    def mx(n, k):
        blocks = torch.randint(0, 256, (experts, n, k // 32, 16), generator=g, device=device, dtype=torch.uint8)
        scales = torch.randint(118, 121, (experts, n, k // 32), generator=g, device=device, dtype=torch.uint8)
        return blocks, scales

    gu_b, gu_s = mx(2 * inter, hidden)
    dn_b, dn_s = mx(hidden, inter)
    b1 = (torch.randn(experts, 2 * inter, generator=g, device=device) * 0.05).to(torch.bfloat16)
    b2 = (torch.randn(experts, hidden, generator=g, device=device) * 0.05).to(torch.bfloat16)
    return gu_b, gu_s, b1, dn_b, dn_s, b2


def _moe_reference(block, x, idx, rw):
    """float64 gpt-oss block: per expert, the slots routed to it, index_add back to tokens."""
    def dq(layer):
        return _dequantize(kt.PackedWeight(layer.weight, layer.weight_scale), "mxfp4")

    w1, w2 = dq(block.gate_up), dq(block.down)
    b1, b2 = block.gate_up.bias.double(), block.down.bias.double()
    lora = block.lora_rank > 0
    if lora:
        la1, lb1, la2, lb2 = (getattr(block, n).double() for n in
                              ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b"))
    out = torch.zeros_like(x)
    for e in range(block.num_experts):
        tok, slot = torch.where(idx == e)
        if tok.numel() == 0:
            continue
        rows = x[tok]
        h = rows @ w1[e].T + b1[e]
        if lora:
            h = h + (rows @ la1[e].T) @ lb1[e].T * block.lora_scale
        gate, up = h[:, 0::2].clamp(max=block.limit), h[:, 1::2].clamp(-block.limit, block.limit)
        act = gate * torch.sigmoid(block.alpha * gate) * (up + 1)
        y = act @ w2[e].T + b2[e]
        if lora:
            y = y + (act @ la2[e].T) @ lb2[e].T * block.lora_scale
        out = out.index_add(0, tok, y * rw[tok, slot, None])
    return out


@cuda
def test_moe_experts_match_float64_and_train_lora_deterministically():
    experts, hidden, inter, tokens, top_k = 4, 256, 128, 64, 2
    block = kt.MoEExperts.from_gpt_oss(*_gpt_oss_tensors(experts, hidden, inter, "cuda"), lora_rank=8)
    with torch.no_grad():  # nonzero B so the adapters contribute and every gradient path is exercised
        block.gate_up_lora_b.normal_(0, 0.05)
        block.down_lora_b.normal_(0, 0.05)
    torch.manual_seed(9)
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    scores = torch.randn(tokens, experts, device="cuda")
    top, idx = scores.topk(top_k, dim=1)
    idx[0] = torch.tensor([3, 1])  # an expert that few tokens pick
    rw = torch.softmax(top, dim=1).to(torch.bfloat16).requires_grad_()
    dout = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    lora = [block.gate_up_lora_a, block.gate_up_lora_b, block.down_lora_a, block.down_lora_b]

    grads = []
    for _ in range(2):
        for t in [x, rw, *lora]:
            t.grad = None
        y = block(x, idx, rw)
        y.backward(dout)
        grads.append([y.detach().clone()] + [t.grad.clone() for t in [x, rw, *lora]])
    for g0, g1 in zip(*grads):
        assert torch.equal(g0, g1)

    x64 = x.detach().double().requires_grad_()
    rw64 = rw.detach().double().requires_grad_()
    ref_params = {n: getattr(block, n) for n in ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")}
    for n, p in ref_params.items():  # float64 copies of the adapters, for their reference gradients
        setattr(block, n, torch.nn.Parameter(p.detach().double()))
    y64 = _moe_reference(block, x64, idx, rw64)
    y64.backward(dout.double())
    got = grads[0]
    _close(got[0], y64)
    _close(got[1], x64.grad)
    _close(got[2], rw64.grad)
    for g, n in zip(got[3:], ref_params):
        _close(g, getattr(block, n).grad, tol=2e-2)
    assert not any(p.requires_grad for p in (block.gate_up.weight, block.down.weight))


def _small_gpt_oss(transformers):
    """A randomly initialised 2-layer GptOss in bf16 on the GPU whose expert weights are the dequantization
    of MXFP4 codes (what loading the gpt-oss checkpoint gives), and its experts modules."""
    from kiln.torch import gpt_oss

    torch.manual_seed(0)
    config = transformers.GptOssConfig(
        vocab_size=512, hidden_size=256, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=64, num_local_experts=4, num_experts_per_tok=2,
        layer_types=["sliding_attention", "full_attention"], sliding_window=16)
    model = transformers.GptOssForCausalLM(config).to("cuda", torch.bfloat16)
    experts = [m for m in model.modules() if gpt_oss._is_gpt_oss_experts(m)]
    assert len(experts) == 2
    with torch.no_grad():
        for m in experts:
            for name in ("gate_up_proj", "down_proj"):
                w = getattr(m, name)
                nk = w.transpose(1, 2).contiguous() * 0.02 / w.float().std()
                packed = kt.quantize_weight(nk.to(torch.bfloat16), "mxfp4")
                w.copy_(_dequantize(packed, "mxfp4").transpose(1, 2).to(torch.bfloat16))
    return model, experts


@cuda
def test_kiln_experts_implementation_in_transformers():
    # transformers' experts-implementation hook: the model keeps its modules; frozen experts are read
    # packed in MXFP4, trainable ones through kiln's bf16 grouped GEMMs; gradients reach the hidden
    # states (the embedding's gradient), the routing weights (the router's), the biases and the weights.
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("transformers.integrations.moe")
    from kiln.torch import gpt_oss

    model, experts = _small_gpt_oss(transformers)
    ids = torch.randint(0, 512, (2, 24), device="cuda")
    router = model.model.layers[0].mlp.router

    def step():
        model.zero_grad(set_to_none=True)
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        grads = [model.model.embed_tokens.weight.grad, router.weight.grad, experts[0].down_proj_bias.grad]
        if experts[0].gate_up_proj.requires_grad:
            grads.append(experts[0].gate_up_proj.grad)
        return [out.logits.detach().float()] + [g.detach().float().clone() for g in grads]

    for trainable in (True, False):
        for m in experts:
            m.gate_up_proj.requires_grad_(trainable)
            m.down_proj.requires_grad_(trainable)
        model.config._experts_implementation = "eager"
        ref = step()
        assert gpt_oss.use_kiln_experts(model) == 2
        got = step()
        assert got[0].shape == ref[0].shape and len(got) == len(ref)
        for g, r in zip(got, ref):
            _close(g, r, tol=5e-2)
        if trainable:  # read through autograd each call, never cached
            assert "_kiln_projections" not in experts[0].__dict__
        else:  # packed once: the weights hold MXFP4 values
            assert experts[0]._kiln_projections["gate_up"][1][2] == "mxfp4_frozen"
            assert kt.drop_quantized_copies(model) == 4 and "_kiln_projections" not in experts[0].__dict__


@cuda
def test_swap_experts_in_a_transformers_gpt_oss_model():
    transformers = pytest.importorskip("transformers")
    from kiln.torch import gpt_oss

    model, experts = _small_gpt_oss(transformers)
    config = model.config
    ids = torch.randint(0, 512, (2, 24), device="cuda")

    def step():
        model.zero_grad(set_to_none=True)
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        return out.logits.detach().float(), model.model.embed_tokens.weight.grad.detach().float().clone()

    model.config._experts_implementation = "eager"
    logits_ref, grad_ref = step()
    assert gpt_oss.swap_experts(model) == 2
    assert not any(gpt_oss._is_gpt_oss_experts(m) for m in model.modules())
    assert sum(isinstance(m, kt.MoEExperts) for m in model.modules()) == 2
    logits, grad = step()
    _close(logits, logits_ref, tol=2e-2)
    _close(grad, grad_ref, tol=5e-2)
    with pytest.raises(kiln.KilnError, match="not exactly representable"):
        bad = transformers.GptOssForCausalLM(config).to("cuda", torch.bfloat16)
        gpt_oss.swap_experts(bad)
