"""Tests of the Python binding. Without a GPU: parsing, canonicalization, errors, planning, where
the library is found. With torch but no GPU: operand errors. With torch and a CUDA GPU: bf16 and
e4m3 GEMMs against a torch reference, on torch's current stream.

Run from the repository root after ./scripts/build.sh, with the package installed
(pip install -e python/; what scripts/test.sh does in a throwaway venv) or not (conftest.py then
imports it from the checkout):  python3 -m pytest python/tests -v
(the binding finds build/capi/libkiln.so; set KILN_LIBRARY to use another build).
"""

import ctypes
import os
import subprocess
import sys

import pytest

import kiln

BF16 = "gemm a=bf16 b=bf16 out=bf16"
E4M3 = "gemm a=e4m3:tensor b=e4m3:tensor out=bf16"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))


def test_canonicalize_round_trips():
    canonical = kiln.canonicalize("gemm   a=bf16  b=bf16 out=bf16   # a comment")
    assert "#" not in canonical
    assert kiln.canonicalize(canonical) == canonical


def test_derive_backward_gives_both_passes():
    dgrad, wgrad = kiln.derive_backward("gemm a=bf16 b=mxfp4 out=bf16", "dequantized")
    assert dgrad == "gemm a=bf16 b=mxfp4 out=bf16 pass=dgrad"
    assert wgrad == "gemm a=bf16 b=bf16 out=f32 pass=wgrad"
    assert kiln.derive_backward("gemm a=bf16 b=bf16 out=bf16")[0] == "gemm a=bf16 b=bf16 out=bf16 pass=dgrad"
    with pytest.raises(kiln.KilnError) as info:
        kiln.derive_backward("gemm a=bf16 b=bf16 out=bf16", "quantized")
    assert info.value.status == kiln.Status.UNSUPPORTED
    # FP8 blocks: dY in e4m3 1x128 blocks, W as the forward holds it, wgrad on the column-wise copies.
    dgrad, wgrad = kiln.derive_backward("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "quantized")
    assert dgrad == "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad"
    assert wgrad == "gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad"


def test_derive_backward_takes_the_gradient_formats():
    dgrad, wgrad = kiln.derive_backward("gemm a=f16 b=f16 out=f16", grad="f16", wgrad_out="bf16")
    assert dgrad == "gemm a=f16 b=f16 out=f16 pass=dgrad"
    assert wgrad == "gemm a=f16 b=f16 out=bf16 pass=wgrad"
    with pytest.raises(kiln.KilnError) as info:
        kiln.derive_backward("gemm a=bf16 b=bf16 out=bf16", wgrad_out="e4m3")
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "wgrad_out 'e4m3'" in str(info.value)


def test_canonicalize_error_names_the_position():
    with pytest.raises(kiln.KilnError) as info:
        kiln.canonicalize("gemm a=e4m4:tensor b=e4m3:tensor out=bf16")
    err = info.value
    assert err.status == kiln.Status.INVALID_ARGUMENT
    assert "1:8" in err.message and "e4m4" in err.message
    assert str(err).startswith("INVALID_ARGUMENT: kiln_spec_canonicalize: ")


def test_version_matches_package():
    assert kiln.version() == kiln.__version__


def _python(code, **env):
    """Runs code in a fresh interpreter that imports the same kiln as this one."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [_package_parent(), full_env.get("PYTHONPATH")]))
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True)


def _package_parent():
    return os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__)))


def test_canonicalize_does_not_import_torch():
    code = "import sys, kiln; kiln.canonicalize(%r); assert 'torch' not in sys.modules, 'torch was imported'" % BF16
    r = _python(code)
    assert r.returncode == 0, r.stderr


def test_plan_without_gpu():
    with kiln.Runtime(disable_cache=True) as rt:
        plan = rt.plan(BF16, n=4096, k=4096, m_hint=128)
        d = plan.describe()
        assert d["spec"] == kiln.canonicalize(BF16)
        assert d["n"] == 4096 and d["k"] == 4096
        assert plan.workspace_size(4096) == 0


def test_mx_prepass_workspace_size_without_gpu():
    mx = "gemm a=mxfp8 b=mxfp8 out=bf16"
    with kiln.Runtime(disable_cache=True) as rt:
        if rt.has_device:
            pytest.skip("the plan's arch is the device's here; this test plans for sm_90a without one")
        with rt.plan(mx, n=7168, k=16384) as plan:
            assert plan.mx_prepass_workspace_size(4096) == (1 << 20) + 2 * (4096 + 7168) * 16384
            assert plan.mx_prepass_workspace_size(511) == 0
            assert plan.describe()["mx_prepass"]["min_m"] == 512
        with rt.plan(BF16, n=7168, k=16384) as plan:
            assert plan.mx_prepass_workspace_size(4096) == 0
            assert "mx_prepass" not in plan.describe()


def test_plan_rejects_bad_sizes():
    rt = kiln.Runtime(disable_cache=True)
    with pytest.raises(kiln.KilnError) as info:
        rt.plan(BF16, n=0, k=4096)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "options->n is 0" in info.value.message


def test_plan_describe_and_spec():
    with kiln.Runtime(disable_cache=True) as rt:
        with rt.plan("gemm a=e4m3:tensor b=e4m3:tensor out=bf16", n=256, k=512) as plan:
            d = plan.describe()
            for field in ("spec", "family", "arch", "n", "k"):
                assert field in d, d
            assert plan.spec == "gemm a=e4m3 b=e4m3 out=bf16"
            assert (plan.n, plan.k) == (256, 512)


def test_plan_spec_error_is_a_kiln_error_with_the_position():
    with kiln.Runtime(disable_cache=True) as rt:
        with pytest.raises(kiln.KilnError) as info:
            rt.plan("gemm a=bf16 b=bf16 out=bf17", n=128, k=128)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "bf17" in info.value.message
    assert info.value.message.startswith("kiln_plan_create: ")


def _kernel_rows(db):
    import sqlite3

    with sqlite3.connect(str(db)) as con:
        return con.execute("SELECT count(*) FROM kernels").fetchone()[0]


def test_compile_without_gpu_fills_the_cache(tmp_path):
    """Plan.compile() runs NVRTC (no GPU needed) and stores the kernel; a second runtime on the same
    cache finds it instead of compiling again."""
    cache = tmp_path / "kc"
    with kiln.Runtime(cache_dir=cache) as rt:
        plan = rt.plan(BF16, n=128, k=128, m_hint=16)
        plan.compile(16)
        plan.compile(16)  # the same kernel: a cache hit
    assert _kernel_rows(cache / "kiln.db") == 1
    with kiln.Runtime(cache_dir=cache) as rt:
        rt.plan(BF16, n=128, k=128).compile(16)
    assert _kernel_rows(cache / "kiln.db") == 1


def test_compile_rejects_bad_m():
    with kiln.Runtime(disable_cache=True) as rt:
        plan = rt.plan(BF16, n=128, k=128)
        with pytest.raises(kiln.KilnError) as info:
            plan.compile(0)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert info.value.message == "kiln_plan_compile: m is 0; it must be >= 1"


def test_used_after_close_is_an_error():
    rt = kiln.Runtime(disable_cache=True)
    plan = rt.plan(BF16, n=128, k=128)
    plan.close()
    with pytest.raises(kiln.KilnError) as info:
        plan.describe()
    assert info.value.status == kiln.Status.INVALID_ARGUMENT and "after close" in info.value.message
    rt.close()
    with pytest.raises(kiln.KilnError):
        rt.plan(BF16, n=128, k=128)


def test_bad_cache_dir_is_a_cache_error(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(kiln.KilnError) as info:
        kiln.Runtime(cache_dir=not_a_dir)
    assert info.value.status == kiln.Status.CACHE_ERROR
    assert str(not_a_dir) in info.value.message


def test_has_device_is_a_bool():
    with kiln.Runtime(disable_cache=True) as rt:
        assert rt.has_device in (True, False)


def test_library_path_is_the_loaded_library():
    path = kiln.library_path()
    assert "libkiln.so" in path
    if os.environ.get("KILN_LIBRARY"):
        assert path == os.environ["KILN_LIBRARY"]


def test_explicit_library_path_is_the_only_candidate(tmp_path):
    missing = str(tmp_path / "nowhere" / "libkiln.so")
    r = _python("import kiln; kiln.canonicalize('gemm a=bf16 b=bf16 out=bf16')", KILN_LIBRARY=missing)
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr and missing in r.stderr


def test_import_needs_no_library(tmp_path):
    r = _python("import kiln; print(kiln.__version__)", KILN_LIBRARY=str(tmp_path / "missing.so"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == kiln.__version__


def test_installed_metadata_matches_the_package():
    from importlib import metadata

    try:
        installed = metadata.version("kiln")
    except metadata.PackageNotFoundError:
        pytest.skip("kiln is not installed (running from the checkout)")
    assert installed == kiln.__version__


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    return torch


def test_cpu_tensors_are_rejected_naming_the_operand():
    torch = _torch()
    plan = kiln.Runtime(disable_cache=True).plan(BF16, n=128, k=256)
    a = torch.zeros(64, 256, dtype=torch.bfloat16)
    b = torch.zeros(128, 256, dtype=torch.bfloat16)
    with pytest.raises(kiln.KilnError) as info:
        plan.run(a, b)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "operand" in info.value.message


def test_unmapped_dtype_is_rejected_before_the_call():
    torch = _torch()
    plan = kiln.Runtime(disable_cache=True).plan(BF16, n=128, k=256)
    with pytest.raises(kiln.KilnError) as info:
        plan.run(torch.zeros(4, 256, dtype=torch.float64), torch.zeros(128, 256, dtype=torch.bfloat16))
    assert "operand a" in info.value.message and "float64" in info.value.message


def test_non_tensor_operand_is_rejected():
    _torch()
    plan = kiln.Runtime(disable_cache=True).plan(BF16, n=128, k=256)
    with pytest.raises(kiln.KilnError) as info:
        plan.run([1, 2, 3], None)
    assert "operand a" in info.value.message


def _cuda():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


def _rel_fro(out, ref):
    return ((out.float() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("m", [1, 77, 256])
def test_bf16_gemm_matches_torch(m):
    torch = _cuda()
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    g = torch.Generator(device="cuda").manual_seed(seed)
    n, k = 384, 512
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.bfloat16)
    plan = kiln.Runtime().plan(BF16, n=n, k=k)
    out = plan.run(a, b)
    torch.cuda.synchronize()
    assert out.shape == (m, n) and out.dtype == torch.bfloat16
    ref = a.float() @ b.float().T
    assert _rel_fro(out, ref) < 1e-2


def test_e4m3_gemm_matches_torch():
    torch = _cuda()
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("this torch has no float8_e4m3fn")
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    g = torch.Generator(device="cuda").manual_seed(seed)
    m, n, k = 200, 256, 1024
    a = (torch.randn(m, k, device="cuda", generator=g) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device="cuda", generator=g) * 4).to(torch.float8_e4m3fn)
    sa = torch.tensor([0.5], device="cuda", dtype=torch.float32)
    sb = torch.tensor([0.125], device="cuda", dtype=torch.float32)
    plan = kiln.Runtime().plan(E4M3, n=n, k=k)
    out = plan.run(a, b, a_scale=sa, b_scale=sb)
    # uint8 views of the same bytes mean the same to kiln: the spec gives the format.
    out_u8 = plan.run(a.view(torch.uint8), b.view(torch.uint8), a_scale=sa, b_scale=sb)
    torch.cuda.synchronize()
    ref = (a.float() * 0.5) @ (b.float() * 0.125).T
    assert _rel_fro(out, ref) < 1e-2
    assert torch.equal(out, out_u8)


def test_mxfp8_prepass_matches_torch():
    torch = _cuda()
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the MXFP8 pre-pass runs on sm_90 only")
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    g = torch.Generator(device="cuda").manual_seed(seed)
    m, n, k = 1024, 256, 512
    # Random e4m3 codes (no NaN: |code| < 0x7F) and E8M0 scales near 1.
    a = torch.randint(0, 0x7F, (m, k), device="cuda", generator=g, dtype=torch.uint8)
    b = torch.randint(0, 0x7F, (n, k), device="cuda", generator=g, dtype=torch.uint8)
    a |= torch.randint(0, 2, (m, k), device="cuda", generator=g, dtype=torch.uint8) << 7
    b |= torch.randint(0, 2, (n, k), device="cuda", generator=g, dtype=torch.uint8) << 7
    sa = torch.randint(120, 132, (m, k // 32), device="cuda", generator=g, dtype=torch.uint8)
    sb = torch.randint(120, 132, (n, k // 32), device="cuda", generator=g, dtype=torch.uint8)
    plan = kiln.Runtime().plan("gemm a=mxfp8 b=mxfp8 out=bf16", n=n, k=k)
    size = plan.mx_prepass_workspace_size(m)
    assert size == (1 << 20) + 2 * (m + n) * k
    ws = torch.empty(size, dtype=torch.uint8, device="cuda")
    out = plan.run(a, b, a_scale=sa, b_scale=sb, workspace=ws)
    fused = plan.run(a, b, a_scale=sa, b_scale=sb)
    torch.cuda.synchronize()

    def dequant(codes, scales):
        v = codes.view(torch.float8_e4m3fn).float().reshape(codes.shape[0], -1, 32)
        return (v * torch.exp2(scales.float() - 127)[:, :, None]).reshape(codes.shape[0], -1)

    ref = dequant(a, sa) @ dequant(b, sb).T
    assert _rel_fro(out, ref) < 1e-2
    assert _rel_fro(out, fused.float()) < 1e-2


def test_operand_error_names_the_operand():
    torch = _cuda()
    plan = kiln.Runtime().plan(BF16, n=128, k=256)
    a = torch.zeros(64, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.zeros(128, 256, device="cuda", dtype=torch.float16)
    with pytest.raises(kiln.KilnError) as info:
        plan.run(a, b)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "operand b" in info.value.message


def test_runs_on_torchs_current_stream():
    torch = _cuda()
    n, k, m = 128, 256, 64
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    plan = kiln.Runtime().plan(BF16, n=n, k=k)
    plan.prepare()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # A long op queued first on the side stream: kiln's launch must queue behind it, on `side`.
        torch.cuda._sleep(10_000_000)
        out = plan.run(a, b)
        event = torch.cuda.Event()
        event.record(side)
    side.synchronize()
    assert event.query()
    ref = a.float() @ b.float().T
    assert _rel_fro(out, ref) < 1e-2
    out2 = plan.run(a, b, stream=side.cuda_stream)  # a raw handle works too
    side.synchronize()
    assert torch.equal(out, out2)


def test_dlpack_producers_are_accepted():
    torch = _cuda()
    n, k, m = 128, 256, 32
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)

    class Producer:
        """Any object with __dlpack__ / __dlpack_device__ (CuPy, JAX ...)."""

        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None, **kwargs):
            return self.t.__dlpack__(stream=stream, **kwargs)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    plan = kiln.Runtime().plan(BF16, n=n, k=k)
    out = plan.run(Producer(a), Producer(b))
    torch.cuda.synchronize()
    assert torch.equal(out, plan.run(a, b))


def test_packed_operands_describe_the_tensors():
    torch = pytest.importorskip("torch")
    from kiln import _lib

    a = torch.empty(6, 40, dtype=torch.bfloat16)[:, 8:]
    s = torch.empty((), dtype=torch.float32)
    codes = torch.empty(3, 5, 4, 16, dtype=torch.uint8)
    ref = _lib.pack_operands({"a": a, "b_scale": s, "b": codes})._obj
    assert ref.struct_size == ctypes.sizeof(_lib.Operands)
    assert not ref.out and not ref.offsets and not ref.up_bias
    for field, t, code_bits in (("a", a, (4, 16)), ("b_scale", s, (2, 32)), ("b", codes, (1, 8))):
        dl = getattr(ref, field).contents
        assert dl.data == t.data_ptr() and dl.byte_offset == 0
        assert (dl.device.device_type, dl.device.device_id) == (1, 0)
        assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (*code_bits, 1)
        assert dl.ndim == t.dim()
        assert [dl.shape[i] for i in range(t.dim())] == list(t.shape)
        assert [dl.strides[i] for i in range(t.dim())] == list(t.stride())
    with pytest.raises(kiln.KilnError, match="operand b: torch dtype torch.float64"):
        _lib.pack_operands({"b": torch.empty(2, dtype=torch.float64)})


def test_grouped_copy_columns():
    # Every expert's rows start on a 128-column boundary: 128 (ceil(M / 128) + E) columns fit any routing.
    assert kiln.grouped_copy_columns(1000, 8) == 128 * (8 + 8)
    assert kiln.grouped_copy_columns(0, 4) == 128 * 4
    assert kiln.grouped_copy_columns(128, 1) == 256
    with pytest.raises(ValueError, match="experts >= 1"):
        kiln.grouped_copy_columns(10, 0)

