#include "packager/image_args.h"

#include <doctest/doctest.h>

using ot::formats::OffloadString;
using ot::packager::ImageArgs;
using V = std::vector<OffloadString>;

TEST_CASE("--image text: ',' separates, the first '=' splits, repeated keys join") {
  CHECK(ImageArgs::parse("file=a.o,triple=x,foo=bar,foo=baz").in_order() ==
        V{{"file", "a.o"}, {"triple", "x"}, {"foo", "bar,baz"}});
  CHECK(ImageArgs::parse("k=v=w,flag,=empty-key,e=").in_order() ==
        V{{"k", "v=w"}, {"flag", ""}, {"", "empty-key"}, {"e", ""}});
  CHECK(ImageArgs::parse("").in_order() == V{{"", ""}});
  CHECK(ImageArgs::parse("a,,a=1").in_order() == V{{"a", ",1"}, {"", ""}});
  CHECK(ImageArgs::parse(" k = v ").in_order() == V{{" k ", " v "}});
  auto a = ImageArgs::parse("file=x,triple=t");
  CHECK(a.has("file"));
  CHECK_FALSE(a.has("arch"));
  CHECK(*a.find("triple") == "t");
  CHECK(a.find("arch") == nullptr);
}

TEST_CASE("LLVM 19's DenseMap order of the keys") {
  // clang-offload-packager writes {file, triple, arch, kind} as arch, triple (file and kind are not stored).
  std::vector<std::string> keys;
  const ImageArgs a = ImageArgs::parse("file=a,triple=t,arch=x,kind=openmp");
  for (const OffloadString* s : a.llvm_order()) keys.push_back(s->key);
  CHECK(keys == std::vector<std::string>{"arch", "file", "triple", "kind"});
  keys.clear();
  const ImageArgs b = ImageArgs::parse("file=a,triple=t,foo=1,bar=2");
  for (const OffloadString* s : b.llvm_order()) keys.push_back(s->key);
  CHECK(keys == std::vector<std::string>{"bar", "file", "triple", "foo"});
}
