"""DLPack 0.6 structs for ctypes, and what a torch tensor maps to (dtype code, device).

kiln._lib.pack_operands writes the DLTensors of a launch: each points at the tensor's memory, with shape
and strides in elements. FP8 tensors travel as uint8 (kDLUInt, 8 bits): Debian's DLPack 0.6 has no FP8 codes and the spec
says what the bytes mean (e4m3 or e5m2).
"""

import ctypes

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13

kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLBfloat = 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DTYPES = None  # torch dtype -> (DLPack code, bits), built on first use (torch imported lazily)


def _dtype_table(torch):
    global _DTYPES
    if _DTYPES is not None:
        return _DTYPES
    table = {
        torch.bfloat16: (kDLBfloat, 16),
        torch.float16: (kDLFloat, 16),
        torch.float32: (kDLFloat, 32),
        torch.uint8: (kDLUInt, 8),
        torch.int8: (kDLInt, 8),
        torch.int32: (kDLInt, 32),
    }
    # Quantized data and scales travel as bytes; the spec says what they mean (float8_e8m0fnu: E8M0
    # scales; float4_e2m1fn_x2: two E2M1 codes per byte, the even element in the low nibble).
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn_x2"):
        dt = getattr(torch, name, None)
        if dt is not None:
            table[dt] = (kDLUInt, 8)
    _DTYPES = table
    return table


def _device(t):
    kind = t.device.type
    if kind == "cuda":
        return kDLCUDA, t.device.index if t.device.index is not None else 0
    if kind == "cpu":
        return kDLCPU, 0
    # Neither CUDA nor CPU (mps, xla, ...): device type 0, which kiln's operand check rejects by name.
    return 0, 0


def unmapped_dtype(t, name):
    """The INVALID_ARGUMENT for a tensor whose dtype has no DLPack code kiln takes."""
    from ._errors import KilnError, Status

    return KilnError(
        Status.INVALID_ARGUMENT,
        f"operand {name}: torch dtype {t.dtype} has no kiln mapping (use bfloat16, float16, "
        "float32, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float4_e2m1fn_x2, int32 or uint8)",
    )


def as_torch(t, name):
    """t itself when it is a torch tensor; any other DLPack producer (CuPy, JAX, NumPy, ...) as a
    zero-copy torch view through torch.from_dlpack. Anything else is an INVALID_ARGUMENT naming the
    operand."""
    import torch

    if isinstance(t, torch.Tensor):
        return t
    if hasattr(t, "__dlpack__"):
        return torch.from_dlpack(t)
    from ._errors import KilnError, Status

    raise KilnError(
        Status.INVALID_ARGUMENT,
        f"operand {name}: expected a torch tensor or an object with __dlpack__, got {type(t).__name__}",
    )

