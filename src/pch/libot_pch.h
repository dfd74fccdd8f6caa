// Precompiled for every file of libot (meson.build's cpp_pch): the standard
// headers and fmt that nearly all of them include. A file still includes what
// it uses (the build works with -Db_pch=false).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
