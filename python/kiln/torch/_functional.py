"""linear / grouped_linear: autograd functions whose forward, dgrad and wgrad are kiln plans."""

import functools
from typing import NamedTuple, Optional

import torch

from .._errors import KilnError, Status
from .._recipes import Recipe, recipe as _recipe
from ._ops import gemm, gemm_into, quantize

_TORCH_FORMAT = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}


class _Layer(NamedTuple):
    """What one call needs besides its tensors (hashable: the plans are cached by these texts).
    dgrad_on_wt: the forward's spec without its epilogue, which a quantized recipe's dgrad runs on Wᵀ
    (m = M, n = K, k = N; the same product as its pass=dgrad spec, with Wᵀ made once per weight value)."""

    forward: str
    dgrad: str
    wgrad: Optional[str]
    n: int
    k: int
    experts: int
    dgrad_on_wt: str = ""


@functools.lru_cache(maxsize=None)
def _layer(rec: Recipe, experts: int, bias: bool, wgrad_out: str, nvfp4_global: str, n: int, k: int,
           wgrad_accumulate: bool = False) -> _Layer:
    specs = rec.specs(experts=experts, bias=bias, wgrad_out=wgrad_out, nvfp4_global=nvfp4_global,
                      wgrad_accumulate=wgrad_accumulate)
    return _Layer(specs.forward, specs.dgrad, specs.wgrad, n, k, experts, specs.forward.split(' epilogue="', 1)[0])


def format_of(dtype: torch.dtype) -> str:
    """kiln's name of a torch float dtype ("f32" for any other)."""
    return _TORCH_FORMAT.get(dtype, "f32")


def _fail(message: str):
    raise KilnError(Status.INVALID_ARGUMENT, message)


def _check_activation(where: str, rec: Recipe, x: torch.Tensor, k: int):
    if not isinstance(x, torch.Tensor):
        _fail(f"{where}: x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_cuda:
        _fail(f"{where}: x is on {x.device}; kiln runs on CUDA devices")
    if x.dtype != torch.bfloat16:
        _fail(f"{where}: recipe {rec.name} takes bfloat16 x, got {x.dtype} (cast with x.to(torch.bfloat16))")
    if x.dim() < 1 or x.shape[-1] != k:
        _fail(f"{where}: x has shape {list(x.shape)}; its last dimension must be the weight's in_features {k}")


def _weight_dims(rec: Recipe, w: torch.Tensor, experts: int):
    """(N, K) from the weight tensor: bf16 [.., N, K]; packed FP4 uint8 [.., N, K/2], or gpt-oss's
    [.., N, K/32, 16] (one more dimension)."""
    lead = 1 if experts else 0
    if rec.weight == "bf16":
        return w.shape[-2], w.shape[-1]
    if w.dtype != torch.uint8:
        _fail(f"recipe {rec.name}: the packed weight must be uint8 (two E2M1 codes per byte), got {w.dtype}")
    if w.dim() == lead + 3 and w.shape[-1] == 16:
        return w.shape[-3], w.shape[-2] * 32
    return w.shape[-2], w.shape[-1] * 2


def _bias_grad(dy: torch.Tensor, offsets: Optional[torch.Tensor], experts: int) -> torch.Tensor:
    """Column sums of dY in fp32: per expert over its rows when grouped. Deterministic: no atomics."""
    if not experts:
        return dy.sum(dim=0, dtype=torch.float32)
    # One more segment for the rows past offsets[-1] (none when offsets[-1] == M), so the lengths sum to
    # M without reading offsets on the host.
    ends = offsets.to(torch.int64)
    bounds = torch.cat([ends.new_zeros(1), ends, ends.new_full((1,), dy.shape[0])])
    sums = torch.segment_reduce(dy.float(), "sum", lengths=torch.diff(bounds), axis=0, unsafe=True)
    return sums[:experts]


class _KilnLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, w_scale, w_global, bias, offsets, main_grad, layer: _Layer):
        y = gemm(layer.forward, layer.n, layer.k, x, w, w_scale, w_global, offsets, bias)
        ctx.layer = layer
        ctx.has_bias = bias is not None
        ctx.bias_dtype = bias.dtype if bias is not None else None
        ctx.save_for_backward(x if layer.wgrad is not None else None, w, w_scale, w_global, offsets, main_grad)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, w_scale, w_global, offsets, main_grad = ctx.saved_tensors
        layer = ctx.layer
        dy = dy.contiguous()
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = gemm(layer.dgrad, layer.n, layer.k, dy, w, w_scale, w_global, offsets, None)
        if layer.wgrad is not None and ctx.needs_input_grad[1]:
            if main_grad is not None:  # accumulate=true: the kernel adds dW into main_grad
                gemm_into(layer.wgrad, layer.n, layer.k, dy, x, main_grad, None, None, offsets)
            else:
                dw = gemm(layer.wgrad, layer.n, layer.k, dy, x, None, None, offsets, None)
        if ctx.has_bias and ctx.needs_input_grad[4]:
            db = _bias_grad(dy, offsets, layer.experts).to(ctx.bias_dtype)
        return dx, dw, None, None, db, None, None, None


def block_of(rec: Recipe) -> int:
    """The quantization block of a quantized recipe's X, dY and their column-wise copies: 128 for FP8
    1x128 blocks, 32 for MXFP8; 16 for per-tensor and per-row FP8 (no block: 16-byte rows of the codes)."""
    return _block_of_format(rec.x_format)


def _block_of_format(x_format: str) -> int:
    return {"mxfp8": 32, "e4m3": 16, "e4m3:m": 16}.get(x_format, 128)


def _w_quantize_spec(rec: Recipe) -> str:
    """The quantize spec of W [N, K] in the recipe's w_format (per-channel scales: one per row of W,
    the quantizer's per-row form)."""
    return "quantize a=bf16 out=" + ("e4m3:m" if rec.w_format == "e4m3:n" else rec.w_format)


def _rows_to(t: torch.Tensor, block: int) -> torch.Tensor:
    """t [M, C] with zero rows appended up to a multiple of block (the column-wise copy's block along M;
    zero tokens add nothing to dW)."""
    pad = -t.shape[0] % block
    return torch.nn.functional.pad(t, (0, 0, 0, pad)) if pad else t


def _cols_to(t: torch.Tensor, block: int) -> torch.Tensor:
    """t [R, C] with zero columns appended up to a multiple of block (a block along C)."""
    pad = -t.shape[1] % block
    return torch.nn.functional.pad(t, (0, pad)) if pad else t


def _quantize_weight_now(rec: Recipe, w: torch.Tensor):
    """(codes, scales, Wᵀ codes, Wᵀ scales) of w [N, K] or [E, N, K], each expert's rows padded with zeros
    to N' (N up to a multiple of the recipe's block), so one call over the [E N', K] rows keeps every block
    inside one expert. The first pair is the forward's b: FP8 128x128 blocks codes [(E,) N', K], scales
    [(E,) N'/128, K/128]; per-tensor codes [N', K], scale [1]; MXFP8 codes [N', K], scales [N', K/32];
    per-channel codes [N', K], scales [N'].
    The second is dgrad's b, Wᵀ [(E,) K, N'] as a forward operand (dgrad runs the forward's kernel on it,
    m = M, n = K, k = N'): the transposed codes and scale grid for 128x128 blocks and per-tensor scales
    (both transpose exactly; made here once per weight value instead of in every backward), W's column-wise
    copy for MXFP8 (blocks of 32 along N, scales [K, N'/32]) and per-channel scales (one scale per column
    of W, scales [K])."""
    block = block_of(rec)
    spec = _w_quantize_spec(rec)
    pad = -w.shape[-2] % block
    rows = torch.nn.functional.pad(w.detach(), (0, 0, 0, pad)) if pad else w.detach()
    codes, scales = quantize(spec, rows.reshape(-1, w.shape[-1]))
    if w.dim() == 3:
        codes, scales = codes.view(*rows.shape), scales.view(w.shape[0], -1, scales.shape[-1])
    if rec.w_format in ("mxfp8", "e4m3:n"):
        t_codes, t_scales = quantize(spec + " transpose=true", rows)  # dense only: [K, N']
        return codes, scales, t_codes, t_scales
    t_codes = codes.transpose(-2, -1).contiguous()
    t_scales = scales if scales.dim() == 1 else scales.transpose(-2, -1).contiguous()
    return codes, scales, t_codes, t_scales


def quantized_weight(rec: Recipe, w: torch.Tensor):
    """(codes, scales, Wᵀ codes, Wᵀ scales) of the bf16 weight w [N, K] (grouped: [E, N, K]) in the
    recipe's w_format, each expert's rows padded with zeros to a multiple of the recipe's block (the blocks
    dgrad tiles N with; the forward reads the first N rows, whose codes and scales the zero rows do not
    change); the second pair is what dgrad reads (_quantize_weight_now).
    Made once per value of w: cached on the tensor and remade when its version counter moves (the
    optimizer's in-place update), so the micro-batches of one step share one quantization."""
    if type(w) not in (torch.Tensor, torch.nn.Parameter) or torch.compiler.is_compiling():
        return _quantize_weight_now(rec, w)  # traced: no cache on a fake or functional tensor
    key = (rec.w_format, w._version, w.data_ptr())
    cached = getattr(w, "_kiln_quantized", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    with torch.inference_mode(False):  # an inference tensor in the cache could not be saved for backward later
        made = _quantize_weight_now(rec, w)
    w._kiln_quantized = (key, made)
    return made


def drop_quantized_copies(module: torch.nn.Module) -> int:
    """Forgets every quantized copy kiln.torch cached for the parameters of `module` (the weight copies of
    fp8_block, fp8_tensor, fp8_rowwise and mxfp8, the transformers hook's packed experts), so the next call quantizes again. Needed after a
    write the version counter does not see: through `param.data` (`p.data.copy_(master)`), or by a
    wrapper that swaps storage (FSDP); in-place updates through the parameter itself (optimizers) are
    seen. Returns how many copies were dropped."""
    dropped = 0
    for p in module.parameters():
        if p.__dict__.pop("_kiln_quantized", None) is not None:
            dropped += 1
    for m in module.modules():
        dropped += len(m.__dict__.pop("_kiln_projections", {}) or {})
    return dropped


class _KilnQuantizedLinear(torch.autograd.Function):
    """A trainable quantized recipe (fp8_block, fp8_tensor, fp8_rowwise, mxfp8), dense or grouped (fp8_block): X, W and dY quantized
    by kiln's quantizers around the three kiln GEMMs; the column-wise copies of X and dY feed wgrad
    (docs/training.md). Grouped, those copies hold each expert's rows in whole 128-token blocks (the
    grouped quantizer with the layer's offsets)."""

    @staticmethod
    def forward(ctx, x, w, bias, offsets, main_grad, w_codes, w_scales, dg_codes, dg_scales, layer: _Layer,
                x_format: str, wants_dw: bool):
        row = f"quantize a=bf16 out={x_format}"
        block = _block_of_format(x_format)
        x_codes, x_scales = quantize(row, x)
        n = layer.n
        if w_codes.shape[-2] != n:  # the first N rows (grouped: a view, experts N' K apart)
            w_codes = w_codes[..., :n, :]
            if x_format in ("mxfp8", "e4m3:m"):
                w_scales = w_scales[:n]  # one row of scales (or one scale) per row of W
        y = gemm(layer.forward, n, layer.k, x_codes, w_codes, w_scales, None, offsets, bias, x_scales)
        xt = (None, None)
        if wants_dw and x_format == "e4m3":  # per-tensor codes transpose exactly: Xᵀ [K, M'], the same scale
            xt = (_rows_to(x_codes, block).t().contiguous(), x_scales)
        elif wants_dw:  # X's column-wise copy: [K, M'] (M up to the block), grouped [K, W]
            xt = _columnwise(row, x, offsets, layer.experts, block)
        ctx.layer, ctx.row, ctx.block, ctx.tensor_scaled = layer, row, block, x_format == "e4m3"
        ctx.has_bias = bias is not None
        ctx.bias_dtype = bias.dtype if bias is not None else None
        ctx.w_dtype = w.dtype
        ctx.save_for_backward(dg_codes, dg_scales, xt[0], xt[1], offsets, main_grad)
        return y

    @staticmethod
    def backward(ctx, dy):
        dg_codes, dg_scales, xt_codes, xt_scales, offsets, main_grad = ctx.saved_tensors
        layer, block = ctx.layer, ctx.block
        dy = dy.contiguous()
        dx = dw = db = None
        dy_codes = dy_scales = None
        if ctx.needs_input_grad[0] or ctx.tensor_scaled:  # over N' = N up to the block
            dy_codes, dy_scales = quantize(ctx.row, _cols_to(dy, block))
        if ctx.needs_input_grad[0]:  # dY's zero columns meet W's zero rows
            dx = gemm(layer.dgrad_on_wt, layer.k, dy_codes.shape[1], dy_codes, dg_codes, dg_scales, None, offsets,
                      None, dy_scales)
        if ctx.needs_input_grad[1]:
            if ctx.tensor_scaled:  # dYᵀ: the transposed codes of dgrad's dY, the same scale
                dyt_codes, dyt_scales = _rows_to(dy_codes[:, :layer.n], block).t().contiguous(), dy_scales
            else:
                dyt_codes, dyt_scales = _columnwise(ctx.row, dy, offsets, layer.experts, block)
            if main_grad is not None:
                gemm_into(layer.wgrad, layer.n, layer.k, dyt_codes, xt_codes, main_grad, xt_scales, None, offsets,
                          dyt_scales)
            else:
                dw = gemm(layer.wgrad, layer.n, layer.k, dyt_codes, xt_codes, xt_scales, None, offsets, None,
                          dyt_scales)
                dw = dw if dw.dtype == ctx.w_dtype else dw.to(ctx.w_dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = _bias_grad(dy, offsets, layer.experts).to(ctx.bias_dtype)
        return dx, dw, db, None, None, None, None, None, None, None, None, None


def _columnwise(row: str, t: torch.Tensor, offsets: Optional[torch.Tensor], experts: int, block: int):
    """The column-wise (along M) copy of t [M, C] that wgrad reads: dense [C, M'] over t's rows padded
    with zero rows to a multiple of the block (per-row scales: the quantizer writes the zero columns
    itself); grouped [C, W], each expert's rows in whole blocks."""
    if not experts:
        per_row = row.endswith(":m")
        return quantize(row + " transpose=true", t if per_row else _rows_to(t, block))
    return quantize(_grouped_columnwise_spec(row, experts), t, offsets)


def _grouped_columnwise_spec(row: str, experts: int) -> str:
    return row.replace("quantize ", f"quantize[experts={experts},layout=offsets] ", 1) + " transpose=true"


def layer_of(rec: Recipe, w: torch.Tensor, w_global: Optional[torch.Tensor], has_bias: bool, into_main_grad: bool,
             experts: int) -> _Layer:
    """The specs and sizes one call runs, from the weight as it is held: dW added in f32 into main_grad by
    the wgrad kernel itself (accumulate=true), else written in the weight's dtype; an NVFP4 weight of a
    grouped layer with one global per expert gets nvfp4_global=expert."""
    n, k = _weight_dims(rec, w, experts)
    wgrad_out = "f32" if into_main_grad else _TORCH_FORMAT.get(w.dtype, "f32")
    per_expert = w_global is not None and experts > 1 and w_global.numel() == experts
    return _layer(rec, experts, has_bias, wgrad_out, "expert" if per_expert else "tensor", int(n), int(k),
                  into_main_grad)


def quantized_layer(rec: Recipe, n: int, k: int, has_bias: bool, into_main_grad: bool, w_dtype,
                    experts: int = 0) -> _Layer:
    """The GEMM specs of a quantized recipe's layer (grouped over `experts` when > 0): the wgrad kernel
    writes dW in the weight's dtype, or adds it into the fp32 main_grad."""
    wgrad_out = "f32" if into_main_grad else format_of(w_dtype)
    return _layer(rec, experts, has_bias, wgrad_out, "tensor", n, k, into_main_grad)


def quantized_plans(rec: Recipe, layer: _Layer):
    """(spec, n, k) of every plan a quantized layer's call runs: the three GEMMs (dgrad: the forward's
    kernel on Wᵀ, n = K, k = N rounded up to the recipe's block) and the quantizers of W, X and dY (n = 0,
    k = the input's columns)."""
    block = block_of(rec)
    n, k, n_blocks = layer.n, layer.k, -(-layer.n // block) * block
    row = f"quantize a=bf16 out={rec.x_format}"
    w_row = _w_quantize_spec(rec)
    columnwise = _grouped_columnwise_spec(row, layer.experts) if layer.experts else row + " transpose=true"
    plans = [(layer.forward, n, k), (layer.dgrad_on_wt, k, n_blocks), (layer.wgrad, n, k), (w_row, 0, k),
             (row, 0, k), (row, 0, n_blocks)]
    if rec.x_format != "e4m3":  # per-tensor copies are transposed codes, not quantizer runs
        plans += [(columnwise, 0, k), (columnwise, 0, n)]
    if rec.w_format in ("mxfp8", "e4m3:n"):  # W's column-wise copy for dgrad
        plans.append((w_row + " transpose=true", 0, k))
    return plans


def check_quantized_sizes(where: str, rec: Recipe, n: int, k: int, experts: int) -> None:
    """What a quantized recipe needs of a layer's sizes (raised as INVALID_ARGUMENT / UNSUPPORTED naming
    the size): K a multiple of the block along K, N of 8 (16-byte rows of Y); mxfp8 on dense layers."""
    block = block_of(rec)
    if k % block:
        what = "16-byte rows of X's and W's FP8 codes" if block == 16 else "the quantization block of X and W along K"
        _fail(f"{where}: in_features={k} is not a multiple of {block}: recipe {rec.name} needs in_features (the "
              f"weight's K) to be a multiple of {block} ({what})")
    if n % 8:
        _fail(f"{where}: out_features={n} is not a multiple of 8: recipe {rec.name} needs out_features (the "
              f"weight's N) to be a multiple of 8 (16-byte rows of Y and of dY's copies)")
    if experts and rec.x_format in ("mxfp8", "e4m3", "e4m3:m"):
        raise KilnError(Status.UNSUPPORTED,
                        f"{where}: recipe {rec.name} on a grouped layer: its wgrad would reduce each expert's tokens "
                        "through the forward's kernel, which has no per-expert reduction ranges (the grouped "
                        "quantized wgrad reads FP8 1x128 copies only); use recipe fp8_block or bf16 for grouped "
                        "layers")


def _run_quantized(where, rec, x2d, w, bias, offsets, main_grad, experts):
    n, k = w.shape[-2], w.shape[-1]
    check_quantized_sizes(where, rec, n, k, experts)
    layer = quantized_layer(rec, int(n), int(k), bias is not None, main_grad is not None, w.dtype, experts)
    w_codes, w_scales, dg_codes, dg_scales = quantized_weight(rec, w)
    # Decided here: inside a Function's forward grad mode is always off, so only the caller's mode tells
    # whether a backward will want dW (and so X's column-wise copy).
    wants_dw = torch.is_grad_enabled() and w.requires_grad
    return _KilnQuantizedLinear.apply(x2d, w, bias, offsets, main_grad, w_codes, w_scales, dg_codes, dg_scales,
                                      layer, rec.x_format, wants_dw)


def _run(where, rec, x2d, w, w_scale, w_global, bias, offsets, main_grad, experts):
    n, k = _weight_dims(rec, w, experts)
    _check_activation(where, rec, x2d, k)
    if rec.weight == "bf16":
        if w.dtype != torch.bfloat16:
            _fail(f"{where}: recipe {rec.name} takes a bfloat16 weight, got {w.dtype}")
    elif w_scale is None:
        _fail(f"{where}: recipe {rec.name} needs the weight's block scales (weight_scale)")
    if rec.weight == "nvfp4" and w_global is None:
        _fail(f"{where}: recipe {rec.name} needs the weight's global decode scale (weight_global, f32)")
    for name, t in (("weight", w), ("weight_scale", w_scale), ("weight_global", w_global), ("offsets", offsets)):
        if t is None:
            continue
        if t.device != x2d.device:
            _fail(f"{where}: {name} is on {t.device} but x on {x2d.device}; both must be on one GPU")
        if rec.weight != "bf16" and not t.is_contiguous():
            _fail(f"{where}: {name} is not contiguous (shape {list(t.shape)}, strides {list(t.stride())}); the "
                  f"packed recipes read it as stored: pass {name}.contiguous()")
    if main_grad is not None and (main_grad.dtype != torch.float32 or main_grad.shape != w.shape):
        _fail(f"{where}: main_grad must be float32 with the weight's shape {list(w.shape)}, "
              f"got {main_grad.dtype} {list(main_grad.shape)}")
    if rec.x_format:
        return _run_quantized(where, rec, x2d, w, bias, offsets, main_grad, experts)
    layer = layer_of(rec, w, w_global, bias is not None, main_grad is not None, experts)
    return _KilnLinear.apply(x2d, w, w_scale, w_global, bias, offsets, main_grad, layer)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, recipe="bf16", *,
           weight_scale: Optional[torch.Tensor] = None, weight_global: Optional[torch.Tensor] = None,
           main_grad: Optional[torch.Tensor] = None) -> torch.Tensor:
    """y = x . weightᵀ (+ bias), like torch.nn.functional.linear, through kiln plans in the forward and
    the backward (docs/training.md).

    x: [..., K] bfloat16 on a CUDA device. weight: [N, K] bfloat16 for recipe "bf16"; the packed codes
    for the frozen recipes (uint8 [N, K/2], or gpt-oss's [N, K/32, 16]) with weight_scale (uint8 E8M0
    [N, K/32] for mxfp4, UE4M3 [N, K/16] for nvfp4) and, for nvfp4, weight_global (f32 [1]).
    bias: [N] (any float dtype; its gradient comes back in its dtype).
    main_grad: an fp32 tensor shaped like weight: dW is added to it and weight.grad stays None
    (Megatron-style gradient accumulation across micro-batches)."""
    rec = _recipe(recipe)
    if not isinstance(weight, torch.Tensor) or weight.dim() < 2:
        _fail("kiln.torch.linear: weight must be a 2-D tensor [N, K] (or gpt-oss's packed [N, K/32, 16])")
    lead = x.shape[:-1] if isinstance(x, torch.Tensor) else ()
    x2d = x.reshape(-1, x.shape[-1]) if isinstance(x, torch.Tensor) and x.dim() != 2 else x
    if isinstance(x2d, torch.Tensor):
        x2d = x2d.contiguous()
    y = _run("kiln.torch.linear", rec, x2d, weight, weight_scale, weight_global, bias, None, main_grad, 0)
    return y.reshape(*lead, y.shape[-1])


def grouped_linear(x: torch.Tensor, weight: torch.Tensor, offsets: torch.Tensor,
                   bias: Optional[torch.Tensor] = None, recipe="bf16", *,
                   weight_scale: Optional[torch.Tensor] = None, weight_global: Optional[torch.Tensor] = None,
                   main_grad: Optional[torch.Tensor] = None) -> torch.Tensor:
    """y[rows of expert e] = x[rows of e] . weight[e]ᵀ (+ bias[e]) for tokens sorted by expert.

    x: [M, K] bfloat16, the rows of expert e at offsets[e-1]:offsets[e]. offsets: int32 [E] cumulative
    row ends on x's device (offsets[-1] <= M; rows past it are not written). weight: [E, N, K] bfloat16,
    or packed as in linear() with a leading E (weight_scale [E, ...]; nvfp4 weight_global [1], or [E] for
    one global per expert). bias: [E, N]. main_grad: as in linear(), [E, N, K] fp32."""
    rec = _recipe(recipe)
    where = "kiln.torch.grouped_linear"
    if not isinstance(weight, torch.Tensor) or weight.dim() < 3:
        _fail(f"{where}: weight must be [E, N, K] (or gpt-oss's packed [E, N, K/32, 16])")
    experts = weight.shape[0]
    if not isinstance(offsets, torch.Tensor) or offsets.dtype != torch.int32 or offsets.shape != (experts,):
        got = f"{offsets.dtype} {list(offsets.shape)}" if isinstance(offsets, torch.Tensor) else type(offsets).__name__
        _fail(f"{where}: offsets must be an int32 tensor [{experts}] (cumulative row ends per expert), got {got}")
    if isinstance(x, torch.Tensor) and x.dim() != 2:
        _fail(f"{where}: x must be [M, K] (tokens sorted by expert), got shape {list(x.shape)}")
    if isinstance(x, torch.Tensor) and offsets.device != x.device:
        _fail(f"{where}: offsets is on {offsets.device} but x on {x.device}; both must be on one GPU")
    x2d = x.contiguous() if isinstance(x, torch.Tensor) else x
    return _run(where, rec, x2d, weight, weight_scale, weight_global, bias, offsets, main_grad, experts)
