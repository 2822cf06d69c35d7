// The BLAS library's threads: run(n, fn) calls fn(ctx, i) for every i in [0, n) on up
// to threads() threads, the caller being one of them, and returns when all are done.
//
// Worker threads start on the first call that can use them (never in a library
// constructor) and live for the process. One call uses the pool at a time; a call
// that finds it busy (another thread's GEMM) runs its indices on its own thread, so
// calls from many threads at once are safe and never wait for each other. Each index
// computes a disjoint part of the output, so the result does not depend on which
// thread ran it. A child process after fork() starts a pool of its own.
#pragma once
#include <cstdint>

namespace tessel::blas {

// TESSEL_NUM_THREADS when set to a positive number, else the cores this process may
// run on; read once.
int threads();

void run(int64_t n, int threads, void (*fn)(void* ctx, int64_t i), void* ctx);

}  // namespace tessel::blas
