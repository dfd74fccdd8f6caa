// What the pruners of linked files (ELF: linked_elf.cpp, PE: pe_image.cpp)
// share: the device code section's items (bundles, fatbins, offload binaries)
// pruned one by one and packed at the section's start, and the byte edits
// written on top of the input as its ranges go to the sink.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/bundle_binary.h"
#include "prune/prune.h"
#include "support/error.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::prune {

using formats::kHipWrapperBinary;
using formats::kHipWrapperMagic;
using formats::kHipWrapperSize;

inline std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
inline std::uint64_t align_down(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : v / a * a; }

inline void emit_zeros(std::uint64_t n, const codec::Sink& sink) {
  static const std::byte kZero[4096] = {};
  for (; n > 0;) {
    std::uint64_t k = std::min<std::uint64_t>(n, sizeof kZero);
    sink(Bytes(kZero, k));
    n -= k;
  }
}

// Byte edits on top of the input, applied as its ranges are emitted.
class Patches {
 public:
  explicit Patches(const std::string& file) : file_(file) {}

  template <typename T>
  void put(std::uint64_t off, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<std::byte> b(sizeof(T));
    std::memcpy(b.data(), &value, sizeof(T));
    put_bytes(off, std::move(b));
  }
  void put_bytes(std::uint64_t off, std::vector<std::byte> b) {
    Edit e;
    e.size = b.size();
    e.owned = std::move(b);
    e.pieces = {Bytes(e.owned)};
    add(off, std::move(e));
  }
  // A range rewritten as `pieces` (views that outlive the patches) followed by
  // zeros up to `size` bytes: a section pruned in place.
  void put_region(std::uint64_t off, std::uint64_t size, std::vector<Bytes> pieces) {
    Edit e;
    e.size = size;
    e.pieces = std::move(pieces);
    add(off, std::move(e));
  }
  bool any_in(std::uint64_t from, std::uint64_t to) const {
    auto it = edits_.lower_bound(from);
    return (it != edits_.end() && it->first < to) ||
           (it != edits_.begin() && std::prev(it)->first + std::prev(it)->second.size > from);
  }
  // Input [from, to) with the edits that start in it (none crosses `to`).
  void emit(Bytes input, std::uint64_t from, std::uint64_t to, const codec::Sink& sink) const {
    for (auto it = edits_.lower_bound(from); it != edits_.end() && it->first < to; ++it) {
      if (it->first > from) sink(input.subspan(from, it->first - from));
      std::uint64_t n = 0;
      for (Bytes p : it->second.pieces) {
        sink(p);
        n += p.size();
      }
      emit_zeros(it->second.size - n, sink);
      from = it->first + it->second.size;
    }
    if (to > from) sink(input.subspan(from, to - from));
  }

 private:
  struct Edit {
    std::uint64_t size = 0;
    std::vector<std::byte> owned;
    std::vector<Bytes> pieces;
  };
  void add(std::uint64_t off, Edit e) {
    // Each structure is patched whole, once: two that overlap are structures
    // of the file sharing bytes (a symbol table over a relocation section).
    auto next = edits_.lower_bound(off);
    if ((next != edits_.end() && next->first < off + e.size && !(next->first == off && next->second.size == e.size)) ||
        (next != edits_.begin() && std::prev(next)->first + std::prev(next)->second.size > off))
      fail_at({file_, off}, "two structures to rewrite share bytes: not pruned");
    edits_[off] = std::move(e);
  }
  std::string file_;
  std::map<std::uint64_t, Edit> edits_;
};

// One item of the device code section (a bundle, an offload binary), pruned:
// its pieces are kept until the whole file was checked. Pieces inside the
// input stay views of it (the caller copies them in the kernel); the others
// (new headers, recompressed CCOBs) are owned.
struct Item {
  std::uint64_t offset = 0, size = 0;  // in the section, before
  std::uint64_t new_offset = 0, new_size = 0;  // after; a dropped item has size 0
  std::vector<Bytes> pieces;
  // OpenMP: the images the item holds (from the section's start), which
  // __tgt_device_image records point at.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> images = {};
};

// The bytes pruning makes (compressed bundles compressed again, rewritten
// fatbins), kept until the file is written. A large one goes to an unlinked
// scratch file beside the input (in $TMPDIR where its folder is not
// writable: OutputFile::scratch_beside) and is mapped back, its pages left to the
// page cache until the writer reads them (release() after): held in memory, a
// library of many CCOBs pruned to most of its GPUs held all of them (166 MB of
// rocBLAS's 188 MB as CCOBs). Small ones (a fatbin's few KiB) stay in memory.
class OwnedBytes {
 public:
  explicit OwnedBytes(std::string near) : near_(std::move(near)) {}
  // A copy of `b`, valid while this lives.
  Bytes keep(Bytes b);
  // Done with `b` (a view keep() returned, or anything else: nothing): the
  // pages of a stored one leave memory.
  void release(Bytes b) const;

 private:
  static constexpr std::size_t kInMemory = 1u << 20;
  std::string near_;
  std::deque<std::vector<std::byte>> memory_;
  std::optional<OutputFile> file_;
  std::map<const std::byte*, std::unique_ptr<InputFile::Range>> stored_;  // by their data
};

// Prunes `it`, the item at [it.offset, + it.size) of `section` (which lies
// at file offset `off` of `in`): a blob's bundle with prune_container, a
// fatbin (`fatbin`) with prune_fatbin_container, its headers read with pread.
// Sets it.pieces and it.new_size (an item nothing is dropped from keeps its
// bytes as they were: a CCOB is not compressed again); errors are rebased to
// the file. Pieces that are not views of the input are kept in `owned`.
Report prune_item(const InputFile& in, Item& it, Bytes section, std::uint64_t off, bool fatbin,
                  const Selection& selection, const std::string& file, OwnedBytes& owned);

// What join (prune/join.cpp) gives a kpack'd binary back in place of its
// records' marker: one bundle per HIPK record, by the record's position in its
// section, laid out as clang lays out .hip_fatbin (the bundles at 4 KiB
// boundaries), and the function that hands its bytes to a sink in order.
struct JoinedFatbin {
  std::uint64_t size = 0;                      // of the new .hip_fatbin
  std::vector<std::uint64_t> bundle_offsets;   // in it, per record position
  std::uint64_t align = 4096;                  // clang's alignment of .hip_fatbin
  std::function<void(const codec::Sink&)> emit;
};

}  // namespace ot::prune
