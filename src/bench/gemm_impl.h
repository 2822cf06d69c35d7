// One GEMM implementation as the benchmark worker drives it: C = A * B + beta C
// (fp32, row-major, packed, alpha = 1; beta 0 unless asked, cpu only) on operands
// prepared once, then call() again and again. GPU implementations keep A, B and C
// on the device and launch asynchronously: sync() waits, and a device timer
// brackets a batch of calls.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bench/shape.h"

namespace tessel::bench {

// What a worker reports about the implementation it ran.
struct ImplFacts {
  std::string library_path, library_version;  // CBLAS / cuBLAS; "" for tessel
  std::string plan;                           // tessel: the plan of the last call
  double compile_ms = NAN;       // tessel: capture, planning, lowering, JIT (last call; 0 when cached)
  double first_launch_us = NAN;  // tessel: the launch alone, in the last call
};

class GemmImpl {
 public:
  virtual ~GemmImpl() = default;
  virtual void call() = 0;
  virtual void sync() {}
  virtual void poison() = 0;                      // every element of C = NaN
  virtual void set_output(const std::vector<float>& c) = 0;  // C = c (M x N), where beta reads it
  virtual std::vector<float> output() = 0;       // C, M x N (syncs first)
  virtual bool has_device_timer() const { return false; }
  virtual void device_timer_start() {}
  virtual double device_timer_stop_ms() { return NAN; }  // waits for the end event
  virtual ImplFacts facts() const = 0;
};

struct ImplRequest {
  std::string name;  // tessel | openblas | blis | libxsmm | tessel-cuda | cublas
  Shape shape;
  int threads = 1;   // cpu: 0 = all cores
  std::string tile;  // tessel: named plan BMxBNxBK, "" = dispatch
  std::string dtype = "fp32";  // cuda: fp32 | tf32 | bf16 | fp16 (A and B stored so; C fp32)
  std::string plan;            // tessel: a plan spec (bench/plan_spec.h), "" = none
  float beta = 0;              // cpu impls (libxsmm: 0 or 1); cuda: 0
};

// The implementation `r.name` on host inputs a (M x K) and b (K x N), which it
// copies where it needs them (cuda: in r.dtype's storage type; the values are
// already rounded to it). Loading (dlopen, device setup) happens here; an
// implementation that cannot load is a user error (Runtime).
std::unique_ptr<GemmImpl> make_cpu_impl(const ImplRequest& r, const std::vector<float>& a,
                                        const std::vector<float>& b);
// nullptr where this build has no cuda target.
std::unique_ptr<GemmImpl> make_cuda_impl(const ImplRequest& r, const std::vector<float>& a,
                                         const std::vector<float>& b);

// True where this build has the cuda target (tessel-cuda and cublas).
bool cuda_impls_built();

}  // namespace tessel::bench
