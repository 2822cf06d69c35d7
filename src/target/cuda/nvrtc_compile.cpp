#include "target/cuda/nvrtc_compile.h"

#include <nvrtc.h>

#include <chrono>
#include <regex>

#include "runtime/kernel_cache.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string program_log(nvrtcProgram prog) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0) return "";
  std::string log(n, '\0');
  nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

int report_number(const std::string& log, const char* pattern) {
  std::smatch m;
  if (std::regex_search(log, m, std::regex(pattern))) return std::stoi(m[1]);
  return -1;
}

}  // namespace

void read_ptxas_report(NvrtcOutput* out) {
  out->registers = report_number(out->log, R"(Used (\d+) registers)");
  out->spill_stores = report_number(out->log, R"((\d+) bytes spill stores)");
  out->spill_loads = report_number(out->log, R"((\d+) bytes spill loads)");
  out->stack_bytes = report_number(out->log, R"((\d+) bytes stack frame)");
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& arch) {
  if (!std::regex_match(arch, std::regex("sm_[0-9]+a?")))
    user_error(ErrorKind::InvalidArgument, "cuda arch '" + arch + "': expected sm_NN (sm_90)");
  auto start = std::chrono::steady_clock::now();
  NvrtcOutput out;
  out.arch = arch;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), "tessel_kernel.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    user_error(ErrorKind::Compile, "nvrtc: cannot create a program");
  std::string arch_opt = "--gpu-architecture=" + arch;
  const char* options[] = {arch_opt.c_str(), "-std=c++17", "--ptxas-options=-v", "-default-device"};
  nvrtcResult r = nvrtcCompileProgram(prog, 4, options);
  out.log = program_log(prog);
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    std::string path = kernel_cache_dir() + "/failed-" + hex64(fnv1a64(source)) + ".cu";
    write_file_atomic(path, source);
    user_error(ErrorKind::Compile, std::string("nvrtc (") + nvrtcGetErrorString(r) + ") for " + arch +
                                       ":\n" + out.log + "\nsource: " + path +
                                       "\nreproduce: nvcc -arch=" + arch + " -cubin -Xptxas -v " + path);
  }
  size_t n = 0;
  nvrtcGetCUBINSize(prog, &n);
  out.cubin.resize(n);
  nvrtcGetCUBIN(prog, out.cubin.data());
  if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS) {
    out.ptx.resize(n);
    nvrtcGetPTX(prog, out.ptx.data());
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  nvrtcDestroyProgram(&prog);
  read_ptxas_report(&out);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tessel
