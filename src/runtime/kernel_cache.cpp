#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "tessel/error.h"

namespace tessel {

namespace {
// An exclusively created temporary file beside `path` (its name in *name), open
// for writing: the descriptor, or -1 with errno set.
int open_exclusive(const std::string& path, std::string* name);

// The cache directory's name by the environment, "" when nothing names one.
std::string kernel_cache_dir_name() {
  if (const char* d = std::getenv("TESSEL_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tessel";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tessel";
  return "";
}

// Why a file as stat saw it may not be trusted (cache_path_distrust).
std::string cache_path_distrust(const struct stat& st) {
  if (st.st_uid != geteuid())
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("is writable by group or others (mode ") + mode + ")";
  }
  return "";
}
}  // namespace

std::string kernel_cache_dir() {
  std::string dir = kernel_cache_dir_name();
  if (dir.empty()) {
    user_error(ErrorKind::Runtime,
               "no kernel cache directory: set TESSEL_CACHE_DIR, XDG_CACHE_HOME or HOME");
  }
  // The parents as usual; the cache directory itself private to this user.
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(dir).lexically_normal().parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) user_error(ErrorKind::Runtime, "cannot create kernel cache directory " + dir + ": " + ec.message());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    user_error(ErrorKind::Runtime, "cannot create kernel cache directory " + dir + ": " + std::strerror(errno));
  if (!std::filesystem::is_directory(dir, ec))
    user_error(ErrorKind::Runtime, "kernel cache directory " + dir + " is not a directory");
  return dir;
}

std::string cache_path_distrust(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::string("cannot be examined (") + std::strerror(errno) + ")";
  return cache_path_distrust(st);
}

CacheRead read_cache_entry(const std::string& path, std::string* contents, std::string* why) {
  why->clear();
  // O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: a FIFO cannot stall us.
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) {
      *why = "is a symbolic link";
      return CacheRead::Refused;
    }
    return CacheRead::Missing;  // absent or unreadable: rebuilt and replaced
  }
  struct stat st;
  CacheRead result = CacheRead::Refused;
  if (fstat(fd, &st) != 0) {
    *why = std::string("cannot be examined (") + std::strerror(errno) + ")";
  } else if (!S_ISREG(st.st_mode)) {
    *why = "is not a regular file";
  } else if (*why = cache_path_distrust(st); why->empty()) {
    // The size fstat saw, and no read to find the end (each syscall counts in a
    // cache hit under a hypervisor): a file cut since reads short and counts as
    // missing; bytes added since are not read, and check_cache_entry judges the rest.
    contents->resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < contents->size()) {
      ssize_t n = read(fd, contents->data() + done, contents->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    contents->resize(done);
    result = done == static_cast<size_t>(st.st_size) ? CacheRead::Ok : CacheRead::Missing;
  }
  close(fd);
  return result;
}

std::string readable_kernel_cache_dir() {
  std::string dir = kernel_cache_dir_name();
  struct stat st;
  if (dir.empty() || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !cache_path_distrust(st).empty())
    return "";
  return dir;
}

std::string writable_kernel_cache_dir() {
  const std::string fallback = "; compiled kernels are kept in memory only";
  std::string dir;
  try {
    dir = kernel_cache_dir();
  } catch (const Error& e) {
    warn_once(e.what() + fallback);
    return "";
  }
  // Nobody else may write where kernels are loaded from.
  if (std::string why = cache_path_distrust(dir); !why.empty()) {
    warn_once("kernel cache directory " + dir + " " + why + "; it is not used" + fallback);
    return "";
  }
  // Creating a file is the only reliable test (permissions, read-only mounts,
  // quotas, and root ignoring the mode bits).
  std::string probe;
  if (open_exclusive(dir + "/.probe", &probe) < 0) {
    warn_once("kernel cache directory " + dir + " is not writable (" + std::strerror(errno) + ")" +
              fallback);
    return "";
  }
  std::remove(probe.c_str());
  return dir;
}

uint64_t fnv1a64(std::string_view data) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

bool read_file(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *contents = s.str();
  return true;
}

std::string temp_path_for(const std::string& path) {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits)) {
    static std::random_device device;
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    bits = (uint64_t{device()} << 32) ^ device();
  }
  return path + ".tmp." + hex64(bits);
}

namespace {
int open_exclusive(const std::string& path, std::string* name) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    *name = temp_path_for(path);
    int fd = open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;  // errno EEXIST
}
}  // namespace

std::string create_temp_file(const std::string& path) {
  std::string name;
  int fd = open_exclusive(path, &name);
  if (fd < 0) user_error(ErrorKind::Runtime, "cannot create " + name + ": " + std::strerror(errno));
  close(fd);
  return name;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  std::string tmp;
  int fd = open_exclusive(path, &tmp);
  if (fd < 0) user_error(ErrorKind::Runtime, "cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0 || done != contents.size()) {
    std::remove(tmp.c_str());
    user_error(ErrorKind::Runtime, "cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    user_error(ErrorKind::Runtime, "cannot rename " + tmp + " to " + path);
  }
}

namespace {
constexpr std::string_view kFooterHeader = "tessel-cache-entry\n";
constexpr std::string_view kTrailerTag = "tessel-footer ";
constexpr size_t kTrailerSize = kTrailerTag.size() + 16 + 1;  // tag, hex length, newline

// "key value" lines into a map; a line without a space maps to "".
std::map<std::string, std::string> footer_fields(std::string_view text) {
  std::map<std::string, std::string> fields;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    size_t space = line.find(' ');
    fields[std::string(line.substr(0, space))] =
        space == std::string_view::npos ? "" : std::string(line.substr(space + 1));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return fields;
}
}  // namespace

std::string seal_cache_entry(std::string_view payload, const std::string& stamp) {
  std::string footer(kFooterHeader);
  footer += stamp;
  if (!footer.empty() && footer.back() != '\n') footer += '\n';
  footer += "bytes " + std::to_string(payload.size()) + "\nfnv1a64 " + hex64(fnv1a64(payload)) + "\n";
  std::string entry(payload);
  entry += footer;
  entry += std::string(kTrailerTag) + hex64(footer.size()) + "\n";
  return entry;
}

bool check_cache_entry(std::string_view entry, const std::string& stamp, std::string* why,
                       std::string_view* payload_out) {
  // A cut anywhere removes the trailer, so truncation shows up here.
  if (entry.size() < kTrailerSize || entry.back() != '\n' ||
      entry.substr(entry.size() - kTrailerSize, kTrailerTag.size()) != kTrailerTag) {
    *why = "is truncated or was not written by tessel (no footer)";
    return false;
  }
  std::string_view hex = entry.substr(entry.size() - kTrailerSize + kTrailerTag.size(), 16);
  uint64_t footer_size = 0;
  auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), footer_size, 16);
  if (ec != std::errc() || end != hex.data() + hex.size() || hex != hex64(footer_size) ||
      footer_size > entry.size() - kTrailerSize) {
    *why = "is corrupted (footer length '" + std::string(hex) + "')";
    return false;
  }
  size_t payload_size = entry.size() - kTrailerSize - footer_size;
  std::string_view payload = entry.substr(0, payload_size);
  std::string_view footer = entry.substr(payload_size, footer_size);
  if (footer.substr(0, kFooterHeader.size()) != kFooterHeader) {
    *why = "is corrupted (footer header)";
    return false;
  }
  auto have = footer_fields(footer.substr(kFooterHeader.size()));
  for (const auto& [key, want] : footer_fields(stamp)) {
    auto it = have.find(key);
    std::string theirs = it == have.end() ? "(none)" : it->second;
    if (theirs != want) {
      *why = "was built for " + key + " '" + theirs + "', not '" + want + "'";
      return false;
    }
  }
  if (have["bytes"] != std::to_string(payload.size())) {
    *why = "is corrupted (" + std::to_string(payload.size()) + " bytes, its footer says " +
           have["bytes"] + ")";
    return false;
  }
  if (have["fnv1a64"] != hex64(fnv1a64(payload))) {
    *why = "is corrupted (checksum " + hex64(fnv1a64(payload)) + ", its footer says " +
           have["fnv1a64"] + ")";
    return false;
  }
  if (payload_out) *payload_out = payload;
  return true;
}

void warn_once(const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(message).second) std::fprintf(stderr, "tessel: %s\n", message.c_str());
}

}  // namespace tessel
