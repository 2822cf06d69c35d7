// libFuzzer target for the textual TileIR: any input either parses and verifies, or
// raises tessel::Error. Anything else (a crash, a sanitizer report, another
// exception, an internal assert) is a finding. Accepted inputs must also round-trip:
// print(parse(x)) parses again and prints identically.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "tessel/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  tessel::TileKernel kernel;
  try {
    kernel = tessel::parse_tile_kernel(text);
    tessel::verify_tile_kernel(kernel);
  } catch (const tessel::Error&) {
    return 0;  // the user's mistake, reported as one
  }
  std::string printed = tessel::print_tile_kernel(kernel);
  std::string again;
  try {
    again = tessel::print_tile_kernel(tessel::parse_tile_kernel(printed));
  } catch (const tessel::Error& e) {
    std::fprintf(stderr, "printed TileIR does not parse: %s\n--- printed:\n%s", e.what(), printed.c_str());
    std::abort();
  }
  if (again != printed) {
    std::fprintf(stderr, "TileIR round trip differs\n--- first:\n%s--- second:\n%s", printed.c_str(),
                 again.c_str());
    std::abort();
  }
  return 0;
}
