// On-disk cache of compiled kernels: where it lives, how keys are hashed, how files
// land there atomically (concurrent processes never see a partial file), and how an
// entry proves it is whole and was built for this process before anyone loads it.
// The directory is $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else
// $HOME/.cache/tessel (created on first use, mode 0700).
//
// Nobody else may put code there: a cache directory, or an entry, that is not
// owned by this process's user or that group or others can write is not used
// (one warning; the kernels are then compiled and kept in memory only), since
// the footer's checksum stops accidents, not a deliberately planted .so.
// Temporary files are created exclusively (O_EXCL, O_NOFOLLOW, mode 0600) under
// unpredictable names.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "tessel/version.h"

namespace tessel {

// Part of every entry's stamp: bump it when what tessel expects of a compiled
// kernel changes (entry points, argument layout), so old entries read as stale.
inline constexpr const char* kTesselVersion = TESSEL_VERSION_STRING;  // tessel/version.h

// The cache directory, created if missing; failure is a user error (Runtime).
std::string kernel_cache_dir();
// The cache directory when it can be created and written to and is safe (owned by
// this user, not writable by group or others); otherwise "" after one warning on
// stderr, and the caller keeps its kernels in memory only.
std::string writable_kernel_cache_dir();
// For reading only: the cache directory when it exists and is safe; else "",
// silently (creating it, and the warnings, are writable_kernel_cache_dir's). One
// stat, where the writable check creates and removes a file.
std::string readable_kernel_cache_dir();
// Why `path` (a cache directory or entry, as stat sees it) may not be trusted: ""
// when it is owned by this process's effective user and neither group- nor
// other-writable, else e.g. "is writable by group or others (mode 0775)".
std::string cache_path_distrust(const std::string& path);

// Reads a cache entry without following a symlink, and only when the file is a
// regular file this user owns that group and others cannot write.
enum class CacheRead { Ok, Missing, Refused };
CacheRead read_cache_entry(const std::string& path, std::string* contents, std::string* why);

// FNV-1a, 64 bits: stable across processes and builds (std::hash is not).
uint64_t fnv1a64(std::string_view data);
std::string hex64(uint64_t value);  // 16 lowercase hex digits

bool read_file(const std::string& path, std::string* contents);
// Writes to a temporary file beside `path` (create_temp_file), then renames it
// into place. Failure is a user error (Runtime) naming the path.
void write_file_atomic(const std::string& path, const std::string& contents);
// A fresh temporary name beside `path`: `path`.tmp.<64 random bits in hex>.
std::string temp_path_for(const std::string& path);
// Creates an empty temporary file beside `path` exclusively (O_CREAT | O_EXCL |
// O_NOFOLLOW, mode 0600; a new name on a collision) and returns its name, for a
// tool to write into. Failure is a user error (Runtime).
std::string create_temp_file(const std::string& path);

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

// Forgets the kernels compile() keeps in memory (runtime/kernel.cpp; kernels
// already returned stay valid), so that the next compile goes to the targets as a
// fresh process would. For tests.
void clear_compiled_kernels();

}  // namespace tessel
