// tessel's version: printed by `tessel --version`, written into every JSON report,
// and part of every kernel-cache key (a new version never loads an old kernel).
#pragma once

#define TESSEL_VERSION_MAJOR 0
#define TESSEL_VERSION_MINOR 2
#define TESSEL_VERSION_PATCH 0
#define TESSEL_VERSION_STRING "0.2.0"

namespace tessel {
inline const char* version() { return TESSEL_VERSION_STRING; }
}  // namespace tessel
