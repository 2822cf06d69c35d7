// The `cuda` emitter: GroupIR -> one CUDA C++ translation unit for NVRTC, with no
// #include (NVRTC's built-ins are enough), so that it compiles in tens of ms.
//
// One thread block runs one group; GroupProgram::grid maps to the block index
// (the last grid dimension to blockIdx.x, the one before to y, then z), so that
// consecutive blocks share rows of A. A worker is `lanes` consecutive threads:
// one thread for the Fma atom, one warp for MmaSync, one warpgroup for Wgmma.
//
//   extern "C" __global__ void tessel_kernel(
//       int64_t <size params...>, double <scalars...>, T* <tensors...>)
//
// in GroupProgram order (T per tensor dtype: float, or unsigned short for bf16/f16).
//
// Shared buffers live in dynamic shared memory. Their physical layout pads each
// line (a row of a RowMajor buffer, a panel of a panel layout) to an odd number of
// 16-byte chunks, so that the 8 rows one ldmatrix or one warp's vector access
// touches fall in distinct banks; the logical layout is GroupIR's. The operands of
// wgmma mmas instead take the 128-byte-swizzled layouts wgmma's descriptors read
// (unpadded, 1024-byte aligned; see mark_wgmma_operands).
//
// Ops: copy = cooperative 16-byte vectors where both sides are contiguous and
// aligned (checked at run time for global memory), guarded scalars otherwise;
// async copies are cp.async (zero-filling out-of-bounds chunks) with commit/wait;
// fence and barrier = __syncthreads() (after fence.proxy.async for wgmma); an async
// mma is one wgmma commit group, completed by mma.wait = wgmma.wait_group;
// fragments are per-thread register arrays (two sets of the mma operand fragments
// with frag_buffers 2).
//
// mbarriers are 8-byte objects in dynamic shared memory after the buffers. init,
// expect_tx, a leader's arrival and a tma copy are done by thread 0; an arrival
// per worker syncs the worker's lanes (__syncwarp, or a named barrier per
// warpgroup) and then its lane 0 arrives; a wait spins on try_wait.parity in
// every thread. A tma copy is cp.async.bulk.tensor.2d through a CUtensorMap
// parameter (__grid_constant__; see CudaTensorMap) into a buffer in the
// 128-byte-swizzled layout wgmma reads (16-bit elements, rows of 64 elements or
// panels of 64 columns), one box per 64-column panel.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"
#include "ir/group_ir.h"

namespace tessel {

// One CUtensorMap kernel parameter (after the tensors, in this order): a 2-D tiled
// map of a tensor with 128-byte swizzle, encoded at launch (cuTensorMapEncodeTiled)
// from the launch's sizes. Element (r, c) of the map is element
// offset + r * row_stride + c of the tensor; `rows` x `cols` is its extent
// (reads outside land as 0), each tma copy through it a box_rows x box_cols box.
struct CudaTensorMap {
  int tensor = -1;
  DType dtype = DType::BF16;
  int64_t box_rows = 0, box_cols = 0;
  Expr rows, cols, row_stride, offset;  // over size parameters; offset null = 0
};

struct CudaSource {
  std::string code;
  std::string entry = "tessel_kernel";
  int threads = 0;           // per block: workers * lanes
  int64_t shared_bytes = 0;  // dynamic shared memory per block
  bool sm90a = false;        // uses sm_90a-only instructions (wgmma): compile for sm_90a
  bool folded_grid = false;  // takes the whole grid in blockIdx.x (CudaGrid::folded)
  std::vector<CudaTensorMap> tensor_maps;  // tma copies' maps: kernel parameters after the tensors
  // What the variant assumes of every launch (assume_aligned): these tensors start
  // on 16 bytes, and these size parameters are multiples of so many elements. The
  // launch checks them (cuda_kernel.cpp) and runs the general variant where one fails.
  bool assume_aligned = false;
  std::vector<int> aligned_tensors;
  std::vector<std::pair<std::string, int64_t>> aligned_sizes;
};

// folded_grid: the variant for launches whose grid is folded into x (CudaGrid);
// only grids of 2 or 3 dimensions differ.
//
// assume_aligned: the variant for launches whose tensors start on 16 bytes and whose
// row strides (bare size parameters) are multiples of 16 bytes, the usual case. Its
// global copies and stores test no addresses at run time, and it leaves out the
// paths for other alignments: for a small kernel a third of the code, and of the
// compile time (fp32 64^3: 0.92 -> 0.26 s in NVRTC), and fewer registers.
CudaSource emit_cuda(const GroupProgram& program, bool folded_grid = false, bool assume_aligned = true);

// The architecture to compile `source` for, given the device's ("sm_90"): sm_90a
// when the source uses wgmma; a wgmma source for any other device is a Plan error.
std::string cuda_compile_arch(const CudaSource& source, const std::string& arch);

// Blocks per grid dimension (x, y, z) for one launch; sizes come from `lookup`.
// Where y or z would exceed the device's 65535, the whole grid is folded into x
// (`folded`; the kernel decodes it). A grid beyond the device's limits even so is
// an InvalidArgument error with the numbers.
struct CudaGrid {
  int64_t x = 1, y = 1, z = 1;
  bool folded = false;
};
CudaGrid cuda_grid(const GroupProgram& program, const SymbolLookup& lookup);

}  // namespace tessel
