// Precompiled for every file of the unit tests (tests/meson.build's
// cpp_pch): doctest and the standard headers they all use. A file still
// includes what it uses (the build works with -Db_pch=false).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
