// On-disk cache of compiled kernels: where it lives, how keys are hashed, how files
// land there atomically (concurrent processes never see a partial file), and how an
// entry proves it is whole and was built for this process before anyone loads it.
// The directory is $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else
// $HOME/.cache/tessel (created on first use).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tessel {

// Part of every entry's stamp: bump it when what tessel expects of a compiled
// kernel changes (entry points, argument layout), so old entries read as stale.
inline constexpr const char* kTesselVersion = "0.1.0";

// The cache directory, created if missing; failure is a user error (Runtime).
std::string kernel_cache_dir();
// The cache directory when it can be created and written to; otherwise "" after
// one warning on stderr, and the caller keeps its kernels in memory only.
std::string writable_kernel_cache_dir();

// FNV-1a, 64 bits: stable across processes and builds (std::hash is not).
uint64_t fnv1a64(std::string_view data);
std::string hex64(uint64_t value);  // 16 lowercase hex digits

bool read_file(const std::string& path, std::string* contents);
// Writes to a temporary name beside `path`, then renames it into place.
// Failure is a user error (Runtime) naming the path.
void write_file_atomic(const std::string& path, const std::string& contents);
// A fresh temporary name beside `path` (unique per process and call).
std::string temp_path_for(const std::string& path);

// A cache entry is one file: the payload, then a footer with the stamp (what the
// payload was built for: tessel version, compiler, flags, CPU, as "key value"
// lines) and the payload's size and checksum, then a fixed-size trailer giving the
// footer's length. One rename publishes payload and footer together. A shared
// object with bytes after its end still loads (the loader reads what its headers
// point at), so a sealed .so is dlopen'ed as is.
std::string seal_cache_entry(std::string_view payload, const std::string& stamp);
// True when `entry` is a whole sealed entry written for `stamp`. Otherwise false,
// and *why says what is wrong: "is truncated or was not written by tessel",
// "is corrupted (...)", "was built for compiler X, not Y". When true and `payload`
// is given, *payload is the part of `entry` that was sealed (footer left off).
bool check_cache_entry(std::string_view entry, const std::string& stamp, std::string* why,
                       std::string_view* payload = nullptr);

// "tessel: <message>" on stderr, once per process for each distinct message.
void warn_once(const std::string& message);

}  // namespace tessel
