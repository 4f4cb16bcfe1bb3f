/* kiln/kiln.h — the C API of kiln (C99). Embeds kiln in any framework.
 *
 * Every function returns a kiln_status; on failure kiln_last_error() (thread-local) holds the
 * message, which names the operand or argument, the value, and what would be accepted.
 * Operands are DLPack DLTensors on a CUDA device; quantized operands travel as uint8 views whose
 * meaning comes from the spec (Debian's DLPack 0.6 has no FP8/FP4 codes); DLPack >= 1.1 FP8 codes
 * are accepted by value. Launches go on the CUstream you pass; nothing synchronizes.
 * Options structs begin with struct_size so they can grow without breaking callers.
 *
 *   kiln_runtime rt;  kiln_plan plan;
 *   kiln_runtime_options ro = {sizeof(ro)};
 *   if (kiln_runtime_create(&ro, &rt) != KILN_OK) fprintf(stderr, "%s\n", kiln_last_error());
 *   kiln_plan_options po = {sizeof(po)}; po.n = 7168; po.k = 7168;
 *   kiln_plan_create(rt, "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", &po, &plan);
 *   kiln_operands ops = {sizeof(ops)}; ops.a = &x; ops.b = &w; ops.out = &y;
 *   ops.a_scale = &sx; ops.b_scale = &sw;                  // f32 scalars on the device
 *   kiln_plan_run(plan, &ops, NULL, 0, stream);
 *   kiln_plan_destroy(plan); kiln_runtime_destroy(rt);
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st; /* the driver's CUstream is `struct CUstream_st*` */

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_INVALID_ARGUMENT = 1,
  KILN_ERROR_UNSUPPORTED = 2,
  KILN_ERROR_COMPILE = 3,
  KILN_ERROR_RESOURCE_EXHAUSTED = 4,
  KILN_ERROR_DRIVER = 5,
  KILN_ERROR_CACHE = 6,
  KILN_ERROR_NOT_READY = 7,
  KILN_ERROR_NO_DEVICE = 8,
  KILN_ERROR_INTERNAL = 9
} kiln_status;

typedef struct kiln_runtime_s* kiln_runtime;
typedef struct kiln_plan_s* kiln_plan;

typedef struct kiln_runtime_options {
  size_t struct_size;     /* sizeof(kiln_runtime_options) */
  const char* cache_dir;  /* NULL: $KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/kiln */
  int disable_cache;      /* nonzero: compile in memory only */
} kiln_runtime_options;

typedef struct kiln_plan_options {
  size_t struct_size;     /* sizeof(kiln_plan_options) */
  int64_t n;              /* fixed output columns (rows of W) */
  int64_t k;              /* fixed reduction length */
  int64_t m_hint;         /* 0, or a typical M used to pick the default config */
} kiln_plan_options;

/* Shapes and dtypes per spec (packed FP4 as uint8 [.., K/2]; scale layouts in docs/formats.md):
 *   a  X [M, K]; grouped layout=masked: [E, max_m, K]      b  W [N, K]; grouped: [E, N, K]
 *   out Y like X with N columns (N/2 with gate_up: the GLU's output)
 *   a_scale / b_scale: tensor f32 [1]; m f32 [M]; n f32 [N]; block1x128 [M, K/128]; block128x128
 *     [ceil(N/128), K/128] (f32, or uint8 E8M0 with :ue8m0); mxfp8/mxfp4 E8M0 [rows, K/32]; nvfp4
 *     UE4M3 [N, K/16]; grouped weights' scales with a leading [E].
 * Fields after b_scale were added in kiln 0.2: a caller built against an older header passes the
 * older struct_size and they read as NULL. */
typedef struct kiln_operands {
  size_t struct_size;     /* sizeof(kiln_operands) */
  const DLTensor* a;      /* X [M, K] */
  const DLTensor* b;      /* W [N, K] */
  DLTensor* out;          /* Y [M, N] */
  const DLTensor* a_scale;/* per the spec; f32 scalar for `tensor` */
  const DLTensor* b_scale;
  const DLTensor* offsets;  /* grouped_gemm layout=offsets: int32 [E] cumulative row ends (device) */
  const DLTensor* counts;   /* grouped_gemm layout=masked: int32 [E] rows per expert (device) */
  const DLTensor* b_global; /* b=nvfp4: f32 global decode scale on the device, [1] or [E] */
  /* kiln 0.3: quantize specs read a and write out (the codes), out_scale and, for out=nvfp4,
   * out_global (f32 [1]); layouts in docs/formats.md ("Quantize"). */
  DLTensor* out_scale;
  DLTensor* out_global;
  /* kiln 0.4 (epilogues): the vectors the spec's epilogue="..." reads, named as in the epilogue
   * language (docs/epilogue.md); NULL when it does not read them. float32, bfloat16 or float16 on the
   * device, any strides; shapes by the index read: [m] [M] (masked: [E*max_m] or [E, max_m]), [n]
   * [N_out], [e] [E], [e,n] [E, N_out], [m,n] [M, N_out]; N_out = N/2 with gate_up, else N. */
  const DLTensor* bias;         /* bias[n] | bias[e,n] */
  const DLTensor* scale;        /* scale[m]: per-token factors (MoE router weights) */
  const DLTensor* colscale;     /* colscale[n] | colscale[e,n] */
  const DLTensor* expert_scale; /* expert_scale[e] */
  const DLTensor* residual;     /* residual[m,n]; may not overlap out */
  const DLTensor* gate_bias;    /* gate_bias[n] | gate_bias[e,n] (gate_up specs) */
  const DLTensor* up_bias;      /* up_bias[n] | up_bias[e,n] (gate_up specs) */
} kiln_operands;

const char* kiln_last_error(void);
const char* kiln_status_name(kiln_status s);
const char* kiln_version_string(void);
void kiln_version(int* major, int* minor, int* patch);

kiln_status kiln_runtime_create(const kiln_runtime_options* options, kiln_runtime* out);
void kiln_runtime_destroy(kiln_runtime rt);
/* 1 when a CUDA GPU is usable, 0 otherwise (kiln_last_error says why). */
int kiln_runtime_has_device(kiln_runtime rt);
/* Online tuning (KILN_AUTOTUNE=1) runs the tuner in libkiln_tune.so, which libkiln.so loads the first
 * time a plan needs it ($KILN_TUNE_MODULE, else beside libkiln.so). This loads it now and writes its
 * path (NUL-terminated; *needed: the bytes the path takes with its NUL); KILN_UNSUPPORTED with the
 * reason when it cannot be loaded. */
kiln_status kiln_tuning_module_path(char* buf, size_t buf_size, size_t* needed);

/* Parses spec (the DSL text), validates it against the sizes and plans it. No GPU needed. */
kiln_status kiln_plan_create(kiln_runtime rt, const char* spec, const kiln_plan_options* options,
                             kiln_plan* out);
void kiln_plan_destroy(kiln_plan plan);
/* Compiles and loads every kernel the plan may run (call before CUDA-graph capture). */
kiln_status kiln_plan_prepare(kiln_plan plan);
/* Compiles (or finds in the kernel cache) the kernel run() uses for m rows (m >= 1) without loading
 * it: no GPU needed (fill a cache on a build machine; check that a spec compiles). MXFP8 plans with a
 * pre-pass for m (kiln_plan_mx_prepass_workspace_size > 0): its two kernels too; a quantized dgrad: the
 * transpose of W it launches first. */
kiln_status kiln_plan_compile(kiln_plan plan, int64_t m);
/* Bytes of workspace run() needs for m rows: 0 except for sm90 split-K configs (small M, few tiles),
 * which keep per-tile counters (a fixed first 1 MiB) and partial sums there, and a quantized dgrad, which
 * writes W's transposed copy after them (N K bytes and its scales, docs/backward.md). With workspace == NULL
 * run() uses one the plan owns (allocated zero-filled on first use, or by kiln_plan_prepare before graph
 * capture). A caller's workspace must be zero-filled before its first use; every completed run leaves
 * its counters (the first 1 MiB) zero again, the rest is scratch. Runs of ONE plan on several streams at
 * once each need their own workspace. */
kiln_status kiln_plan_workspace_size(kiln_plan plan, int64_t m, size_t* bytes);
/* MXFP8 at large M on sm_90a: bytes of workspace with which kiln_plan_run converts X and W to bf16 first
 * and runs the bf16 kernel (1 MiB + 2 (M + N) K bytes, grouped 1 MiB + 2 (M + E N) K; faster than the fused
 * MXFP8 kernel from 512 rows per expert; no zero fill needed). 0 where the plan has no such path for m rows
 * of X (grouped: all experts' rows; masked: E x max_m). The size includes 1 MiB first that the pre-pass never
 * writes (the split-K counters' place), so one buffer zero-filled once serves every M of the plan. Codes
 * that are not 16-byte aligned (base or row stride) run the fused kernel; a workspace that is not 16-byte
 * aligned is INVALID_ARGUMENT. kiln_plan_run takes it when its workspace has at
 * least this many bytes; with less (or NULL) the fused kernel runs and nothing is allocated for it. */
kiln_status kiln_plan_mx_prepass_workspace_size(kiln_plan plan, int64_t m, size_t* bytes);
/* Writes a NUL-terminated JSON description (spec, family, arch, and per M bucket its config; for e4m3 / e5m2
 * kernels of the sm90 family also "fp8_accumulation": "promoted" or "fast", fast being cuBLAS's fast
 * accumulation) into buf. */
kiln_status kiln_plan_describe(kiln_plan plan, char* buf, size_t buf_size, size_t* needed);
kiln_status kiln_plan_run(kiln_plan plan, const kiln_operands* operands, void* workspace,
                          size_t workspace_bytes, struct CUstream_st* stream);

/* Parses and validates spec, writing its canonical text into buf (NUL-terminated). */
kiln_status kiln_spec_canonicalize(const char* spec, char* buf, size_t buf_size, size_t* needed);
/* The canonical text of one backward spec of the forward spec fprop_spec (docs/backward.md): pass "dgrad" or
 * "wgrad", mode "high_precision", "dequantized" or "quantized" (NULL: high_precision); gradients bf16 (mode
 * quantized: dY e4m3, or MXFP8 for an MXFP8 forward, in the forward X's scaling; dX bf16), dW f32. */
kiln_status kiln_derive_backward(const char* fprop_spec, const char* mode, const char* pass, char* buf,
                                 size_t buf_size, size_t* needed);
/* The same with the gradient formats chosen: options->grad names dY's and dX's format ("bf16" or "f16";
 * NULL: bf16), options->wgrad_out dW's ("bf16", "f16" or "f32"; NULL: f32), options->mode as above. A
 * framework that writes dW straight into a bf16 parameter's .grad asks for wgrad_out "bf16". */
typedef struct kiln_backward_options {
  size_t struct_size;     /* sizeof(kiln_backward_options) */
  const char* mode;       /* "high_precision" (NULL), "dequantized" or "quantized" */
  const char* grad;       /* dY and dX: "bf16" (NULL) or "f16"; mode quantized: dX only (dY is e4m3) */
  const char* wgrad_out;  /* dW: "f32" (NULL), "bf16" or "f16" */
} kiln_backward_options;
kiln_status kiln_derive_backward_with(const char* fprop_spec, const kiln_backward_options* options,
                                      const char* pass, char* buf, size_t buf_size, size_t* needed);

#ifdef __cplusplus
}
#endif
#endif /* KILN_KILN_H_ */
