// libFuzzer target for the textual GroupIR: any input either parses and verifies, or
// raises tessel::Error. Anything else (a crash, a sanitizer report, another
// exception, an internal assert) is a finding. Accepted inputs must also round-trip:
// print(parse(x)) parses again and prints identically.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "tessel/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  tessel::GroupProgram program;
  try {
    program = tessel::parse_group_program(text);
    tessel::verify_group_program(program);
  } catch (const tessel::Error&) {
    return 0;  // the user's mistake, reported as one
  }
  std::string printed = tessel::print_group_program(program);
  std::string again;
  try {
    again = tessel::print_group_program(tessel::parse_group_program(printed));
  } catch (const tessel::Error& e) {
    std::fprintf(stderr, "printed GroupIR does not parse: %s\n--- printed:\n%s", e.what(), printed.c_str());
    std::abort();
  }
  if (again != printed) {
    std::fprintf(stderr, "GroupIR round trip differs\n--- first:\n%s--- second:\n%s", printed.c_str(),
                 again.c_str());
    std::abort();
  }
  return 0;
}
