"""kiln.Runtime and kiln.Plan: thin wrappers over the C API's opaque handles."""

import ctypes
import json
import re
from pathlib import Path

from . import _dlpack, _lib
from ._errors import KilnError, Status

# Output formats this binding can allocate for plan.run(out=None), by canonical spec name.
_OUT_DTYPES = {
    "bf16": "bfloat16",
    "f16": "float16",
    "f32": "float32",
    "e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
}


def canonicalize(spec: str) -> str:
    """Parses and validates spec (DSL text; comments allowed) and returns its canonical text."""
    lib = _lib.lib()
    return _lib.call_with_buffer(lib.kiln_spec_canonicalize, spec.encode("utf-8"))


def grouped_copy_columns(m: int, experts: int, block: int = 128) -> int:
    """Columns of the padded column-wise copy that `quantize[experts=E,layout=...] ... transpose=true` writes
    for m rows in all (masked: E x max_m): block * (ceil(m / block) + experts), enough for any routing, since
    each expert's rows start on a block boundary (docs/backward.md, grouped quantized wgrad)."""
    if not isinstance(m, int) or not isinstance(experts, int) or m < 0 or experts < 1 or block < 1:
        raise ValueError(f"kiln.grouped_copy_columns: m >= 0, experts >= 1 and block >= 1 are integers; got m={m!r}, "
                         f"experts={experts!r}, block={block!r}")
    return block * ((m + block - 1) // block + experts)


def derive_backward(spec: str, mode: str = "high_precision", grad: str = "bf16", wgrad_out: str = "f32") -> tuple:
    """The (dgrad, wgrad) specs of a forward GEMM spec in mode "high_precision", "dequantized" or
    "quantized" (docs/backward.md), as canonical texts: dY and dX in grad ("bf16" or "f16"; mode quantized:
    dX only, dY is e4m3), dW in wgrad_out ("f32", "bf16" or "f16")."""
    lib = _lib.lib()
    if (grad, wgrad_out) == ("bf16", "f32"):
        return tuple(
            _lib.call_with_buffer(lib.kiln_derive_backward, spec.encode("utf-8"), mode.encode("utf-8"), p)
            for p in (b"dgrad", b"wgrad")
        )
    fn = getattr(lib, "kiln_derive_backward_with", None)
    if fn is None:
        raise KilnError(Status.UNSUPPORTED,
                        f"kiln.derive_backward: {_lib.loaded_name()} predates the grad / wgrad_out options")
    opts = _lib.BackwardOptions()
    opts.struct_size = ctypes.sizeof(_lib.BackwardOptions)
    opts.mode = mode.encode("utf-8")
    opts.grad = grad.encode("utf-8")
    opts.wgrad_out = wgrad_out.encode("utf-8")
    return tuple(
        _lib.call_with_buffer(fn, spec.encode("utf-8"), ctypes.byref(opts), p) for p in (b"dgrad", b"wgrad")
    )


def version() -> str:
    """The version of the loaded libkiln.so."""
    return _lib.lib().kiln_version_string().decode()


def library_path() -> str:
    """Where libkiln.so was loaded from (loading it if needed; see kiln._lib for the search order)."""
    return _lib.loaded_name()


def include_dir() -> str:
    """The C and C++ headers (kiln/kiln.h, kiln/kiln.hpp, dlpack/dlpack.h) of an installed wheel, for
    compiling against libkiln: `cc -I$(python3 -c "import kiln; print(kiln.include_dir())") ...`; in a
    checkout, its include/ directory."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "include", here.parent.parent / "include"):
        if (candidate / "kiln" / "kiln.h").is_file():
            return str(candidate)
    raise KilnError(Status.INVALID_ARGUMENT, f"kiln.include_dir: no kiln/kiln.h under {here / 'include'} (install the wheel built from "
                    "the repository root: pip install .)")


def nvrtc_path():
    """Where NVRTC will be loaded from for kernel compilation (see kiln._lib.find_nvrtc), or None."""
    return _lib.find_nvrtc()


def _stream_handle(stream, a, torch):
    """The CUstream to launch on: torch's current stream of a's device by default; a
    torch.cuda.Stream, or a raw handle (int, e.g. from CuPy or cudaStreamCreate) when given."""
    if stream is None:
        return torch.cuda.current_stream(a.device).cuda_stream if a.is_cuda else 0
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is None:
        raise KilnError(
            Status.INVALID_ARGUMENT,
            f"kiln.Plan.run: stream must be a torch.cuda.Stream or an int CUstream handle, got {type(stream).__name__}",
        )
    return handle


class Runtime:
    """Owns the driver, the kernel cache and the loaded kernels.

    cache_dir: None for $KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/kiln.
    disable_cache: compile in memory only.
    """

    def __init__(self, cache_dir=None, disable_cache=False):
        lib = _lib.lib()
        opts = _lib.RuntimeOptions()
        opts.struct_size = ctypes.sizeof(_lib.RuntimeOptions)
        opts.cache_dir = None if cache_dir is None else str(cache_dir).encode("utf-8")
        opts.disable_cache = 1 if disable_cache else 0
        handle = _lib.c_handle()
        _lib.check(lib.kiln_runtime_create(ctypes.byref(opts), ctypes.byref(handle)))
        self._lib = lib
        self._handle = handle

    @property
    def has_device(self) -> bool:
        """True when a CUDA GPU is usable."""
        return bool(self._lib.kiln_runtime_has_device(self._live()))

    def plan(self, spec: str, n: int, k: int, m_hint: int = 0) -> "Plan":
        """Parses spec and plans it for W[n, k]; every M is accepted by run(). No GPU needed."""
        opts = _lib.PlanOptions()
        opts.struct_size = ctypes.sizeof(_lib.PlanOptions)
        opts.n = int(n)
        opts.k = int(k)
        opts.m_hint = int(m_hint)
        handle = _lib.c_handle()
        _lib.check(
            self._lib.kiln_plan_create(self._live(), spec.encode("utf-8"), ctypes.byref(opts), ctypes.byref(handle))
        )
        return Plan(self, handle, int(n), int(k))

    def close(self):
        if getattr(self, "_handle", None) is not None and self._handle.value:
            self._lib.kiln_runtime_destroy(self._handle)
        self._handle = None

    def _live(self):
        if self._handle is None:
            raise KilnError(Status.INVALID_ARGUMENT, "kiln.Runtime: used after close()")
        return self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


class Plan:
    """An immutable (spec, n, k) problem; run() takes any M. Safe to run on several streams."""

    def __init__(self, runtime, handle, n, k):
        self._runtime = runtime  # the C plan keeps its runtime alive; this keeps the Python one
        self._lib = runtime._lib
        self._handle = handle
        self.n = n
        self.k = k
        self._description = None

    def describe(self) -> dict:
        """The plan as a dict: canonical spec, family, arch, n, k and the config per M bucket."""
        if self._description is None:
            text = _lib.call_with_buffer(self._lib.kiln_plan_describe, self._live())
            self._description = json.loads(text)
        return dict(self._description)

    @property
    def spec(self) -> str:
        """The canonical spec text."""
        return self.describe()["spec"]

    def prepare(self):
        """Compiles and loads every kernel the plan may run (call before CUDA-graph capture)."""
        _lib.check(self._lib.kiln_plan_prepare(self._live()))

    def compile(self, m: int = 1):
        """Compiles (or finds in the kernel cache) the kernel run() uses for m rows, without loading
        it: no GPU needed. Compile errors raise KilnError (COMPILE_ERROR with NVRTC's log)."""
        fn = getattr(self._lib, "kiln_plan_compile", None)
        if fn is None:
            raise KilnError(Status.UNSUPPORTED, f"kiln.Plan.compile: {_lib.loaded_name()} predates kiln_plan_compile")
        _lib.check(fn(self._live(), int(m)))

    def workspace_size(self, m: int) -> int:
        size = ctypes.c_size_t(0)
        _lib.check(self._lib.kiln_plan_workspace_size(self._live(), int(m), ctypes.byref(size)))
        return size.value

    def mx_prepass_workspace_size(self, m: int) -> int:
        """MXFP8 at large M on sm_90a: bytes of workspace with which run() converts X and W to bf16 first
        and runs the bf16 kernel (1 MiB + 2 (M + N) K bytes, grouped 1 MiB + 2 (M + E N) K; the first MiB,
        the split-K counters' place, is never written); 0 where the plan has no such path for m rows of X
        (masked: E * max_m). Pass workspace=torch.empty(size, dtype=torch.uint8, device="cuda") to run();
        zero it once if the same buffer also serves the plan's small-M (split-K) runs."""
        fn = getattr(self._lib, "kiln_plan_mx_prepass_workspace_size", None)
        if fn is None:
            raise KilnError(Status.UNSUPPORTED,
                            f"kiln.Plan.mx_prepass_workspace_size: {_lib.loaded_name()} predates it")
        size = ctypes.c_size_t(0)
        _lib.check(fn(self._live(), int(m), ctypes.byref(size)))
        return size.value

    def _out_dtype(self, torch):
        match = re.search(r"\bout=([a-z0-9]+)", self.spec)
        name = _OUT_DTYPES.get(match.group(1)) if match else None
        dtype = getattr(torch, name, None) if name else None
        if dtype is None:
            raise KilnError(
                Status.UNSUPPORTED,
                f"kiln.Plan.run: cannot allocate the output of '{self.spec}'; pass out= yourself",
            )
        return dtype

    def run(self, a, b=None, out=None, a_scale=None, b_scale=None, stream=None, offsets=None, counts=None,
            b_global=None, workspace=None, out_scale=None, out_global=None, bias=None, scale=None,
            colscale=None, expert_scale=None, residual=None, gate_bias=None, up_bias=None):
        """Y[M, N] = X[M, K] . W[N, K]^T on torch tensors (backward specs, docs/backward.md: pass=dgrad takes
        a = dY [M, N] and b = W [N, K] and writes dX [M, K]; pass=wgrad takes a = dY [M, N] and b = X [M, K] and
        writes dW [N, K]) (or any DLPack producer, viewed through
        torch.from_dlpack), launched on torch's current stream of a's device (or on stream: a
        torch.cuda.Stream or an int CUstream). Allocates out in the spec's output dtype when it is
        None (shape: a's with the last dimension N). Returns out. Nothing synchronizes.
        workspace: a device tensor of at least workspace_size(M) bytes, zero-filled before its first use
            (sm90 split-K configs and quantized dgrad, which writes W's transposed copy there; None: the
            plan's own, fine unless this plan runs on several streams at once). MXFP8 plans: a workspace of at least mx_prepass_workspace_size(M)
            bytes makes the run convert X and W to bf16 first and run the bf16 kernel (no zero fill).

        Quantized operands and scales are passed as the spec describes them (packed FP4 weights as
        uint8 [.., K/2] or gpt-oss's [.., K/32, 16]; E8M0/UE4M3 scales as uint8). Grouped GEMMs take
        offsets= (layout=offsets: int32 [E] cumulative row ends) or counts= (layout=masked: int32
        [E] rows per expert); b=nvfp4 takes b_global= (f32 [1], or [E] with nvfp4_global=expert).
        Quantize specs take a and write out (the codes; pass it) and out_scale (and out_global for
        out=nvfp4), laid out as docs/formats.md says.

        Specs with an epilogue="..." take the vectors it reads by their epilogue names: bias=, scale=
        (per-token, e.g. router weights), colscale=, expert_scale=, residual=, gate_bias=, up_bias=
        (f32, bf16 or f16, any strides: gpt-oss's interleaved [E, 2I] bias goes in as
        gate_bias=b[:, 0::2], up_bias=b[:, 1::2]). With gate_up the output has N / 2 columns."""
        import torch

        if a is not None and not isinstance(a, torch.Tensor):
            a = _dlpack.as_torch(a, "a")
        if out is None and self.spec.startswith("quantize"):
            raise KilnError(
                Status.INVALID_ARGUMENT,
                f"kiln.Plan.run: '{self.spec}' writes codes and scales: pass out= and out_scale= (docs/formats.md)",
            )
        if out is None:
            if not isinstance(a, torch.Tensor) or a.dim() < 1:
                raise KilnError(Status.INVALID_ARGUMENT, "kiln.Plan.run: a must be a torch tensor [M, K]")
            pass_ = re.search(r"\bpass=(dgrad|wgrad)\b", self.spec.split(' epilogue="', 1)[0])
            if pass_ and pass_.group(1) == "wgrad":  # dW [N, K]; grouped [E, N, K]
                experts = re.match(r"\s*grouped_gemm\[experts=(\d+)", self.spec)
                shape = (int(experts.group(1)), self.n, self.k) if experts else (self.n, self.k)
            elif pass_:  # dX: a's rows, K columns
                shape = (*a.shape[:-1], self.k)
            else:
                shape = (*a.shape[:-1], self._out_columns())
            out = torch.empty(shape, dtype=self._out_dtype(torch), device=a.device)
        ops = _lib.pack_operands({
            "a": a, "b": b, "out": out, "a_scale": a_scale, "b_scale": b_scale, "offsets": offsets,
            "counts": counts, "b_global": b_global, "out_scale": out_scale, "out_global": out_global,
            "bias": bias, "scale": scale, "colscale": colscale, "expert_scale": expert_scale,
            "residual": residual, "gate_bias": gate_bias, "up_bias": up_bias,
        })
        stream_ptr = _stream_handle(stream, a, torch)
        ws_ptr, ws_bytes = None, 0
        if workspace is not None:
            workspace = _dlpack.as_torch(workspace, "workspace")
            ws_ptr, ws_bytes = workspace.data_ptr(), workspace.numel() * workspace.element_size()
        _lib.check(
            self._lib.kiln_plan_run(
                self._live(), ops, ws_ptr, ws_bytes, ctypes.c_void_p(stream_ptr)
            )
        )
        return out

    def _out_columns(self):
        """Columns of Y: N, or N / 2 for a gate|up GLU (the canonical spec names gate_up before its
        epilogue, whose text has no '=' without spaces)."""
        head = self.spec.split(' epilogue="', 1)[0]
        return self.n // 2 if re.search(r"\bgate_up=(interleaved|stacked)\b", head) else self.n

    def close(self):
        if getattr(self, "_handle", None) is not None and self._handle.value:
            self._lib.kiln_plan_destroy(self._handle)
        self._handle = None

    def _live(self):
        if self._handle is None:
            raise KilnError(Status.INVALID_ARGUMENT, "kiln.Plan: used after close()")
        return self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
