// templates/ptx/griddepcontrol.cuh — programmatic dependent launch (PDL): a kernel's side of the overlap
// with the kernel before it on its stream and the one after it (sm_90+).
//
// PTX ISA 9.0 §9.7.13.13 "griddepcontrol" (PTX 7.8, sm_90):
//   - griddepcontrol.wait: the executing thread waits until every prerequisite grid has completed and
//     its memory operations are performed and visible to this grid. A grid launched without a
//     programmatic dependency (no CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, or nothing
//     before it) has no prerequisite in flight, so it returns at once.
//   - griddepcontrol.launch_dependents: this CTA lets the dependent grid be scheduled; the dependent
//     launches once every CTA of this grid has executed it or exited. Repeats in one CTA have no further
//     effect. It publishes nothing: the dependent's own griddepcontrol.wait still waits for this grid
//     to complete and flush.
// So a kernel may run, before its wait, only what reads nothing a predecessor may write and writes
// nothing a predecessor may read: shared-memory setup and prefetches of tensor maps held in its own
// kernel parameters. The host side: runtime/sm90_launch.cpp (cuLaunchKernelEx; KILN_PDL=0 turns the
// launch attribute off, and then the wait returns at once).
#pragma once

namespace kiln_dev {

// Every thread that may touch global memory executes it first; "memory": no load is hoisted above it.
__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

}  // namespace kiln_dev
