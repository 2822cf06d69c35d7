#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel {
namespace {

// How long a thread spins on a job's start (helpers) or end (the caller) before it
// sleeps on its condition variable. Waking a sleeping thread took tens of
// microseconds on the 2-core build machine: with two groups and two threads the
// caller often finished its group and took the other before the helper woke, so the
// product ran on one thread (2 threads, 513x257x129: 1.5 busy threads, 0.87x
// OpenBLAS, whose threads spin too). Bounded, so an idle pool sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; whether done() came true.
template <class Done>
bool spin_until(Done done) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    pause();
    if (i % 64 == 63 && std::chrono::steady_clock::now() > end) return false;
  }
}

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void run(int64_t n, int helpers, const std::function<void(int64_t)>& fn) {
    std::lock_guard<std::mutex> turn(run_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (static_cast<int>(threads_.size()) < helpers) {
        int index = static_cast<int>(threads_.size());
        threads_.emplace_back([this, index] { loop(index); });
      }
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      helpers_ = helpers;
      busy_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    claim();
    spin_until([this] { return busy_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return busy_ == 0; });
    fn_ = nullptr;
  }

 private:
  void claim() {
    for (int64_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*fn_)(i);
  }

  void loop(int index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      // The job's fields are read under the lock below; the spin only skips the sleep.
      lock.unlock();
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      lock.lock();
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= helpers_) continue;  // not needed for this job
      lock.unlock();
      claim();
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::mutex run_mu_;  // one job at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  int helpers_ = 0;
  std::atomic<int> busy_{0};  // written under mu_; read without it by the caller's spin
  std::atomic<uint64_t> generation_{0};  // likewise, by the helpers' spin
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  int64_t used = std::min<int64_t>(threads, n);
  if (used <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool().run(n, static_cast<int>(used - 1), fn);
}

}  // namespace tessel
