#include "support/human_size.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace ot;

TEST_CASE("human_size: bytes below 1024, exact") {
  CHECK(human_size(0) == "0 B");
  CHECK(human_size(1) == "1 B");
  CHECK(human_size(512) == "512 B");
  CHECK(human_size(1023) == "1023 B");
}

// Every expected text below is what GNU numfmt --to=iec-i --round=nearest
// --format=%.1f --suffix=B prints (coreutils 9.1), with a space before the unit.
TEST_CASE("human_size: from 1024 bytes, the largest unit reached, one decimal, halves up") {
  CHECK(human_size(1024) == "1.0 KiB");
  CHECK(human_size(1535) == "1.5 KiB");           // 1.4990...
  CHECK(human_size(1536) == "1.5 KiB");           // 1.5 exactly
  CHECK(human_size(1279) == "1.2 KiB");           // 1.2490...
  CHECK(human_size(1280) == "1.3 KiB");           // 1.25 exactly: a half goes up
  CHECK(human_size(10240) == "10.0 KiB");         // the decimal stays from 10 on (ls -lh drops it)
  CHECK(human_size(1048524) == "1023.9 KiB");     // 1023.9492...
  CHECK(human_size(1812792) == "1.7 MiB");        // 1.7288... (ls -lh rounds up: 1.8M)
  CHECK(human_size(std::uint64_t{1} << 30) == "1.0 GiB");
  CHECK(human_size(1000000000000) == "931.3 GiB");
  CHECK(human_size(std::uint64_t{1} << 40) == "1.0 TiB");
  CHECK(human_size(std::uint64_t{1} << 50) == "1.0 PiB");
  CHECK(human_size(std::uint64_t{1} << 60) == "1.0 EiB");
}

TEST_CASE("human_size: a size rounding to 1024.0 of a unit is 1.0 of the next") {
  CHECK(human_size(1048525) == "1.0 MiB");        // 1023.9502... KiB
  CHECK(human_size(1048575) == "1.0 MiB");
  CHECK(human_size(1048576) == "1.0 MiB");
  CHECK(human_size((std::uint64_t{1} << 40) - 1) == "1.0 TiB");
  CHECK(human_size((std::uint64_t{1} << 60) - 1) == "1.0 EiB");
}

TEST_CASE("human_size: the largest 64-bit size, without overflow") {
  CHECK(human_size(std::numeric_limits<std::uint64_t>::max()) == "16.0 EiB");
  CHECK(human_size(std::numeric_limits<std::uint64_t>::max() - (std::uint64_t{1} << 59)) == "15.5 EiB");
}

TEST_CASE("size_text and size_cell: human, or the exact count (--bytes)") {
  CHECK(size_text(4584, SizeStyle::Human) == "4.5 KiB");
  CHECK(size_text(4584, SizeStyle::Exact) == "4584 bytes");
  CHECK(size_text(0, SizeStyle::Exact) == "0 bytes");
  CHECK(size_cell(1812792, SizeStyle::Human) == "1.7 MiB");
  CHECK(size_cell(1812792, SizeStyle::Exact) == "1812792");
  CHECK(size_cell(std::numeric_limits<std::uint64_t>::max(), SizeStyle::Exact) == "18446744073709551615");
}
