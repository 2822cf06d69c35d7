#include "runtime/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

}  // namespace tessel
