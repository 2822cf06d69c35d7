#include "target/cuda/cuda_kernel.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "plan/machine.h"
#include "runtime/kernel_cache.h"
#include "runtime/tensor_check.h"
#include "target/cuda/cuda_driver.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

// NN of "sm_NN" or "sm_NNa"; 0 for anything else.
int sm_number(const std::string& arch) {
  int n = 0;
  if (arch.rfind("sm_", 0) != 0 || std::from_chars(arch.data() + 3, arch.data() + arch.size(), n).ec != std::errc())
    return 0;
  return n;
}

// Where a tensor map's rows start for this launch: {address, row pitch in bytes}.
std::pair<uint64_t, uint64_t> tma_row_start(const CudaTensorMap& m, CUdeviceptr base, const SymbolLookup& lookup) {
  const int64_t bytes = dtype_bytes(m.dtype), offset = m.offset ? expr_eval(m.offset, lookup) : 0;
  return {base + static_cast<uint64_t>(offset * bytes), static_cast<uint64_t>(expr_eval(m.row_stride, lookup) * bytes)};
}

// A tma copy's tensor map for this launch (cuda_emit.h, CudaTensorMap): 2-D, the
// column dimension innermost, 128-byte swizzle, zeros outside the extent. What
// the copy engine cannot take (an address or a row stride off 16 bytes) is an
// InvalidArgument error with the numbers.
CUtensorMap encode_tensor_map(const CudaDriver& d, const CudaTensorMap& m, const std::string& tensor,
                              CUdeviceptr base, const SymbolLookup& lookup, CUtensorMapL2promotion promotion) {
  if (!d.cuTensorMapEncodeTiled)
    user_error(ErrorKind::Runtime, "cuda target: the driver lacks cuTensorMapEncodeTiled, which tma copies need "
                                   "(CUDA 12 or newer)");
  const int64_t bytes = dtype_bytes(m.dtype);
  int64_t rows = expr_eval(m.rows, lookup), cols = expr_eval(m.cols, lookup);
  int64_t stride = expr_eval(m.row_stride, lookup), offset = m.offset ? expr_eval(m.offset, lookup) : 0;
  uint64_t address = base + static_cast<uint64_t>(offset * bytes);
  if (address % 16)
    user_error(ErrorKind::InvalidArgument, "tensor " + tensor + ": a tma copy reads it through a tensor map, which "
                                           "needs a 16-byte aligned address; it starts at byte " +
                                           num(static_cast<int64_t>(address % 16)) + " of 16");
  // An empty tensor (K = 0) is never read: its map only has to encode.
  const bool strided = rows > 1 && cols > 0;
  if (strided && ((stride * bytes) % 16 || stride < cols))
    user_error(ErrorKind::InvalidArgument, "tensor " + tensor + ": row stride " + num(stride) + " elements (" +
                                           num(stride * bytes) + " bytes) for rows of " + num(cols) +
                                           "; a tma copy's tensor map needs a multiple of 16 bytes");
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(std::max<int64_t>(cols, 1)),
                        static_cast<cuuint64_t>(std::max<int64_t>(rows, 1))};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(
      strided ? stride * bytes : std::max<int64_t>(16, (cols * bytes + 15) / 16 * 16))};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(m.box_cols), static_cast<cuuint32_t>(m.box_rows)};
  cuuint32_t element_strides[2] = {1, 1};
  CUtensorMap map;
  cuda_check(d.cuTensorMapEncodeTiled(&map,
                                      m.dtype == DType::F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                      : m.dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                      2, reinterpret_cast<void*>(address), dims, strides, box, element_strides,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             "cuTensorMapEncodeTiled (tensor " + tensor + ", " + num(rows) + " x " + num(cols) + ", box " +
                 num(m.box_rows) + " x " + num(m.box_cols) + ")");
  return map;
}

class Kernel final : public CudaKernel {
 public:
  Kernel(const GroupProgram& program, CudaCompileInfo info) : program_(program), info_(std::move(info)) {
    for (const auto& [name, multiple] : info_.source.aligned_sizes) {
      const auto at = std::find(program_.size_params.begin(), program_.size_params.end(), name);
      TESSEL_ASSERT(at != program_.size_params.end(), "an aligned size that is no size parameter");
      aligned_sizes_.emplace_back(size_t(at - program_.size_params.begin()), multiple);
    }
  }

  const CudaCompileInfo& info() const override { return info_; }

  CudaLaunch bind(const LaunchArgs& args) const override {
    // Sizes the program was specialized for first, then tensor layouts: a bad one is
    // refused before anything touches the device; so are written tensors that share
    // device memory with another tensor.
    check_fixed_sizes(program_.name, program_.fixed_sizes, args.sizes);
    std::vector<TensorSpan> spans;
    for (const TensorParam& t : program_.tensors) {
      TensorLayout layout = check_tensor(t, args.sizes);
      auto it = args.tensors.find(t.name);  // missing or null: refused below
      if (it != args.tensors.end() && it->second)
        spans.push_back({&t, reinterpret_cast<uintptr_t>(it->second), std::move(layout)});
    }
    check_tensor_overlap(spans);
    CudaLaunch l;
    for (const std::string& name : program_.size_params) {
      auto it = args.sizes.find(name);
      if (it == args.sizes.end()) user_error(ErrorKind::InvalidArgument, "missing size parameter " + name);
      l.sizes.push_back(it->second);
    }
    for (const ScalarParam& s : program_.scalars) {
      auto it = args.scalars.find(s.name);
      if (it == args.scalars.end()) user_error(ErrorKind::InvalidArgument, "missing scalar parameter " + s.name);
      l.scalars.push_back(it->second);
    }
    for (const TensorParam& t : program_.tensors) {
      auto it = args.tensors.find(t.name);
      if (it == args.tensors.end() || !it->second)
        user_error(ErrorKind::InvalidArgument, "missing or null tensor " + t.name);
      l.tensors.push_back(reinterpret_cast<uint64_t>(it->second));
    }
    CudaGrid g = cuda_grid(program_, [&](const std::string& name, int64_t* v) {
      auto it = args.sizes.find(name);
      if (it == args.sizes.end()) return false;
      *v = it->second;
      return true;
    });
    if (g.x <= 0 || g.y <= 0 || g.z <= 0) return l;  // an empty grid runs nothing
    if (program_.cluster > 1) {  // a grid of whole clusters (the emitted __cluster_dims__)
      const int64_t along[3] = {g.x, g.y, g.z};
      const int64_t extent = along[program_.grid.size() - 1 - program_.cluster_dim];
      if (extent % program_.cluster)
        user_error(ErrorKind::Runtime, "program " + program_.name + ": grid dimension " +
                                           program_.grid[program_.cluster_dim].iv + " has extent " +
                                           std::to_string(extent) + ", not a multiple of its cluster " +
                                           std::to_string(program_.cluster));
    }
    const Kernel* runs = variant(info_.source.folded_grid || g.folded, info_.source.assume_aligned && admits(l));
    l.runs = runs;
    l.function = runs->function(cuda_driver());
    l.grid[0] = unsigned(g.x), l.grid[1] = unsigned(g.y), l.grid[2] = unsigned(g.z);
    return l;
  }

  void execute(const CudaLaunch& l) const override {
    if (!l.runs) return;  // an empty grid
    if (l.runs != this) return l.runs->execute(l);
    if (!addresses_admitted(l)) {  // a tensor moved off 16 bytes since bind: the general variant runs it
      CudaLaunch general = l;
      general.runs = variant(info_.source.folded_grid, false);
      general.function = static_cast<const Kernel*>(general.runs)->function(cuda_driver());
      return general.runs->execute(general);
    }
    const CudaDriver& d = cuda_driver();
    // Parameters in the emitted order: sizes, scalars (as double), tensors, then
    // the tensor maps of tma copies, by value.
    const size_t count = l.sizes.size() + l.scalars.size() + l.tensors.size() + info_.source.tensor_maps.size();
    void* fixed[32];
    std::vector<void*> grown;
    void** params = fixed;
    if (count > 32) {
      grown.resize(count);
      params = grown.data();
    }
    size_t n = 0;
    for (const int64_t& v : l.sizes) params[n++] = const_cast<int64_t*>(&v);
    for (const double& v : l.scalars) params[n++] = const_cast<double*>(&v);
    for (const uint64_t& v : l.tensors) params[n++] = const_cast<uint64_t*>(&v);
    std::vector<CUtensorMap> maps;
    if (!info_.source.tensor_maps.empty()) {
      SymbolLookup lookup = [&](const std::string& name, int64_t* v) {
        for (size_t i = 0; i < program_.size_params.size(); ++i)
          if (program_.size_params[i] == name) return *v = l.sizes[i], true;
        return false;
      };
      std::vector<std::pair<uint64_t, uint64_t>> row_starts;
      for (const CudaTensorMap& m : info_.source.tensor_maps)
        row_starts.push_back(tma_row_start(m, l.tensors[m.tensor], lookup));
      const CUtensorMapL2promotion promotion = tma_l2_promotion_bytes(row_starts) == 256
                                                   ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                                                   : CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
      maps.reserve(info_.source.tensor_maps.size());
      for (const CudaTensorMap& m : info_.source.tensor_maps)
        maps.push_back(
            encode_tensor_map(d, m, program_.tensors[m.tensor].name, l.tensors[m.tensor], lookup, promotion));
      for (CUtensorMap& m : maps) params[n++] = &m;
    }
    const auto fn = static_cast<CUfunction>(l.function);
    const unsigned threads = unsigned(info_.source.threads), shared = unsigned(info_.source.shared_bytes);
    if (overlaps_previous_.load(std::memory_order_relaxed)) {
      // Programmatic dependent launch: this grid's blocks may be scheduled while the
      // previous kernel in the stream finishes; the kernel's first instruction waits
      // for it (cuda_emit.cpp). A driver or stream that refuses the attribute gets
      // plain launches from then on.
      CUlaunchAttribute overlap{};
      overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      overlap.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{};
      config.gridDimX = l.grid[0], config.gridDimY = l.grid[1], config.gridDimZ = l.grid[2];
      config.blockDimX = threads, config.blockDimY = 1, config.blockDimZ = 1;
      config.sharedMemBytes = shared;
      config.attrs = &overlap;
      config.numAttrs = 1;
      if (d.cuLaunchKernelEx(&config, fn, params, nullptr) == CUDA_SUCCESS) return;
      overlaps_previous_.store(false, std::memory_order_relaxed);
    }
    cuda_check(d.cuLaunchKernel(fn, l.grid[0], l.grid[1], l.grid[2], threads, 1, 1, shared, nullptr, params, nullptr),
               "cuLaunchKernel");
  }

 private:
  // This kernel, or its variant for grids folded into x and/or for any alignment
  // (compiled on the first launch that needs it).
  const Kernel* variant(bool folded, bool aligned) const {
    if (folded == info_.source.folded_grid && aligned == info_.source.assume_aligned) return this;
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<const CudaKernel>& v = variants_[2 * folded + aligned];
    if (!v) v = compile_cuda(program_, info_.nvrtc.arch, folded, aligned);
    return static_cast<const Kernel*>(v.get());
  }
  // Whether the launch meets what this variant assumes (CudaSource::aligned_*).
  bool admits(const CudaLaunch& l) const {
    for (const auto& [index, multiple] : aligned_sizes_)
      if (l.sizes[index] % multiple != 0) return false;
    return addresses_admitted(l);
  }
  bool addresses_admitted(const CudaLaunch& l) const {
    for (int t : info_.source.aligned_tensors)
      if (l.tensors[size_t(t)] % 16 != 0) return false;
    return true;
  }

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
    overlaps_previous_ = d.cuLaunchKernelEx && sm_number(info_.nvrtc.arch) >= 90;
    return fn_;
  }

  GroupProgram program_;
  CudaCompileInfo info_;
  mutable std::mutex mutex_;
  mutable CUmodule module_ = nullptr;
  mutable CUfunction fn_ = nullptr;
  mutable std::shared_ptr<const CudaKernel> variants_[4];  // by 2 * folded + aligned (variant)
  std::vector<std::pair<size_t, int64_t>> aligned_sizes_;   // CudaSource::aligned_sizes by parameter index
  mutable std::atomic<bool> overlaps_previous_{false};  // launch with programmatic dependent launch
};

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::shared_ptr<const CudaKernel>>& memory_cache() {
  static std::map<std::string, std::shared_ptr<const CudaKernel>> c;
  return c;
}

// Everything besides the source that decides the compiled bytes; an entry must
// carry the same stamp to be loaded. (NVRTC's options live in nvrtc_compile.cpp:
// bump kTesselVersion when they change.)
std::string cuda_cache_stamp(const std::string& arch) {
  return std::string("tessel ") + kTesselVersion + "\ntarget cuda\narch " + arch + "\nnvrtc " +
         nvrtc_version() + "\n";
}

// The disk cache keeps one sealed entry (seal_cache_entry) per kernel,
// $TESSEL_CACHE_DIR/cuda-<hash>-<arch>.entry, whose payload is a header
// "tessel-cuda 1\ncubin <bytes>\nptx <bytes>\nlog <bytes>\n" followed by the
// cubin, the PTX and NVRTC's log (ptxas report) back to back. One rename
// publishes all three together.
constexpr std::string_view kEntryMagic = "tessel-cuda 1\n";

std::string pack_entry(const NvrtcOutput& o) {
  std::string s(kEntryMagic);
  s += "cubin " + std::to_string(o.cubin.size()) + "\nptx " + std::to_string(o.ptx.size()) + "\nlog " +
       std::to_string(o.log.size()) + "\n";
  return s + o.cubin + o.ptx + o.log;
}

// Reads "<name> <decimal>\n" off the front of *text.
bool take_length(std::string_view* text, std::string_view name, size_t* n) {
  if (text->substr(0, name.size() + 1) != std::string(name) + " ") return false;
  text->remove_prefix(name.size() + 1);
  size_t nl = text->find('\n');
  if (nl == std::string_view::npos || nl == 0 || nl > 19) return false;
  auto [end, ec] = std::from_chars(text->data(), text->data() + nl, *n);
  if (ec != std::errc() || end != text->data() + nl) return false;
  text->remove_prefix(nl + 1);
  return true;
}

// A checked entry's payload back into cubin, PTX and log; false (and *why) when it
// is not exactly what pack_entry wrote.
bool unpack_entry(std::string_view payload, NvrtcOutput* out, std::string* why) {
  std::string_view text = payload;
  size_t cubin = 0, ptx = 0, log = 0;
  bool ok = text.substr(0, kEntryMagic.size()) == kEntryMagic;
  if (ok) text.remove_prefix(kEntryMagic.size());
  ok = ok && take_length(&text, "cubin", &cubin) && take_length(&text, "ptx", &ptx) &&
       take_length(&text, "log", &log);
  ok = ok && cubin > 0 && cubin <= text.size() && ptx <= text.size() - cubin &&
       log == text.size() - cubin - ptx;
  if (!ok) {
    *why = "is corrupted (not a cubin, PTX and log)";
    return false;
  }
  out->cubin.assign(text.substr(0, cubin));
  out->ptx.assign(text.substr(cubin, ptx));
  out->log.assign(text.substr(cubin + ptx, log));
  return true;
}

}  // namespace

// A box row is 128 bytes. On rows that start on 256-byte boundaries a 256-byte
// promotion brings the next k step's row along (bf16 1536x1024x8192 0.74 -> 0.77x
// cuBLAS, 1024x1024x8192 0.72 -> 0.74, tf32 1024x1024x8192 0.63 -> 0.65); where rows
// are off the 128-byte lines the extra bytes are mostly wasted (3000^3 0.70 -> 0.61),
// and where only one operand's rows are aligned, promoting its map alone lost 2%
// (3000x3000x4096). docs/cuda.md, twenty-fifth session.
int tma_l2_promotion_bytes(const std::vector<std::pair<uint64_t, uint64_t>>& row_starts) {
  for (const auto& [address, pitch] : row_starts)
    if (address % 256 != 0 || pitch % 256 != 0) return 128;
  return 256;
}

std::string default_cuda_arch() {
  if (const char* a = std::getenv("TESSEL_CUDA_ARCH"); a && *a) return a;
  if (!cuda_gpu_available()) return "sm_90";
  const CudaDriver& d = cuda_driver();
  int major = 0, minor = 0;
  cuda_check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.device), "cuDeviceGetAttribute");
  cuda_check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.device), "cuDeviceGetAttribute");
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

int64_t default_cuda_multiprocessors() {
  if (!cuda_gpu_available()) return kCudaMultiprocessorsWithoutGpu;
  const CudaDriver& d = cuda_driver();
  int sms = 0;
  cuda_check(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d.device), "cuDeviceGetAttribute");
  return sms;
}

std::shared_ptr<const CudaKernel> compile_cuda(const GroupProgram& program, const std::string& arch_in,
                                               bool folded_grid, bool assume_aligned) {
  std::string arch = arch_in.empty() ? default_cuda_arch() : arch_in;
  CudaCompileInfo info;
  info.source = emit_cuda(program, folded_grid, assume_aligned);
  arch = cuda_compile_arch(info.source, arch);  // sm_90a for wgmma
  std::string stamp = cuda_cache_stamp(arch);
  // A kernel object checks its program's fixed sizes (bind), so two programs whose
  // sources agree but whose fixed sizes differ (one the body never names) get two.
  std::string fixed;
  for (const auto& [name, value] : program.fixed_sizes) fixed += "\n" + name + "=" + std::to_string(value);
  std::string key = hex64(fnv1a64(info.source.code + "\n--\n" + stamp + fixed));
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = memory_cache().find(key);
    if (it != memory_cache().end()) return it->second;
  }
  // An unsafe or unwritable cache directory reads as none (one warning): the
  // kernel is then kept in memory only (runtime/kernel_cache.h).
  std::string dir = writable_kernel_cache_dir();
  if (!dir.empty()) info.cache_path = dir + "/cuda-" + key + "-" + arch + ".entry";
  info.nvrtc.arch = arch;
  // Never hand the driver a cubin from an entry that has not been checked: a
  // damaged or foreign one is reported once and rebuilt; one that someone else
  // owns or could have written is not loaded (nor replaced), memory only.
  std::string entry, why;
  std::string_view payload;
  if (!info.cache_path.empty()) {
    CacheRead read = read_cache_entry(info.cache_path, &entry, &why);
    if (read == CacheRead::Refused) {
      warn_once("kernel cache entry " + info.cache_path + " " + why +
                "; it is not loaded, and this kernel is kept in memory only");
      info.cache_path.clear();
    } else if (read == CacheRead::Ok) {
      if (!check_cache_entry(entry, stamp, &why, &payload) || !unpack_entry(payload, &info.nvrtc, &why))
        warn_once("kernel cache entry " + info.cache_path + " " + why + "; rebuilding it");
      else
        info.from_disk = true;
    }
  }
  if (info.from_disk) {
    read_ptxas_report(&info.nvrtc);
  } else {
    info.nvrtc = nvrtc_compile(info.source.code, arch);
    if (!info.cache_path.empty())
      write_file_atomic(info.cache_path, seal_cache_entry(pack_entry(info.nvrtc), stamp));
  }
  auto kernel = std::make_shared<Kernel>(program, std::move(info));
  std::lock_guard<std::mutex> lock(cache_mutex());
  return memory_cache().emplace(key, kernel).first->second;
}

void clear_cuda_memory_cache() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  memory_cache().clear();
}

}  // namespace tessel
