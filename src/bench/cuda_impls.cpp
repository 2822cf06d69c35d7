// tessel's cuda GEMM through the front door (device pointers) and cuBLAS, on the
// GPU: operands live on the device, calls launch asynchronously on the legacy
// default stream. cuBLAS is loaded with dlopen so that nothing links it: it is
// only the peer. Built only with the cuda target (TESSEL_WITH_CUDA).
#include "bench/gemm_impl.h"

#ifdef TESSEL_WITH_CUDA
#include <dlfcn.h>

#include <cstring>

#include "bench/plan_spec.h"
#include "ops/gemm.h"
#include "ops/gemm_precision.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_memory.h"
#include "tessel/error.h"
#endif

namespace tessel::bench {

#ifdef TESSEL_WITH_CUDA
namespace {

constexpr uint32_t kNanBits = 0x7fc00000;

// A, B and C on the device; the base of both GPU implementations. A and B are
// stored in the request's precision (fp32 for fp32 and tf32, else 16 bits).
class DeviceGemm : public GemmImpl {
 public:
  DeviceGemm(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : s_(r.shape), precision_(parse_precision(r.dtype)), a_(stored(a).size()), b_(stored(b).size()),
        c_(size_t(s_.m * s_.n) * 4) {
    std::vector<char> sa = stored(a), sb = stored(b);
    a_.upload(sa.data(), sa.size());
    b_.upload(sb.data(), sb.size());
  }
  void sync() override { cuda_synchronize(); }
  void poison() override { c_.fill32(kNanBits); }
  void set_output(const std::vector<float>& c) override { c_.upload(c.data(), c.size() * 4); }  // (beta 0: unused)
  std::vector<float> output() override {
    cuda_synchronize();
    std::vector<float> out(s_.m * s_.n);
    c_.download(out.data(), out.size() * 4);
    return out;
  }
  bool has_device_timer() const override { return true; }
  void device_timer_start() override { timer_.start(); }
  double device_timer_stop_ms() override { return timer_.stop_ms(); }

 protected:
  float* a() const { return static_cast<float*>(a_.get()); }
  float* b() const { return static_cast<float*>(b_.get()); }
  float* c() const { return static_cast<float*>(c_.get()); }
  Shape s_;
  GemmPrecision precision_;

 private:
  std::vector<char> stored(const std::vector<float>& v) const {
    DType st = storage_dtype(precision_);
    std::vector<char> out(std::max<size_t>(1, v.size()) * dtype_bytes(st));
    for (size_t i = 0; i < v.size(); ++i) {
      if (st == DType::F32) {
        std::memcpy(&out[i * 4], &v[i], 4);
      } else {
        uint16_t h = st == DType::BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
        std::memcpy(&out[i * 2], &h, 2);
      }
    }
    return out;
  }
  DeviceBuffer a_, b_, c_;
  DeviceTimer timer_;
};

class TesselCuda : public DeviceGemm {
 public:
  TesselCuda(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : DeviceGemm(r, a, b) {
    options_.target = TargetKind::Cuda;
    options_.device_pointers = true;
    options_.precision = precision_;
    if (!r.tile.empty() || !r.plan.empty()) {
      Plan p = default_gemm_plan(TargetKind::Cuda, s_.m, s_.n, s_.k, precision_);
      if (!r.tile.empty()) {
        Shape t = parse_shape(r.tile);
        p.tiles["BM"] = t.m, p.tiles["BN"] = t.n, p.tiles["BK"] = t.k;
      }
      apply_plan_spec(r.plan, p);
      options_.plan = p;
    }
  }
  void call() override {
    report_ = gemm(s_.m, s_.n, s_.k, 1.0f, a(), s_.k, b(), s_.n, 0.0f, c(), s_.n, options_);
  }
  ImplFacts facts() const override {
    ImplFacts f;
    f.plan = report_.plan.to_string() + (report_.split_k > 1 ? " split_k=" + std::to_string(report_.split_k) : "");
    f.compile_ms = report_.compile_ms;
    f.first_launch_us = report_.run_us;
    return f;
  }

 private:
  GemmOptions options_;
  GemmReport report_;
};

// The few cuBLAS entry points the benchmark needs (cublas_api.h's signatures).
class Cublas : public DeviceGemm {
 public:
  Cublas(const ImplRequest& r, const std::vector<float>& a, const std::vector<float>& b)
      : DeviceGemm(r, a, b) {
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!handle_) user_error(ErrorKind::Runtime, std::string("cannot load libcublas: ") + dlerror());
    auto create = reinterpret_cast<int (*)(void**)>(symbol("cublasCreate_v2"));
    auto version = reinterpret_cast<int (*)(void*, int*)>(symbol("cublasGetVersion_v2"));
    sgemm_ = reinterpret_cast<SgemmFn>(symbol("cublasSgemm_v2"));
    gemm_ex_ = reinterpret_cast<GemmExFn>(symbol("cublasGemmEx"));
    if (int st = create(&cublas_); st != 0)
      user_error(ErrorKind::Runtime, "cublasCreate failed with status " + std::to_string(st));
    if (precision_ == GemmPrecision::TF32) {  // CUBLAS_TF32_TENSOR_OP_MATH
      auto math = reinterpret_cast<int (*)(void*, int)>(symbol("cublasSetMathMode"));
      if (int st = math(cublas_, 3); st != 0)
        user_error(ErrorKind::Runtime, "cublasSetMathMode failed with status " + std::to_string(st));
    }
    int v = 0;
    version(cublas_, &v);
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(sgemm_), &info) && info.dli_fname) path_ = info.dli_fname;
    version_ = "cuBLAS " + std::to_string(v) +
               (precision_ == GemmPrecision::F32    ? " (sgemm, default math mode: no TF32)"
                : precision_ == GemmPrecision::TF32 ? " (sgemm, TF32 tensor op math)"
                                                    : std::string(" (GemmEx ") + precision_name(precision_) +
                                                          " inputs, fp32 output and compute)");
  }
  // Row-major C = A * B is column-major C^T = B^T * A^T: swap the operands.
  void call() override {
    const float one = 1, zero = 0;
    if (storage_dtype(precision_) != DType::F32) {
      // CUDA_R_16BF = 14, CUDA_R_16F = 2, CUDA_R_32F = 0; CUBLAS_COMPUTE_32F = 68;
      // CUBLAS_GEMM_DEFAULT = -1.
      const int t = precision_ == GemmPrecision::BF16 ? 14 : 2;
      int st = gemm_ex_(cublas_, 0, 0, int(s_.n), int(s_.m), int(s_.k), &one, b(), t, int(s_.n), a(), t,
                        int(s_.k), &zero, c(), 0, int(s_.n), 68, -1);
      if (st != 0) user_error(ErrorKind::Runtime, "cublasGemmEx failed with status " + std::to_string(st));
      return;
    }
    int st = sgemm_(cublas_, 0, 0, int(s_.n), int(s_.m), int(s_.k), &one, b(), int(s_.n), a(),
                    int(s_.k), &zero, c(), int(s_.n));
    if (st != 0) user_error(ErrorKind::Runtime, "cublasSgemm failed with status " + std::to_string(st));
  }
  ImplFacts facts() const override {
    ImplFacts f;
    f.library_path = path_;
    f.library_version = version_;
    return f;
  }

 private:
  using SgemmFn = int (*)(void*, int, int, int, int, int, const float*, const float*, int,
                          const float*, int, const float*, float*, int);
  using GemmExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int,
                           int, const void*, void*, int, int, int, int);
  void* symbol(const char* name) {
    void* p = dlsym(handle_, name);
    if (!p) user_error(ErrorKind::Runtime, std::string("libcublas has no symbol ") + name);
    return p;
  }
  void* handle_ = nullptr;  // never closed, nor is the handle destroyed: the process ends
  void* cublas_ = nullptr;
  SgemmFn sgemm_ = nullptr;
  GemmExFn gemm_ex_ = nullptr;
  std::string path_, version_;
};

}  // namespace

bool cuda_impls_built() { return true; }

std::unique_ptr<GemmImpl> make_cuda_impl(const ImplRequest& r, const std::vector<float>& a,
                                         const std::vector<float>& b) {
  if (r.name == "tessel-cuda") return std::make_unique<TesselCuda>(r, a, b);
  if (r.name == "cublas") return std::make_unique<Cublas>(r, a, b);
  return nullptr;
}

#else

bool cuda_impls_built() { return false; }

std::unique_ptr<GemmImpl> make_cuda_impl(const ImplRequest&, const std::vector<float>&,
                                         const std::vector<float>&) {
  return nullptr;
}

#endif

}  // namespace tessel::bench
