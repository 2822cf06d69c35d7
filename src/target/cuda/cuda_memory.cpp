#include "target/cuda/cuda_memory.h"

#include <algorithm>
#include <string>
#include <utility>

#include "target/cuda/cuda_driver.h"
#include "tessel/error.h"

namespace tessel {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  CUdeviceptr p = 0;
  cuda_check(cuda_driver().cuMemAlloc(&p, bytes), "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cuda_driver().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  TESSEL_ASSERT(offset + bytes <= bytes_, "upload past the end of a device buffer");
  if (bytes) cuda_check(cuda_driver().cuMemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  TESSEL_ASSERT(offset + bytes <= bytes_, "download past the end of a device buffer");
  if (bytes) cuda_check(cuda_driver().cuMemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill32(uint32_t word) {
  if (bytes_ >= 4) cuda_check(cuda_driver().cuMemsetD32(ptr_, word, bytes_ / 4), "cuMemsetD32");
}

void copy_rows_on_device(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t row_bytes,
                         int64_t rows) {
  if (rows <= 0 || row_bytes <= 0) return;
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  c.srcPitch = size_t(src_pitch);
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  c.dstPitch = size_t(dst_pitch);
  c.WidthInBytes = size_t(row_bytes);
  c.Height = size_t(rows);
  cuda_check(cuda_driver().cuMemcpy2DAsync(&c, nullptr), "cuMemcpy2DAsync");
}

void* cuda_thread_scratch(int slot, size_t bytes) {
  // Raw pointers, never freed: a thread_local DeviceBuffer would free after the
  // driver has gone at process exit.
  constexpr int kSlots = 4;
  TESSEL_ASSERT(slot >= 0 && slot < kSlots, "cuda scratch slot out of range");
  thread_local CUdeviceptr ptr[kSlots] = {};
  thread_local size_t size[kSlots] = {};
  if (size[slot] >= bytes && ptr[slot]) return reinterpret_cast<void*>(ptr[slot]);
  const CudaDriver& d = cuda_driver();
  if (ptr[slot]) {
    cuda_synchronize();
    d.cuMemFree(ptr[slot]);
    ptr[slot] = 0;
  }
  cuda_check(d.cuMemAlloc(&ptr[slot], std::max<size_t>(bytes, 256)), "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  size[slot] = std::max<size_t>(bytes, 256);
  return reinterpret_cast<void*>(ptr[slot]);
}

void cuda_zero_words(void* dst, size_t words) {
  cuda_check(cuda_driver().cuMemsetD32(reinterpret_cast<CUdeviceptr>(dst), 0, words), "cuMemsetD32");
}

void cuda_synchronize() { cuda_check(cuda_driver().cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)"); }

DeviceTimer::DeviceTimer() {
  const CudaDriver& d = cuda_driver();
  CUevent a = nullptr, b = nullptr;
  cuda_check(d.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  cuda_check(d.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  start_ = a;
  stop_ = b;
}

DeviceTimer::~DeviceTimer() {
  const CudaDriver& d = cuda_driver();
  d.cuEventDestroy(static_cast<CUevent>(start_));
  d.cuEventDestroy(static_cast<CUevent>(stop_));
}

void DeviceTimer::start() { cuda_check(cuda_driver().cuEventRecord(static_cast<CUevent>(start_), nullptr), "cuEventRecord"); }

double DeviceTimer::stop_ms() {
  const CudaDriver& d = cuda_driver();
  cuda_check(d.cuEventRecord(static_cast<CUevent>(stop_), nullptr), "cuEventRecord");
  cuda_check(d.cuEventSynchronize(static_cast<CUevent>(stop_)), "cuEventSynchronize");
  float ms = 0;
  cuda_check(d.cuEventElapsedTime(&ms, static_cast<CUevent>(start_), static_cast<CUevent>(stop_)), "cuEventElapsedTime");
  return ms;
}

}  // namespace tessel
