// The public C++ API of tessel. (Filled in by the GEMM front door.)
#pragma once
#include "tessel/error.h"
