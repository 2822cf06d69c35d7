#include "tessel/error.h"

#include <cstdio>
#include <cstdlib>

namespace tessel {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Verify: return "verifier error";
    case ErrorKind::Parse: return "parse error";
    case ErrorKind::Plan: return "plan error";
    case ErrorKind::Compile: return "compile error";
    case ErrorKind::Runtime: return "runtime error";
    case ErrorKind::Unsupported: return "unsupported";
  }
  return "error";
}

void user_error(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

void internal_error(const char* condition, const std::string& message,
                    std::source_location where) {
  std::fprintf(stderr, "tessel internal error at %s:%u: %s (%s)\n", where.file_name(),
               static_cast<unsigned>(where.line()), message.c_str(), condition);
  std::abort();
}

}  // namespace tessel
