#include "support/llvm_path.h"

#include <doctest/doctest.h>

using namespace ot;

TEST_CASE("filename, stem and extension follow LLVM's sys::path for POSIX paths") {
  CHECK(llvm_path::filename("dir/x.bc") == "x.bc");
  CHECK(llvm_path::filename("/abs/p.o") == "p.o");
  CHECK(llvm_path::filename("x/") == ".");
  CHECK(llvm_path::filename("//") == "/");
  CHECK(llvm_path::filename("") == "");
  CHECK(llvm_path::stem("dir/multi.bin") == "multi");
  CHECK(llvm_path::stem("a.b.c") == "a.b");
  CHECK(llvm_path::extension("a.b.c") == ".c");
  CHECK(llvm_path::stem(".bc") == "");
  CHECK(llvm_path::extension(".bc") == ".bc");
  CHECK(llvm_path::stem("..") == "..");
  CHECK(llvm_path::extension("..") == "");
  CHECK(llvm_path::stem(".") == ".");
  CHECK(llvm_path::stem("dir/") == ".");
  CHECK(llvm_path::stem("-") == "-");
  CHECK(llvm_path::stem("noext") == "noext");
  CHECK(llvm_path::extension("noext") == "");
  CHECK(llvm_path::extension("x.cubin") == ".cubin");
  CHECK(llvm_path::extension("dir.d/x") == "");
  CHECK(llvm_path::extension("x.") == ".");
}
