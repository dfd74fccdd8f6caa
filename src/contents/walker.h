// What a file can hold, and the walk that finds it. A newcomer's map:
//
//   input file (as named on the command line)
//   ├─ ar archive (.a, the outer layer of a .deb)          archive/ar_reader, ours: GNU long names with '/'
//   │    └─ member ...                                      (any of these, again)
//   ├─ tar (plain, .gz .xz .zst .bz2), zip (Python wheels), cpio, rpm
//   │    └─ member ...                                      libarchive, one streaming pass; a member whose
//   │                                                       first bytes show a magic below is spooled to an
//   │                                                       unlinked scratch file and mapped, others skipped
//   ├─ ELF (relocatable, executable, shared) or COFF object
//   │    ├─ section __CLANG_OFFLOAD_BUNDLE__<id>            one entry per section
//   │    ├─ section .hip_fatbin                             a blob of bundles, below
//   │    └─ section .llvm.offloading                        concatenated OffloadBinaries
//   ├─ blob of consecutive binary bundles and CCOBs (v1-v3, decompressed: binary or text bundle)
//   ├─ concatenated OffloadBinaries (magic 10 FF 10 AD)
//   ├─ NVIDIA fatbins (magic 50 ED 55 BA): a .fatbin file, sections .nv_fatbin
//   │    and __nv_relfatbin, an offload binary's or bundle's entry holding one
//   │    └─ entry: cubin (sm_80, sm_90a), PTX (compute_80), stored plainly,
//   │       as an LZ4 block or a zstd frame (formats/nv_fatbin)
//   ├─ AMD kpack archive (magic KPAK, formats/kpack)
//   │    └─ entry: a code object, by binary key ("lib/libx.so#3") and arch,
//   │       stored plainly or as a zstd frame
//   ├─ kpack'd host binary (ELF, PE): HIPK records in .hipFatBinSegment and a
//   │    .rocm_kpack_ref marker (object/kpack_records): per record i, one
//   │    container per archive found (contents/kpack_search) holding its
//   │    entries for "<kernel_name>#i", or the paths where none was found
//   ├─ text bundle ("// __CLANG_OFFLOAD_BUNDLE____START__ <id>" markers)
//   │    └─ entry: device code (or the host entry)
//   └─ bare device code: an AMDGPU code object (.co, .hsaco), a cubin, PTX text
//        └─ the one entry: the whole file (compat::bare_code names its target)
//
// Every entry carries its chain of containers, and its offset in the named
// file when its bytes lie there contiguous and uncompressed (the file itself,
// plain ar members, sections of objects not inside a libarchive container or a
// CCOB). Hostile input stops with an ot::Error naming the chain and the offset;
// depth, member counts and decompressed bytes are bounded by Limits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot {
class InputFile;
}
namespace ot::formats {
struct FatbinEntry;
struct KpackKernel;
}

namespace ot::contents {

// One step of a chain: "data.tar.xz" (a member), "section .hip_fatbin",
// "bundle 3 at 0x2000", "compressed bundle at 0x0", "offload binary at 0x40".
struct Link {
  std::string text;
  bool member = false;  // an archive member: shown as "outer(member)" in names
};

// A container that holds entries directly: one bundle, one offload binary, one
// object's set of __CLANG_OFFLOAD_BUNDLE__ sections.
struct Container {
  std::string file;         // as given
  std::vector<Link> chain;  // chain[0] is the file as given
  // IDs the bundle stores twice (its reader refuses such a bundle, and the
  // container then has no entries): `compat verify` reports them.
  std::vector<std::string> refused_duplicates;
  // An object's __CLANG_OFFLOAD_BUNDLE__ sections: the whole object, whose
  // host entry (one zero byte) stands for the object without those sections;
  // empty for other containers. Valid only during the visit.
  Bytes object;
  // A bare device code file (an AMDGPU code object, a cubin, PTX): its one
  // entry is the whole file (or member).
  bool bare = false;
  // A kpack'd binary's record (HIPK): the binary key its code objects have
  // ("lib/libx.so#0"); "" for other containers. Its entries are one archive's
  // (the last link names it); where no archive was found, it has none, and
  // `kpack_missing` says which paths were looked at (none: "" with the reason).
  std::string kpack_key{};
  std::vector<std::string> kpack_missing{};
  // That archive's gfx_arches (the only architectures AMD's loader looks up
  // in it), and what "@GFXARCH@" of the search path stood for in its name
  // ("" where the path has none).
  std::vector<std::string> kpack_arches{};
  std::string kpack_glob_arch{};
  // "lib.a(x.o), section .hip_fatbin, bundle 1 at 0x1000": members in
  // parentheses, the other links after commas.
  std::string name() const;
  std::vector<std::string> path() const;  // the links' texts
  // The innermost archive member holding it ("./usr/lib/libk.so.1" of
  // "pkg.deb(data.tar.xz)(./usr/lib/libk.so.1), section .hip_fatbin"); empty
  // when it lies in the named file itself.
  std::string innermost_member() const;
};

struct Entry {
  std::uint64_t index = 0;  // in its container
  std::string id;           // the bundle entry ID as stored (OffloadBinary: "<kind>-<triple>-<arch>")
  // The ID compat::parse_spec reads: `id`, or for an OffloadBinary's entry
  // compat::offload_bundle_id ("<kind>-<4-field triple>-<arch>"), where an arch
  // with a feature ("gfx90a:xnack-") cannot be taken for a part of the triple.
  std::string bundle_id;
  bool offload_binary = false;  // an OffloadBinary's entry: `id` is not a bundle entry ID
  std::string target;       // canonical (compat::parse_spec of bundle_id), or `id` when it does not parse
  // Its vendor's triple: the bundle ID's ("amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda", the host's
  // "x86_64-unknown-linux-gnu"; empty fields at its end left out), nvptx64-nvidia-cuda for NVIDIA
  // fatbin entries, for a bare code object its ELF machine's; "" when the ID does not parse.
  std::string triple;
  // From the code object's ELF header: AMDGPU target ID ("gfx90a:xnack+"),
  // NVPTX "sm_70"; nullopt for anything else, an unknown processor included.
  std::optional<std::string> processor;
  // The AMDGPU header's target ID, "unknown processor (EF_AMDGPU_MACH 0x..)" for
  // one this build does not know, "" when not an AMDGPU code object (compat's rules).
  std::string code_object;
  std::uint64_t size = 0;  // the bytes it takes where it is stored (a fatbin entry: compressed)
  // What it holds decompressed: `size`, except for a compressed fatbin entry
  // (its declared size; nothing is decompressed to list it).
  std::uint64_t uncompressed_size = 0;
  bool compressed = false;  // inside a CCOB, or a fatbin entry stored compressed (LZ4, zstd)
  // absolute, in the named file; see above. A fatbin entry's stored bytes
  // (compressed or not) have one where its fatbin lies in the named file.
  std::optional<std::uint64_t> offset;
  std::uint64_t local_offset = 0;       // in the bytes holding it: member, decompressed bundle or file
  // The size of the CCOB holding it (header included), to share its bytes in
  // the file out among its entries; 0 when not compressed.
  std::uint64_t ccob_size = 0;
  // The payload as stored (a compressed fatbin entry: compressed); valid only
  // during the visit. Empty inside a compressed bundle read only as far as its
  // headers (Visitor::wants_payloads).
  Bytes bytes;
  // An NVIDIA fatbin's entry: its header (kind, arch, compression;
  // formats::fatbin_image_into decodes it); null for every other entry. Valid only during the visit.
  const formats::FatbinEntry* fatbin = nullptr;
  // "cubin", "ptx" (fatbin entries), "" for the others.
  std::string kind;
  // A kpack archive's entry: the archive (the file or member as named, or the
  // path where a kpack'd binary's record found it) and its TOC entry (binary
  // key, arch, ordinal: formats::kpack_code_object decodes `bytes`, a zstd
  // frame where `compressed`); empty and null for the others. `kpack` is valid
  // only during the visit. Entries a record found have no `offset` (their
  // bytes lie in the archive, at kpack->offset).
  std::string kpack_archive{};
  std::string kpack_binary{};  // the TOC binary key ("lib/libx.so#3"); its arch is `id`
  const formats::KpackKernel* kpack = nullptr;
};

struct Limits {
  unsigned max_depth = 16;                     // containers inside containers
  std::uint64_t max_members = 1'000'000;       // per archive
  std::uint64_t max_expanded_bytes = 64ull << 30;  // decompressed and spooled, per walk
  // Threads decoding an xz-compressed archive (archive::StreamReader): more
  // than 1 takes up to 64 MiB a thread.
  unsigned threads = 1;
  // Called as the walk moves through the named file: `done` of its `total`
  // bytes (archives: at each member and every few MiB of a compressed one).
  std::function<void(std::uint64_t done, std::uint64_t total)> progress = {};
  // Whether kpack archives are read (their entries visited), and whether a
  // kpack'd binary's records are followed to the archives they name (the
  // containers reached so have a kpack_key). Prune reads archives as the files
  // they are and copies kpack'd binaries (no device code lies in them): it
  // walks without the records.
  bool kpack = true;
  bool kpack_records = true;
};

// One bundle of a blob (binary, or a CCOB before it is decompressed), for
// consumers that describe bundles themselves (compress --info).
struct BundleSite {
  Container where;       // the chain ends in "bundle 1 at 0x..." or "compressed bundle at 0x..."
  std::string errname;   // the name errors about `bytes` give
  Bytes bytes;           // the whole bundle (a CCOB: header and compressed data); valid during the visit
  bool compressed = false;
  std::uint64_t local_offset = 0;       // in the bytes holding it (file, member, section's object)
  std::optional<std::uint64_t> offset;  // in the named file, where it lies there
};

class Visitor {
 public:
  virtual ~Visitor() = default;
  // Each bundle of a blob, before its entries.
  virtual void bundle(const BundleSite&) {}
  // A container with entries (or refused duplicates), before its entries.
  virtual void container(const Container&) {}
  virtual void entry(const Container&, const Entry&) = 0;
  // Whether entries need `processor` and `code_object`. They come from each
  // code object's ELF header, a read of its own: two thirds of the time a
  // ROCm library's 777 code objects take to walk. A visitor that does not
  // use them says so, and gets nullopt and "".
  virtual bool wants_code_object_headers() const { return true; }
  // Whether entries need `bytes`, their payloads. Those of a compressed bundle
  // take decoding all of it (GiBs, for a few KB of headers). A visitor that
  // reads only IDs, sizes and (wants_code_object_headers) ELF headers says so:
  // a compressed binary bundle is then decoded only as far as its table and
  // those headers, its entries come with empty `bytes`, and its hash is not
  // checked (it covers every decompressed byte). Where the headers reach far
  // into the bundle (past 16 MiB), or it holds a text bundle or an NVIDIA
  // fatbin, it is decoded whole as for any visitor.
  virtual bool wants_payloads() const { return true; }
};

// Whether a file or member whose first bytes (up to 4 KiB) are `prefix` may
// hold device code the walk reads: the magic of every container above (ELF,
// PE images, COFF, ...), a text bundle's marker, a bare code object, cubin or PTX. What does not is read
// through (a package's members) or copied as it is (prune of a tree).
bool may_hold_device_code(Bytes prefix);

// What the device-code container filling a file is, by its first bytes (as
// prune's reports name it): "compressed bundle", "NVIDIA fatbins", "offload
// binaries", "binary bundle", "text bundle"; "" for anything else (a bare code
// object too: compat::bare_code).
std::string container_kind(Bytes prefix);

// "no device code found (...)": what every applet (list, size, unbundle
// --extract-dir, compat) says of a file a walk finds no entry in.
extern const char* const kNoDeviceCode;
[[noreturn]] void fail_no_device_code(const std::string& file);

// Walks `path` ("-": standard input), calling the visitor in file order.
// `display` is the name errors and chains show (defaults to `path`).
void walk_file(const std::string& path, Visitor& v, const Limits& limits = {}, const std::string& display = "");
// The same over a file the caller opened (and may copy entries from by their offsets).
void walk_input(const InputFile& in, Visitor& v, const Limits& limits = {}, const std::string& display = "");
// The same over bytes in memory (tests, callers with a mapped file).
void walk_bytes(Bytes data, const std::string& name, Visitor& v, const Limits& limits = {});

// The convenience: every container with its entries (bytes cleared).
struct FoundContainer {
  Container container;
  std::vector<Entry> entries;
  std::string name() const { return container.name(); }
};
std::vector<FoundContainer> collect(Bytes data, const std::string& name, const Limits& limits = {});
std::vector<FoundContainer> collect_file(const std::string& path, const Limits& limits = {});

// "<container name>, entry <index>"
std::string location(const Container& c, const Entry& e);

}  // namespace ot::contents
