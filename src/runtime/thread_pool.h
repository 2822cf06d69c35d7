// A small persistent thread pool for launching kernels: parallel_for runs fn(i) for
// every i in [0, n) on up to `threads` threads, the calling thread being one of
// them, and returns when all are done. Work is claimed one index at a time from a
// shared counter, so groups of uneven cost still balance. Worker threads are
// created on first need and live for the process; one parallel_for runs at a time
// (concurrent callers take turns). fn must not throw and must not call
// parallel_for itself.
#pragma once
#include <cstdint>
#include <functional>

namespace tessel {

// threads <= 0 means std::thread::hardware_concurrency().
void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& fn);

}  // namespace tessel
