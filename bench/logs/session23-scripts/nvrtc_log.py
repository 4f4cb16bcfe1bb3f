"""Does NVRTC on this machine put ptxas's -v report into the program log? Compiles one small kernel a few
times (and kiln's emitted source if given) and prints what the log holds."""
import ctypes, sys, os
lib = ctypes.CDLL(os.environ.get("NVRTC", "/usr/local/cuda/lib64/libnvrtc.so.13"))
maj, mnr = ctypes.c_int(), ctypes.c_int()
lib.nvrtcVersion(ctypes.byref(maj), ctypes.byref(mnr))
print("nvrtc", maj.value, mnr.value)
src = b'extern "C" __global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * 2.0f + 1.0f; }'
def compile_once(source, opts):
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"t.cu", 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return r, buf.value.decode(errors="replace")
for opts in ([b"--gpu-architecture=sm_90a", b"-Xptxas=-v"], [b"--gpu-architecture=sm_90a", b"-Xptxas=-v", b"-default-device", b"--std=c++17"],
             [b"--gpu-architecture=sm_90a", b"--ptxas-options=-v"]):
    for i in range(2):
        r, log = compile_once(src, opts)
        print(opts, "rc", r, "log bytes", len(log), "|", log.strip().replace("\n", " || ")[:400])
