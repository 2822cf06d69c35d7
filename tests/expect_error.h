// expect_error: `f` must throw tessel::Error of `kind` whose message contains
// `needle` (tests/passes, tests/runtime and tests/kernels share it).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tessel/error.h"

namespace tessel::test {

inline void expect_error(ErrorKind kind, const std::string& needle, const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace tessel::test
