// contents/walker: every container kind, chains, offsets in the named file,
// and the limits on hostile input. The archives under tests/data/contents are
// made by make_fixtures.py (Python's tarfile, zipfile, gzip, lzma, bz2; cpio
// and ar by hand); the ones below are laid out here by hand. Entry bytes are
// compared with the code objects the script wrote, never with our own writer.
#include <doctest/doctest.h>

#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "compress/ccob.h"
#include "codec/codec.h"
#include "archive/stream_reader.h"
#include "contents/uri.h"
#include "contents/walker.h"
#include "formats/bundle_binary.h"
#include "formats/offload_binary.h"
#include "support/error.h"
#include "../test_files.h"

using namespace ot::contents;
using ot::test::bytes_of;
using ot::test::read_bytes;

namespace {

using Blob = std::vector<std::byte>;

Blob fixture(const std::string& name) { return read_bytes(ot::test::data_path("contents/" + name)); }

void append(Blob& out, std::string_view s) {
  for (char c : s) out.push_back(static_cast<std::byte>(c));
}
void append(Blob& out, const Blob& b) { out.insert(out.end(), b.begin(), b.end()); }

// GNU ar, short names; `offsets` gets each member's data offset.
Blob ar(const std::vector<std::pair<std::string, Blob>>& members, std::vector<std::uint64_t>* offsets = nullptr) {
  Blob out;
  append(out, "!<arch>\n");
  for (const auto& [name, data] : members) {
    char h[61];
    std::snprintf(h, sizeof h, "%-16s%-12d%-6d%-6d%-8o%-10zu`\n", (name + "/").c_str(), 0, 0, 0, 0644, data.size());
    append(out, std::string_view(h, 60));
    if (offsets) offsets->push_back(out.size());
    append(out, data);
    if (data.size() % 2) out.push_back(std::byte{'\n'});
  }
  return out;
}

// ustar, regular files only.
Blob tar(const std::vector<std::pair<std::string, Blob>>& members) {
  Blob out;
  for (const auto& [name, data] : members) {
    char h[512] = {};
    std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011zo", data.size());
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h + 257, "ustar\0" "00", 8);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (char c : h) sum += static_cast<unsigned char>(c);
    std::snprintf(h + 148, 8, "%06o", sum);
    append(out, std::string_view(h, 512));
    append(out, data);
    out.resize((out.size() + 511) / 512 * 512);
  }
  out.resize(out.size() + 1024);
  return out;
}

void le16(Blob& o, unsigned v) { for (int i = 0; i < 2; ++i) o.push_back(static_cast<std::byte>(v >> (8 * i))); }
void le32(Blob& o, unsigned long v) { for (int i = 0; i < 4; ++i) o.push_back(static_cast<std::byte>(v >> (8 * i))); }

// A zip of stored members (local headers, central directory, end record).
Blob zip(const std::vector<std::pair<std::string, Blob>>& members) {
  Blob out, central;
  for (const auto& [name, data] : members) {
    unsigned long crc = crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    std::size_t local = out.size();
    le32(out, 0x04034b50); le16(out, 20); le16(out, 0); le16(out, 0); le16(out, 0); le16(out, 0x21);
    le32(out, crc); le32(out, data.size()); le32(out, data.size()); le16(out, name.size()); le16(out, 0);
    append(out, name);
    append(out, data);
    le32(central, 0x02014b50); le16(central, 20); le16(central, 20); le16(central, 0); le16(central, 0);
    le16(central, 0); le16(central, 0x21); le32(central, crc); le32(central, data.size()); le32(central, data.size());
    le16(central, name.size()); le16(central, 0); le16(central, 0); le16(central, 0); le16(central, 0);
    le32(central, 0); le32(central, local);
    append(central, name);
  }
  std::size_t cd = out.size();
  append(out, central);
  le32(out, 0x06054b50); le16(out, 0); le16(out, 0); le16(out, members.size()); le16(out, members.size());
  le32(out, central.size()); le32(out, cd); le16(out, 0);
  return out;
}

struct Flat {
  std::string container;
  Entry e;
  Blob bytes;
};

class Flatten : public Visitor {
 public:
  std::vector<Flat> out;
  void entry(const Container& c, const Entry& e) override {
    out.push_back({c.name(), e, Blob(e.bytes.begin(), e.bytes.end())});
    out.back().e.bytes = {};
  }
};

std::vector<Flat> flat(const Blob& data, const std::string& name, const Limits& limits = {}) {
  Flatten f;
  walk_bytes(data, name, f, limits);
  return f.out;
}

// The three entries of b.bundle, wherever it is.
void check_bundle_entries(const std::vector<Flat>& got, const std::string& container,
                          std::optional<std::uint64_t> bundle_at) {
  static const Blob g906 = fixture("gfx906.co"), g90a = fixture("gfx90a.co");
  REQUIRE(got.size() == 3);
  CHECK(got[0].container == container);
  CHECK(got[0].e.id == "host-x86_64-unknown-linux-gnu-");
  CHECK(got[0].e.size == 0);
  CHECK(got[1].e.id == "hip-amdgcn-amd-amdhsa--gfx906");
  CHECK(got[1].e.index == 1);
  CHECK(got[1].e.processor == "gfx906");
  CHECK(got[1].bytes == g906);
  CHECK(got[2].e.processor == "gfx90a:xnack+");
  CHECK(got[2].e.target == "hip-amdgcn-amd-amdhsa--gfx90a:xnack+");
  CHECK(got[2].bytes == g90a);
  // make_fixtures.py aligns payloads to 4096: gfx906 at 0x1000, gfx90a at 0x2000.
  if (bundle_at) {
    CHECK(got[1].e.offset == *bundle_at + 0x1000);
    CHECK(got[2].e.offset == *bundle_at + 0x2000);
  } else {
    CHECK_FALSE(got[1].e.offset);
    CHECK_FALSE(got[2].e.offset);
  }
  CHECK(got[2].e.local_offset == 0x2000);
}

}  // namespace

TEST_CASE("a bare bundle: entries, processors from the ELF headers, offsets") {
  check_bundle_entries(flat(fixture("b.bundle"), "b.bundle"), "b.bundle, bundle at 0x0", 0);
}

TEST_CASE("a visitor that wants no code object headers gets no processor, and the same entries otherwise") {
  struct Headless : Flatten {
    bool wants_code_object_headers() const override { return false; }
  } v;
  walk_bytes(fixture("b.bundle"), "b.bundle", v);
  std::vector<Flat> full = flat(fixture("b.bundle"), "b.bundle");
  REQUIRE(v.out.size() == 3);
  REQUIRE(full.size() == 3);
  CHECK(full[1].e.processor == "gfx906");
  CHECK(full[1].e.code_object == "gfx906");
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK_FALSE(v.out[i].e.processor);
    CHECK(v.out[i].e.code_object.empty());
    CHECK(v.out[i].e.id == full[i].e.id);
    CHECK(v.out[i].e.target == full[i].e.target);
    CHECK(v.out[i].e.offset == full[i].e.offset);
    CHECK(v.out[i].bytes == full[i].bytes);
  }
}

TEST_CASE("tar.gz, tar.xz, tar.bz2, zip, cpio, rpm: members with magic are read, no offsets in the named file") {
  check_bundle_entries(flat(fixture("pkg.tar.gz"), "pkg.tar.gz"), "pkg.tar.gz(./lib/b.bundle), bundle at 0x0", {});
  check_bundle_entries(flat(fixture("pkg.tar.xz"), "pkg.tar.xz"), "pkg.tar.xz(./lib/b.bundle), bundle at 0x0", {});
  check_bundle_entries(flat(fixture("pkg.tar.bz2"), "p.tbz"), "p.tbz(./lib/b.bundle), bundle at 0x0", {});
  check_bundle_entries(flat(fixture("pkg.zip"), "pkg.zip"), "pkg.zip(dir/b.bundle), bundle at 0x0", {});
  check_bundle_entries(flat(fixture("pkg.cpio"), "pkg.cpio"), "pkg.cpio(lib/b.bundle), bundle at 0x0", {});
  check_bundle_entries(flat(fixture("pkg.rpm"), "pkg.rpm"), "pkg.rpm(./usr/lib/b.bundle), bundle at 0x0", {});
}

TEST_CASE(".deb: our ar reader outside, libarchive on data.tar.xz from the mapped bytes") {
  auto got = flat(fixture("pkg.deb"), "pkg.deb");
  check_bundle_entries(got, "pkg.deb(data.tar.xz)(./usr/lib/b.bundle), bundle at 0x0", {});
  Flatten f;
  walk_bytes(fixture("pkg.deb"), "pkg.deb", f);
  auto c = collect(fixture("pkg.deb"), "pkg.deb");
  REQUIRE(c.size() == 1);
  CHECK(c[0].container.path() ==
        std::vector<std::string>{"pkg.deb", "data.tar.xz", "./usr/lib/b.bundle", "bundle at 0x0"});
}

TEST_CASE("a container's innermost member: the last archive member of its chain, none in the named file") {
  auto member_of = [](const Blob& data, const std::string& name) {
    auto c = collect(data, name);
    REQUIRE(c.size() == 1);
    CHECK(c[0].container.object.empty());  // a bundle, not an object's sections
    return c[0].container.innermost_member();
  };
  CHECK(member_of(fixture("pkg.deb"), "pkg.deb") == "./usr/lib/b.bundle");
  CHECK(member_of(fixture("nested.zip"), "n.zip") == "b.bundle");
  CHECK(member_of(fixture("b.bundle"), "b.bundle").empty());
}

TEST_CASE("nesting: zip -> tar.gz -> ar -> bundle") {
  check_bundle_entries(flat(fixture("nested.zip"), "n.zip"), "n.zip(inner.tar.gz)(lib.a)(b.bundle), bundle at 0x0", {});
  Limits shallow;
  shallow.max_depth = 2;
  CHECK_THROWS_WITH_AS(flat(fixture("nested.zip"), "n.zip", shallow),
                       "n.zip(inner.tar.gz)(lib.a)(b.bundle): containers nested more than 2 deep, at offset 0x0", ot::Error);
}

TEST_CASE("ar inside ar, to the depth limit: offsets add up in the named file") {
  Blob b = fixture("b.bundle");
  std::uint64_t at = 0;
  Blob cur = b;
  for (int i = 0; i < 10; ++i) {
    std::vector<std::uint64_t> offs;
    cur = ar({{"pad.txt", bytes_of("xyz")}, {fmt::format("l{}", i), cur}}, &offs);
    at += offs[1];  // the bundle is deeper by this member's data offset
  }
  std::string name = "deep.a";
  std::string chain = name;
  for (int i = 9; i >= 0; --i) chain += fmt::format("(l{})", i);
  check_bundle_entries(flat(cur, name), chain + ", bundle at 0x0", at);

  for (int i = 0; i < 10; ++i) cur = ar({{"x", cur}});
  CHECK_THROWS_WITH_AS(flat(cur, "deeper.a"),
                       doctest::Contains("containers nested more than 16 deep"), ot::Error);
}

TEST_CASE("tar.zst made here; a member without magic is not spooled; bomb limit") {
  Blob payload(1 << 20, std::byte{0});
  Blob t = tar({{"zeros.bin", payload}, {"b.bundle", fixture("b.bundle")}});
  ot::codec::Params p;
  Blob zst = ot::codec::compress_all(p, t);
  check_bundle_entries(flat(zst, "p.tar.zst"), "p.tar.zst(b.bundle), bundle at 0x0", {});
  Limits small;
  small.max_expanded_bytes = 256 << 10;
  CHECK_THROWS_WITH_AS(flat(zst, "p.tar.zst", small),
                       "p.tar.zst(zeros.bin): more than 0x40000 bytes decompressed or spooled (the limit): a "
                       "decompression bomb?, at offset 0x1000",
                       ot::Error);
}

TEST_CASE("10,000-member zip, and the member cap") {
  std::vector<std::pair<std::string, Blob>> members;
  for (int i = 0; i < 10000; ++i) members.push_back({fmt::format("m{}.txt", i), bytes_of("x")});
  members.push_back({"last/b.bundle", fixture("b.bundle")});
  Blob z = zip(members);
  check_bundle_entries(flat(z, "w.whl"), "w.whl(last/b.bundle), bundle at 0x0", {});
  Limits few;
  few.max_members = 5000;
  CHECK_THROWS_WITH_AS(flat(z, "w.whl", few), "w.whl: more than 5000 archive members (the limit)", ot::Error);
}

TEST_CASE("truncated and malformed members: an error naming the chain") {
  CHECK_THROWS_WITH_AS(flat(fixture("truncated.tar.gz"), "t.tgz"),
                       doctest::Contains("t.tgz"), ot::Error);
  // A bundle member cut short inside a tar: the bundle reader names the member.
  Blob b = fixture("b.bundle");
  b.resize(0x2010);
  CHECK_THROWS_WITH_AS(flat(tar({{"cut.bundle", b}}), "c.tar"),
                       doctest::Contains("c.tar(cut.bundle): "), ot::Error);
  // An ar member whose size runs past the end.
  Blob a = ar({{"b.bundle", fixture("b.bundle")}});
  a.resize(a.size() - 100);
  CHECK_THROWS_AS(flat(a, "cut.a"), ot::Error);
}

TEST_CASE("nothing found: an empty walk, not an error") {
  CHECK(flat(bytes_of("plain text"), "p.txt").empty());
  CHECK(flat(tar({{"a.txt", bytes_of("hello")}}), "a.tar").empty());
}

TEST_CASE("a compressed single file (a .deb's changelog.Debian.gz) holds nothing: skipped, not an error") {
  // Was: "cannot open the archive: Unrecognized archive format" for the whole .deb.
  Blob text = bytes_of(std::string(4000, 'c'));
  Blob zst = ot::codec::compress_all({}, text);
  CHECK(ot::archive::has_compression_magic(zst));
  CHECK(ot::archive::is_compressed_file_only(zst));
  Blob t = tar({{"usr/share/doc/changelog.zst", zst}, {"b.bundle", fixture("b.bundle")}});
  check_bundle_entries(flat(t, "p.tar"), "p.tar(b.bundle), bundle at 0x0", {});
  CHECK(flat(zst, "changelog.zst").empty());
  // A compressed archive is no such file; nor is a damaged stream, which stays an error.
  CHECK_FALSE(ot::archive::is_compressed_file_only(ot::codec::compress_all({}, t)));
  Blob cut = ot::codec::compress_all({}, t);
  cut.resize(cut.size() / 2);
  CHECK_THROWS_AS(flat(cut, "cut.tar.zst"), ot::Error);
}

TEST_CASE("code object URI: ROCm's percent-encoding of the absolute path") {
  // roc-obj-ls (URI::Encode) keeps RFC 3986's reserved characters: ':' '@' '+' ',' ... stay bare.
  CHECK(percent_encode_path("/opt/rocm 6/lib/a+b~c.so") == "/opt/rocm%206/lib/a+b~c.so");
  CHECK(percent_encode_path("/o d/n+x:y@z%1!*'();&=$,[]") == "/o%20d/n+x:y@z%251!*'();&=$,[]");
  CHECK(percent_encode_path("/a\"<>\\^`{|}\x01\x7f\xc3\xa9") == "/a%22%3C%3E%5C%5E%60%7B%7C%7D%01%7F%C3%A9");
  // '#' and '?' would end the path: encoded, where roc-obj-ls leaves them.
  CHECK(percent_encode_path("/a#b?c") == "/a%23b%3Fc");
  CHECK(code_object_uri(file_uri("/x/y.so"), 8192, 118) == "file:///x/y.so#offset=8192&size=118");
}

TEST_CASE("a CCOB declaring more than the limit stops before decompressing") {
  // v2: "CCOB" u16 version u16 method u32 total_size u32 uncompressed_size u64 hash, then zstd data.
  Blob payload = ot::codec::compress_all({}, fixture("b.bundle"));
  Blob c;
  append(c, "CCOB");
  le16(c, 2);
  le16(c, 1);  // zstd
  le32(c, 24 + payload.size());
  le32(c, 0xfffffff0u);  // 4 GiB uncompressed, says the header
  for (int i = 0; i < 8; ++i) c.push_back(std::byte{0});
  append(c, payload);
  Limits l;
  l.max_expanded_bytes = 1 << 20;
  CHECK_THROWS_WITH_AS(flat(c, "bomb.bc", l),
                       "bomb.bc: more than 0x100000 bytes decompressed or spooled (the limit): a decompression bomb?, "
                       "at offset 0x0",
                       ot::Error);
  // The same CCOB with its true size decompresses and lists the entries (no offsets: compressed).
  Blob ok = c;
  ok[12] = std::byte{0};
  Blob b = fixture("b.bundle");
  for (int i = 0; i < 4; ++i) ok[12 + i] = static_cast<std::byte>(b.size() >> (8 * i));
  auto got = flat(ok, "z.bc");
  REQUIRE(got.size() == 3);
  CHECK(got[1].container == "z.bc, compressed bundle at 0x0");
  CHECK(got[1].bytes == fixture("gfx906.co"));
  CHECK(got[1].e.compressed);
  CHECK_FALSE(got[1].e.offset);
  CHECK(got[1].e.ccob_size == ok.size());
}

TEST_CASE("visitors see each bundle before its entries, with its offset in the named file") {
  struct Sites : Visitor {
    std::vector<BundleSite> sites;
    void bundle(const BundleSite& b) override { sites.push_back(b); }
    void entry(const Container&, const Entry&) override {}
  } v;
  std::vector<std::uint64_t> offs;
  Blob a = ar({{"x.txt", bytes_of("x")}, {"b.bundle", fixture("b.bundle")}}, &offs);
  walk_bytes(a, "l.a", v);
  REQUIRE(v.sites.size() == 1);
  CHECK(v.sites[0].where.name() == "l.a(b.bundle), bundle at 0x0");
  CHECK(v.sites[0].offset == offs[1]);
  CHECK(v.sites[0].bytes.size() == fixture("b.bundle").size());
  CHECK_FALSE(v.sites[0].compressed);
}

TEST_CASE("payloads sharing bytes are an error naming both entries") {
  // Two 16-byte payloads 8 bytes apart, laid out here by hand.
  const std::string a = "hip-amdgcn-amd-amdhsa--gfx906", b = "hip-amdgcn-amd-amdhsa--gfx90a";
  Blob d;
  append(d, "__CLANG_OFFLOAD_BUNDLE__");
  auto u64 = [&](std::uint64_t v) { for (int i = 0; i < 8; ++i) d.push_back(static_cast<std::byte>(v >> (8 * i))); };
  u64(2);
  std::uint64_t start = 32 + 24 + a.size() + 24 + b.size();
  u64(start); u64(16); u64(a.size()); append(d, a);
  u64(start + 8); u64(16); u64(b.size()); append(d, b);
  d.resize(start + 24, std::byte{'A'});
  CHECK_THROWS_WITH_AS(flat(d, "o.bc"),
                       "o.bc: bundle entries 0 ('hip-amdgcn-amd-amdhsa--gfx906') and 1 ('hip-amdgcn-amd-amdhsa--gfx90a') "
                       "overlap: payloads at 0x8a of 0x10 bytes and at 0x92, at offset 0x92",
                       ot::Error);
}

TEST_CASE("an offload binary entry whose arch turns a feature off: its ID as stored, its target with the feature") {
  // "<kind>-<triple>-<arch>" with the packager's 3-field triple reads, as a
  // bundle ID, "gfx90a:xnack" as the triple's 4th field (the sign's dash ends
  // it): no processor at all.
  ot::formats::OffloadImageDesc d;
  d.image_kind = static_cast<std::uint16_t>(ot::formats::ImageKind::Object);
  d.offload_kind = static_cast<std::uint16_t>(ot::formats::OffloadKind::OpenMP);
  d.strings = {{"triple", "amdgcn-amd-amdhsa"}, {"arch", "gfx90a:xnack-"}};
  Blob bin = ot::formats::write_offload_binary_v1(d, ot::as_bytes("image"));
  auto got = flat(bin, "dev.bin");
  REQUIRE(got.size() == 1);
  CHECK(got[0].container == "dev.bin, offload binary at 0x0");
  CHECK(got[0].e.id == "openmp-amdgcn-amd-amdhsa-gfx90a:xnack-");
  CHECK(got[0].e.bundle_id == "openmp-amdgcn-amd-amdhsa--gfx90a:xnack-");
  CHECK(got[0].e.offload_binary);
  CHECK(got[0].e.target == "openmp-amdgcn-amd-amdhsa--gfx90a:xnack-");
  CHECK(got[0].bytes == bytes_of("image"));
  // A bundle's entries are parsed as stored.
  auto b = flat(fixture("b.bundle"), "b.bundle");
  REQUIRE(b.size() == 3);
  CHECK(b[2].e.bundle_id == b[2].e.id);
  CHECK_FALSE(b[2].e.offload_binary);
}

TEST_CASE("a visitor that reads no payloads: a CCOB decoded only as far as its table and ELF headers") {
  // b.bundle's entries, then 4 MiB of noise (compressed to several zstd
  // blocks), in a CCOB whose second half is then garbage: its table and
  // gfx906's ELF header lie in the first blocks.
  Blob noise(4u << 20);
  std::uint64_t x = 7;
  for (std::byte& b : noise) x ^= x << 13, x ^= x >> 7, x ^= x << 17, b = static_cast<std::byte>(x);
  const Blob g906 = fixture("gfx906.co");
  const std::vector<std::string> ids{"host-x86_64-unknown-linux-gnu-", "hip-amdgcn-amd-amdhsa--gfx906",
                                     "hip-amdgcn-amd-amdhsa--gfx90a"};
  const std::vector<std::uint64_t> sizes{0, g906.size(), noise.size()};
  const ot::formats::BinaryBundleLayout l = ot::formats::layout_binary_bundle(ids, sizes, 4096);
  Blob plain(l.total_size);
  std::copy(l.header.begin(), l.header.end(), plain.begin());
  std::copy(g906.begin(), g906.end(), plain.begin() + static_cast<std::ptrdiff_t>(l.offsets[1]));
  std::copy(noise.begin(), noise.end(), plain.begin() + static_cast<std::ptrdiff_t>(l.offsets[2]));
  Blob c = ot::compress::make_ccob(plain, {}, "c");
  std::fill(c.begin() + static_cast<std::ptrdiff_t>(c.size() / 2), c.end(), std::byte{0xa5});
  struct Headers : Flatten {
    bool wants_payloads() const override { return false; }
  } v;
  walk_bytes(c, "c.co", v);
  REQUIRE(v.out.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(v.out[i].container == "c.co, compressed bundle at 0x0");
    CHECK(v.out[i].e.id == ids[i]);
    CHECK(v.out[i].e.size == sizes[i]);
    CHECK(v.out[i].e.local_offset == l.offsets[i]);
    CHECK(v.out[i].e.compressed);
    CHECK(v.out[i].e.ccob_size == c.size());
    CHECK(v.out[i].bytes.empty());
  }
  CHECK(v.out[1].e.processor == "gfx906");
  CHECK_FALSE(v.out[2].e.processor);
  // A visitor that reads payloads decodes it all, and meets the garbage.
  std::string error;
  try {
    flat(c, "c.co");
  } catch (const ot::Error& e) {
    error = e.what();
  }
  CHECK(error.starts_with("c.co: cannot decompress the compressed bundle: "));
  CHECK(error.ends_with(", at offset 0x0"));
  // Without ELF headers (size): the table alone, the same entries.
  struct Sizes : Flatten {
    bool wants_payloads() const override { return false; }
    bool wants_code_object_headers() const override { return false; }
  } s;
  walk_bytes(c, "c.co", s);
  REQUIRE(s.out.size() == 3);
  CHECK(s.out[2].e.size == sizes[2]);
  CHECK_FALSE(s.out[1].e.processor);
}
