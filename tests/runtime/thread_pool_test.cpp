// parallel_for (src/runtime/thread_pool.h): every index runs once, its writes are
// seen by the caller on return, on back-to-back calls (helpers still spinning) and on
// calls after the pool has gone to sleep (past the spin).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"

namespace tessel {
namespace {

void expect_each_index_once(int64_t n, int threads, int call) {
  std::vector<int> hits(static_cast<size_t>(n), 0);  // plain ints: the return must publish them
  std::atomic<int> calls{0};
  parallel_for(n, threads, [&](int64_t i) {
    hits[static_cast<size_t>(i)] += 1;
    calls.fetch_add(1, std::memory_order_relaxed);
  });
  EXPECT_EQ(calls.load(), n) << "call " << call;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "index " << i << ", call " << call;
}

TEST(ThreadPool, EveryIndexOnceOnBackToBackAndSleepingCalls) {
  for (int call = 0; call < 200; ++call) expect_each_index_once(1 + call % 37, 2 + call % 3, call);
  for (int call = 0; call < 5; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the helpers' spin
    expect_each_index_once(64, 3, call);
  }
}

TEST(ThreadPool, TwoGroupsOnTwoThreadsRunSideBySide) {
  // Each group waits until both have started: it returns only if a second thread
  // takes the other group while the first is still running.
  for (int call = 0; call < 20; ++call) {
    std::atomic<int> started{0};
    std::atomic<bool> both{true};
    parallel_for(2, 2, [&](int64_t) {
      started.fetch_add(1);
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (started.load() < 2)
        if (std::chrono::steady_clock::now() > end) {
          both = false;
          return;
        }
    });
    EXPECT_TRUE(both.load()) << "call " << call << ": the second group never ran beside the first";
  }
}

}  // namespace
}  // namespace tessel
