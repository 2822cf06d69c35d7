// Textual GroupIR: print_group_program and parse_group_program round-trip exactly.
// Op ids are printed (#12) and kept, so a golden test can name an op. Malformed text
// is a user error (ErrorKind::Parse) naming the line.
#pragma once
#include <string>

#include "ir/group_ir.h"

namespace tessel {
std::string print_group_program(const GroupProgram& program);
GroupProgram parse_group_program(const std::string& text);
}  // namespace tessel
