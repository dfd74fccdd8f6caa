#include "formats/llvm_densemap_order.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

using ot::formats::densemap_iteration_order;
using ot::formats::llvm_hash_value;

namespace {

std::vector<std::string> ordered(const std::vector<std::string_view>& keys) {
  std::vector<std::string> out;
  for (std::size_t i : densemap_iteration_order(keys)) out.emplace_back(keys[i]);
  return out;
}

}  // namespace

TEST_CASE("llvm_hash_value matches llvm::hash_value(StringRef) of LLVM 19") {
  // Values of the reference model models/llvmhash.py (checked against the key
  // order clang-offload-packager 19 writes); one key per length class.
  CHECK(llvm_hash_value("") == 0x65b0c5ecc2c5cc82ULL);
  CHECK(llvm_hash_value("a") == 0xaeb6f9d5517c61f8ULL);
  CHECK(llvm_hash_value("arch") == 0x1499ea7cf386c709ULL);
  CHECK(llvm_hash_value("triple") == 0x45f9d3270819b0d8ULL);
  CHECK(llvm_hash_value("0123456789abc") == 0x34ecc6342ae63128ULL);
  CHECK(llvm_hash_value("a key of twenty-four ch") == 0xc5905d4aa038da26ULL);
  CHECK(llvm_hash_value("a key that is more than thirty-two bytes long") == 0xdb086b9e53d07ca0ULL);
}

TEST_CASE("llvm_hash_value matches llvm::hash_value(StringRef) of LLVM 22") {
  // Called in Debian's libLLVM.so.22.1 through dlsym; 22's cl hashes option names with it.
  CHECK(llvm_hash_value("h") == 0xd71defdc2ead9509ULL);
  CHECK(llvm_hash_value("help") == 0xffa7c3e49db08072ULL);
  CHECK(llvm_hash_value("help-list") == 0xc3417b848f21a5b3ULL);
  CHECK(llvm_hash_value("hip-openmp-compatible") == 0x05d5789074a9bec6ULL);
  CHECK(llvm_hash_value(std::string(40, 'x')) == 0x83ae3857192b3691ULL);
  CHECK(llvm_hash_value(std::string(64, 'y')) == 0xfe52a062b7eec612ULL);
  CHECK(llvm_hash_value(std::string(65, 'z')) == 0xf1363d5b4c5191d3ULL);
}

TEST_CASE("keys longer than 64 bytes take LLVM's long-input path") {
  // Observed: clang-offload-packager 19 -o o.bin
  //   --image=file=a.o,triple=t,L000xx..=v,...,L007xx..=v  (key i = "L00i" + (60 + 17 i) 'x')
  // writes the string entries L004 L000 triple L005 L007 L001 L003 L002 L006.
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) names.push_back(fmt::format("L00{}{}", i, std::string(60 + 17 * i, 'x')));
  std::vector<std::string_view> keys{"file", "triple"};
  for (const auto& n : names) keys.push_back(n);
  std::vector<std::string> got;
  for (std::string k : ordered(keys)) {
    if (k == "file") continue;
    if (k.size() > 4 && k[0] == 'L') k.resize(4);
    got.push_back(std::move(k));
  }
  CHECK(got == std::vector<std::string>{"L004", "L000", "triple", "L005", "L007", "L001", "L003", "L002", "L006"});
}

TEST_CASE("DenseMap iteration order of the packager's keys (observed with LLVM 19)") {
  CHECK(ordered({"file", "triple", "arch", "kind"}) == std::vector<std::string>{"arch", "file", "triple", "kind"});
  // {file, triple, foo, bar} -> bar, triple, foo once file is dropped.
  auto o = ordered({"file", "triple", "foo", "bar"});
  std::erase(o, "file");
  CHECK(o == std::vector<std::string>{"bar", "triple", "foo"});
  // {file, triple, a..t} -> b h l r f c j s d triple n o p m q t e g k a i
  std::vector<std::string> letters;
  for (char c = 'a'; c <= 't'; ++c) letters.emplace_back(1, c);
  std::vector<std::string_view> keys{"file", "triple"};
  for (const auto& l : letters) keys.push_back(l);
  o = ordered(keys);
  std::erase(o, "file");
  CHECK(o == std::vector<std::string>{"b", "h", "l", "r", "f", "c", "j", "s", "d", "triple", "n",
                                      "o", "p", "m", "q", "t", "e", "g", "k", "a", "i"});
}

TEST_CASE("DenseMap order survives growth past 48 keys (observed with LLVM 19)") {
  // clang-offload-packager -o o.bin --image=file=a.o,triple=t,k0=v,...,k59=v
  const std::string expected =
      "k26 k15 k33 k10 k38 k4 k30 k13 k7 k5 k43 k25 k48 k24 k39 k40 k9 k42 k54 k50 k21 k27 k16 k32 k55 k53 "
      "k41 k47 k11 k17 k3 k22 k31 k37 k18 k1 k6 k19 k20 k51 k35 k57 triple k2 k28 k23 k45 k12 k36 k44 k59 "
      "k14 k8 k56 k46 k34 k52 k49 k0 k29 k58";
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back(fmt::format("k{}", i));
  std::vector<std::string_view> keys{"file", "triple"};
  for (const auto& n : names) keys.push_back(n);
  std::string got;
  for (const auto& k : ordered(keys)) {
    if (k == "file") continue;
    if (!got.empty()) got += ' ';
    got += k;
  }
  CHECK(got == expected);
}
