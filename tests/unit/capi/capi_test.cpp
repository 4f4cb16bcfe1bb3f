// Unit tier: the C API's argument checks, error reporting and the calls that need no GPU.
// Links libkiln.so (capi/CMakeLists.txt attaches it) and uses nothing but kiln/kiln.h.
//
// Operand validation lives in Plan::run; the C API adds NULL and struct_size checks. The order is a
// contract tested here: operand errors come before the device check, so a malformed call is
// reported as such on any machine; well-formed operands on a machine without a GPU get NO_DEVICE.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

namespace {

std::string last_error() { return kiln_last_error(); }

kiln_runtime make_runtime() {
  kiln_runtime_options ro{};
  ro.struct_size = sizeof(ro);
  ro.disable_cache = 1;  // unit tests never touch the user's cache
  kiln_runtime rt = nullptr;
  EXPECT_EQ(kiln_runtime_create(&ro, &rt), KILN_OK) << last_error();
  return rt;
}

kiln_plan make_plan(kiln_runtime rt, const char* spec, int64_t n = 4096, int64_t k = 4096) {
  kiln_plan_options po{};
  po.struct_size = sizeof(po);
  po.n = n;
  po.k = k;
  po.m_hint = 256;
  kiln_plan plan = nullptr;
  EXPECT_EQ(kiln_plan_create(rt, spec, &po, &plan), KILN_OK) << last_error();
  return plan;
}

// A 2-D row-major DLTensor on CUDA device 0 over a fake (never dereferenced) device address.
struct FakeTensor {
  int64_t shape[2];
  int64_t strides[2];
  DLTensor t;
  FakeTensor(int64_t rows, int64_t cols, uint8_t code, uint8_t bits, uintptr_t addr) {
    shape[0] = rows;
    shape[1] = cols;
    strides[0] = cols;
    strides[1] = 1;
    std::memset(&t, 0, sizeof(t));
    t.data = reinterpret_cast<void*>(addr);
    t.device.device_type = kDLCUDA;
    t.device.device_id = 0;
    t.ndim = 2;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = 0;
  }
};

TEST(CApiVersionTest, StringMatchesNumbers) {
  int major = -1, minor = -1, patch = -1;
  kiln_version(&major, &minor, &patch);
  ASSERT_NE(kiln_version_string(), nullptr);
  EXPECT_EQ(std::string(kiln_version_string()),
            std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch));
  EXPECT_GE(major, 0);
  kiln_version(nullptr, nullptr, nullptr);  // each pointer is optional
}

// libkiln.so does not link the tuner; online tuning loads libkiln_tune.so from beside it, a module of
// the same build that exports its entry point only.
TEST(CApiTuningModuleTest, LoadsTheTunerModuleBesideTheLibrary) {
  size_t needed = 0;
  ASSERT_EQ(kiln_tuning_module_path(nullptr, 0, &needed), KILN_OK) << kiln_last_error();
  ASSERT_GT(needed, 1u);
  std::vector<char> buf(needed);
  ASSERT_EQ(kiln_tuning_module_path(buf.data(), buf.size(), &needed), KILN_OK) << kiln_last_error();
  const std::string path(buf.data());
  EXPECT_EQ(path.size() + 1, needed);
  EXPECT_EQ(path.substr(path.rfind('/') + 1), "libkiln_tune.so") << path;
}

TEST(CApiStatusTest, NamesEveryCode) {
  EXPECT_STREQ(kiln_status_name(KILN_OK), "OK");
  EXPECT_STREQ(kiln_status_name(KILN_ERROR_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_STREQ(kiln_status_name(KILN_ERROR_NO_DEVICE), "NO_DEVICE");
  EXPECT_STREQ(kiln_status_name(KILN_ERROR_INTERNAL), "INTERNAL");
  EXPECT_STREQ(kiln_status_name(static_cast<kiln_status>(1234)), "UNKNOWN");
}

TEST(CApiRuntimeTest, CreateRejectsNullArguments) {
  kiln_runtime_options ro{};
  ro.struct_size = sizeof(ro);
  EXPECT_EQ(kiln_runtime_create(&ro, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_runtime_create: out is NULL");
  kiln_runtime rt = reinterpret_cast<kiln_runtime>(0x1);
  EXPECT_EQ(kiln_runtime_create(nullptr, &rt), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_runtime_create: options is NULL");
  EXPECT_EQ(rt, nullptr) << "*out is cleared on failure";
}

TEST(CApiRuntimeTest, CreateRejectsSmallStructSize) {
  kiln_runtime_options ro{};
  ro.struct_size = sizeof(ro) - 1;
  kiln_runtime rt = nullptr;
  EXPECT_EQ(kiln_runtime_create(&ro, &rt), KILN_ERROR_INVALID_ARGUMENT);
  const std::string e = last_error();
  EXPECT_NE(e.find("kiln_runtime_options"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(sizeof(ro) - 1)), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(sizeof(ro))), std::string::npos) << e;

  ro.struct_size = 0;
  EXPECT_EQ(kiln_runtime_create(&ro, &rt), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
}

TEST(CApiRuntimeTest, CreateAcceptsLargerStructSize) {
  // A caller compiled against a newer header passes a bigger struct: the extra fields are ignored.
  struct Newer {
    kiln_runtime_options v1;
    int64_t future_field[4];
  } newer{};
  newer.v1.struct_size = sizeof(newer);
  newer.v1.disable_cache = 1;
  kiln_runtime rt = nullptr;
  ASSERT_EQ(kiln_runtime_create(&newer.v1, &rt), KILN_OK) << last_error();
  ASSERT_NE(rt, nullptr);
  kiln_runtime_destroy(rt);
}

TEST(CApiRuntimeTest, HasDeviceWithNullRuntimeIsZero) {
  EXPECT_EQ(kiln_runtime_has_device(nullptr), 0);
  EXPECT_EQ(last_error(), "kiln_runtime_has_device: rt is NULL");
}

TEST(CApiRuntimeTest, DestroyNullIsANoOp) {
  kiln_runtime_destroy(nullptr);
  kiln_plan_destroy(nullptr);
}

TEST(CApiPlanTest, CreateRejectsNullArguments) {
  kiln_runtime rt = make_runtime();
  kiln_plan_options po{};
  po.struct_size = sizeof(po);
  po.n = 4096;
  po.k = 4096;
  kiln_plan plan = nullptr;
  const char* spec = "gemm a=bf16 b=bf16 out=bf16";
  EXPECT_EQ(kiln_plan_create(nullptr, spec, &po, &plan), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_create: rt is NULL");
  EXPECT_EQ(kiln_plan_create(rt, nullptr, &po, &plan), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_create: spec is NULL");
  EXPECT_EQ(kiln_plan_create(rt, spec, nullptr, &plan), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_create: options is NULL");
  EXPECT_EQ(kiln_plan_create(rt, spec, &po, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_create: out is NULL");
  kiln_runtime_destroy(rt);
}

TEST(CApiPlanTest, CreateRejectsSmallStructSizeAndBadSizes) {
  kiln_runtime rt = make_runtime();
  kiln_plan plan = nullptr;
  kiln_plan_options po{};
  po.struct_size = sizeof(po) / 2;
  po.n = 4096;
  po.k = 4096;
  EXPECT_EQ(kiln_plan_create(rt, "gemm a=bf16 b=bf16 out=bf16", &po, &plan), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("kiln_plan_options"), std::string::npos) << last_error();

  po.struct_size = sizeof(po);
  po.n = 0;
  EXPECT_EQ(kiln_plan_create(rt, "gemm a=bf16 b=bf16 out=bf16", &po, &plan), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("options->n is 0"), std::string::npos) << last_error();
  po.k = 256;  // a quantize spec has no W: n = 0 plans
  ASSERT_EQ(kiln_plan_create(rt, "quantize a=bf16 out=mxfp4", &po, &plan), KILN_OK) << last_error();
  kiln_plan_destroy(plan);
  plan = nullptr;
  po.n = 4096;
  po.k = -8;
  EXPECT_EQ(kiln_plan_create(rt, "gemm a=bf16 b=bf16 out=bf16", &po, &plan), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("options->k is -8"), std::string::npos) << last_error();
  EXPECT_EQ(plan, nullptr);
  kiln_runtime_destroy(rt);
}

TEST(CApiPlanTest, BadSpecReportsLineAndColumn) {
  kiln_runtime rt = make_runtime();
  kiln_plan_options po{};
  po.struct_size = sizeof(po);
  po.n = 4096;
  po.k = 4096;
  kiln_plan plan = nullptr;
  EXPECT_EQ(kiln_plan_create(rt, "gemm a=e4m4:tensor b=e4m3:tensor out=bf16", &po, &plan),
            KILN_ERROR_INVALID_ARGUMENT);
  const std::string e = last_error();
  EXPECT_EQ(e.rfind("kiln_plan_create: ", 0), 0u) << e;
  EXPECT_NE(e.find("1:8"), std::string::npos) << e;  // 'e4m4' starts at line 1, column 8
  EXPECT_NE(e.find("e4m4"), std::string::npos) << e;
  EXPECT_EQ(plan, nullptr);
  kiln_runtime_destroy(rt);
}

TEST(CApiPlanTest, CreatesAndDescribesWithoutGpu) {
  kiln_runtime rt = make_runtime();
  kiln_plan plan = make_plan(rt, "gemm a=bf16 b=bf16 out=bf16");
  ASSERT_NE(plan, nullptr);
  // The plan keeps its runtime alive: destroying the runtime first is allowed.
  kiln_runtime_destroy(rt);

  size_t needed = 0;
  ASSERT_EQ(kiln_plan_describe(plan, nullptr, 0, &needed), KILN_OK) << last_error();
  ASSERT_GT(needed, 2u);
  std::vector<char> small(needed - 1, 'x');
  EXPECT_EQ(kiln_plan_describe(plan, small.data(), small.size(), &needed), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(small[0], '\0') << "a too-small buffer is left holding an empty string";
  std::vector<char> buf(needed);
  ASSERT_EQ(kiln_plan_describe(plan, buf.data(), buf.size(), nullptr), KILN_OK) << last_error();
  const std::string json(buf.data());
  EXPECT_EQ(json.size() + 1, needed);
  EXPECT_EQ(json.front(), '{') << json;
  // Without a GPU the plan targets sm_90a: the Hopper family (the portable one where it cannot).
  EXPECT_TRUE(json.find("\"family\":\"sm90_gemm\"") != std::string::npos ||
              json.find("\"family\":\"sm80_gemm\"") != std::string::npos)
      << json;

  EXPECT_EQ(kiln_plan_describe(plan, nullptr, 16, &needed), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_plan_describe(nullptr, buf.data(), buf.size(), &needed), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_describe: plan is NULL");

  size_t bytes = 1;
  EXPECT_EQ(kiln_plan_workspace_size(plan, 4096, &bytes), KILN_OK) << last_error();
  EXPECT_EQ(bytes, 0u) << "this release's kernels need no workspace";
  EXPECT_EQ(kiln_plan_workspace_size(plan, 4096, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_workspace_size: bytes is NULL");
  kiln_plan_destroy(plan);
}

// kiln_plan_mx_prepass_workspace_size: 1 MiB + 2 (M + N) K bytes for MXFP8 from M = 512 on sm_90a (the arch a
// runtime without a GPU plans for), 0 below and for other formats; NULL arguments named.
TEST(CApiPlanTest, MxPrepassWorkspaceSize) {
  kiln_runtime rt = make_runtime();
  if (kiln_runtime_has_device(rt)) {
    kiln_runtime_destroy(rt);
    GTEST_SKIP() << "plans for the device's arch here; this test needs the no-GPU default (sm_90a)";
  }
  kiln_plan mx = make_plan(rt, "gemm a=mxfp8 b=mxfp8 out=bf16", 7168, 16384);
  size_t bytes = 1;
  EXPECT_EQ(kiln_plan_mx_prepass_workspace_size(mx, 4096, &bytes), KILN_OK) << last_error();
  EXPECT_EQ(bytes, (size_t{1} << 20) + size_t{2} * (4096 + 7168) * 16384);  // split-K counters' MiB first
  EXPECT_EQ(kiln_plan_mx_prepass_workspace_size(mx, 511, &bytes), KILN_OK) << last_error();
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(kiln_plan_mx_prepass_workspace_size(mx, -1, &bytes), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_mx_prepass_workspace_size: m is -1; it must be >= 0");
  EXPECT_EQ(kiln_plan_mx_prepass_workspace_size(mx, 4096, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_mx_prepass_workspace_size: bytes is NULL");
  EXPECT_EQ(kiln_plan_mx_prepass_workspace_size(nullptr, 4096, &bytes), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_mx_prepass_workspace_size: plan is NULL");
  kiln_plan bf16 = make_plan(rt, "gemm a=bf16 b=bf16 out=bf16", 7168, 16384);
  EXPECT_EQ(kiln_plan_mx_prepass_workspace_size(bf16, 4096, &bytes), KILN_OK) << last_error();
  EXPECT_EQ(bytes, 0u);
  kiln_plan_destroy(bf16);
  kiln_plan_destroy(mx);
  kiln_runtime_destroy(rt);
}

// kiln_plan_compile's arguments (the compile itself needs NVRTC: python/tests, nvrtc tier).
TEST(CApiPlanTest, CompileRejectsNullPlanAndBadM) {
  EXPECT_EQ(kiln_plan_compile(nullptr, 16), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_compile: plan is NULL");
  kiln_runtime rt = make_runtime();
  kiln_plan plan = make_plan(rt, "gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(kiln_plan_compile(plan, 0), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_compile: m is 0; it must be >= 1");
  EXPECT_EQ(kiln_plan_compile(plan, -3), KILN_ERROR_INVALID_ARGUMENT);
  kiln_plan_destroy(plan);
  kiln_runtime_destroy(rt);
}

TEST(CApiPlanTest, RunRejectsNullAndSmallOperands) {
  kiln_runtime rt = make_runtime();
  kiln_plan plan = make_plan(rt, "gemm a=bf16 b=bf16 out=bf16");
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(kiln_plan_run(plan, nullptr, nullptr, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_run: operands is NULL");
  kiln_operands ops{};
  ops.struct_size = sizeof(ops);
  EXPECT_EQ(kiln_plan_run(nullptr, &ops, nullptr, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_plan_run: plan is NULL");
  ops.struct_size = 8;
  EXPECT_EQ(kiln_plan_run(plan, &ops, nullptr, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("kiln_operands"), std::string::npos) << last_error();
  kiln_plan_destroy(plan);
  kiln_runtime_destroy(rt);
}

TEST(CApiPlanTest, RunReportsOperandErrorsBeforeTheDevice) {
  kiln_runtime rt = make_runtime();
  kiln_plan plan = make_plan(rt, "gemm a=bf16 b=bf16 out=bf16", 256, 512);
  ASSERT_NE(plan, nullptr);
  FakeTensor a(128, 512, kDLBfloat, 16, 0x10000000);
  FakeTensor b(256, 512, kDLFloat, 32, 0x20000000);  // wrong dtype: the spec says bf16
  FakeTensor out(128, 256, kDLBfloat, 16, 0x30000000);
  kiln_operands ops{};
  ops.struct_size = sizeof(ops);
  ops.a = &a.t;
  ops.b = &b.t;
  ops.out = &out.t;
  EXPECT_EQ(kiln_plan_run(plan, &ops, nullptr, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT) << last_error();
  const std::string e = last_error();
  EXPECT_EQ(e.rfind("kiln_plan_run: ", 0), 0u) << e;

  ops.b = nullptr;  // a missing operand is an operand error too
  EXPECT_EQ(kiln_plan_run(plan, &ops, nullptr, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT) << last_error();
  kiln_plan_destroy(plan);
  kiln_runtime_destroy(rt);
}

TEST(CApiPlanTest, RunWithoutDeviceIsNoDevice) {
  kiln_runtime rt = make_runtime();
  if (kiln_runtime_has_device(rt)) {
    kiln_runtime_destroy(rt);
    GTEST_SKIP() << "a GPU is present; the fake device addresses below must not be launched on";
  }
  const std::string why = last_error();
  EXPECT_FALSE(why.empty()) << "kiln_runtime_has_device says why there is no device";
  kiln_plan plan = make_plan(rt, "gemm a=bf16 b=bf16 out=bf16", 256, 512);
  ASSERT_NE(plan, nullptr);
  FakeTensor a(128, 512, kDLBfloat, 16, 0x10000000);
  FakeTensor b(256, 512, kDLBfloat, 16, 0x20000000);
  FakeTensor out(128, 256, kDLBfloat, 16, 0x30000000);
  kiln_operands ops{};
  ops.struct_size = sizeof(ops);
  ops.a = &a.t;
  ops.b = &b.t;
  ops.out = &out.t;
  EXPECT_EQ(kiln_plan_run(plan, &ops, nullptr, 0, nullptr), KILN_ERROR_NO_DEVICE) << last_error();
  EXPECT_EQ(kiln_plan_prepare(plan), KILN_ERROR_NO_DEVICE) << last_error();
  kiln_plan_destroy(plan);
  kiln_runtime_destroy(rt);
}

TEST(CApiSpecTest, CanonicalizeRoundTrips) {
  const char* messy = "gemm   a=bf16  b=bf16 out=bf16  # trailing comment";
  size_t needed = 0;
  ASSERT_EQ(kiln_spec_canonicalize(messy, nullptr, 0, &needed), KILN_OK) << last_error();
  std::vector<char> buf(needed);
  ASSERT_EQ(kiln_spec_canonicalize(messy, buf.data(), buf.size(), &needed), KILN_OK) << last_error();
  const std::string canonical(buf.data());
  EXPECT_EQ(canonical.find('#'), std::string::npos) << canonical;
  EXPECT_EQ(canonical.find("  "), std::string::npos) << canonical;

  std::vector<char> again(needed);
  ASSERT_EQ(kiln_spec_canonicalize(canonical.c_str(), again.data(), again.size(), nullptr), KILN_OK);
  EXPECT_EQ(std::string(again.data()), canonical);

  char tiny[4] = {'x', 'x', 'x', 'x'};
  EXPECT_EQ(kiln_spec_canonicalize(messy, tiny, sizeof(tiny), &needed), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tiny[0], '\0');
  EXPECT_EQ(needed, canonical.size() + 1);
}

TEST(CApiSpecTest, CanonicalizeReportsErrors) {
  char buf[256];
  EXPECT_EQ(kiln_spec_canonicalize(nullptr, buf, sizeof(buf), nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "kiln_spec_canonicalize: spec is NULL");
  EXPECT_EQ(kiln_spec_canonicalize("gemm a=e4m4:tensor b=e4m3:tensor out=bf16", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("1:8"), std::string::npos) << last_error();
}

TEST(CApiSpecTest, DeriveBackwardWritesEachPass) {
  char buf[512];
  ASSERT_EQ(kiln_derive_backward("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", nullptr, "dgrad", buf,
                                 sizeof(buf), nullptr),
            KILN_OK)
      << last_error();
  EXPECT_EQ(std::string(buf), "gemm a=bf16 b=bf16 out=bf16 pass=dgrad");
  ASSERT_EQ(kiln_derive_backward("gemm a=bf16 b=mxfp4 out=bf16", "dequantized", "dgrad", buf, sizeof(buf), nullptr),
            KILN_OK)
      << last_error();
  EXPECT_EQ(std::string(buf), "gemm a=bf16 b=mxfp4 out=bf16 pass=dgrad");
  ASSERT_EQ(kiln_derive_backward("gemm a=bf16 b=bf16 out=bf16", nullptr, "wgrad", buf, sizeof(buf), nullptr), KILN_OK)
      << last_error();
  EXPECT_EQ(std::string(buf), "gemm a=bf16 b=bf16 out=f32 pass=wgrad");
  EXPECT_EQ(kiln_derive_backward("gemm a=bf16 b=bf16 out=bf16", nullptr, "fprop", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("dgrad or wgrad"), std::string::npos) << last_error();
  EXPECT_EQ(kiln_derive_backward("gemm a=bf16 b=bf16 out=bf16", "quantized", "dgrad", buf, sizeof(buf), nullptr),
            KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(kiln_derive_backward("gemm a=bf16 b=bf16 out=bf16", "fast", "dgrad", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(CApiSpecTest, DeriveBackwardWithChoosesTheGradientFormats) {
  char buf[512];
  kiln_backward_options o = {sizeof(o)};
  o.wgrad_out = "bf16";
  ASSERT_EQ(kiln_derive_backward_with("gemm a=bf16 b=bf16 out=bf16", &o, "wgrad", buf, sizeof(buf), nullptr), KILN_OK)
      << last_error();
  EXPECT_EQ(std::string(buf), "gemm a=bf16 b=bf16 out=bf16 pass=wgrad");
  o.grad = "f16";
  o.wgrad_out = nullptr;
  ASSERT_EQ(kiln_derive_backward_with("gemm a=f16 b=f16 out=f16", &o, "dgrad", buf, sizeof(buf), nullptr), KILN_OK)
      << last_error();
  EXPECT_EQ(std::string(buf), "gemm a=f16 b=f16 out=f16 pass=dgrad");
  o = {sizeof(o)};
  o.mode = "dequantized";
  ASSERT_EQ(kiln_derive_backward_with("gemm a=bf16 b=nvfp4 out=bf16", &o, "dgrad", buf, sizeof(buf), nullptr), KILN_OK)
      << last_error();
  EXPECT_EQ(std::string(buf), "gemm a=bf16 b=nvfp4 out=bf16 pass=dgrad");
  o.grad = "f32";  // dY is never f32
  EXPECT_EQ(kiln_derive_backward_with("gemm a=bf16 b=bf16 out=bf16", &o, "dgrad", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("grad 'f32'; expected bf16, f16"), std::string::npos) << last_error();
  o = {sizeof(o)};
  o.wgrad_out = "e4m3";
  EXPECT_EQ(kiln_derive_backward_with("gemm a=bf16 b=bf16 out=bf16", &o, "wgrad", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("wgrad_out 'e4m3'"), std::string::npos) << last_error();
  EXPECT_EQ(kiln_derive_backward_with("gemm a=bf16 b=bf16 out=bf16", nullptr, "wgrad", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  o.struct_size = 4;
  EXPECT_EQ(kiln_derive_backward_with("gemm a=bf16 b=bf16 out=bf16", &o, "wgrad", buf, sizeof(buf), nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("struct_size"), std::string::npos) << last_error();
}

TEST(CApiErrorTest, LastErrorIsPerThread) {
  EXPECT_EQ(kiln_runtime_create(nullptr, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  const std::string mine = last_error();
  std::string theirs;
  std::thread t([&theirs] {
    theirs = kiln_last_error();  // a fresh thread starts with no error
    kiln_plan_run(nullptr, nullptr, nullptr, 0, nullptr);
  });
  t.join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(last_error(), mine) << "another thread's failure does not overwrite this thread's error";
}


// A C caller built against the first release's header passes the smaller kiln_operands: the fields
// added after b_scale (offsets, counts, b_global) read as NULL — here the offsets are then missing.
TEST(CApiPlanTest, OldOperandsStructSizeReadsNewFieldsAsNull) {
  kiln_runtime rt = make_runtime();
  kiln_plan plan = make_plan(rt, "grouped_gemm[experts=2,layout=offsets] a=bf16 b=bf16 out=bf16", 32, 64);
  ASSERT_NE(plan, nullptr);
  int64_t sa[2] = {8, 64}, sb[3] = {2, 32, 64}, so[2] = {8, 32}, soff[1] = {2};
  DLTensor a{}, b{}, out{}, off{};
  for (DLTensor* t : {&a, &b, &out, &off}) t->device = {kDLCUDA, 0};
  a.ndim = out.ndim = 2;
  b.ndim = 3;
  off.ndim = 1;
  a.shape = sa;
  b.shape = sb;
  out.shape = so;
  off.shape = soff;
  a.dtype = b.dtype = out.dtype = {kDLBfloat, 16, 1};
  off.dtype = {kDLInt, 32, 1};
  a.data = reinterpret_cast<void*>(0x100000);
  b.data = reinterpret_cast<void*>(0x200000);
  out.data = reinterpret_cast<void*>(0x300000);
  off.data = reinterpret_cast<void*>(0x500000);
  kiln_operands ops{};
  ops.a = &a;
  ops.b = &b;
  ops.out = &out;
  ops.offsets = &off;
  ops.struct_size = offsetof(kiln_operands, offsets);
  EXPECT_EQ(kiln_plan_run(plan, &ops, nullptr, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("operand offsets: missing"), std::string::npos) << last_error();
  if (!kiln_runtime_has_device(rt)) {  // never launch on the fake addresses
    ops.struct_size = sizeof(ops);
    EXPECT_EQ(kiln_plan_run(plan, &ops, nullptr, 0, nullptr), KILN_ERROR_NO_DEVICE) << last_error();
  }
  kiln_plan_destroy(plan);
  kiln_runtime_destroy(rt);
}

}  // namespace
