// On-disk cache of compiled kernels: where it lives, how keys are hashed, and how
// files land there atomically, so that concurrent processes never see a partial
// file. The directory is $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else
// $HOME/.cache/tessel (created on first use).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tessel {

// The cache directory, created if missing; failure is a user error (Runtime).
std::string kernel_cache_dir();

// FNV-1a, 64 bits: stable across processes and builds (std::hash is not).
uint64_t fnv1a64(std::string_view data);
std::string hex64(uint64_t value);  // 16 lowercase hex digits

bool read_file(const std::string& path, std::string* contents);
// Writes to a temporary name beside `path`, then renames it into place.
// Failure is a user error (Runtime) naming the path.
void write_file_atomic(const std::string& path, const std::string& contents);
// A fresh temporary name beside `path` (unique per process and call).
std::string temp_path_for(const std::string& path);

}  // namespace tessel
