// data_limit.h: runs a check in a child process whose data segment is capped (RLIMIT_DATA), for
// regression tests of code that must not allocate what an untrusted length field claims (found
// by the fuzz targets' -malloc_limit_mb, tests/fuzz). An allocation above the cap throws
// std::bad_alloc in the child, which then dies and fails the test.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <functional>

namespace coopd::testutil {

inline bool UnderAddressSanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

// The child's side: caps the data segment at `mib` MiB, runs `check`, exits 0 when it returns
// true.
[[noreturn]] inline void RunWithinDataLimit(size_t mib, const std::function<bool()>& check) {
  rlimit r;
  r.rlim_cur = r.rlim_max = static_cast<rlim_t>(mib) << 20;
  if (setrlimit(RLIMIT_DATA, &r) != 0) std::_Exit(2);
  std::_Exit(check() ? 0 : 1);
}

// Expects `check` to return true in a child whose data segment is limited to `mib` MiB. Callers
// skip under ASan first (UnderAddressSanitizer(): its shadow memory does not fit a data limit).
inline void ExpectWithinDataLimit(size_t mib, const std::function<bool()>& check) {
  EXPECT_EXIT(RunWithinDataLimit(mib, check), ::testing::ExitedWithCode(0), "");
}

}  // namespace coopd::testutil
