"""kiln's GEMMs as torch operators (torch.library), with the plans they run cached per (spec, n, k).

`torch.ops.kiln.gemm(spec, n, k, a, b, ...)` runs any kiln GEMM spec (fprop, dgrad, wgrad; dense or
grouped) and returns a new output tensor. Its fake implementation gives the output's shape and dtype
from the spec alone, so torch.compile traces through it without running kiln.
`torch.ops.kiln.gemm_into(spec, n, k, a, b, out, ...)` runs a spec into an existing output, which it
declares as mutated: with accumulate=true the product is added to `out` (dW into an fp32 main_grad).
`torch.ops.kiln.quantize(spec, a, offsets=None)` runs an FP8 quantize spec and returns (codes, scales)
shaped as docs/formats.md gives them (with offsets: the grouped column-wise copy a grouped wgrad reads).
"""

import functools
import re
import threading
from typing import Optional

import torch

from .. import _runtime
from .._errors import KilnError, Status

_lock = threading.Lock()
_runtime_obj = None
_plans = {}
_prepared = set()

_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def runtime() -> _runtime.Runtime:
    """The process-wide kiln.Runtime kiln.torch plans on (the default kernel cache)."""
    global _runtime_obj
    with _lock:
        if _runtime_obj is None:
            _runtime_obj = _runtime.Runtime()
        return _runtime_obj


def plan(spec: str, n: int, k: int) -> _runtime.Plan:
    """The cached plan of (spec, n, k); planned on first use (no GPU work until it runs)."""
    key = (spec, int(n), int(k))
    found = _plans.get(key)
    if found is not None:
        return found
    made = runtime().plan(spec, n=n, k=k)
    with _lock:
        return _plans.setdefault(key, made)


def prepare_plan(spec: str, n: int, k: int) -> None:
    """Compiles and loads every kernel of (spec, n, k) and its workspace: required before CUDA-graph
    capture (nothing may compile, load or allocate inside a capture)."""
    key = (spec, int(n), int(k))
    if key in _prepared:
        return
    plan(spec, n, k).prepare()
    with _lock:
        _prepared.add(key)


@functools.lru_cache(maxsize=None)
def _output_rule(spec: str):
    """(pass, experts, glu, dtype) of a spec's output, parsed once per spec text."""
    head = spec.split(' epilogue="', 1)[0]
    match = re.search(r"\bout=([a-z0-9]+)", head)
    dtype = _DTYPES.get(match.group(1)) if match else None
    if dtype is None:
        raise KilnError(Status.UNSUPPORTED, f"kiln.torch: '{spec}' does not write a bf16, f16 or f32 output")
    pass_ = re.search(r"\bpass=(dgrad|wgrad)\b", head)
    experts = re.search(r"experts=(\d+)", head)
    glu = re.search(r"\bgate_up=(interleaved|stacked)\b", head) is not None
    return (pass_.group(1) if pass_ else "fprop", int(experts.group(1)) if experts else 0, glu, dtype)


def output_dtype(spec: str) -> torch.dtype:
    return _output_rule(spec)[3]


def output_shape(spec: str, n: int, k: int, a_shape) -> tuple:
    """The output's shape: fprop a's leading dims x N (N / 2 with gate_up); dgrad a's leading dims x K;
    wgrad [N, K], grouped [E, N, K]."""
    pass_, experts, glu, _ = _output_rule(spec)
    if pass_ == "wgrad":
        return (experts, n, k) if experts else (n, k)
    if pass_ == "dgrad":
        return (*a_shape[:-1], k)
    return (*a_shape[:-1], n // 2 if glu else n)


def _capture_ready(spec: str, n: int, k: int) -> _runtime.Plan:
    p = plan(spec, n, k)
    if (spec, n, k) not in _prepared and torch.cuda.is_current_stream_capturing():
        raise KilnError(
            Status.INVALID_ARGUMENT,
            f"kiln.torch: '{spec}' (n={n}, k={k}) runs inside a CUDA-graph capture but was not prepared: "
            "call kiln.torch.prepare(model) before capturing (kernels cannot be compiled or loaded in a capture)",
        )
    return p


def run_gemm(spec: str, n: int, k: int, a, b, b_scale=None, b_global=None, offsets=None, bias=None,
             a_scale=None):
    """Runs spec (planned for n, k) on a and b on torch's current stream; returns the new output."""
    p = _capture_ready(spec, n, k)
    out = torch.empty(output_shape(spec, n, k, a.shape), dtype=output_dtype(spec), device=a.device)
    p.run(a, b, out=out, a_scale=a_scale, b_scale=b_scale, b_global=b_global, offsets=offsets, bias=bias)
    return out


def run_gemm_into(spec: str, n: int, k: int, a, b, out, b_scale=None, b_global=None, offsets=None,
                  a_scale=None) -> None:
    """Runs spec into out (with accumulate=true: out += the product) on torch's current stream."""
    _capture_ready(spec, n, k).run(a, b, out=out, a_scale=a_scale, b_scale=b_scale, b_global=b_global,
                                   offsets=offsets)


@torch.library.custom_op("kiln::gemm", mutates_args=())
def gemm_op(spec: str, n: int, k: int, a: torch.Tensor, b: torch.Tensor, b_scale: Optional[torch.Tensor] = None,
            b_global: Optional[torch.Tensor] = None, offsets: Optional[torch.Tensor] = None,
            bias: Optional[torch.Tensor] = None, a_scale: Optional[torch.Tensor] = None) -> torch.Tensor:
    """torch.ops.kiln.gemm: run_gemm as a torch operator (what torch.compile sees)."""
    return run_gemm(spec, n, k, a, b, b_scale, b_global, offsets, bias, a_scale)


@gemm_op.register_fake
def _gemm_fake(spec, n, k, a, b, b_scale=None, b_global=None, offsets=None, bias=None, a_scale=None):
    return a.new_empty(output_shape(spec, n, k, a.shape), dtype=output_dtype(spec))


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _plain(*tensors) -> bool:
    return all(t is None or type(t) in _PLAIN for t in tensors)


def gemm(spec: str, n: int, k: int, a, b, b_scale=None, b_global=None, offsets=None, bias=None, a_scale=None):
    """The layers' entry: the operator while torch.compile traces or for tensor subclasses (fake tensors,
    functional tensors), the plain call otherwise (the operator's dispatch costs more host time than the
    launch itself)."""
    if torch.compiler.is_compiling() or not _plain(a, b):
        return gemm_op(spec, n, k, a, b, b_scale, b_global, offsets, bias, a_scale)
    return run_gemm(spec, n, k, a, b, b_scale, b_global, offsets, bias, a_scale)


@torch.library.custom_op("kiln::gemm_into", mutates_args=("out",))
def gemm_into_op(spec: str, n: int, k: int, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
                 b_scale: Optional[torch.Tensor] = None, b_global: Optional[torch.Tensor] = None,
                 offsets: Optional[torch.Tensor] = None, a_scale: Optional[torch.Tensor] = None) -> None:
    """torch.ops.kiln.gemm_into: run_gemm_into as a torch operator that mutates out."""
    run_gemm_into(spec, n, k, a, b, out, b_scale, b_global, offsets, a_scale)


@gemm_into_op.register_fake
def _gemm_into_fake(spec, n, k, a, b, out, b_scale=None, b_global=None, offsets=None, a_scale=None):
    return None


def gemm_into(spec: str, n: int, k: int, a, b, out, b_scale=None, b_global=None, offsets=None, a_scale=None) -> None:
    """gemm()'s counterpart for an existing output (the operator only while compiling or for subclasses)."""
    if torch.compiler.is_compiling() or not _plain(a, b, out):
        gemm_into_op(spec, n, k, a, b, out, b_scale, b_global, offsets, a_scale)
    else:
        run_gemm_into(spec, n, k, a, b, out, b_scale, b_global, offsets, a_scale)


# FP8 quantize specs the training layers run: out= format -> (codes, scales) layout of an [M, K] input.
# The grouped form (experts, offsets) is the padded column-wise copy a grouped wgrad reads.
_FP8_QUANTIZE = re.compile(r"^quantize(\[experts=(\d+),layout=offsets\])? a=bf16 "
                           r"out=e4m3:(block1x128|block128x128)(:ue8m0)?( transpose=true)?$")
_MX_QUANTIZE = re.compile(r"^quantize a=bf16 out=mxfp8( transpose=true)?$")
_TENSOR_QUANTIZE = re.compile(r"^quantize a=bf16 out=e4m3(:tensor)?$")
_ROW_QUANTIZE = re.compile(r"^quantize a=bf16 out=e4m3:m( transpose=true)?$")
_TAKES = ("the operator takes 'quantize a=bf16 out=e4m3:block1x128[:ue8m0] [transpose=true]', "
          "'quantize a=bf16 out=e4m3:block128x128[:ue8m0]', "
          "'quantize[experts=E,layout=offsets] a=bf16 out=e4m3:block1x128[:ue8m0] transpose=true' (with offsets) "
          ", 'quantize a=bf16 out=mxfp8 [transpose=true]', 'quantize a=bf16 out=e4m3:m [transpose=true]' (one f32 "
          "scale per row, or per column of a) and 'quantize a=bf16 out=e4m3' (one f32 scale)")


def quantize_layout(spec: str, rows: int, cols: int):
    """((codes shape), (scales shape), scales dtype, experts) of an FP8 or MXFP8 quantize spec on an [rows, cols]
    input (experts = 0 but for the grouped column-wise copy), or UNSUPPORTED for a spec the torch
    operator does not take (docs/formats.md has the table)."""
    if _TENSOR_QUANTIZE.match(spec):  # per-tensor current scaling: one f32 decode scale
        return (rows, cols), (1,), torch.float32, 0
    row = _ROW_QUANTIZE.match(spec)
    if row is not None:  # one f32 scale per row; transposed: per column, the copy [K, M] padded to 16 columns
        if row.group(1):
            return (cols, (rows + 15) // 16 * 16), (cols,), torch.float32, 0
        return (rows, cols), (rows,), torch.float32, 0
    mx = _MX_QUANTIZE.match(spec)
    if mx is not None:  # E8M0 scales per 32 along the row (transposed: [K, M], 32 tokens per scale)
        if mx.group(1):
            return (cols, rows), (cols, rows // 32), torch.uint8, 0
        return (rows, cols), (rows, cols // 32), torch.uint8, 0
    match = _FP8_QUANTIZE.match(spec)
    grouped = match is not None and match.group(1) is not None
    transposed = match is not None and match.group(5) is not None
    if match is None or (match.group(3) == "block128x128" and transposed) or (grouped and not transposed):
        raise KilnError(Status.UNSUPPORTED, f"kiln.torch.quantize: '{spec}'; {_TAKES}")
    dtype = torch.uint8 if match.group(4) else torch.float32
    if grouped:  # each expert's rows in whole 128-token blocks: [K, W], W = 128 (ceil(M / 128) + E)
        experts = int(match.group(2))
        width = 128 * ((rows + 127) // 128 + experts)  # kiln.grouped_copy_columns, written out for SymInts
        return (cols, width), (cols, width // 128), dtype, experts
    if transposed:  # the column-wise copy: [K, M], one scale per 128 tokens
        return (cols, rows), (cols, rows // 128), dtype, 0
    if match.group(3) == "block128x128":
        return (rows, cols), ((rows + 127) // 128, cols // 128), dtype, 0
    return (rows, cols), (rows, cols // 128), dtype, 0


def _check_offsets(spec: str, experts: int, a, offsets) -> None:
    if experts and (offsets is None or offsets.dtype != torch.int32 or tuple(offsets.shape) != (experts,)):
        got = "none" if offsets is None else f"{offsets.dtype} {list(offsets.shape)}"
        raise KilnError(Status.INVALID_ARGUMENT,
                        f"kiln.torch.quantize: '{spec}' needs offsets, int32 [{experts}] (cumulative row ends per "
                        f"expert); got {got}")
    if not experts and offsets is not None:
        raise KilnError(Status.INVALID_ARGUMENT, f"kiln.torch.quantize: '{spec}' takes no offsets (not a grouped spec)")


def run_quantize(spec: str, a, offsets=None):
    """Runs an FP8 quantize spec on a [M, K] bf16 tensor; returns (codes uint8, scales). The grouped
    column-wise copy's columns past the last expert's blocks are left as allocated (no GEMM reads them)."""
    codes_shape, scale_shape, scale_dtype, experts = quantize_layout(spec, a.shape[0], a.shape[1])
    _check_offsets(spec, experts, a, offsets)
    if a.device.type != "cuda":  # before anything asks the CUDA runtime
        raise KilnError(Status.INVALID_ARGUMENT, f"kiln.torch.quantize: a is on {a.device}; kiln runs on CUDA devices")
    p = _capture_ready(spec, 0, a.shape[1])  # n: unused by quantize specs
    codes = torch.empty(codes_shape, dtype=torch.uint8, device=a.device)
    scales = torch.empty(scale_shape, dtype=scale_dtype, device=a.device)
    p.run(a, out=codes, out_scale=scales, offsets=offsets)
    return codes, scales


@torch.library.custom_op("kiln::quantize", mutates_args=())
def quantize_op(spec: str, a: torch.Tensor, offsets: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.ops.kiln.quantize: run_quantize as a torch operator."""
    return run_quantize(spec, a, offsets)


@quantize_op.register_fake
def _quantize_fake(spec, a, offsets=None):
    codes_shape, scale_shape, scale_dtype, experts = quantize_layout(spec, a.shape[0], a.shape[1])
    _check_offsets(spec, experts, a, offsets)
    return a.new_empty(codes_shape, dtype=torch.uint8), a.new_empty(scale_shape, dtype=scale_dtype)


def quantize(spec: str, a, offsets=None):
    """The layers' entry to quantize (the operator only while compiling or for subclasses). offsets:
    the grouped spec's cumulative row ends (int32 [E], on a's device)."""
    if a.dim() != 2:
        raise KilnError(Status.INVALID_ARGUMENT, f"kiln.torch.quantize: a must be 2-D [M, K], got {list(a.shape)}")
    if torch.compiler.is_compiling() or not _plain(a, offsets):
        return quantize_op(spec, a, offsets)
    return run_quantize(spec, a, offsets)
