#include "runtime/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "tessel/error.h"

namespace tessel {

std::string kernel_cache_dir() {
  std::string dir;
  if (const char* d = std::getenv("TESSEL_CACHE_DIR"); d && *d) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::string(x) + "/tessel";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/tessel";
  } else {
    user_error(ErrorKind::Runtime,
               "no kernel cache directory: set TESSEL_CACHE_DIR, XDG_CACHE_HOME or HOME");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) user_error(ErrorKind::Runtime, "cannot create kernel cache directory " + dir + ": " + ec.message());
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
  // Creating a file is the only reliable test (permissions, read-only mounts,
  // quotas, and root ignoring the mode bits).
  std::string probe = temp_path_for(dir + "/.probe");
  FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) {
    warn_once("kernel cache directory " + dir + " is not writable (" + std::strerror(errno) + ")" +
              fallback);
    return "";
  }
  std::fclose(f);
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
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  std::string tmp = temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << contents;
    if (!out.flush()) user_error(ErrorKind::Runtime, "cannot write " + tmp);
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
