// NVRTC: CUDA C++ source -> cubin for one architecture, with the PTX kept (for
// `tessel explain`) and ptxas's resource report parsed. Needs no GPU.
#pragma once
#include <string>

namespace tessel {

struct NvrtcOutput {
  std::string arch;   // "sm_90"
  std::string cubin;  // loadable with cuModuleLoadData
  std::string ptx;
  std::string log;    // NVRTC's log, ptxas -v report included
  int registers = -1;                       // per thread, from the report
  int spill_stores = -1, spill_loads = -1;  // bytes, from the report
  int stack_bytes = -1;
  double compile_ms = 0;
  // NVRTC's own phase times (its --time report; -1 where it gave none): the C++
  // front end, the NVVM optimizer, and ptxas (PTX to SASS). TESSEL_PASS_TIMING=1
  // prints them on stderr.
  double frontend_ms = -1, optimizer_ms = -1, ptxas_ms = -1;
};

// A failed compile is a user error (ErrorKind::Compile) that carries NVRTC's log
// and the path of the source written out for reproduction (under the cache dir).
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& arch);

// Fills registers, spills and stack bytes from out->log (ptxas -v).
void read_ptxas_report(NvrtcOutput* out);

// "13.0"
std::string nvrtc_version();

}  // namespace tessel
