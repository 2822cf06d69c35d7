// tessel's cpu GEMM through the front door, OpenBLAS and BLIS through CBLAS, and
// libxsmm's JIT kernels.
#include <chrono>
#include <optional>
#include <thread>

#include "bench/cblas_library.h"
#include "bench/gemm_impl.h"
#include "bench/line_aligned.h"
#include "bench/xsmm_library.h"
#include "ops/gemm.h"
#include "tessel/error.h"

namespace tessel::bench {
namespace {

class TesselCpu : public GemmImpl {
 public:
  TesselCpu(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : s_(r.shape), a_(line_aligned_copy(a)), b_(line_aligned_copy(b)), c_(s_.m * s_.n), beta_(r.beta) {
    options_.threads = r.threads;
    if (!r.tile.empty()) {
      // A named plan: the dispatch's plan with the tile replaced (the front door
      // then picks the atom and worker grid the tile allows), as `tessel gemm --tile`.
      Shape t = parse_shape(r.tile);
      Plan p = default_gemm_plan(TargetKind::Cpu, s_.m, s_.n, s_.k);
      set_gemm_tile(p, t.m, t.n, t.k);
      p.atom_m = p.atom_n = 1;
      options_.plan = p;
    }
  }
  // The first call prepares the shape (plan, compile, binding: the facts), as a
  // caller of libxsmm dispatches its kernel once; every call is PreparedGemm::run,
  // tessel's call path for repeated calls of one shape.
  void call() override {
    if (prepared_) return prepared_->run(1.0f, a_.data(), b_.data(), beta_, c_.data());
    const auto start = std::chrono::steady_clock::now();
    prepared_.emplace(s_.m, s_.n, s_.k, s_.k, s_.n, s_.n, options_);
    prepared_->run(1.0f, a_.data(), b_.data(), beta_, c_.data());
    first_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() -
                prepared_->compile_ms() * 1e3;
  }
  void poison() override { std::fill(c_.begin(), c_.end(), NAN); }
  void set_output(const std::vector<float>& c) override { std::copy(c.begin(), c.end(), c_.begin()); }
  std::vector<float> output() override { return {c_.begin(), c_.end()}; }
  ImplFacts facts() const override {
    ImplFacts f;
    f.plan = prepared_ ? prepared_->plan().to_string() : "";
    f.compile_ms = prepared_ ? prepared_->compile_ms() : 0;
    f.first_launch_us = first_us_;
    return f;
  }

 private:
  Shape s_;
  LineAlignedFloats a_, b_, c_;  // on 64 bytes for every implementation
  float beta_;
  GemmOptions options_;
  std::optional<PreparedGemm> prepared_;
  double first_us_ = 0;
};

class Cblas : public GemmImpl {
 public:
  Cblas(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : lib_(r.name),
        s_(r.shape),
        a_(line_aligned_copy(a)),
        b_(line_aligned_copy(b)),
        c_(s_.m * s_.n),
        beta_(r.beta) {
    lib_.set_threads(r.threads > 0 ? r.threads : int(std::thread::hardware_concurrency()));
  }
  void call() override {
    lib_.sgemm(int(s_.m), int(s_.n), int(s_.k), 1.0f, a_.data(), b_.data(), beta_, c_.data());
  }
  void poison() override { std::fill(c_.begin(), c_.end(), NAN); }
  void set_output(const std::vector<float>& c) override { std::copy(c.begin(), c.end(), c_.begin()); }
  std::vector<float> output() override { return {c_.begin(), c_.end()}; }
  ImplFacts facts() const override {
    ImplFacts f;
    f.library_path = lib_.path();
    f.library_version = lib_.version();
    return f;
  }

 private:
  CblasLibrary lib_;
  Shape s_;
  LineAlignedFloats a_, b_, c_;  // on 64 bytes for every implementation
  float beta_;
};

// libxsmm: the shape's JIT kernel is dispatched here, once; call() is the kernel
// call alone. It runs on the calling thread (the driver asks for --threads 1).
class Xsmm : public GemmImpl {
 public:
  Xsmm(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : s_(r.shape),
        a_(line_aligned_copy(a)),
        b_(line_aligned_copy(b)),
        c_(s_.m * s_.n),
        kernel_(lib_.row_major_kernel(s_.m, s_.n, s_.k, r.beta)) {}
  void call() override { kernel_(b_.data(), a_.data(), c_.data()); }  // C^T = B^T A^T
  void poison() override { std::fill(c_.begin(), c_.end(), NAN); }
  void set_output(const std::vector<float>& c) override { std::copy(c.begin(), c.end(), c_.begin()); }
  std::vector<float> output() override { return {c_.begin(), c_.end()}; }
  ImplFacts facts() const override {
    ImplFacts f;
    f.library_path = lib_.path();
    f.library_version = lib_.version();
    return f;
  }

 private:
  XsmmLibrary lib_;
  Shape s_;
  LineAlignedFloats a_, b_, c_;  // on 64 bytes for every implementation
  XsmmLibrary::Kernel kernel_;
};

}  // namespace

std::unique_ptr<GemmImpl> make_cpu_impl(const ImplRequest& r, const std::vector<float>& a,
                                        const std::vector<float>& b) {
  if (r.name == "tessel") return std::make_unique<TesselCpu>(r, a, b);
  if (r.name == "openblas" || r.name == "blis") return std::make_unique<Cblas>(r, a, b);
  if (r.name == "libxsmm") return std::make_unique<Xsmm>(r, a, b);
  return nullptr;
}

}  // namespace tessel::bench
