#include "blas_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel::blas {
namespace {

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  int workers() const { return static_cast<int>(threads_.size()); }

  // Runs the job with `helpers` of the workers; the caller must hold busy.
  void run(int64_t n, int helpers, void (*fn)(void*, int64_t), void* ctx) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = fn, ctx_ = ctx, n_ = n;
      next_.store(0);
      helpers_ = helpers;
      running_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    claim();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return running_ == 0; });
  }

  std::mutex busy;  // one job at a time

 private:
  void claim() {
    for (int64_t i; (i = next_.fetch_add(1)) < n_;) fn_(ctx_, i);
  }
  void work() {
    uint64_t seen = 0;
    int index = joined_.fetch_add(1);
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (index >= helpers_) continue;  // not asked this time
      }
      claim();
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  int helpers_ = 0, running_ = 0;
  std::atomic<int> joined_{0};
  void (*fn_)(void*, int64_t) = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
};

// The process's pool; workers are detached for the life of the process (a pool
// in use by a thread must never be destroyed under it).
std::atomic<Pool*> g_pool{nullptr};
std::mutex g_pool_mu;

// In a child after fork() the workers are gone: forget the pool (its memory is
// left as it is; the child starts one of its own).
void forget_pool_in_child() { g_pool.store(nullptr); }

Pool* pool(int workers) {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return p;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if ((p = g_pool.load())) return p;
  static bool registered = false;
  if (!registered) pthread_atfork(nullptr, nullptr, forget_pool_in_child);
  registered = true;
  p = new Pool(workers);
  g_pool.store(p, std::memory_order_release);
  return p;
}

}  // namespace

int threads() {
  static const int n = [] {
    if (const char* s = std::getenv("TESSEL_NUM_THREADS")) {
      char* end = nullptr;
      long v = std::strtol(s, &end, 10);
      if (end != s && *end == '\0' && v > 0) return static_cast<int>(v < 1024 ? v : 1024);
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    unsigned h = std::thread::hardware_concurrency();
    return h ? static_cast<int>(h) : 1;
  }();
  return n;
}

void run(int64_t n, int threads, void (*fn)(void*, int64_t), void* ctx) {
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(ctx, i);
    return;
  }
  Pool* p = pool(blas::threads() - 1);
  std::unique_lock<std::mutex> busy(p->busy, std::try_to_lock);
  int helpers = static_cast<int>(std::min<int64_t>({int64_t{threads} - 1, n - 1, int64_t{p->workers()}}));
  if (!busy.owns_lock() || helpers < 1) {
    for (int64_t i = 0; i < n; ++i) fn(ctx, i);
    return;
  }
  p->run(n, helpers, fn, ctx);
}

}  // namespace tessel::blas
