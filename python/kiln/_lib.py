"""Loading libkiln.so and declaring the C API (include/kiln/kiln.h) for ctypes.

The library is looked up, in order, at
  1. $KILN_LIBRARY (a full path; when set, it is the only candidate, so a wrong path is an error
     rather than a silent fallback to another build),
  2. the package's own lib/libkiln.so (a wheel built with `pip install .` at the repository root),
  3. the build tree of the checkout this package lives in (a source checkout on PYTHONPATH, or
     `pip install -e python/`): <repo>/$KILN_BUILD_DIR/capi/libkiln.so when KILN_BUILD_DIR is set
     (relative to <repo>, or absolute; scripts/build.sh reads the same variable), then
     <repo>/build/capi/libkiln.so,
  4. the system loader (libkiln.so.0, libkiln.so: LD_LIBRARY_PATH, ldconfig's cache), which is how
     an install of python/ alone (not the wheel) finds it without KILN_LIBRARY.
It is loaded on first use, so ``import kiln`` works without it; LibraryNotFoundError lists every
place tried.
"""

import ctypes
import os
import struct
import threading
from pathlib import Path

from . import _dlpack
from ._dlpack import DLTensor
from ._errors import KilnError, LibraryNotFoundError, Status

_lock = threading.Lock()
_lib = None

c_status = ctypes.c_int
c_handle = ctypes.c_void_p


class RuntimeOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("cache_dir", ctypes.c_char_p),
        ("disable_cache", ctypes.c_int),
    ]


class PlanOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("m_hint", ctypes.c_int64),
    ]


class BackwardOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("mode", ctypes.c_char_p),
        ("grad", ctypes.c_char_p),
        ("wgrad_out", ctypes.c_char_p),
    ]


class Operands(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("a", ctypes.POINTER(DLTensor)),
        ("b", ctypes.POINTER(DLTensor)),
        ("out", ctypes.POINTER(DLTensor)),
        ("a_scale", ctypes.POINTER(DLTensor)),
        ("b_scale", ctypes.POINTER(DLTensor)),
        # kiln 0.2: grouped GEMMs and the NVFP4 global scale.
        ("offsets", ctypes.POINTER(DLTensor)),
        ("counts", ctypes.POINTER(DLTensor)),
        ("b_global", ctypes.POINTER(DLTensor)),
        # kiln 0.3: quantize specs write the codes to out and their scales to out_scale (and, for
        # out=nvfp4, the global scale to out_global). A library built before these fields accepts
        # the larger struct_size and ignores them.
        ("out_scale", ctypes.POINTER(DLTensor)),
        ("out_global", ctypes.POINTER(DLTensor)),
        # Epilogue operands: the vectors a spec's epilogue="..." reads, named as in the epilogue language
        # (docs/epilogue.md); NULL when it does not read them.
        ("bias", ctypes.POINTER(DLTensor)),
        ("scale", ctypes.POINTER(DLTensor)),
        ("colscale", ctypes.POINTER(DLTensor)),
        ("expert_scale", ctypes.POINTER(DLTensor)),
        ("residual", ctypes.POINTER(DLTensor)),
        ("gate_bias", ctypes.POINTER(DLTensor)),
        ("up_bias", ctypes.POINTER(DLTensor)),
    ]


# ---- filling kiln_operands for a launch ----------------------------------------------------------------
# Plan.run runs for every launch, so its operands are written with struct.pack_into into one buffer per
# thread (a DLTensor, its shape and its strides per operand) instead of building ctypes objects: about a
# microsecond per operand. kiln_plan_run reads them before it returns, so the buffer is reused at once.

OPERAND_NAMES = tuple(name for name, _ in Operands._fields_[1:])
_MAX_DIMS = 8
_DL_TENSOR = struct.Struct("=QiiiBBHQQQ")  # data, device (type, id), ndim, dtype (code, bits, lanes),
                                           # shape, strides, byte_offset: DLPack 0.6's DLTensor, 48 bytes
_SLOT = _DL_TENSOR.size + 2 * 8 * _MAX_DIMS
_POINTERS = struct.Struct(f"=Q{len(OPERAND_NAMES)}Q")
assert _DL_TENSOR.size == ctypes.sizeof(DLTensor) and _POINTERS.size == ctypes.sizeof(Operands)


class _OperandBuffer(threading.local):
    def __init__(self):
        self.ops = Operands()
        self.ops_bytes = memoryview(self.ops).cast("B")
        self.buf = ctypes.create_string_buffer(_SLOT * len(OPERAND_NAMES))
        self.base = ctypes.addressof(self.buf)


_buffers = _OperandBuffer()


def pack_operands(tensors):
    """ctypes.byref of a kiln_operands filled from {name: tensor or None} (names of OPERAND_NAMES; torch
    tensors or DLPack producers). Valid until the next call on this thread."""
    import torch

    table = _dlpack._dtype_table(torch)
    b = _buffers
    pointers = [0] * len(OPERAND_NAMES)
    for i, name in enumerate(OPERAND_NAMES):
        t = tensors.get(name)
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            t = _dlpack.as_torch(t, name)
        code_bits = table.get(t.dtype)
        if code_bits is None:
            raise _dlpack.unmapped_dtype(t, name)
        ndim = t.dim()
        if ndim > _MAX_DIMS:
            raise KilnError(Status.INVALID_ARGUMENT, f"operand {name}: {ndim} dimensions; kiln takes at most {_MAX_DIMS}")
        off = i * _SLOT
        addr = b.base + off
        dev_type, dev_id = _dlpack._device(t)
        _DL_TENSOR.pack_into(b.buf, off, t.data_ptr(), dev_type, dev_id, ndim, code_bits[0], code_bits[1], 1,
                             addr + 48, addr + 48 + 8 * _MAX_DIMS, 0)
        if ndim:
            struct.pack_into(f"={ndim}q", b.buf, off + 48, *t.shape)
            struct.pack_into(f"={ndim}q", b.buf, off + 48 + 8 * _MAX_DIMS, *t.stride())
        pointers[i] = addr
    _POINTERS.pack_into(b.ops_bytes, 0, ctypes.sizeof(Operands), *pointers)
    return ctypes.byref(b.ops)


def _repo_root():
    """The checkout this package sits in (python/kiln/_lib.py -> <repo>), or None outside one."""
    repo = Path(__file__).resolve().parent.parent.parent
    return repo if (repo / "python" / "kiln").is_dir() else None


def _candidates():
    """(names to try in order, whether the first one is an explicit choice)."""
    env = os.environ.get("KILN_LIBRARY")
    if env:
        # An explicit choice is the only one: silently falling back would hide a wrong path.
        return [env], True
    names = []
    bundled = Path(__file__).resolve().parent / "lib" / "libkiln.so"
    if bundled.is_file():
        names.append(str(bundled))
    repo = _repo_root()
    if repo is not None:
        build_dir = os.environ.get("KILN_BUILD_DIR")
        if build_dir:
            names.append(str(repo / build_dir / "capi" / "libkiln.so"))  # an absolute build_dir wins
        names.append(str(repo / "build" / "capi" / "libkiln.so"))
    return names + ["libkiln.so.0", "libkiln.so"], False


# Entry points newer than the first release: the binding still loads a library without them.
_OPTIONAL = {"kiln_plan_compile", "kiln_plan_mx_prepass_workspace_size", "kiln_derive_backward_with"}


def _declare(lib):
    size_p = ctypes.POINTER(ctypes.c_size_t)
    int_p = ctypes.POINTER(ctypes.c_int)
    sigs = {
        "kiln_last_error": (ctypes.c_char_p, []),
        "kiln_status_name": (ctypes.c_char_p, [c_status]),
        "kiln_version_string": (ctypes.c_char_p, []),
        "kiln_version": (None, [int_p, int_p, int_p]),
        "kiln_runtime_create": (c_status, [ctypes.POINTER(RuntimeOptions), ctypes.POINTER(c_handle)]),
        "kiln_runtime_destroy": (None, [c_handle]),
        "kiln_runtime_has_device": (ctypes.c_int, [c_handle]),
        "kiln_plan_create": (
            c_status,
            [c_handle, ctypes.c_char_p, ctypes.POINTER(PlanOptions), ctypes.POINTER(c_handle)],
        ),
        "kiln_plan_destroy": (None, [c_handle]),
        "kiln_plan_prepare": (c_status, [c_handle]),
        "kiln_plan_compile": (c_status, [c_handle, ctypes.c_int64]),
        "kiln_plan_workspace_size": (c_status, [c_handle, ctypes.c_int64, size_p]),
        "kiln_plan_mx_prepass_workspace_size": (c_status, [c_handle, ctypes.c_int64, size_p]),
        "kiln_plan_describe": (c_status, [c_handle, ctypes.c_char_p, ctypes.c_size_t, size_p]),
        "kiln_plan_run": (
            c_status,
            [c_handle, ctypes.POINTER(Operands), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
        ),
        "kiln_spec_canonicalize": (c_status, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, size_p]),
        "kiln_derive_backward": (
            c_status,
            [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, size_p],
        ),
        "kiln_derive_backward_with": (
            c_status,
            [ctypes.c_char_p, ctypes.POINTER(BackwardOptions), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
             size_p],
        ),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name, None)
        if fn is None and name in _OPTIONAL:
            continue  # an older libkiln.so: the wrapper that needs it raises UNSUPPORTED
        if fn is None:
            raise LibraryNotFoundError(f"kiln: {lib._name} has no {name}; it is not a kiln library of this version")
        fn.restype = restype
        fn.argtypes = argtypes


def lib():
    """The loaded libkiln.so (ctypes.CDLL), loading it on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        find_nvrtc()  # before libkiln reads KILN_NVRTC_PATH
        names, explicit = _candidates()
        errors = []
        for name in names:
            if "/" in name and not explicit and not os.path.exists(name):
                errors.append(f"{name}: not found")
                continue
            try:
                loaded = ctypes.CDLL(name)
            except OSError as e:
                errors.append(f"{name}: {e}")
                continue
            _declare(loaded)
            _lib = loaded
            return _lib
        raise LibraryNotFoundError(
            "kiln: could not load libkiln.so (build it with ./scripts/build.sh, or set KILN_LIBRARY "
            "to its path); tried: " + "; ".join(errors)
        )


_NVRTC = "libnvrtc.so.13"


def find_nvrtc():
    """Where libkiln will load NVRTC from (it dlopens it on the first compile): $KILN_NVRTC_PATH when
    set; else a CUDA toolkit's (the system loader's libnvrtc.so.13, or /usr/local/cuda); else the NVRTC
    of pip's nvidia-cuda-nvrtc package (`pip install "kiln[cu13]"`), which this then names in
    KILN_NVRTC_PATH for libkiln. Returns the path or name, or None when there is none (kernels already
    in the cache still run; compiling one fails with what to install)."""
    import ctypes.util
    import importlib.util

    chosen = os.environ.get("KILN_NVRTC_PATH")
    if chosen:
        return chosen
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d] + ["/usr/local/cuda/lib64"]
    for d in dirs:
        if (Path(d) / _NVRTC).is_file():
            return str(Path(d) / _NVRTC)
    if ctypes.util.find_library("nvrtc"):
        return _NVRTC  # ldconfig's cache: the system loader finds it
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "cu13" / "lib" / _NVRTC
        if candidate.is_file():
            os.environ["KILN_NVRTC_PATH"] = str(candidate)
            return str(candidate)
    return None


def loaded_name():
    """What the loaded library was opened as (a path, or a soname the system loader resolved)."""
    return lib()._name


def last_error():
    msg = lib().kiln_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status):
    """Raises KilnError for a failing kiln_status, with this thread's kiln_last_error()."""
    if status != Status.OK:
        raise KilnError(status, last_error())


def call_with_buffer(fn, *args):
    """Calls a kiln function that writes a NUL-terminated string into (buf, buf_size, needed)."""
    needed = ctypes.c_size_t(0)
    check(fn(*args, None, 0, ctypes.byref(needed)))
    buf = ctypes.create_string_buffer(needed.value)
    check(fn(*args, buf, needed.value, ctypes.byref(needed)))
    return buf.value.decode("utf-8")
