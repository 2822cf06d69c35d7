// Two error channels (Halide's split): tessel::Error is the user's mistake and is
// recoverable; TESSEL_ASSERT is our bug and aborts with a message.
#pragma once
#include <source_location>
#include <stdexcept>
#include <string>

namespace tessel {

enum class ErrorKind {
  InvalidArgument,  // a bad size, stride, pointer, option or CLI argument
  Verify,           // a kernel that breaks an IR rule
  Parse,            // textual IR that does not parse
  Plan,             // a plan that does not fit the kernel or the target
  Compile,          // the JIT compiler failed
  Runtime,          // loading or launching failed
  Unsupported,      // valid, but not implemented for this target
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void user_error(ErrorKind kind, const std::string& message);

[[noreturn]] void internal_error(const char* condition, const std::string& message,
                                 std::source_location where);

}  // namespace tessel

#define TESSEL_ASSERT(cond, msg)                                              \
  do {                                                                        \
    if (!(cond))                                                              \
      ::tessel::internal_error(#cond, (msg), std::source_location::current()); \
  } while (0)
