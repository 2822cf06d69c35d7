// tessel's cpu GEMM through the front door, and OpenBLAS and BLIS through CBLAS.
#include <thread>

#include "bench/cblas_library.h"
#include "bench/gemm_impl.h"
#include "ops/gemm.h"
#include "tessel/error.h"

namespace tessel::bench {
namespace {

class TesselCpu : public GemmImpl {
 public:
  TesselCpu(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : s_(r.shape), a_(a), b_(b), c_(s_.m * s_.n) {
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
  void call() override {
    report_ = gemm(s_.m, s_.n, s_.k, 1.0f, a_.data(), s_.k, b_.data(), s_.n, 0.0f, c_.data(), s_.n,
                   options_);
  }
  void poison() override { std::fill(c_.begin(), c_.end(), NAN); }
  std::vector<float> output() override { return c_; }
  ImplFacts facts() const override {
    ImplFacts f;
    f.plan = report_.plan.to_string();
    f.compile_ms = report_.compile_ms;
    f.first_launch_us = report_.run_us;
    return f;
  }

 private:
  Shape s_;
  std::vector<float> a_, b_, c_;
  GemmOptions options_;
  GemmReport report_;
};

class Cblas : public GemmImpl {
 public:
  Cblas(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : lib_(r.name), s_(r.shape), a_(a), b_(b), c_(s_.m * s_.n) {
    lib_.set_threads(r.threads > 0 ? r.threads : int(std::thread::hardware_concurrency()));
  }
  void call() override {
    lib_.sgemm(int(s_.m), int(s_.n), int(s_.k), 1.0f, a_.data(), b_.data(), 0.0f, c_.data());
  }
  void poison() override { std::fill(c_.begin(), c_.end(), NAN); }
  std::vector<float> output() override { return c_; }
  ImplFacts facts() const override {
    ImplFacts f;
    f.library_path = lib_.path();
    f.library_version = lib_.version();
    return f;
  }

 private:
  CblasLibrary lib_;
  Shape s_;
  std::vector<float> a_, b_, c_;
};

}  // namespace

std::unique_ptr<GemmImpl> make_cpu_impl(const ImplRequest& r, const std::vector<float>& a,
                                        const std::vector<float>& b) {
  if (r.name == "tessel") return std::make_unique<TesselCpu>(r, a, b);
  if (r.name == "openblas" || r.name == "blis") return std::make_unique<Cblas>(r, a, b);
  return nullptr;
}

}  // namespace tessel::bench
