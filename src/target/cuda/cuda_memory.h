// Device memory and device-event timing for the cuda target (driver API, device
// 0's primary context). Every failure is a user error (ErrorKind::Runtime).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessel {

// An owned device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return reinterpret_cast<void*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;
  void fill32(uint32_t word);  // every 4-byte word = `word` (NaN poisoning)

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

// Copies `rows` rows of `row_bytes` bytes from one device address to another, rows
// `src_pitch` and `dst_pitch` bytes apart, queued on the default stream (ordered
// with the launches there).
void copy_rows_on_device(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch, int64_t row_bytes,
                         int64_t rows);

// Device scratch of the calling thread, one buffer per slot: at least `bytes`,
// grown on demand and never shrunk or freed (it lives until the process exits).
// Growing first waits for the device: queued work may still read the old buffer.
void* cuda_thread_scratch(int slot, size_t bytes);
// Sets `words` 32-bit words at device address `dst` to 0, in stream order.
void cuda_zero_words(void* dst, size_t words);

// Waits until all work on the device is done; reports launch and execution errors.
void cuda_synchronize();

// Device time between two points on the default stream, in milliseconds.
class DeviceTimer {
 public:
  DeviceTimer();
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  void start();
  double stop_ms();  // records the end, waits for it, returns the elapsed time

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace tessel
