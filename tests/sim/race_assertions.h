// Assertions on a sim run's races, and the edit that plants a bug in a program's
// text, shared by the sim tests of blind spots, the mbarrier protocol and
// warp-specialized programs.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "target/sim/sim.h"

namespace tessel::test {

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline std::string races_text(const SimResult& r) {
  std::string s;
  for (const Race& race : r.races) s += "\n  " + race.message;
  return s;
}

// Some recorded race names op `a` first and op `b` second (b -1: `a` alone), and
// its message names them both (and `also`).
inline ::testing::AssertionResult names_race(const SimResult& r, int a, int b, const std::string& also = "") {
  if (r.race_count == 0) return ::testing::AssertionFailure() << "no race reported";
  for (const Race& race : r.races)
    if (race.first_op == a && race.second_op == b && has(race.message, "#" + std::to_string(a)) &&
        (b < 0 || has(race.message, "#" + std::to_string(b))) && has(race.message, also))
      return ::testing::AssertionSuccess() << race.message;
  return ::testing::AssertionFailure() << r.race_count << " races, none between op #" << a << " and op #" << b
                                       << ":" << races_text(r).substr(0, 4000);
}

// `text` with the first occurrence of `from` replaced by `to` (a failure when
// `text` does not hold it: a planted bug that plants nothing proves nothing).
inline std::string edit(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace tessel::test
