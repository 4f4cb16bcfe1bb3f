"""Tests of the Python binding. Without a GPU: parsing, canonicalization, errors, planning.
With torch and a CUDA GPU: bf16 and e4m3 GEMMs against a torch reference.

Run from the repository root after ./scripts/build.sh:  python3 -m pytest python/tests -v
(the binding finds build/capi/libkiln.so; set KILN_LIBRARY to use another build).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import kiln  # noqa: E402

BF16 = "gemm a=bf16 b=bf16 out=bf16"
E4M3 = "gemm a=e4m3:tensor b=e4m3:tensor out=bf16"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))


def test_canonicalize_round_trips():
    canonical = kiln.canonicalize("gemm   a=bf16  b=bf16 out=bf16   # a comment")
    assert "#" not in canonical
    assert kiln.canonicalize(canonical) == canonical


def test_canonicalize_error_names_the_position():
    with pytest.raises(kiln.KilnError) as info:
        kiln.canonicalize("gemm a=e4m4:tensor b=e4m3:tensor out=bf16")
    err = info.value
    assert err.status == kiln.Status.INVALID_ARGUMENT
    assert "1:8" in err.message and "e4m4" in err.message
    assert str(err).startswith("INVALID_ARGUMENT: kiln_spec_canonicalize: ")


def test_version_matches_package():
    assert kiln.version() == kiln.__version__


def test_canonicalize_does_not_import_torch():
    code = (
        "import sys; sys.path.insert(0, %r); import kiln; kiln.canonicalize(%r); "
        "assert 'torch' not in sys.modules, 'torch was imported'" % (str(Path(kiln.__file__).parent.parent), BF16)
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


def test_plan_without_gpu():
    with kiln.Runtime(disable_cache=True) as rt:
        plan = rt.plan(BF16, n=4096, k=4096, m_hint=128)
        d = plan.describe()
        assert d["spec"] == kiln.canonicalize(BF16)
        assert d["n"] == 4096 and d["k"] == 4096
        assert plan.workspace_size(4096) == 0


def test_plan_rejects_bad_sizes():
    rt = kiln.Runtime(disable_cache=True)
    with pytest.raises(kiln.KilnError) as info:
        rt.plan(BF16, n=0, k=4096)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "options->n is 0" in info.value.message


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


def test_operand_error_names_the_operand():
    torch = _cuda()
    plan = kiln.Runtime().plan(BF16, n=128, k=256)
    a = torch.zeros(64, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.zeros(128, 256, device="cuda", dtype=torch.float16)
    with pytest.raises(kiln.KilnError) as info:
        plan.run(a, b)
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "operand b" in info.value.message
