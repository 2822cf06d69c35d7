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
