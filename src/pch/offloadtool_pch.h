// Precompiled for every file of the offloadtool executable (meson.build's
// cpp_pch): CLI11 is header-only, and its parse was half of each of the
// dozen command-line files' compile time (4 of 9 s at -O2), in each of CI's
// four builds. Only headers used throughout; a file still includes what it
// uses (the build works with -Db_pch=false).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
