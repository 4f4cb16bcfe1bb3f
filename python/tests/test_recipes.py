"""Training recipes (kiln.recipe): the specs each recipe runs. No torch, no GPU."""

import pytest

import kiln
import kiln._recipes



def test_recipe_specs_dense_and_grouped():
    s = kiln.recipe("bf16").specs(bias=True, wgrad_out="bf16")
    assert s.forward == 'gemm a=bf16 b=bf16 out=bf16 epilogue="out = acc + bias[n]"'
    assert s.dgrad == "gemm a=bf16 b=bf16 out=bf16 pass=dgrad"
    assert s.wgrad == "gemm a=bf16 b=bf16 out=bf16 pass=wgrad"
    g = kiln.recipe("mxfp4_frozen").specs(experts=8, bias=True)
    assert g.forward.startswith("grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16")
    assert "bias[e,n]" in g.forward
    assert g.dgrad == "grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad"
    assert g.wgrad is None
    f = kiln.recipe("fp8_block").specs(bias=True)
    assert f.forward == 'gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 epilogue="out = acc + bias[n]"'
    assert f.dgrad == "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad"
    assert f.wgrad == "gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad"
    m = kiln.recipe("mxfp8").specs()
    assert (m.forward, m.dgrad, m.wgrad) == ("gemm a=mxfp8 b=mxfp8 out=bf16", "gemm a=mxfp8 b=mxfp8 out=bf16 pass=dgrad",
                                             "gemm a=mxfp8 b=mxfp8 out=f32 pass=wgrad")
    t = kiln.recipe("fp8_tensor").specs()
    assert (t.forward, t.dgrad, t.wgrad) == ("gemm a=e4m3 b=e4m3 out=bf16", "gemm a=e4m3 b=e4m3 out=bf16 pass=dgrad",
                                             "gemm a=e4m3 b=e4m3 out=f32 pass=wgrad")
    r = kiln.recipe("fp8_rowwise").specs(wgrad_accumulate=True)
    assert (r.forward, r.dgrad, r.wgrad) == ("gemm a=e4m3:m b=e4m3:n out=bf16", "gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad",
                                             "gemm a=e4m3:m b=e4m3:n out=f32 pass=wgrad accumulate=true")
    e = kiln.recipe("nvfp4_frozen").specs(experts=4, nvfp4_global="expert")
    assert "nvfp4_global=expert" in e.forward and "nvfp4_global=expert" in e.dgrad


def test_recipe_errors_name_what_is_wrong():
    with pytest.raises(kiln.KilnError) as info:
        kiln.recipe("fp9")
    assert info.value.status == kiln.Status.INVALID_ARGUMENT
    assert "unknown recipe 'fp9'" in str(info.value) and "mxfp4_frozen" in str(info.value)
    with pytest.raises(kiln.KilnError) as info:
        kiln.recipe("nvfp4")
    assert info.value.status == kiln.Status.UNSUPPORTED
    assert "fp8_block" in str(info.value)  # the message lists the recipes that run
    with pytest.raises(kiln.KilnError) as info:
        kiln.recipe("nvfp4_frozen").specs(nvfp4_global="expert")
    assert "grouped" in str(info.value)


@pytest.mark.parametrize("name", sorted(kiln._recipes.RECIPES))
@pytest.mark.parametrize("experts", [0, 8])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("wgrad_out", ["f32", "bf16"])
def test_recipe_specs_are_what_libkiln_derives(name, experts, bias, wgrad_out):
    rec = kiln.recipe(name)
    for glob in ("tensor", "expert") if rec.weight == "nvfp4" and experts else ("tensor",):
        s = rec.specs(experts=experts, bias=bias, wgrad_out=wgrad_out, nvfp4_global=glob)
        plain = s.forward.split(' epilogue="', 1)[0]
        assert kiln.canonicalize(s.forward) == s.forward
        dgrad, wgrad = kiln.derive_backward(plain, rec.backward, grad=rec.activation, wgrad_out=wgrad_out)
        assert s.dgrad == dgrad
        assert s.wgrad == (None if rec.frozen else wgrad)
        acc = rec.specs(experts=experts, bias=bias, wgrad_out=wgrad_out, nvfp4_global=glob, wgrad_accumulate=True)
        if rec.frozen:
            assert acc.wgrad is None
        else:
            assert acc.wgrad == wgrad + " accumulate=true" and kiln.canonicalize(acc.wgrad) == acc.wgrad
