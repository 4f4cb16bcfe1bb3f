// tests/common/count_allocations.hpp — counts heap allocations on the calling thread by replacing the
// global operator new / delete. Include it in exactly ONE translation unit of a test binary (the
// replacement is program-wide), then read kiln::test::allocations() around the code under test.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace kiln::test {
inline thread_local long long t_allocations = 0;
inline long long allocations() { return t_allocations; }
}  // namespace kiln::test

void* operator new(std::size_t n) {
  ++kiln::test::t_allocations;
  if (void* p = std::malloc(n != 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
