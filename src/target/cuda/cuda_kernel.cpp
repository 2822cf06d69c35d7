#include "target/cuda/cuda_kernel.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/kernel_cache.h"
#include "target/cuda/cuda_driver.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

class Kernel final : public CudaKernel {
 public:
  Kernel(const GroupProgram& program, CudaCompileInfo info) : program_(program), info_(std::move(info)) {}

  const CudaCompileInfo& info() const override { return info_; }

  void launch(const LaunchArgs& args) const override {
    const CudaDriver& d = cuda_driver();
    CUfunction fn = function(d);
    // Parameters in the emitted order: sizes, scalars (as double), tensors.
    std::vector<int64_t> sizes(program_.size_params.size());
    std::vector<double> scalars(program_.scalars.size());
    std::vector<CUdeviceptr> tensors(program_.tensors.size());
    std::vector<void*> params;
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto it = args.sizes.find(program_.size_params[i]);
      if (it == args.sizes.end())
        user_error(ErrorKind::InvalidArgument, "missing size parameter " + program_.size_params[i]);
      sizes[i] = it->second;
      params.push_back(&sizes[i]);
    }
    for (size_t i = 0; i < scalars.size(); ++i) {
      auto it = args.scalars.find(program_.scalars[i].name);
      if (it == args.scalars.end())
        user_error(ErrorKind::InvalidArgument, "missing scalar parameter " + program_.scalars[i].name);
      scalars[i] = it->second;
      params.push_back(&scalars[i]);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      auto it = args.tensors.find(program_.tensors[i].name);
      if (it == args.tensors.end() || !it->second)
        user_error(ErrorKind::InvalidArgument, "missing or null tensor " + program_.tensors[i].name);
      tensors[i] = reinterpret_cast<CUdeviceptr>(it->second);
      params.push_back(&tensors[i]);
    }
    CudaGrid g = cuda_grid(program_, [&](const std::string& name, int64_t* v) {
      auto it = args.sizes.find(name);
      if (it == args.sizes.end()) return false;
      *v = it->second;
      return true;
    });
    if (g.x <= 0 || g.y <= 0 || g.z <= 0) return;  // an empty grid runs nothing
    if (g.x > 2147483647 || g.y > 65535 || g.z > 65535)
      user_error(ErrorKind::Plan, "cuda grid " + num(g.x) + " x " + num(g.y) + " x " + num(g.z) +
                                      " exceeds the device's limits (2^31-1 x 65535 x 65535)");
    cuda_check(d.cuLaunchKernel(fn, unsigned(g.x), unsigned(g.y), unsigned(g.z), unsigned(info_.source.threads),
                                1, 1, unsigned(info_.source.shared_bytes), nullptr, params.data(), nullptr),
               "cuLaunchKernel");
  }

 private:
  // Loads the module on first use and checks the block against the device.
  CUfunction function(const CudaDriver& d) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fn_) return fn_;
    int max_shared = 0, max_threads = 0;
    cuda_check(d.cuDeviceGetAttribute(&max_shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d.device),
               "cuDeviceGetAttribute");
    if (info_.source.shared_bytes > max_shared)
      user_error(ErrorKind::Plan, "cuda kernel needs " + num(info_.source.shared_bytes) +
                                      " bytes of shared memory per block; the device allows " + num(max_shared));
    cuda_check(d.cuModuleLoadData(&module_, info_.nvrtc.cubin.data()), "cuModuleLoadData (" + info_.nvrtc.arch + ")");
    CUfunction fn = nullptr;
    cuda_check(d.cuModuleGetFunction(&fn, module_, info_.source.entry.c_str()), "cuModuleGetFunction");
    cuda_check(d.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn), "cuFuncGetAttribute");
    if (info_.source.threads > max_threads)
      user_error(ErrorKind::Plan, "cuda kernel needs " + num(info_.source.threads) +
                                      " threads per block; with " + num(info_.nvrtc.registers) +
                                      " registers per thread the device allows " + num(max_threads));
    cuda_check(d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(info_.source.shared_bytes)),
               "cuFuncSetAttribute (dynamic shared memory " + num(info_.source.shared_bytes) + " bytes)");
    fn_ = fn;
    return fn_;
  }

  GroupProgram program_;
  CudaCompileInfo info_;
  mutable std::mutex mutex_;
  mutable CUmodule module_ = nullptr;
  mutable CUfunction fn_ = nullptr;
};

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::shared_ptr<const CudaKernel>>& memory_cache() {
  static std::map<std::string, std::shared_ptr<const CudaKernel>> c;
  return c;
}

}  // namespace

std::string default_cuda_arch() {
  if (const char* a = std::getenv("TESSEL_CUDA_ARCH"); a && *a) return a;
  if (!cuda_gpu_available()) return "sm_90";
  const CudaDriver& d = cuda_driver();
  int major = 0, minor = 0;
  cuda_check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device), "cuDeviceGetAttribute");
  cuda_check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.device), "cuDeviceGetAttribute");
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::shared_ptr<const CudaKernel> compile_cuda(const GroupProgram& program, const std::string& arch_in) {
  std::string arch = arch_in.empty() ? default_cuda_arch() : arch_in;
  CudaCompileInfo info;
  info.source = emit_cuda(program);
  std::string key = hex64(fnv1a64(info.source.code + "\n// " + arch + " nvrtc " + nvrtc_version()));
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = memory_cache().find(key);
    if (it != memory_cache().end()) return it->second;
  }
  std::string dir = kernel_cache_dir();
  info.cache_path = dir + "/cuda-" + key + "-" + arch + ".cubin";
  info.nvrtc.arch = arch;
  if (read_file(info.cache_path, &info.nvrtc.cubin) && read_file(info.cache_path + ".ptx", &info.nvrtc.ptx) &&
      read_file(info.cache_path + ".log", &info.nvrtc.log)) {
    info.from_disk = true;
    read_ptxas_report(&info.nvrtc);
  } else {
    info.nvrtc = nvrtc_compile(info.source.code, arch);
    // The cubin lands last: a reader that finds it finds the others.
    write_file_atomic(info.cache_path + ".ptx", info.nvrtc.ptx);
    write_file_atomic(info.cache_path + ".log", info.nvrtc.log);
    write_file_atomic(info.cache_path, info.nvrtc.cubin);
  }
  auto kernel = std::make_shared<Kernel>(program, std::move(info));
  std::lock_guard<std::mutex> lock(cache_mutex());
  return memory_cache().emplace(key, kernel).first->second;
}

}  // namespace tessel
