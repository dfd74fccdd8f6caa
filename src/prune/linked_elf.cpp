// Pruning linked ELF files, shared libraries and executables (PIE or not).
//
// The bundles of .hip_fatbin are pruned (prune_container) and packed at the
// section's start, each at its old alignment. The pointers that register a
// bundle move with it: the __hip_fatbin_wrapper records of .hipFatBinSegment
// hold the bundle's address, through an R_*_RELATIVE addend, a RELR slot's
// value or an absolute value in place; symbols at a bundle's start (.symtab,
// .dynsym) move too. Anything else that points into the section (a symbol or
// a relative relocation in the middle of a bundle, text relocations, static
// relocations kept by --emit-relocs) is refused: we never write a file whose
// loader would see something else than the linker meant.
//
// The file then shrinks: what follows the section in the file moves down by
// whole pages (the largest p_align, so every segment keeps p_offset congruent
// to p_vaddr), and no virtual address changes -- of code, data, unwind tables
// or the section itself. When other sections follow .hip_fatbin in its
// loadable segment (.eh_frame_hdr and .eh_frame do, with both GNU ld and lld),
// the segment is split in two: the part up to the packed bundles, and the part
// after them at its old addresses but its new file offset. That takes one more
// program header, so the table moves to just after the packed bundles, inside
// the first part (loaded, as PT_PHDR requires; the kernel finds it there).
//
//   before   | ELF header, phdrs | ... | .hip_fatbin (7 targets)        | .eh_frame ... | .data ... | shdrs |
//   after    | ELF header, (old) | ... | .hip_fatbin (1) | phdrs |pad| .eh_frame ... | .data ... | shdrs |
//                                                                     ^ same vaddr, file offset - P
//
// Only ELF64 little-endian x86_64 and AArch64 files are pruned.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "formats/bundle_sequence.h"
#include "object/object_file.h"
#include "prune/kinds.h"
#include "support/error.h"

namespace ot::prune {
namespace {

namespace elf = object::elf;
using E = elf::Elf64LE;
using Ehdr = elf::ElfEhdr<E>;
using Phdr = elf::ElfPhdr<E>;
using Shdr = elf::ElfShdr<E>;
using Sym = elf::ElfSym<E>;
using Rela = elf::ElfRela<E>;

constexpr std::int64_t DT_NULL = 0, DT_TEXTREL = 22, DT_FLAGS = 30;
constexpr std::uint64_t DF_TEXTREL = 0x4;
constexpr std::uint16_t PN_XNUM = 0xffff;

// struct __hip_fatbin_wrapper { uint32 magic, version; void* binary; void* unused; }
constexpr std::uint32_t kHipWrapperMagic = 0x48495046;
constexpr std::uint64_t kHipWrapperSize = 24, kHipWrapperBinary = 8;

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
std::uint64_t align_down(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : v / a * a; }

struct Machine {
  std::uint32_t relative;  // R_X86_64_RELATIVE, R_AARCH64_RELATIVE
};

std::optional<Machine> machine_of(std::uint16_t m) {
  if (m == elf::EM_X86_64) return Machine{8};
  if (m == elf::EM_AARCH64) return Machine{1027};
  return std::nullopt;
}

// Byte edits on top of the input, applied as its ranges are emitted.
class Patches {
 public:
  template <typename T>
  void put(std::uint64_t off, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<std::byte> b(sizeof(T));
    std::memcpy(b.data(), &value, sizeof(T));
    put_bytes(off, std::move(b));
  }
  void put_bytes(std::uint64_t off, std::vector<std::byte> b) {
    // Each structure is patched whole, once; an overlap would be a bug here.
    auto next = edits_.lower_bound(off);
    if ((next != edits_.end() && next->first < off + b.size() && next->first != off) ||
        (next != edits_.begin() && std::prev(next)->first + std::prev(next)->second.size() > off))
      throw std::logic_error("overlapping patches");
    edits_[off] = std::move(b);
  }
  bool any_in(std::uint64_t from, std::uint64_t to) const {
    auto it = edits_.lower_bound(from);
    return (it != edits_.end() && it->first < to) ||
           (it != edits_.begin() && std::prev(it)->first + std::prev(it)->second.size() > from);
  }
  // Input [from, to) with the edits that start in it (none crosses `to`).
  void emit(Bytes input, std::uint64_t from, std::uint64_t to, const compress::Sink& sink) const {
    for (auto it = edits_.lower_bound(from); it != edits_.end() && it->first < to; ++it) {
      if (it->first > from) sink(input.subspan(from, it->first - from));
      sink(it->second);
      from = it->first + it->second.size();
    }
    if (to > from) sink(input.subspan(from, to - from));
  }

 private:
  std::map<std::uint64_t, std::vector<std::byte>> edits_;
};

void emit_zeros(std::uint64_t n, const compress::Sink& sink) {
  static const std::byte kZero[4096] = {};
  for (; n > 0;) {
    std::uint64_t k = std::min<std::uint64_t>(n, sizeof kZero);
    sink(Bytes(kZero, k));
    n -= k;
  }
}

// One bundle of .hip_fatbin, pruned: its pieces are kept until the whole file
// was checked. Pieces inside the input stay views of it (the caller copies
// them in the kernel); the others (new headers, recompressed CCOBs) are owned.
struct Bundle {
  std::uint64_t offset = 0, size = 0;  // in the section, before
  std::uint64_t new_offset = 0, new_size = 0;
  std::vector<Bytes> pieces;
};

class LinkedPruner {
 public:
  LinkedPruner(const InputFile& in, const Selection& selection, const std::string& file)
      : in_(in), data_(in.bytes()), selection_(selection), file_(file), r_(data_, file) {}

  Report run(const compress::Sink& sink) {
    read_headers();
    report_.container = fmt::format("{} (ELF)", elf_.ehdr.e_type == elf::ET_DYN ? "shared library" : "executable");
    report_.size_before = data_.size();
    prune_bundles();
    find_pointers();
    lay_out();
    emit(sink);
    return std::move(report_);
  }

 private:
  // --- reading --------------------------------------------------------------

  void read_headers() {
    if (object::elf_class_of(data_) != object::ElfClass::Elf64LE)
      fail_at({file_, elf::EI_CLASS}, "only 64-bit little-endian shared libraries and executables are pruned");
    elf_ = object::ElfFile<E>::parse(data_, file_);
    const Ehdr& eh = elf_.ehdr;
    machine_ = machine_of(eh.e_machine).value_or(Machine{0});
    if (machine_.relative == 0)
      fail_at({file_, offsetof(Ehdr, e_machine)}, "machine 0x{:x} is not pruned (x86_64 and AArch64 are)",
              static_cast<unsigned>(eh.e_machine));
    if (eh.e_type != elf::ET_DYN && eh.e_type != elf::ET_EXEC)
      fail_at({file_, offsetof(Ehdr, e_type)}, "ELF type {} is not a shared library or an executable",
              static_cast<unsigned>(eh.e_type));
    if (elf_.shdrs.empty()) fail_at({file_, offsetof(Ehdr, e_shoff)}, "the file has no section headers to find .hip_fatbin by");
    if (eh.e_phentsize != sizeof(Phdr))
      fail_at({file_, offsetof(Ehdr, e_phentsize)}, "e_phentsize is 0x{:x}, expected 0x{:x}",
              static_cast<unsigned>(eh.e_phentsize), sizeof(Phdr));
    if (eh.e_phnum == PN_XNUM) fail_at({file_, offsetof(Ehdr, e_phnum)}, "extended program header numbering is not supported");
    for (std::uint64_t i = 0; i < eh.e_phnum; ++i)
      phdrs_.push_back(r_.read<Phdr>(eh.e_phoff + i * sizeof(Phdr), "program header"));

    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const std::string& n = elf_.names[i];
      if (n == ".hip_fatbin") fatbin_ = i;
      if (n == ".hipFatBinSegment") wrappers_ = i;
      if (n == ".llvm.offloading" || n.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
        fail_at({file_, elf_.header_offset(i)}, "section {} of a linked file is not pruned yet (only .hip_fatbin is)",
                n);
    }
    if (!fatbin_) fail_at({file_, 0}, "no .hip_fatbin section: nothing to prune");
    const Shdr& fb = elf_.shdrs[*fatbin_];
    if (fb.sh_type != elf::SHT_PROGBITS || !(fb.sh_flags & elf::SHF_ALLOC))
      fail_at({file_, elf_.header_offset(*fatbin_)}, ".hip_fatbin is not an allocated PROGBITS section");
    fb_off_ = fb.sh_offset;
    fb_size_ = fb.sh_size;
    fb_addr_ = fb.sh_addr;
    for (std::size_t i = 0; i < phdrs_.size(); ++i) {
      const Phdr& p = phdrs_[i];
      if (p.p_type == elf::PT_LOAD && p.p_offset <= fb_off_ && fb_off_ + fb_size_ <= p.p_offset + p.p_filesz &&
          p.p_vaddr + (fb_off_ - p.p_offset) == fb_addr_)
        segment_ = i;
    }
    if (!segment_)
      fail_at({file_, elf_.header_offset(*fatbin_)}, ".hip_fatbin (0x{:x} bytes at 0x{:x}) lies in no loadable segment",
              fb_size_, fb_off_);
  }

  // --- the bundles ----------------------------------------------------------

  void prune_bundles() {
    Bytes blob = data_.subspan(fb_off_, fb_size_);
    ByteSource source(blob, [this](std::uint64_t off, std::byte* to, std::uint64_t len) {
      in_.read_at(fb_off_ + off, to, len);
    });
    std::vector<formats::BundleSpan> spans =
        rebase_errors(fb_off_, [&] { return formats::split_bundles(source, file_); });
    if (spans.empty()) fail_at({file_, fb_off_}, ".hip_fatbin does not start with an offload bundle");
    const Shdr& fb = elf_.shdrs[*fatbin_];
    std::uint64_t cursor = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const formats::BundleSpan& sp = spans[i];
      Bundle b{sp.offset, sp.size, 0, 0, {}};
      std::string where = fmt::format("section .hip_fatbin, bundle {} at 0x{:x}", i + 1, fb_off_ + sp.offset);
      Report r = rebase_errors(fb_off_ + sp.offset, [&] {
        return prune_container(blob.subspan(sp.offset, sp.size), selection_, file_, [&](Bytes piece) {
          if (piece.empty()) return;
          if (piece.data() >= data_.data() && piece.data() + piece.size() <= data_.data() + data_.size()) {
            b.pieces.push_back(piece);
          } else {
            owned_.emplace_back(piece.begin(), piece.end());
            b.pieces.push_back(owned_.back());
          }
        });
      });
      for (EntryReport& e : r.entries) {
        e.where = where;
        report_.entries.push_back(std::move(e));
      }
      // Each bundle keeps the alignment it had: the largest power of two up to
      // the section's alignment that divides its address.
      std::uint64_t align = std::max<std::uint64_t>(fb.sh_addralign, 1);
      while (align > 1 && (fb_addr_ + sp.offset) % align != 0) align /= 2;
      b.new_offset = align_up(cursor, align);
      b.new_size = r.size_after;
      cursor = b.new_offset + b.new_size;
      bundles_.push_back(std::move(b));
    }
    new_fb_size_ = cursor;
  }

  // The new address of `addr` if it is a bundle's start (or the section's end).
  std::optional<std::uint64_t> moved(std::uint64_t addr) const {
    if (addr == fb_addr_ + fb_size_) return fb_addr_ + new_fb_size_;
    for (const Bundle& b : bundles_)
      if (fb_addr_ + b.offset == addr) return fb_addr_ + b.new_offset;
    return std::nullopt;
  }
  bool in_fatbin(std::uint64_t addr) const { return addr >= fb_addr_ && addr <= fb_addr_ + fb_size_; }

  // The file offset of `size` bytes at address `addr`, when a loadable segment has them in the file.
  std::optional<std::uint64_t> file_offset(std::uint64_t addr, std::uint64_t size) const {
    for (const Phdr& p : phdrs_)
      if (p.p_type == elf::PT_LOAD && addr >= p.p_vaddr && addr - p.p_vaddr + size <= p.p_filesz)
        return p.p_offset + (addr - p.p_vaddr);
    return std::nullopt;
  }

  // --- what points into .hip_fatbin ------------------------------------------

  void find_pointers() {
    check_dynamic();
    // The wrapper records, and which of their slots hold a bundle's address.
    std::set<std::uint64_t> slots;
    if (wrappers_) {
      const Shdr& w = elf_.shdrs[*wrappers_];
      if (w.sh_type == elf::SHT_NOBITS || w.sh_size % kHipWrapperSize != 0)
        fail_at({file_, elf_.header_offset(*wrappers_)}, ".hipFatBinSegment (0x{:x} bytes) is not an array of "
                "__hip_fatbin_wrapper records of 0x{:x} bytes", static_cast<std::uint64_t>(w.sh_size), kHipWrapperSize);
      for (std::uint64_t at = 0; at < w.sh_size; at += kHipWrapperSize) {
        std::uint32_t magic = load_le<std::uint32_t>(r_.slice(w.sh_offset + at, 4, "__hip_fatbin_wrapper").data());
        if (magic != kHipWrapperMagic)
          fail_at({file_, w.sh_offset + at}, "a .hipFatBinSegment record has magic 0x{:x}, not 0x{:x}", magic,
                  kHipWrapperMagic);
        slots.insert(w.sh_addr + at + kHipWrapperBinary);
      }
    }
    std::set<std::uint64_t> relocated;  // slots a dynamic relocation or RELR writes
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      const std::uint32_t t = s.sh_type;
      const bool alloc = s.sh_flags & elf::SHF_ALLOC;
      if (t == elf::SHT_RELA && alloc) {
        read_rela(i, slots, relocated);
      } else if (t == elf::SHT_RELR && alloc) {
        read_relr(i, slots, relocated);
      } else if (t == elf::SHT_RELA || t == elf::SHT_REL || t == elf::SHT_RELR || t == elf::SHT_CREL ||
                 t == elf::SHT_ANDROID_REL || t == elf::SHT_ANDROID_RELA) {
        fail_at({file_, elf_.header_offset(i)}, "relocation section {} is not pruned ({})", elf_.names[i],
                alloc ? "a packed or REL format" : "static relocations kept by --emit-relocs");
      } else if (t == elf::SHT_SYMTAB || t == elf::SHT_DYNSYM) {
        move_symbols(i);
      }
    }
    // A slot no relocation writes holds its address in place (an executable's
    // absolute value).
    for (std::uint64_t slot : slots) {
      if (relocated.contains(slot)) continue;
      std::uint64_t off = slot_offset(slot);
      move_in_place(off, slot);
    }
  }

  std::uint64_t slot_offset(std::uint64_t slot) const {
    std::optional<std::uint64_t> off = file_offset(slot, 8);
    if (!off) fail_at({file_, elf_.header_offset(*wrappers_)}, "the __hip_fatbin_wrapper slot at 0x{:x} is not in the file", slot);
    return *off;
  }

  // The address stored at file offset `off` (slot address `addr`) moves with its bundle.
  void move_in_place(std::uint64_t off, std::uint64_t addr) {
    std::uint64_t value = load_le<std::uint64_t>(r_.slice(off, 8, "pointer").data());
    if (!in_fatbin(value))
      fail_at({file_, off}, "the pointer at 0x{:x} holds 0x{:x}, not an address in .hip_fatbin", addr, value);
    std::optional<std::uint64_t> to = moved(value);
    if (!to) fail_at({file_, off}, "the pointer at 0x{:x} points into the middle of a bundle (0x{:x})", addr, value);
    if (*to != value) patches_.put<E::U64>(off, *to);
  }

  void read_rela(std::size_t index, const std::set<std::uint64_t>& slots, std::set<std::uint64_t>& relocated) {
    const Shdr& s = elf_.shdrs[index];
    if (s.sh_entsize != sizeof(Rela) || s.sh_size % sizeof(Rela) != 0)
      fail_at({file_, elf_.header_offset(index)}, "{} has entries of 0x{:x} bytes, expected 0x{:x}", elf_.names[index],
              static_cast<std::uint64_t>(s.sh_entsize), sizeof(Rela));
    for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += sizeof(Rela)) {
      Rela rel = r_.read<Rela>(at, "relocation");
      const std::uint64_t info = rel.r_info, where = rel.r_offset;
      const std::uint32_t type = static_cast<std::uint32_t>(info & 0xffffffffu), sym = static_cast<std::uint32_t>(info >> 32);
      if (slots.contains(where)) {
        if (type != machine_.relative || sym != 0)
          fail_at({file_, at}, "the __hip_fatbin_wrapper slot at 0x{:x} is written by a relocation of type {}, "
                  "not a relative one", where, type);
        relocated.insert(where);
      }
      if (type != machine_.relative || sym != 0) continue;
      const std::uint64_t value = static_cast<std::uint64_t>(static_cast<std::int64_t>(rel.r_addend));
      if (!in_fatbin(value)) continue;
      if (!slots.contains(where))
        fail_at({file_, at}, "a relative relocation at 0x{:x} points into .hip_fatbin (0x{:x}) from outside the "
                "__hip_fatbin_wrapper records: an unknown reference, not pruned", where, value);
      std::optional<std::uint64_t> to = moved(value);
      if (!to) fail_at({file_, at}, "the relocation at 0x{:x} points into the middle of a bundle (0x{:x})", where, value);
      if (*to != value) {
        rel.r_addend = static_cast<std::int64_t>(*to);
        patches_.put(at, rel);
      }
      // Some linkers write the addend in place as well.
      std::uint64_t off = slot_offset(where);
      if (load_le<std::uint64_t>(r_.slice(off, 8, "pointer").data()) == value && *to != value)
        patches_.put<E::U64>(off, *to);
    }
  }

  void read_relr(std::size_t index, const std::set<std::uint64_t>& slots, std::set<std::uint64_t>& relocated) {
    const Shdr& s = elf_.shdrs[index];
    if (s.sh_size % 8 != 0)
      fail_at({file_, elf_.header_offset(index)}, "{} is 0x{:x} bytes, not a whole number of entries", elf_.names[index],
              static_cast<std::uint64_t>(s.sh_size));
    std::uint64_t base = 0;
    auto relocate = [&](std::uint64_t addr, std::uint64_t at) {
      std::optional<std::uint64_t> off = file_offset(addr, 8);
      if (!off) fail_at({file_, at}, "a RELR relocation writes 0x{:x}, which is not in the file", addr);
      std::uint64_t value = load_le<std::uint64_t>(r_.slice(*off, 8, "pointer").data());
      if (slots.contains(addr)) {
        relocated.insert(addr);
        move_in_place(*off, addr);
      } else if (in_fatbin(value)) {
        fail_at({file_, at}, "a RELR relocation at 0x{:x} points into .hip_fatbin (0x{:x}) from outside the "
                "__hip_fatbin_wrapper records: an unknown reference, not pruned", addr, value);
      }
    };
    for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += 8) {
      std::uint64_t entry = r_.u64le(at, "RELR entry");
      if ((entry & 1) == 0) {
        relocate(entry, at);
        base = entry + 8;
      } else {
        for (unsigned bit = 1; bit < 64; ++bit)
          if ((entry >> bit) & 1) relocate(base + (bit - 1) * 8, at);
        base += 63 * 8;
      }
    }
  }

  void move_symbols(std::size_t index) {
    const Shdr& s = elf_.shdrs[index];
    if (s.sh_entsize != sizeof(Sym) || s.sh_size % sizeof(Sym) != 0)
      fail_at({file_, elf_.header_offset(index)}, "{} has entries of 0x{:x} bytes, expected 0x{:x}", elf_.names[index],
              static_cast<std::uint64_t>(s.sh_entsize), sizeof(Sym));
    for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += sizeof(Sym)) {
      Sym sym = r_.read<Sym>(at, "symbol");
      const std::uint64_t value = sym.st_value;
      if (sym.st_shndx != *fatbin_ && !(sym.st_shndx == elf::SHN_ABS && in_fatbin(value))) continue;
      if (elf::st_type(sym.st_info) == elf::STT_SECTION) continue;  // the section's start does not move
      std::optional<std::uint64_t> to = moved(value);
      if (!to)
        fail_at({file_, at}, "symbol {} of {} points into the middle of a bundle of .hip_fatbin (0x{:x})",
                (at - s.sh_offset) / sizeof(Sym), elf_.names[index], value);
      Sym out = sym;
      out.st_value = *to;
      if (sym.st_size != 0 && value != fb_addr_ + fb_size_) {
        const Bundle& b = *std::ranges::find_if(bundles_, [&](const Bundle& x) { return fb_addr_ + x.offset == value; });
        if (sym.st_size != b.size)
          fail_at({file_, at}, "symbol {} of {} covers 0x{:x} bytes of a bundle of 0x{:x}",
                  (at - s.sh_offset) / sizeof(Sym), elf_.names[index], static_cast<std::uint64_t>(sym.st_size), b.size);
        out.st_size = b.new_size;
      }
      if (out.st_value != sym.st_value || out.st_size != sym.st_size) patches_.put(at, out);
    }
  }

  // Text relocations would write into the code this leaves alone; refuse them.
  void check_dynamic() {
    for (const Phdr& p : phdrs_) {
      if (p.p_type != elf::PT_DYNAMIC) continue;
      for (std::uint64_t at = p.p_offset; at + 16 <= p.p_offset + p.p_filesz; at += 16) {
        std::int64_t tag = static_cast<std::int64_t>(r_.u64le(at, "dynamic entry"));
        std::uint64_t val = r_.u64le(at + 8, "dynamic entry");
        if (tag == DT_NULL) break;
        if (tag == DT_TEXTREL || (tag == DT_FLAGS && (val & DF_TEXTREL)))
          fail_at({file_, at}, "the file has text relocations (DT_TEXTREL): not pruned");
      }
    }
  }

  // --- the new layout -------------------------------------------------------

  void lay_out() {
    const Phdr seg = phdrs_[*segment_];
    const std::uint64_t fb_end = fb_off_ + fb_size_;
    new_fb_end_ = fb_off_ + new_fb_size_;
    // What must be kept after the section: the first section, segment or table
    // starting at or after its end.
    keep_from_ = data_.size();
    for (std::size_t i = 1; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      if (i == *fatbin_) continue;
      if (s.sh_offset >= fb_end) {
        if (s.sh_type != elf::SHT_NOBITS) keep_from_ = std::min<std::uint64_t>(keep_from_, s.sh_offset);
      } else if (s.sh_type != elf::SHT_NOBITS && s.sh_size > 0 && s.sh_offset + s.sh_size > fb_off_) {
        fail_at({file_, elf_.header_offset(i)}, "section {} overlaps .hip_fatbin", elf_.names[i]);
      }
    }
    if (elf_.ehdr.e_shoff >= fb_end) keep_from_ = std::min<std::uint64_t>(keep_from_, elf_.ehdr.e_shoff);
    std::uint64_t unit = 4096;  // the moves keep every alignment: pages, segments, sections
    for (std::size_t i = 0; i < phdrs_.size(); ++i) {
      const Phdr& p = phdrs_[i];
      if (p.p_type == elf::PT_LOAD) unit = std::max<std::uint64_t>(unit, p.p_align);
      if (i == *segment_ || p.p_filesz == 0) continue;
      const std::uint64_t end = p.p_offset + p.p_filesz;
      if (p.p_offset >= fb_end) {
        keep_from_ = std::min<std::uint64_t>(keep_from_, p.p_offset);
        unit = std::max<std::uint64_t>(unit, p.p_align);
      } else if (end > fb_off_ && !(p.p_offset <= fb_off_ && end <= fb_off_)) {
        fail_at({file_, elf_.ehdr.e_phoff + i * sizeof(Phdr)}, "program header {} overlaps .hip_fatbin", i);
      }
    }
    for (std::size_t i = 1; i < elf_.shdrs.size(); ++i)
      if (elf_.shdrs[i].sh_offset >= keep_from_) unit = std::max<std::uint64_t>(unit, elf_.shdrs[i].sh_addralign);
    if (unit & (unit - 1)) fail_at({file_, elf_.ehdr.e_phoff}, "an alignment of 0x{:x} is not a power of two", unit);

    const std::uint64_t seg_end = seg.p_offset + seg.p_filesz;
    split_ = keep_from_ < seg_end;
    std::uint64_t used_end = new_fb_end_;
    if (split_) {
      // The kernel of old finds the program headers at the first segment's
      // (vaddr - offset) plus e_phoff: only safe where the split segment has that same difference.
      const Phdr* first = nullptr;
      for (const Phdr& p : phdrs_)
        if (p.p_type == elf::PT_LOAD && !first) first = &p;
      if (first->p_vaddr - first->p_offset != seg.p_vaddr - seg.p_offset) {
        report_.notes.push_back("the file was not shrunk: splitting the segment of .hip_fatbin would put the program "
                                "headers where old kernels do not look for them");
        shift_ = 0;
        split_ = false;
        return;
      }
      phdr_at_ = align_up(new_fb_end_, 8);
      used_end = phdr_at_ + (phdrs_.size() + 1) * sizeof(Phdr);
    }
    shift_ = keep_from_ > used_end ? align_down(keep_from_ - used_end, unit) : 0;
    if (shift_ == 0) {
      split_ = false;
      report_.notes.push_back(fmt::format("the file was not shrunk: the bundles freed less than a whole page of 0x{:x} "
                                          "bytes; the rest of .hip_fatbin is zeros", unit));
    }
  }

  std::uint64_t new_offset(std::uint64_t off) const {
    if (off >= keep_from_) return off - shift_;
    if (off >= fb_off_ + fb_size_ && shift_ > 0) return std::max(used_end(), off - shift_);
    return off;
  }
  std::uint64_t used_end() const {
    return split_ ? phdr_at_ + (phdrs_.size() + 1) * sizeof(Phdr) : new_fb_end_;
  }

  std::vector<Phdr> new_phdrs() const {
    std::vector<Phdr> out;
    const std::uint64_t end = used_end();
    for (std::size_t i = 0; i < phdrs_.size(); ++i) {
      Phdr p = phdrs_[i];
      if (i == *segment_ && shift_ > 0) {
        const Phdr old = phdrs_[i];
        const bool whole = old.p_memsz == old.p_filesz;
        p.p_filesz = end - old.p_offset;
        if (whole || split_) p.p_memsz = p.p_filesz;
        out.push_back(p);
        if (split_) {
          const std::uint64_t skip = keep_from_ - old.p_offset;  // bytes of the segment before the second part
          Phdr b = old;
          b.p_offset = keep_from_ - shift_;
          b.p_vaddr = old.p_vaddr + skip;
          b.p_paddr = old.p_paddr + skip;
          b.p_filesz = old.p_filesz - skip;
          b.p_memsz = old.p_memsz - skip;
          out.push_back(b);
        }
        continue;
      }
      if (p.p_type == elf::PT_PHDR && split_) {
        const Phdr& s = phdrs_[*segment_];
        p.p_offset = phdr_at_;
        p.p_vaddr = s.p_vaddr + (phdr_at_ - s.p_offset);
        p.p_paddr = s.p_paddr + (phdr_at_ - s.p_offset);
        p.p_filesz = p.p_memsz = (phdrs_.size() + 1) * sizeof(Phdr);
      } else {
        p.p_offset = new_offset(p.p_offset);
      }
      out.push_back(p);
    }
    return out;
  }

  // --- writing --------------------------------------------------------------

  void emit(const compress::Sink& sink) {
    Ehdr eh = elf_.ehdr;
    std::vector<Phdr> phdrs = new_phdrs();
    if (split_) {
      eh.e_phoff = phdr_at_;
      eh.e_phnum = static_cast<std::uint16_t>(phdrs.size());
    } else {
      std::vector<std::byte> table(phdrs.size() * sizeof(Phdr));
      std::memcpy(table.data(), phdrs.data(), table.size());
      patches_.put_bytes(elf_.ehdr.e_phoff, std::move(table));
    }
    if (elf_.ehdr.e_shoff) {
      eh.e_shoff = new_offset(elf_.ehdr.e_shoff);
      std::vector<Shdr> shdrs = elf_.shdrs;
      for (std::size_t i = 1; i < shdrs.size(); ++i) shdrs[i].sh_offset = new_offset(shdrs[i].sh_offset);
      shdrs[*fatbin_].sh_offset = fb_off_;
      shdrs[*fatbin_].sh_size = new_fb_size_;
      std::vector<std::byte> table(shdrs.size() * sizeof(Shdr));
      std::memcpy(table.data(), shdrs.data(), table.size());
      patches_.put_bytes(elf_.ehdr.e_shoff, std::move(table));
    }
    patches_.put(0, eh);
    const std::uint64_t dropped_to = shift_ > 0 ? keep_from_ : fb_off_ + fb_size_;
    if (patches_.any_in(fb_off_, dropped_to)) throw std::logic_error("a patch in the bytes that are not copied");

    std::uint64_t written = 0;
    auto out = [&](Bytes b) {
      written += b.size();
      sink(b);
    };
    patches_.emit(data_, 0, fb_off_, out);
    for (const Bundle& b : bundles_) {
      emit_zeros(fb_off_ + b.new_offset - written, out);
      for (Bytes piece : b.pieces) out(piece);
    }
    if (split_) {
      emit_zeros(phdr_at_ - written, out);
      out(Bytes(reinterpret_cast<const std::byte*>(phdrs.data()), phdrs.size() * sizeof(Phdr)));
    }
    if (shift_ > 0) {
      emit_zeros(keep_from_ - shift_ - written, out);
      patches_.emit(data_, keep_from_, data_.size(), out);
    } else {
      emit_zeros(fb_off_ + fb_size_ - written, out);
      patches_.emit(data_, fb_off_ + fb_size_, data_.size(), out);
    }
    report_.size_after = written;
  }

  const InputFile& in_;
  Bytes data_;
  const Selection& selection_;
  const std::string& file_;
  ByteReader r_;
  object::ElfFile<E> elf_;
  Machine machine_{};
  std::vector<Phdr> phdrs_;
  std::optional<std::size_t> fatbin_, wrappers_, segment_;
  std::uint64_t fb_off_ = 0, fb_size_ = 0, fb_addr_ = 0, new_fb_size_ = 0, new_fb_end_ = 0;
  std::vector<Bundle> bundles_;
  std::deque<std::vector<std::byte>> owned_;
  Patches patches_;
  std::uint64_t keep_from_ = 0, shift_ = 0, phdr_at_ = 0;
  bool split_ = false;
  Report report_;
};

}  // namespace

Report prune_linked_elf(const InputFile& in, const Selection& selection, const std::string& file,
                        const compress::Sink& sink) {
  LinkedPruner p(in, selection, file);
  Report r = p.run(sink);
  return r;
}

}  // namespace ot::prune
