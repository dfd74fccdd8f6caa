#include "support/printable.h"

#include <doctest/doctest.h>

#include <string>

using namespace ot;

TEST_CASE("printable: control characters, DEL and the backslash escaped; the rest as it is") {
  CHECK(printable("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+") == "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
  CHECK(printable("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(printable("\x1b[2J") == "\\x1b[2J");
  CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(printable("\x7f") == "\\x7f");
  CHECK(printable("a\\nb") == "a\\\\nb");  // a backslash in the text is not taken for an escape
  CHECK(printable("") == "");
}

TEST_CASE("printable: UTF-8 as it is, C1 controls and bytes that are not UTF-8 escaped") {
  CHECK(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(printable("\xc2\x9b" "2J") == "\\xc2\\x9b2J");  // U+009B, CSI
  CHECK(printable("\x9b" "2J") == "\\x9b2J");            // a lone byte: not UTF-8
  CHECK(printable("\xe9t\xc3") == "\\xe9t\\xc3");         // Latin-1, then a cut sequence
  CHECK(printable("\xc0\xae") == "\\xc0\\xae");           // overlong
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
}

TEST_CASE("has_control_characters: what printable() changes beyond backslashes") {
  CHECK_FALSE(has_control_characters("a\\b caf\xc3\xa9"));
  CHECK(has_control_characters("a\nb"));
  CHECK(has_control_characters("\xc2\x85"));
  CHECK(has_control_characters("\xff"));
}
