// Pruning linked ELF files, shared libraries and executables (PIE or not).
//
// The device code section is pruned item by item and the items are packed at
// the section's start, each at its old alignment:
//   HIP      .hip_fatbin        bundles (prune_container each), registered by
//                               the __hip_fatbin_wrapper records of .hipFatBinSegment
//   CUDA     .nv_fatbin and     NVIDIA fatbins (prune_container each: an empty fatbin
//            __nv_relfatbin     where none stays), registered by the __fatBinC_Wrapper_t
//                               records of .nvFatBinSegment (v1 and v2: the data pointer
//                               moves; v2's list of prelinked fatbins lies in .bss); a
//                               fatbin no record points at keeps its start address
//   OpenMP   .llvm.offloading   offload binaries, kept or dropped whole, registered
//                               by the __tgt_device_image records {ImageStart,
//                               ImageEnd, EntriesBegin, EntriesEnd} that the
//                               descriptor {NumDeviceImages, DeviceImages, ...}
//                               points to; the kept images' records move to the
//                               front of the array and NumDeviceImages shrinks
// A pointer lives in an R_*_RELATIVE addend, a RELR slot's value or, in an
// executable without relocations, as an absolute value in place; each moves
// with its item. Symbols at an item's start (.symtab, .dynsym) move too.
// Anything else that points into the section (a symbol or pointer into the
// middle of an item, text relocations, static relocations kept by
// --emit-relocs) is refused: we never write a file whose loader would see
// something else than the linker meant.
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
// A file holding both .nv_fatbin and __nv_relfatbin (libcufft) has the larger
// one packed and the file shrunk after it; the other is packed in place, its
// freed bytes zeros (the note says so), with the same pointer moves.
//
// Only ELF64 little-endian x86_64 and AArch64 files are pruned.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "formats/bundle_sequence.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "formats/offload_binary.h"
#include "object/object_file.h"
#include "prune/kinds.h"
#include "prune/packing.h"
#include "prune/split.h"
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

struct Machine {
  std::uint32_t relative;  // R_X86_64_RELATIVE, R_AARCH64_RELATIVE
};

std::optional<Machine> machine_of(std::uint16_t m) {
  if (m == elf::EM_X86_64) return Machine{8};
  if (m == elf::EM_AARCH64) return Machine{1027};
  return std::nullopt;
}

enum class Kind { Hip, OpenMp, Cuda };

// A device code section pruned in place (the smaller of .nv_fatbin and
// __nv_relfatbin where a file has both): its items packed at its start, zeros
// after them, its size and address as they were.
struct InPlace {
  std::size_t index = 0;
  std::uint64_t off = 0, size = 0, addr = 0;
  std::vector<Item> items;
};

// The records that register device code with the runtime: 24 bytes, a magic,
// then (at +8) the pointer to the item.
struct WrapperKind {
  const char* section;    // ".hipFatBinSegment"
  const char* record;     // "__hip_fatbin_wrapper"
  std::uint32_t magic;
};
constexpr WrapperKind kHipWrappers{".hipFatBinSegment", "__hip_fatbin_wrapper", kHipWrapperMagic};
constexpr WrapperKind kCudaWrappers{".nvFatBinSegment", "__fatBinC_Wrapper_t", formats::kFatbinWrapperMagic};

// struct __tgt_device_image { void *ImageStart, *ImageEnd; __tgt_offload_entry *EntriesBegin, *EntriesEnd; }
constexpr std::uint64_t kImageRecord = 32;

class LinkedPruner {
 public:
  LinkedPruner(const InputFile& in, const Selection& selection, const std::string& file)
      : in_(in), data_(in.bytes()), selection_(selection), file_(file), r_(data_, file), patches_(file) {}

  // kpack split (prune/split.h): the file rewritten as AMD's rocm-kpack
  // splitter rewrites it (kpack_offload_binary at e3483286), step by step so
  // that its bytes are that tool's where it does the right thing:
  //   0  `marker` appended at EOF as .rocm_kpack_ref; .shstrtab copied to EOF
  //      with the name appended; a new section header table at EOF
  //   1  the marker mapped by a new PT_LOAD at the next page above every
  //      segment (copied again to a page-aligned offset unless it already has
  //      one); the program header table rewritten in place where it fits,
  //      else moved to EOF with room for a multiple of 16 headers
  //   2  each __hip_fatbin_wrapper: magic HIPK, its index at +16, the pointer
  //      at +8 set to the marker: in the addend of its RELA relocation (made
  //      R_*_RELATIVE) with 0 in place, as AMD writes it; where it has no RELA
  //      relocation (RELR, a non-PIE executable) the value in place, which AMD
  //      zeroes (a null pointer, or the load base under RELR: its defect)
  //   3  .hip_fatbin's whole pages cut out of the file (one fewer where its
  //      end is page-aligned): the section NOBITS, its segment split into
  //      up to four PT_LOADs, everything after the cut moved down by it
  // Streamed: the input's ranges around the cut go to the sink as views of
  // it, then the few KiB appended at EOF.
  KpackedBinary kpack(Bytes marker, std::span<const std::uint64_t> bundles, const codec::Sink& sink) {
    read_headers();
    if (kind_ != Kind::Hip) fail_at({file_, elf_.header_offset(*section_)}, "{} is not HIP device code: not split", name_);
    check_dynamic();
    read_relocations();
    const Ehdr& eh0 = elf_.ehdr;
    for (std::size_t i = 0; i < elf_.names.size(); ++i)
      if (elf_.names[i] == formats::kKpackRefSection)
        fail_at({file_, elf_.header_offset(i)}, "the file already has a {} section", formats::kKpackRefSection);
    if (eh0.e_shstrndx == 0 || eh0.e_shstrndx >= elf_.shdrs.size())
      fail_at({file_, offsetof(Ehdr, e_shstrndx)}, "no section name table to add {} to", formats::kKpackRefSection);
    KpackedBinary result;
    const std::uint64_t S = data_.size();
    kp_size_ = S;
    kp_tail_.clear();
    Ehdr eh = eh0;

    // 0: the section.
    const std::uint64_t m = marker.size();
    const std::uint64_t marker0 = S;
    kp_append(marker);
    const std::size_t x = eh0.e_shstrndx;
    std::vector<Shdr> shdrs = elf_.shdrs;
    const Shdr old_names = shdrs[x];
    Bytes names = r_.slice(old_names.sh_offset, old_names.sh_size, "section name table");
    const std::uint64_t names_at = S + kp_tail_.size();
    kp_append(names);
    std::string added(formats::kKpackRefSection);
    added.push_back('\0');
    kp_append(Bytes(reinterpret_cast<const std::byte*>(added.data()), added.size()));
    shdrs[x].sh_offset = names_at;
    shdrs[x].sh_size = old_names.sh_size + added.size();
    Shdr ref{};
    ref.sh_name = static_cast<std::uint32_t>(old_names.sh_size);
    ref.sh_type = elf::SHT_PROGBITS;
    ref.sh_offset = marker0;
    ref.sh_size = m;
    ref.sh_addralign = 1;
    shdrs.push_back(ref);
    const std::size_t ref_index = shdrs.size() - 1;
    const std::uint64_t sht_at = S + kp_tail_.size();
    kp_tail_.resize(kp_tail_.size() + shdrs.size() * sizeof(Shdr));  // written last, with the final values
    eh.e_shoff = sht_at;
    eh.e_shnum = static_cast<std::uint16_t>(shdrs.size());
    if (shdrs.size() >= elf::SHN_LORESERVE)
      fail_at({file_, offsetof(Ehdr, e_shnum)}, "too many sections to add {}", formats::kKpackRefSection);

    // 1: its segment.
    std::vector<Phdr> phdrs = phdrs_;
    const std::uint64_t V = align_up(max_load_end(phdrs), kKpackPage);
    std::uint64_t marker_at = marker0;
    if (marker0 % kKpackPage != V % kKpackPage) {
      marker_at = page_align_offset(S + kp_tail_.size(), V);
      kp_tail_.resize(marker_at - S);
      kp_append(marker);
    }
    Phdr load{};
    load.p_type = elf::PT_LOAD;
    load.p_flags = elf::PF_R;
    load.p_offset = marker_at;
    load.p_vaddr = load.p_paddr = V;
    load.p_filesz = load.p_memsz = m;
    load.p_align = kKpackPage;
    // AMD's manager sees the sections as they are before the marker's header is updated.
    const std::vector<Phdr> seen_loads = phdrs;
    phdrs.push_back(load);
    place_phdrs(phdrs, eh, shdrs, seen_loads, S + kp_tail_.size(), 0, 0);
    shdrs[ref_index].sh_flags = shdrs[ref_index].sh_flags | elf::SHF_ALLOC;
    shdrs[ref_index].sh_addr = V;
    shdrs[ref_index].sh_offset = marker_at;
    result.marker_addr = V;

    // 2: the records.
    std::optional<std::size_t> segment_section;
    for (std::size_t i : wrapper_sections_)
      if (elf_.names[i] == kHipWrappers.section) segment_section = i;
    if (!segment_section) fail_at({file_, 0}, "no .hipFatBinSegment: no record registers the device code");
    const Shdr& w = elf_.shdrs[*segment_section];
    if (w.sh_type == elf::SHT_NOBITS || w.sh_size % kHipWrapperSize != 0 || w.sh_size == 0)
      fail_at({file_, elf_.header_offset(*segment_section)}, ".hipFatBinSegment (0x{:x} bytes) is not an array of "
              "__hip_fatbin_wrapper records of 0x{:x} bytes", static_cast<std::uint64_t>(w.sh_size), kHipWrapperSize);
    // r_offset -> (file offset, section): the first SHT_RELA entry (AMD's search), of any type.
    std::map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> rela_any;
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      if (s.sh_type != elf::SHT_RELA) continue;
      table(i, sizeof(Rela));
      for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += sizeof(Rela))
        rela_any.try_emplace(r_.read<Rela>(at, "relocation").r_offset, at, i);
    }
    // The value a record's pointer gets at run time: a relative relocation's
    // addend, a symbolic one's symbol plus addend (-fgpu-rdc: R_X86_64_64
    // against the exported __hip_fatbin_<id>), else the bytes in place.
    auto record_value = [&](std::uint64_t slot, const Where& why) -> std::uint64_t {
      auto it = rela_any.find(slot);
      if (it == rela_any.end()) return pointer(slot, why);
      const Rela rel = r_.read<Rela>(it->second.first, "relocation");
      const std::uint64_t info = rel.r_info;
      const std::uint64_t addend = static_cast<std::uint64_t>(static_cast<std::int64_t>(rel.r_addend));
      if ((info & 0xffffffffu) == machine_.relative) return addend;
      const std::uint32_t abs64 = elf_.ehdr.e_machine == elf::EM_X86_64 ? 1 : 257;  // R_X86_64_64, R_AARCH64_ABS64
      if ((info & 0xffffffffu) != abs64)
        fail_at({file_, it->second.first}, "the relocation of a record's pointer has type {}, not a pointer's",
                info & 0xffffffffu);
      const std::size_t link = elf_.shdrs[it->second.second].sh_link;
      if (link == 0 || link >= elf_.shdrs.size())
        fail_at({file_, elf_.header_offset(it->second.second)}, "{} names no symbol table",
                elf_.names[it->second.second]);
      const Shdr& syms = table(link, sizeof(Sym));
      const std::uint64_t index = info >> 32;
      if (index >= syms.sh_size / sizeof(Sym))
        fail_at({file_, it->second.first}, "relocation names symbol {}, past the symbol table", index);
      const Sym sym = r_.read<Sym>(syms.sh_offset + index * sizeof(Sym), "symbol");
      if (sym.st_shndx == elf::SHN_UNDEF)
        fail_at({file_, it->second.first}, "a record's pointer names an undefined symbol");
      return static_cast<std::uint64_t>(sym.st_value) + addend;
    };
    const bool dyn = eh0.e_type == elf::ET_DYN;
    std::set<std::uint64_t> slots;
    for (std::uint64_t i = 0; i * kHipWrapperSize < w.sh_size; ++i) {
      const std::uint64_t addr = w.sh_addr + i * kHipWrapperSize, slot = addr + kHipWrapperBinary;
      const std::uint64_t at = offset_of(addr, kHipWrapperSize, {file_, w.sh_offset + i * kHipWrapperSize});
      std::vector<std::byte> rec(r_.slice(at, kHipWrapperSize, "__hip_fatbin_wrapper").begin(),
                                 r_.slice(at, kHipWrapperSize, "__hip_fatbin_wrapper").end());
      const std::uint32_t magic = load_le<std::uint32_t>(rec.data());
      if (magic == formats::kHipkMagic)
        fail_at({file_, at}, "record {} of .hipFatBinSegment is already HIPK: the file was split before", i);
      if (magic != kHipWrapperMagic)
        fail_at({file_, at}, "record {} of .hipFatBinSegment has magic 0x{:x}, not 0x{:x}", i, magic, kHipWrapperMagic);
      const std::uint64_t value = record_value(slot, {file_, at + kHipWrapperBinary});
      if (value < sec_addr_ || value >= sec_addr_ + sec_size_)
        fail_at({file_, at + kHipWrapperBinary}, "record {} of .hipFatBinSegment points to 0x{:x}, outside .hip_fatbin",
                i, value);
      // The bundle it registers: the archives key that bundle's code objects
      // "#<i>" (the index the record carries).
      auto bundle = std::ranges::find(bundles, value - sec_addr_);
      if (bundle == bundles.end())
        fail_at({file_, at + kHipWrapperBinary}, "record {} of .hipFatBinSegment points into the middle of a bundle "
                "(0x{:x})", i, value);
      result.record_bundles.push_back(static_cast<std::uint64_t>(bundle - bundles.begin()));
      std::uint64_t in_place = 0;
      if (auto it = rela_any.find(slot); it != rela_any.end() && dyn) {
        Rela rel = r_.read<Rela>(it->second.first, "relocation");
        rel.r_info = machine_.relative;  // symbol 0
        rel.r_addend = static_cast<std::int64_t>(V);
        patches_.put(it->second.first, rel);
      } else if (relr_.contains(slot) || !dyn) {
        in_place = V;  // RELR adds the load base to it; a non-PIE executable uses it as it is
        if (relr_.contains(slot)) result.notes.push_back(fmt::format(
            "record {}'s pointer is relocated by DT_RELR: the marker's address is written in place, where AMD's "
            "splitter writes 0 (the load base at run time)", i));
        else result.notes.push_back(fmt::format(
            "record {}'s pointer is absolute (a non-PIE executable): the marker's address is written in place, where "
            "AMD's splitter writes 0 (a null pointer)", i));
      } else {
        fail_at({file_, at + kHipWrapperBinary}, "record {} of .hipFatBinSegment has no relocation for its pointer", i);
      }
      store_le<std::uint32_t>(rec.data(), formats::kHipkMagic);
      store_le<std::uint64_t>(rec.data() + kHipWrapperBinary, in_place);
      store_le<std::uint32_t>(rec.data() + formats::kHipWrapperIndex, static_cast<std::uint32_t>(i));
      patches_.put_bytes(at, std::move(rec));
      slots.insert(slot);
      ++result.records;
    }
    // 2b: nothing else may point into the device code that goes.
    for (const auto& [addr, at] : rela_)
      if (!slots.contains(addr)) {
        const std::uint64_t v = pointer(addr, {file_, at});
        if (v >= sec_addr_ && v < sec_addr_ + sec_size_)
          fail_at({file_, at}, "a relocation at 0x{:x} points into .hip_fatbin (0x{:x}) from outside its records: not split",
                  addr, v);
      }
    for (std::uint64_t addr : relr_)
      if (!slots.contains(addr)) {
        const std::uint64_t v = pointer(addr, {file_, std::nullopt});
        if (v >= sec_addr_ && v < sec_addr_ + sec_size_)
          fail_at({file_, file_offset(addr, 8)}, "the pointer at 0x{:x} points into .hip_fatbin (0x{:x}) from outside its "
                  "records: not split", addr, v);
      }

    // 3: the pages cut.
    const std::uint64_t a = sec_addr_, z = sec_size_, o = sec_off_;
    std::uint64_t cut_at = 0, cut = 0;
    {
      const std::uint64_t start = align_up(a, kKpackPage), end = align_down(a + z, kKpackPage);
      if (start < end) {
        cut = end - start;
        if ((a + z) % kKpackPage == 0) cut -= kKpackPage;
        cut_at = o + (start - a);
      }
    }
    if (cut > 0) {
      const std::uint64_t start = align_up(a, kKpackPage);
      std::optional<std::size_t> target;
      for (std::size_t i = 0; i < phdrs.size() && !target; ++i)
        if (phdrs[i].p_vaddr <= a && a < phdrs[i].p_vaddr + phdrs[i].p_memsz) target = i;
      if (!target || phdrs[*target].p_type != elf::PT_LOAD)
        fail_at({file_, elf_.header_offset(*section_)}, ".hip_fatbin lies in no loadable segment");
      const Phdr t = phdrs[*target];
      std::vector<Phdr> pieces;
      auto piece = [&](std::uint64_t vaddr, std::uint64_t memsz, std::uint64_t offset, std::uint64_t filesz) {
        Phdr p = t;
        p.p_offset = offset;
        p.p_vaddr = p.p_paddr = vaddr;
        p.p_filesz = filesz;
        p.p_memsz = memsz;
        pieces.push_back(p);
      };
      if (t.p_vaddr < a) piece(t.p_vaddr, a - t.p_vaddr, t.p_offset, std::min<std::uint64_t>(a - t.p_vaddr, t.p_filesz));
      if (a < start) piece(a, start - a, o, start - a);
      piece(start, a + z - start, cut_at, 0);
      if (a + z < t.p_vaddr + t.p_memsz && t.p_offset + t.p_filesz > o + z)
        piece(a + z, t.p_vaddr + t.p_memsz - (a + z), o + z - cut, t.p_offset + t.p_filesz - (o + z));
      std::vector<Phdr> next;
      for (std::size_t i = 0; i < phdrs.size(); ++i) {
        if (i == *target) {
          next.insert(next.end(), pieces.begin(), pieces.end());
          continue;
        }
        Phdr p = phdrs[i];
        if (p.p_offset > cut_at) p.p_offset = p.p_offset - cut;
        next.push_back(p);
      }
      if (eh.e_phoff > cut_at) eh.e_phoff = eh.e_phoff - cut;
      if (eh.e_shoff > cut_at) eh.e_shoff = eh.e_shoff - cut;
      phdrs = std::move(next);
      // AMD's manager: the section headers not moved yet, the file already cut.
      place_phdrs(phdrs, eh, shdrs, phdrs, S + kp_tail_.size() - cut, cut_at, cut);
      for (std::size_t i = 1; i < shdrs.size(); ++i) {
        if (i == *section_) shdrs[i].sh_type = elf::SHT_NOBITS;
        else if (shdrs[i].sh_offset > cut_at) shdrs[i].sh_offset = shdrs[i].sh_offset - cut;
      }
    } else {
      result.notes.push_back(fmt::format(".hip_fatbin holds no whole page: it stays in the file (as AMD's splitter "
                                         "leaves it), unused"));
    }
    std::memcpy(kp_tail_.data() + (sht_at - S), shdrs.data(), shdrs.size() * sizeof(Shdr));
    for (auto& [pos, b] : kp_input_writes_) patches_.put_bytes(pos, std::move(b));
    patches_.put(0, eh);

    if (cut > 0 && patches_.any_in(cut_at, cut_at + cut))
      fail_at({file_, cut_at}, "a structure to rewrite lies in the pages of .hip_fatbin that are cut: not split");
    std::uint64_t written = 0;
    auto out = [&](Bytes b) {
      written += b.size();
      sink(b);
    };
    if (cut > 0) {
      patches_.emit(data_, 0, cut_at, out);
      patches_.emit(data_, cut_at + cut, S, out);
    } else {
      patches_.emit(data_, 0, S, out);
    }
    out(kp_tail_);
    result.size_before = S;
    result.size_after = written;
    result.pages_cut = cut / kKpackPage;
    return result;
  }

  Report run(const codec::Sink& sink) {
    read_headers();
    const bool program = elf_.ehdr.e_type == elf::ET_EXEC ||
                         std::ranges::any_of(phdrs_, [](const Phdr& p) { return p.p_type == elf::PT_INTERP; });
    report_.container = fmt::format("{} (ELF, {})", program ? "executable" : "shared library", name_);
    report_.size_before = data_.size();
    check_dynamic();
    read_relocations();
    if (kind_ == Kind::Hip)
      prune_bundles();
    else if (kind_ == Kind::Cuda)
      prune_fatbins();
    else
      prune_offload_binaries();
    find_pointers();
    lay_out();
    emit(sink);
    return std::move(report_);
  }

  // join: the kpack'd file given its device code back. The new .hip_fatbin
  // goes after everything the file still uses, at a page boundary and above
  // every segment's addresses, mapped by the load segment that mapped the
  // marker (read-only, as clang's is); the marker's section header goes (the
  // last one, where the splitter appended it) or stops being allocated; each
  // record gets clang's magic, a null index and the pointer to its bundle
  // (the RELATIVE addend, a RELR slot or, without relocations, the value in
  // place). The old NOBITS range keeps its addresses, unused.
  //
  //   kpack'd  | ... | .hip_fatbin NOBITS (no bytes) | ... | shdrs | marker | phdrs |
  //   joined   | ... | (same)                          | ... | shdrs | (old) | phdrs |pad| .hip_fatbin |
  Report join(const JoinedFatbin& fb, const codec::Sink& sink) {
    verb_ = "joined";
    read_elf();
    std::optional<std::size_t> fatbin, marker, records;
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const std::string& n = elf_.names[i];
      std::optional<std::size_t>* slot = n == ".hip_fatbin"                   ? &fatbin
                                         : n == formats::kKpackRefSection      ? &marker
                                         : n == ".hipFatBinSegment"            ? &records
                                                                               : nullptr;
      if (!slot) continue;
      if (*slot) fail_at({file_, elf_.header_offset(i)}, "the file holds two {} sections: not joined", n);
      *slot = i;
    }
    if (!records || !marker)
      fail_at({file_, 0}, "no {} section: not a kpack'd binary", records ? formats::kKpackRefSection : ".hipFatBinSegment");
    if (!fatbin) fail_at({file_, 0}, "no .hip_fatbin section to give the device code back to");
    const bool program = elf_.ehdr.e_type == elf::ET_EXEC ||
                         std::ranges::any_of(phdrs_, [](const Phdr& p) { return p.p_type == elf::PT_INTERP; });
    report_.container = fmt::format("kpack'd {} (ELF)", program ? "executable" : "shared library");
    report_.size_before = data_.size();
    const Shdr& rec = elf_.shdrs[*records];
    if (rec.sh_type == elf::SHT_NOBITS || rec.sh_size != fb.bundle_offsets.size() * kHipWrapperSize)
      fail_at({file_, elf_.header_offset(*records)}, ".hipFatBinSegment (0x{:x} bytes) does not hold the {} records "
              "joined", static_cast<std::uint64_t>(rec.sh_size), fb.bundle_offsets.size());
    if (*marker == elf_.ehdr.e_shstrndx)
      fail_at({file_, elf_.header_offset(*marker)}, "{} is the section name table", formats::kKpackRefSection);
    check_dynamic();
    read_relocations();

    // The marker's own load segment becomes the fatbin's: one mapping only the marker lies in.
    const Shdr& mk = elf_.shdrs[*marker];
    std::optional<std::size_t> marker_load;
    if (mk.sh_flags & elf::SHF_ALLOC)
      for (std::size_t i = 0; i < phdrs_.size(); ++i) {
        const Phdr& p = phdrs_[i];
        if (p.p_type == elf::PT_LOAD && mk.sh_addr >= p.p_vaddr && mk.sh_addr < p.p_vaddr + p.p_memsz) marker_load = i;
      }
    if (!marker_load)
      fail_at({file_, elf_.header_offset(*marker)}, "{} lies in no loadable segment: not joined",
              formats::kKpackRefSection);
    const Phdr& ml = phdrs_[*marker_load];
    for (std::size_t i = 1; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      if (i != *marker && (s.sh_flags & elf::SHF_ALLOC) && s.sh_size > 0 && s.sh_addr < ml.p_vaddr + ml.p_memsz &&
          s.sh_addr + s.sh_size > ml.p_vaddr)
        fail_at({file_, elf_.ehdr.e_phoff + *marker_load * sizeof(Phdr)},
                "the segment of {} also maps section {}: not joined", formats::kKpackRefSection, elf_.names[i]);
    }
    const bool drop_marker = *marker + 1 == elf_.shdrs.size();

    // Where the fatbin goes: after every byte the file still uses (the
    // marker's bytes are left behind where its header goes), above every address.
    std::uint64_t unit = std::max<std::uint64_t>(fb.align, 4096), used = sizeof(Ehdr), top = 0;
    auto use = [&](std::uint64_t off, std::uint64_t size) { used = std::max(used, off + size); };
    for (std::size_t i = 0; i < phdrs_.size(); ++i) {
      const Phdr& p = phdrs_[i];
      if (p.p_type == elf::PT_LOAD) {
        unit = std::max<std::uint64_t>(unit, p.p_align);
        top = std::max<std::uint64_t>(top, p.p_vaddr + p.p_memsz);
      }
      if (i != *marker_load) use(p.p_offset, p.p_filesz);
    }
    if (unit & (unit - 1)) fail_at({file_, elf_.ehdr.e_phoff}, "an alignment of 0x{:x} is not a power of two", unit);
    for (std::size_t i = 1; i < elf_.shdrs.size(); ++i)
      if (elf_.shdrs[i].sh_type != elf::SHT_NOBITS && i != *fatbin && (i != *marker || !drop_marker))
        use(elf_.shdrs[i].sh_offset, elf_.shdrs[i].sh_size);
    use(elf_.ehdr.e_shoff, elf_.shdrs.size() * sizeof(Shdr));
    use(elf_.ehdr.e_phoff, phdrs_.size() * sizeof(Phdr));
    const std::uint64_t at = align_up(used, unit), addr = align_up(top, unit);

    // The records: clang's magic, the pointer to their bundle, reserved1 null.
    for (std::size_t p = 0; p < fb.bundle_offsets.size(); ++p) {
      const std::uint64_t off = rec.sh_offset + p * kHipWrapperSize, slot = rec.sh_addr + p * kHipWrapperSize;
      const std::uint32_t magic = load_le<std::uint32_t>(r_.slice(off, 4, "record").data());
      if (magic != formats::kHipkMagic)
        fail_at({file_, off}, "record {} of .hipFatBinSegment has the magic 0x{:08x}, not HIPK: not joined", p, magic);
      patches_.put<E::U32>(off, kHipWrapperMagic);
      patches_.put<E::U64>(off + formats::kHipWrapperIndex, 0);
      set_pointer(slot + kHipWrapperBinary, addr + fb.bundle_offsets[p], {file_, off + kHipWrapperBinary});
    }
    // Symbols of the old section: the n-th address the n-th bundle's (one per
    // translation unit, as clang writes them), else the same offset, bounded.
    const Shdr old = elf_.shdrs[*fatbin];
    for (std::size_t t = 0; t < elf_.shdrs.size(); ++t) {
      const std::uint32_t type = elf_.shdrs[t].sh_type;
      if (type != elf::SHT_SYMTAB && type != elf::SHT_DYNSYM) continue;
      const Shdr& s = table(t, sizeof(Sym));
      std::set<std::uint64_t> values;
      for (std::uint64_t a = s.sh_offset; a < s.sh_offset + s.sh_size; a += sizeof(Sym)) {
        const Sym sym = r_.read<Sym>(a, "symbol");
        if (sym.st_shndx == *fatbin && elf::st_type(sym.st_info) != elf::STT_SECTION) values.insert(sym.st_value);
      }
      const std::set<std::uint64_t> starts(fb.bundle_offsets.begin(), fb.bundle_offsets.end());  // records may share one
      const bool per_bundle = values.size() == starts.size();
      for (std::uint64_t a = s.sh_offset; a < s.sh_offset + s.sh_size; a += sizeof(Sym)) {
        Sym sym = r_.read<Sym>(a, "symbol");
        if (sym.st_shndx != *fatbin) continue;
        const std::uint64_t v = sym.st_value;
        const std::uint64_t rel = std::min<std::uint64_t>(v >= old.sh_addr ? v - old.sh_addr : 0, fb.size);
        sym.st_value = elf::st_type(sym.st_info) == elf::STT_SECTION ? addr
                       : per_bundle ? addr + *std::next(starts.begin(), std::distance(values.begin(), values.find(v)))
                                    : addr + rel;
        if (sym.st_value != v) patches_.put(a, sym);
      }
    }

    // The headers.
    std::vector<Phdr> phdrs;
    for (std::size_t i = 0; i < phdrs_.size(); ++i)
      if (i != *marker_load) phdrs.push_back(phdrs_[i]);
    Phdr load{};  // last: the highest addresses, as load segments are sorted
    load.p_type = elf::PT_LOAD;
    load.p_flags = elf::PF_R;
    load.p_offset = at;
    load.p_vaddr = load.p_paddr = addr;
    load.p_filesz = load.p_memsz = fb.size;
    load.p_align = unit;
    phdrs.push_back(load);
    std::vector<std::byte> pt(phdrs.size() * sizeof(Phdr));
    std::memcpy(pt.data(), phdrs.data(), pt.size());
    patches_.put_bytes(elf_.ehdr.e_phoff, std::move(pt));
    std::vector<Shdr> shdrs = elf_.shdrs;
    Shdr& f = shdrs[*fatbin];
    f.sh_type = elf::SHT_PROGBITS;
    f.sh_flags = elf::SHF_ALLOC;
    f.sh_offset = at;
    f.sh_addr = addr;
    f.sh_size = fb.size;
    f.sh_addralign = fb.align;
    Ehdr eh = elf_.ehdr;
    if (drop_marker) {
      shdrs.back() = Shdr{};  // the table keeps its size, its last entry zeros
      eh.e_shnum = static_cast<std::uint16_t>(shdrs.size() - 1);
    } else {
      shdrs[*marker].sh_flags = shdrs[*marker].sh_flags & ~static_cast<std::uint64_t>(elf::SHF_ALLOC);
      shdrs[*marker].sh_addr = 0;
    }
    std::vector<std::byte> st(shdrs.size() * sizeof(Shdr));
    std::memcpy(st.data(), shdrs.data(), st.size());
    patches_.put_bytes(elf_.ehdr.e_shoff, std::move(st));
    patches_.put(0, eh);

    std::uint64_t written = 0;
    auto out = [&](Bytes b) {
      written += b.size();
      sink(b);
    };
    patches_.emit(data_, 0, std::min<std::uint64_t>(at, data_.size()), out);
    emit_zeros(at - written, out);
    fb.emit(out);
    if (written != at + fb.size)
      fail_at({file_, at}, "the joined .hip_fatbin has 0x{:x} bytes, not the 0x{:x} laid out", written - at, fb.size);
    report_.size_after = written;
    if (!drop_marker)
      report_.notes.push_back(fmt::format("{} is not the last section: kept, no longer loaded", formats::kKpackRefSection));
    return std::move(report_);
  }

 private:
  // --- kpack split's helpers (AMD's ElfSurgery and ProgramHeaderManager) ---

  static constexpr std::uint64_t kKpackPage = 4096;  // AMD's PAGE_SIZE
  static constexpr std::uint64_t kKpackSlots = 16;   // a moved table has room for a multiple of this

  static std::uint64_t max_load_end(const std::vector<Phdr>& phdrs) {
    std::uint64_t end = 0;
    for (const Phdr& p : phdrs)
      if (p.p_type == elf::PT_LOAD) end = std::max<std::uint64_t>(end, p.p_vaddr + p.p_memsz);
    return end;
  }
  // The first offset at or after `off` congruent to `vaddr` modulo a page.
  static std::uint64_t page_align_offset(std::uint64_t off, std::uint64_t vaddr) {
    const std::uint64_t want = vaddr % kKpackPage, have = off % kKpackPage;
    if (have == want) return off;
    if (have < want) return align_down(off, kKpackPage) + want;
    return align_up(off, kKpackPage) + want;
  }
  void kp_append(Bytes b) { kp_tail_.insert(kp_tail_.end(), b.begin(), b.end()); }
  // Writes `b` at `pos` of the file as it is before the cut: the input's bytes
  // through a patch, the appended ones in the tail.
  void kp_write(std::uint64_t pos, std::vector<std::byte> b) {
    if (pos + b.size() <= kp_size_) {
      kp_input_writes_[pos] = std::move(b);  // the table in place, written once per step: the last one stays
      return;
    }
    if (pos < kp_size_) fail_at({file_, pos}, "the program header table runs past the end of the file");
    const std::uint64_t at = pos - kp_size_;
    if (kp_tail_.size() < at + b.size()) kp_tail_.resize(at + b.size());
    std::memcpy(kp_tail_.data() + at, b.data(), b.size());
  }
  // ProgramHeaderManager.apply: `phdrs` written at e_phoff where they fit
  // before the first content after it (a section of `shdrs`, a PT_LOAD of
  // `loads` with file bytes, or the end of the file at `end`), else moved to
  // the end: a PT_LOAD of their own at the next page above every segment,
  // PT_PHDR re-pointed. `end` and e_phoff are offsets after a cut of `cut`
  // bytes at `cut_at` (none: 0), the tables' offsets before it.
  void place_phdrs(std::vector<Phdr>& phdrs, Ehdr& eh, const std::vector<Shdr>& shdrs, const std::vector<Phdr>& loads,
                   std::uint64_t end, std::uint64_t cut_at, std::uint64_t cut) {
    auto before_cut = [&](std::uint64_t off) { return cut > 0 && off >= cut_at ? off + cut : off; };
    std::uint64_t min_content = end;
    const std::uint64_t phoff = eh.e_phoff;
    for (const Shdr& s : shdrs)
      if (s.sh_type != elf::SHT_NULL && s.sh_offset > phoff) min_content = std::min<std::uint64_t>(min_content, s.sh_offset);
    for (const Phdr& p : loads)
      if (p.p_type == elf::PT_LOAD && p.p_filesz > 0 && p.p_offset > phoff)
        min_content = std::min<std::uint64_t>(min_content, p.p_offset);
    auto bytes_of = [](const std::vector<Phdr>& v, std::uint64_t slots) {
      std::vector<std::byte> b(slots * sizeof(Phdr));
      std::memcpy(b.data(), v.data(), v.size() * sizeof(Phdr));
      return b;
    };
    if (min_content > phoff && phdrs.size() * sizeof(Phdr) <= min_content - phoff) {
      kp_write(before_cut(phoff), bytes_of(phdrs, phdrs.size()));
      eh.e_phnum = static_cast<std::uint16_t>(phdrs.size());
      return;
    }
    const std::uint64_t vaddr = align_up(max_load_end(phdrs), kKpackPage);
    const std::uint64_t at = page_align_offset(end, vaddr);
    const std::uint64_t capacity = align_up(phdrs.size() + 1, kKpackSlots);
    for (Phdr& p : phdrs)
      if (p.p_type == elf::PT_PHDR) {
        p.p_offset = at;
        p.p_vaddr = p.p_paddr = vaddr;
        p.p_filesz = p.p_memsz = capacity * sizeof(Phdr);
        break;
      }
    Phdr load{};
    load.p_type = elf::PT_LOAD;
    load.p_flags = elf::PF_R;
    load.p_offset = at;
    load.p_vaddr = load.p_paddr = vaddr;
    load.p_filesz = load.p_memsz = capacity * sizeof(Phdr);
    load.p_align = kKpackPage;
    phdrs.push_back(load);
    if (phdrs.size() >= PN_XNUM) fail_at({file_, offsetof(Ehdr, e_phnum)}, "too many program headers");
    kp_write(before_cut(end), std::vector<std::byte>(at - end));
    kp_write(before_cut(at), bytes_of(phdrs, capacity));
    eh.e_phoff = at;
    eh.e_phnum = static_cast<std::uint16_t>(phdrs.size());
  }

  // --- reading --------------------------------------------------------------

  // The ELF header, section and program headers, as prune and join take them.
  void read_elf() {
    if (object::elf_class_of(data_) != object::ElfClass::Elf64LE)
      fail_at({file_, elf::EI_CLASS}, "only 64-bit little-endian shared libraries and executables are {}", verb_);
    elf_ = object::ElfFile<E>::parse(data_, file_);
    const Ehdr& eh = elf_.ehdr;
    machine_ = machine_of(eh.e_machine).value_or(Machine{0});
    if (machine_.relative == 0)
      fail_at({file_, offsetof(Ehdr, e_machine)}, "machine 0x{:x} is not {} (x86_64 and AArch64 are)",
              static_cast<unsigned>(eh.e_machine), verb_);
    if (eh.e_type != elf::ET_DYN && eh.e_type != elf::ET_EXEC)
      fail_at({file_, offsetof(Ehdr, e_type)}, "ELF type {} is not a shared library or an executable",
              static_cast<unsigned>(eh.e_type));
    if (elf_.shdrs.empty())
      fail_at({file_, offsetof(Ehdr, e_shoff)}, "the file has no section headers to find its device code by");
    if (eh.e_phentsize != sizeof(Phdr))
      fail_at({file_, offsetof(Ehdr, e_phentsize)}, "e_phentsize is 0x{:x}, expected 0x{:x}",
              static_cast<unsigned>(eh.e_phentsize), sizeof(Phdr));
    if (eh.e_phnum == PN_XNUM) fail_at({file_, offsetof(Ehdr, e_phnum)}, "extended program header numbering is not supported");
    for (std::uint64_t i = 0; i < eh.e_phnum; ++i)
      phdrs_.push_back(r_.read<Phdr>(eh.e_phoff + i * sizeof(Phdr), "program header"));
  }

  void read_headers() {
    read_elf();
    std::vector<std::size_t> fatbin_sections;
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const std::string& n = elf_.names[i];
      if (n == ".hipFatBinSegment" || n == ".nvFatBinSegment") wrapper_sections_.push_back(i);
      if (n.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
        fail_at({file_, elf_.header_offset(i)}, "section {} of a linked file is not pruned", n);
      const bool cuda = formats::is_fatbin_section(n);
      if (n != ".hip_fatbin" && n != ".llvm.offloading" && !cuda) continue;
      if (section_ && n == name_)
        fail_at({file_, elf_.header_offset(i)}, "the file holds two {} sections: not pruned", n);
      if (section_ && !(cuda && kind_ == Kind::Cuda))
        fail_at({file_, elf_.header_offset(i)}, "the file holds both {} and {}: not pruned", name_, n);
      if (cuda) fatbin_sections.push_back(i);
      // Of two fatbin sections the larger is packed and shrinks the file; the other is packed in place.
      if (section_ && elf_.shdrs[i].sh_size <= elf_.shdrs[*section_].sh_size) continue;
      section_ = i;
      name_ = n;
      kind_ = n == ".hip_fatbin" ? Kind::Hip : n == ".llvm.offloading" ? Kind::OpenMp : Kind::Cuda;
    }
    if (!section_)
      fail_at({file_, 0}, "no .hip_fatbin, .llvm.offloading, .nv_fatbin or __nv_relfatbin section: nothing to prune");
    for (std::size_t i : fatbin_sections) {
      if (i == *section_) continue;
      const Shdr& s = elf_.shdrs[i];
      if (s.sh_type == elf::SHT_NOBITS || !(s.sh_flags & elf::SHF_ALLOC))
        fail_at({file_, elf_.header_offset(i)}, "{} is not an allocated section with contents", elf_.names[i]);
      in_place_.push_back({i, s.sh_offset, s.sh_size, s.sh_addr, {}});
    }
    const Shdr& sec = elf_.shdrs[*section_];
    if (sec.sh_type == elf::SHT_NOBITS || !(sec.sh_flags & elf::SHF_ALLOC))
      fail_at({file_, elf_.header_offset(*section_)}, "{} is not an allocated section with contents", name_);
    if (sec.sh_size == 0) fail_at({file_, elf_.header_offset(*section_)}, "section {} is empty: nothing to prune", name_);
    sec_off_ = sec.sh_offset;
    sec_size_ = sec.sh_size;
    sec_addr_ = sec.sh_addr;
    for (std::size_t i = 0; i < phdrs_.size(); ++i) {
      const Phdr& p = phdrs_[i];
      if (p.p_type == elf::PT_LOAD && p.p_offset <= sec_off_ && sec_off_ + sec_size_ <= p.p_offset + p.p_filesz &&
          p.p_vaddr + (sec_off_ - p.p_offset) == sec_addr_)
        segment_ = i;
    }
    if (!segment_)
      fail_at({file_, elf_.header_offset(*section_)}, "{} (0x{:x} bytes at 0x{:x}) lies in no loadable segment", name_,
              sec_size_, sec_off_);
  }

  // --- the items ------------------------------------------------------------

  // Prunes the item at [offset, offset + size) of the section into `it`, with
  // `selection`; its report entries go to the file's report.
  Report prune_item(Item& it, const Selection& selection, const std::string& where) {
    return prune_item(it, data_.subspan(sec_off_, sec_size_), sec_off_, selection, where);
  }
  // The same in the section `section` at file offset `off`.
  Report prune_item(Item& it, Bytes section, std::uint64_t off, const Selection& selection, const std::string& where) {
    Report r = prune::prune_item(in_, it, section, off, kind_ == Kind::Cuda, selection, file_, owned_);
    for (EntryReport e : r.entries) {
      e.where = where;
      report_.entries.push_back(std::move(e));
    }
    return r;
  }

  // Each item keeps the alignment it had (the largest power of two up to the
  // section's alignment that divides its address); a dropped one takes no room.
  void place_items() { new_sec_size_ = place_items(items_, *section_); }
  // The same for the items of section `index`; their end is returned. An item
  // no pointer may move (a fatbin no record points at: fixed_) keeps its offset.
  std::uint64_t place_items(std::vector<Item>& items, std::size_t index) {
    const Shdr& sec = elf_.shdrs[index];
    const std::uint64_t section_align = std::max<std::uint64_t>(sec.sh_addralign, 1);
    std::uint64_t cursor = 0;
    for (Item& it : items) {
      std::uint64_t align = section_align;
      while (align > 1 && (sec.sh_addr + it.offset) % align != 0) align /= 2;
      it.new_offset = it.new_size ? align_up(cursor, align) : cursor;
      if (fixed_.contains(sec.sh_addr + it.offset)) it.new_offset = it.offset;  // cursor <= offset: items only shrink
      cursor = it.new_offset + it.new_size;
    }
    // A compressed bundle is compressed again at its method's default level,
    // which may do worse than the level it was made with.
    if (cursor > sec.sh_size)
      fail_at({file_, sec.sh_offset}, "the pruned {} (0x{:x} bytes) would be larger than the section (0x{:x} bytes): "
              "its compressed bundles compress worse at the default level than they were; not pruned",
              elf_.names[index], cursor, static_cast<std::uint64_t>(sec.sh_size));
    return cursor;
  }

  void prune_bundles() {
    Bytes blob = data_.subspan(sec_off_, sec_size_);
    ByteSource source(blob, [this](std::uint64_t off, std::byte* to, std::uint64_t len) {
      in_.read_at(sec_off_ + off, to, len);
    });
    std::vector<formats::BundleSpan> spans =
        rebase_errors(sec_off_, [&] { return formats::split_bundles(source, file_); });
    if (spans.empty()) fail_at({file_, sec_off_}, ".hip_fatbin does not start with an offload bundle");
    for (std::size_t i = 0; i < spans.size(); ++i) {
      Item it{spans[i].offset, spans[i].size, 0, 0, {}};
      // Every bundle is registered by a program: one left without device code is an error (prune_container's).
      prune_item(it, selection_, fmt::format("section .hip_fatbin, bundle {} at 0x{:x}", i + 1, sec_off_ + it.offset));
      // Done with its pages (read back from the file where the output takes
      // them): the resident set grew by every CCOB decoded (188 MB of
      // rocBLAS's 66).
      in_.release(sec_off_ + it.offset, it.size);
      items_.push_back(std::move(it));
    }
    place_items();
  }

  // CUDA: every fatbin of .nv_fatbin and __nv_relfatbin pruned (one may keep
  // no entry: an empty fatbin still registers); the file must keep some.
  void prune_fatbins() {
    // The fatbins a record points at move; the others keep their address.
    std::set<std::uint64_t> pointed;
    for_each_wrapper(kCudaWrappers, [&](std::uint64_t, std::uint64_t value, const Where&) { pointed.insert(value); });
    Selection each = selection_;
    each.allow_empty = true;
    Report all{"NVIDIA fatbins", {}, 0, 0};
    auto prune_section = [&](std::size_t index, std::vector<Item>& items) {
      const Shdr& sec = elf_.shdrs[index];
      const std::string& name = elf_.names[index];
      Bytes section = data_.subspan(sec.sh_offset, sec.sh_size);
      if (section.empty()) return;
      ByteSource source(section, [this, at = sec.sh_offset](std::uint64_t off, std::byte* to, std::uint64_t len) {
        in_.read_at(at + off, to, len);
      });
      if (!formats::has_fatbin_magic(source.prefix(4, header_buf_)))
        fail_at({file_, sec.sh_offset}, "{} does not start with an NVIDIA fatbin", name);
      std::vector<formats::Fatbin> fatbins = formats::read_fatbins(source, file_, sec.sh_offset);
      for (std::size_t i = 0; i < fatbins.size(); ++i) {
        Item it{fatbins[i].offset, fatbins[i].size, 0, 0, {}};
        if (!pointed.contains(sec.sh_addr + it.offset)) fixed_.insert(sec.sh_addr + it.offset);
        Report r = prune_item(it, section, sec.sh_offset, each,
                              fmt::format("section {}, fatbin {} at 0x{:x}", name, i + 1, sec.sh_offset + it.offset));
        all.entries.insert(all.entries.end(), r.entries.begin(), r.entries.end());
        items.push_back(std::move(it));
      }
    };
    prune_section(*section_, items_);
    for (InPlace& p : in_place_) prune_section(p.index, p.items);
    check_not_empty(selection_, all, file_);
    place_items();
    for (InPlace& p : in_place_) {
      const std::uint64_t end = place_items(p.items, p.index);
      if (end < p.size)
        report_.notes.push_back(fmt::format("{} was pruned in place: 0x{:x} of its bytes are zeros now (the file shrinks "
                                            "after {} only)", elf_.names[p.index], p.size - end, name_));
    }
  }

  void prune_offload_binaries() {
    Bytes section = data_.subspan(sec_off_, sec_size_);
    std::vector<formats::OffloadBinary> binaries = formats::read_offload_binaries(section, file_, sec_off_);
    // A binary may go whole: the program's registration then lists one image
    // less. Leaving it without any is what --allow-empty is for.
    Selection each = selection_;
    each.allow_empty = true;
    bool any_kept = false;
    for (const formats::OffloadBinary& b : binaries) {
      Item it{b.offset, b.size, 0, 0, {}};
      for (const formats::OffloadEntry& e : b.entries) it.images.emplace_back(e.image_offset, e.image_size);
      prune_item(it, each, fmt::format("section .llvm.offloading, offload binary at 0x{:x}", sec_off_ + b.offset));
      any_kept = any_kept || it.new_size > 0;
      items_.push_back(std::move(it));
    }
    if (!any_kept && !selection_.allow_empty && !binaries.empty())
      fail(file_, "no device image of .llvm.offloading would stay (--allow-empty writes the file without any)");
    place_items();
  }

  // The new address of `addr` if it is an item's start (or the section's end).
  // (OpenMP: also the section's end, see moves(); for HIP and CUDA the end is
  // the start of what follows, another fatbin section's first item perhaps.)
  std::optional<std::uint64_t> moved(std::uint64_t addr) const {
    if (const Item* it = item_at(addr)) return sec_addr_ + it->new_offset;
    for (const InPlace& p : in_place_)
      for (const Item& it : p.items)
        if (p.addr + it.offset == addr) return p.addr + it.new_offset;
    if (kind_ == Kind::OpenMp && addr == sec_addr_ + sec_size_) return sec_addr_ + new_sec_size_;
    return std::nullopt;
  }
  std::uint64_t in_place_end(std::size_t index) const {
    for (const InPlace& p : in_place_)
      if (p.index == index) return p.addr + p.size;
    return 0;
  }
  const Item* item_at(std::uint64_t addr) const {
    for (const Item& it : items_)
      if (sec_addr_ + it.offset == addr) return &it;
    return nullptr;
  }
  bool in_section(std::uint64_t addr) const {
    if (addr >= sec_addr_ && addr <= sec_addr_ + sec_size_) return true;
    return std::ranges::any_of(in_place_, [&](const InPlace& p) { return addr >= p.addr && addr <= p.addr + p.size; });
  }
  // A pointer whose value moves with the pruning: the section's start does not
  // move (and is the end of whatever precedes it: omp_offloading_entries'
  // EntriesEnd), so only values after it count. Its end moves only for
  // OpenMP, where the last image's ImageEnd is that end; HIP and CUDA records
  // point at item starts, and a pointer to the end is one to what follows the
  // section, which stays where it is (CUDA 13's libcublasLt points at
  // .cask_resource, right after .nv_fatbin).
  bool moves(std::uint64_t addr) const {
    const bool end_moves = kind_ == Kind::OpenMp;
    auto inside = [&](std::uint64_t start, std::uint64_t size) {
      return addr > start && (addr < start + size || (end_moves && addr == start + size));
    };
    if (inside(sec_addr_, sec_size_)) return true;
    return std::ranges::any_of(in_place_, [&](const InPlace& p) { return inside(p.addr, p.size); });
  }

  // The file offset of `size` bytes at address `addr`, when a loadable segment has them in the file.
  std::optional<std::uint64_t> file_offset(std::uint64_t addr, std::uint64_t size) const {
    for (const Phdr& p : phdrs_)
      if (p.p_type == elf::PT_LOAD && addr >= p.p_vaddr && addr - p.p_vaddr + size <= p.p_filesz)
        return p.p_offset + (addr - p.p_vaddr);
    return std::nullopt;
  }
  std::uint64_t offset_of(std::uint64_t addr, std::uint64_t size, const Where& why) const {
    std::optional<std::uint64_t> off = file_offset(addr, size);
    if (!off) fail_at(why, "0x{:x} bytes at address 0x{:x} are not in the file", size, addr);
    return *off;
  }

  // --- pointers -------------------------------------------------------------
  //
  // A pointer at address `addr` holds its value in the addend of the relative
  // relocation that writes it, else in place (RELR, or no relocation at all).

  std::uint64_t pointer(std::uint64_t addr, const Where& why) const {
    if (auto it = rela_.find(addr); it != rela_.end())
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(r_.read<Rela>(it->second, "relocation").r_addend));
    return r_.u64le(offset_of(addr, 8, why), "pointer");
  }

  void set_pointer(std::uint64_t addr, std::uint64_t value, const Where& why) {
    const std::uint64_t old = pointer(addr, why);
    if (old == value) return;
    if (auto it = rela_.find(addr); it != rela_.end()) {
      Rela rel = r_.read<Rela>(it->second, "relocation");
      rel.r_addend = static_cast<std::int64_t>(value);
      patches_.put(it->second, rel);
      // Some linkers write the addend in place as well.
      std::optional<std::uint64_t> off = file_offset(addr, 8);
      if (!off || r_.u64le(*off, "pointer") != old) return;
    }
    patches_.put<E::U64>(offset_of(addr, 8, why), value);
  }

  void read_relocations() {
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      const std::uint32_t t = s.sh_type;
      const bool alloc = s.sh_flags & elf::SHF_ALLOC;
      if (t == elf::SHT_RELA && alloc) {
        read_rela(i);
      } else if (t == elf::SHT_RELR && alloc) {
        read_relr(i);
      } else if (t == elf::SHT_RELA || t == elf::SHT_REL || t == elf::SHT_RELR || t == elf::SHT_CREL ||
                 t == elf::SHT_ANDROID_REL || t == elf::SHT_ANDROID_RELA) {
        fail_at({file_, elf_.header_offset(i)}, "relocation section {} is not pruned ({})", elf_.names[i],
                alloc ? "a packed or REL format" : "static relocations kept by --emit-relocs");
      }
    }
  }

  void find_pointers() {
    // Every pointer into the section (after its start).
    std::map<std::uint64_t, std::uint64_t> into;  // address -> value
    for_each_pointer([&](std::uint64_t addr, std::uint64_t value) {
      if (moves(value)) into[addr] = value;
    });

    std::set<std::uint64_t> claimed = kind_ == Kind::Hip    ? move_wrappers(kHipWrappers)
                                      : kind_ == Kind::Cuda ? move_wrappers(kCudaWrappers)
                                                            : move_image_records(into);
    for (const auto& [addr, value] : into)
      if (!claimed.contains(addr))
        fail_at({file_, file_offset(addr, 8)}, "the pointer at 0x{:x} points into {} (0x{:x}) from outside the "
                "records that register its {}: an unknown reference, not pruned", addr, name_, value,
                kind_ == Kind::OpenMp ? "images" : kind_ == Kind::Hip ? "bundles" : "fatbins");
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const std::uint32_t t = elf_.shdrs[i].sh_type;
      if (t == elf::SHT_SYMTAB || t == elf::SHT_DYNSYM) move_symbols(i);
    }
  }

  // Calls f(address, value) for every word the file says is a pointer: where
  // relocations are, the words they relocate; an executable without any holds
  // absolute values, so every aligned word of its writable sections.
  template <typename F>
  void for_each_pointer(F&& f) const {
    for (const auto& [addr, at] : rela_) f(addr, pointer(addr, {file_, at}));
    for (std::uint64_t addr : relr_) f(addr, pointer(addr, {file_, std::nullopt}));
    if (!rela_.empty() || !relr_.empty()) return;
    for (std::size_t i = 0; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      if (s.sh_type == elf::SHT_NOBITS || !(s.sh_flags & elf::SHF_ALLOC) || !(s.sh_flags & elf::SHF_WRITE)) continue;
      for (std::uint64_t a = align_up(s.sh_addr, 8); a + 8 <= s.sh_addr + s.sh_size; a += 8)
        f(a, r_.u64le(s.sh_offset + (a - s.sh_addr), "pointer"));
    }
  }

  // Calls f(slot address, value, where) for the item pointer of every record
  // of `kind`'s sections (each an array of 24-byte records with its magic).
  template <typename F>
  void for_each_wrapper(const WrapperKind& kind, F&& f) const {
    for (std::size_t index : wrapper_sections_) {
      if (elf_.names[index] != kind.section) continue;
      const Shdr& w = elf_.shdrs[index];
      if (w.sh_type == elf::SHT_NOBITS || w.sh_size % kHipWrapperSize != 0)
        fail_at({file_, elf_.header_offset(index)}, "{} (0x{:x} bytes) is not an array of {} records of 0x{:x} bytes",
                kind.section, static_cast<std::uint64_t>(w.sh_size), kind.record, kHipWrapperSize);
      for (std::uint64_t at = 0; at < w.sh_size; at += kHipWrapperSize) {
        std::uint32_t magic = load_le<std::uint32_t>(r_.slice(w.sh_offset + at, 4, kind.record).data());
        if (magic != kind.magic)
          fail_at({file_, w.sh_offset + at}, "a {} record has magic 0x{:x}, not 0x{:x}", kind.section, magic, kind.magic);
        const std::uint64_t slot = w.sh_addr + at + kHipWrapperBinary;
        const Where why{file_, w.sh_offset + at + kHipWrapperBinary};
        f(slot, pointer(slot, why), why);
      }
    }
  }

  // HIP, CUDA: each record's pointer moves with its bundle or fatbin.
  std::set<std::uint64_t> move_wrappers(const WrapperKind& kind) {
    std::set<std::uint64_t> claimed;
    const char* what = kind_ == Kind::Cuda ? "fatbin" : "bundle";
    for_each_wrapper(kind, [&](std::uint64_t slot, std::uint64_t value, const Where& why) {
      if (!in_section(value))
        fail_at(why, "the {} at 0x{:x} points to 0x{:x}, outside {}", kind.record, slot - kHipWrapperBinary, value,
                kind_ == Kind::Cuda ? "the fatbin sections" : name_.c_str());
      std::optional<std::uint64_t> to = moved(value);
      if (!to)
        fail_at(why, "the {} at 0x{:x} points into the middle of a {} (0x{:x})", kind.record, slot - kHipWrapperBinary,
                what, value);
      set_pointer(slot, *to, why);
      claimed.insert(slot);
    });
    return claimed;
  }

  // OpenMP: the __tgt_device_image records of the kept images move to the
  // front of their array, and the descriptor's NumDeviceImages counts them.
  std::set<std::uint64_t> move_image_records(const std::map<std::uint64_t, std::uint64_t>& into) {
    struct Record {
      std::uint64_t addr;
      const Item* item;
      std::uint64_t image;  // index in item->images
    };
    std::vector<Record> records;
    for (const auto& [addr, value] : into) {
      for (const Item& it : items_)
        for (std::size_t k = 0; k < it.images.size(); ++k)
          if (sec_addr_ + it.images[k].first == value && into.contains(addr + 8) &&
              into.at(addr + 8) == value + it.images[k].second)
            records.push_back({addr, &it, k});
    }
    std::set<std::uint64_t> claimed;
    if (records.empty()) return claimed;
    const std::uint64_t array = records.front().addr, count = records.size();
    for (std::size_t i = 0; i < records.size(); ++i)
      if (records[i].addr != array + i * kImageRecord)
        fail_at({file_, file_offset(records[i].addr, 8)}, "the __tgt_device_image records are not one array "
                "(0x{:x} after 0x{:x})", records[i].addr, array);
    // The descriptor: a pointer to the array, after the int32 image count.
    std::optional<std::uint64_t> descriptor;
    auto consider = [&](std::uint64_t addr) {
      if (addr < 8) return;
      std::optional<std::uint64_t> off = file_offset(addr - 8, 4);
      if (!off || load_le<std::int32_t>(r_.slice(*off, 4, "NumDeviceImages").data()) != static_cast<std::int32_t>(count))
        return;
      if (descriptor && *descriptor != addr - 8)
        fail_at({file_, off}, "two __tgt_bin_desc descriptors name the image array at 0x{:x}", array);
      descriptor = addr - 8;
    };
    for_each_pointer([&](std::uint64_t addr, std::uint64_t value) {
      if (value == array) consider(addr);
    });
    if (!descriptor)
      fail_at({file_, file_offset(array, 8)}, "no __tgt_bin_desc descriptor counts the {} __tgt_device_image records at "
              "0x{:x}", count, array);
    // The kept images' records, in their order, then the others pointing at nothing.
    std::vector<const Record*> order;
    for (const Record& r : records)
      if (r.item->new_size) order.push_back(&r);
    const std::uint64_t kept = order.size();
    for (const Record& r : records)
      if (!r.item->new_size) order.push_back(&r);
    for (std::size_t p = 0; p < records.size(); ++p) {
      const Record& from = *order[p];
      const std::uint64_t at = array + p * kImageRecord;
      const Where why{file_, file_offset(at, kImageRecord)};
      std::uint64_t start = sec_addr_, end = sec_addr_;
      if (p < kept) {
        start = sec_addr_ + from.item->new_offset + (from.item->images[from.image].first - from.item->offset);
        end = start + from.item->images[from.image].second;
      }
      const std::uint64_t entries_begin = pointer(from.addr + 16, why), entries_end = pointer(from.addr + 24, why);
      fields_.push_back({at, start});
      fields_.push_back({at + 8, end});
      fields_.push_back({at + 16, entries_begin});
      fields_.push_back({at + 24, entries_end});
      claimed.insert(records[p].addr);
      claimed.insert(records[p].addr + 8);
    }
    for (const auto& [addr, value] : fields_) set_pointer(addr, value, {file_, file_offset(addr, 8)});
    patches_.put<E::I32>(offset_of(*descriptor, 4, {file_, std::nullopt}), static_cast<std::int32_t>(kept));
    return claimed;
  }

  // A table section (relocations, symbols) of whole `size`-byte entries.
  const Shdr& table(std::size_t index, std::uint64_t size) const {
    const Shdr& s = elf_.shdrs[index];
    if (s.sh_entsize != size || s.sh_size % size != 0)
      fail_at({file_, elf_.header_offset(index)}, "{} has entries of 0x{:x} bytes, expected 0x{:x}", elf_.names[index],
              static_cast<std::uint64_t>(s.sh_entsize), size);
    return s;
  }

  void read_rela(std::size_t index) {
    const Shdr& s = table(index, sizeof(Rela));
    for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += sizeof(Rela)) {
      Rela rel = r_.read<Rela>(at, "relocation");
      const std::uint64_t info = rel.r_info;
      if ((info & 0xffffffffu) == machine_.relative && (info >> 32) == 0) rela_[rel.r_offset] = at;
    }
  }

  void read_relr(std::size_t index) {
    const Shdr& s = elf_.shdrs[index];
    if (s.sh_size % 8 != 0)
      fail_at({file_, elf_.header_offset(index)}, "{} is 0x{:x} bytes, not a whole number of entries", elf_.names[index],
              static_cast<std::uint64_t>(s.sh_size));
    std::uint64_t base = 0;
    for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += 8) {
      std::uint64_t entry = r_.u64le(at, "RELR entry");
      if ((entry & 1) == 0) {
        relr_.insert(entry);
        base = entry + 8;
      } else {
        for (unsigned bit = 1; bit < 64; ++bit)
          if ((entry >> bit) & 1) relr_.insert(base + (bit - 1) * 8);
        base += 63 * 8;
      }
    }
  }

  void move_symbols(std::size_t index) {
    const Shdr& s = table(index, sizeof(Sym));
    for (std::uint64_t at = s.sh_offset; at < s.sh_offset + s.sh_size; at += sizeof(Sym)) {
      Sym sym = r_.read<Sym>(at, "symbol");
      const std::uint64_t value = sym.st_value;
      const bool in_place = std::ranges::any_of(in_place_, [&](const InPlace& p) { return sym.st_shndx == p.index; });
      if (sym.st_shndx != *section_ && !in_place && !(sym.st_shndx == elf::SHN_ABS && in_section(value))) continue;
      if (elf::st_type(sym.st_info) == elf::STT_SECTION) continue;  // the section's start does not move
      std::optional<std::uint64_t> to = moved(value);
      // A symbol of the section at its end ends it: it follows the packed items.
      if (!to && sym.st_shndx == *section_ && value == sec_addr_ + sec_size_) to = sec_addr_ + new_sec_size_;
      if (!to && in_place && value == in_place_end(sym.st_shndx)) to = value;
      if (!to)
        fail_at({file_, at}, "symbol {} of {} points into the middle of an item of {} (0x{:x})",
                (at - s.sh_offset) / sizeof(Sym), elf_.names[index], name_, value);
      Sym out = sym;
      out.st_value = *to;
      if (const Item* it = item_at(value); it && sym.st_size != 0) {
        if (sym.st_size != it->size)
          fail_at({file_, at}, "symbol {} of {} covers 0x{:x} bytes of an item of 0x{:x}",
                  (at - s.sh_offset) / sizeof(Sym), elf_.names[index], static_cast<std::uint64_t>(sym.st_size),
                  it->size);
        out.st_size = it->new_size;
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
    const std::uint64_t sec_end = sec_off_ + sec_size_;
    new_sec_end_ = sec_off_ + new_sec_size_;
    // What must be kept after the section: the first section, segment or table
    // starting at or after its end.
    keep_from_ = data_.size();
    for (std::size_t i = 1; i < elf_.shdrs.size(); ++i) {
      const Shdr& s = elf_.shdrs[i];
      if (i == *section_) continue;
      if (s.sh_offset >= sec_end) {
        if (s.sh_type != elf::SHT_NOBITS) keep_from_ = std::min<std::uint64_t>(keep_from_, s.sh_offset);
      } else if (s.sh_type != elf::SHT_NOBITS && s.sh_size > 0 && s.sh_offset + s.sh_size > sec_off_) {
        fail_at({file_, elf_.header_offset(i)}, "section {} overlaps {}", elf_.names[i], name_);
      }
    }
    if (elf_.ehdr.e_shoff >= sec_end) keep_from_ = std::min<std::uint64_t>(keep_from_, elf_.ehdr.e_shoff);
    std::uint64_t unit = 4096;  // the moves keep every alignment: pages, segments, sections
    for (std::size_t i = 0; i < phdrs_.size(); ++i) {
      const Phdr& p = phdrs_[i];
      if (p.p_type == elf::PT_LOAD) unit = std::max<std::uint64_t>(unit, p.p_align);
      if (i == *segment_) continue;
      // A segment after the section moves down with what follows it (one
      // without file bytes too: its offset stays congruent to its address).
      const std::uint64_t end = p.p_offset + p.p_filesz;
      if (p.p_offset >= sec_end) {
        keep_from_ = std::min<std::uint64_t>(keep_from_, p.p_offset);
        unit = std::max<std::uint64_t>(unit, p.p_align);
      } else if (end > sec_off_) {
        fail_at({file_, elf_.ehdr.e_phoff + i * sizeof(Phdr)}, "program header {} overlaps {}", i, name_);
      }
    }
    for (std::size_t i = 1; i < elf_.shdrs.size(); ++i)
      if (elf_.shdrs[i].sh_offset >= keep_from_) unit = std::max<std::uint64_t>(unit, elf_.shdrs[i].sh_addralign);
    if (unit & (unit - 1)) fail_at({file_, elf_.ehdr.e_phoff}, "an alignment of 0x{:x} is not a power of two", unit);

    const std::uint64_t seg_end = seg.p_offset + seg.p_filesz;
    split_ = keep_from_ < seg_end;
    std::uint64_t used_end = new_sec_end_;
    if (split_) {
      // The kernel of old finds the program headers at the first segment's
      // (vaddr - offset) plus e_phoff: only safe where the split segment has that same difference.
      const Phdr* first = nullptr;
      for (const Phdr& p : phdrs_)
        if (p.p_type == elf::PT_LOAD && !first) first = &p;
      if (first->p_vaddr - first->p_offset != seg.p_vaddr - seg.p_offset) {
        report_.notes.push_back("the file was not shrunk: splitting the segment of its device code would put the program "
                                "headers where old kernels do not look for them");
        shift_ = 0;
        split_ = false;
        return;
      }
      phdr_at_ = align_up(new_sec_end_, 8);
      used_end = phdr_at_ + (phdrs_.size() + 1) * sizeof(Phdr);
    }
    shift_ = keep_from_ > used_end ? align_down(keep_from_ - used_end, unit) : 0;
    if (shift_ == 0) {
      split_ = false;
      report_.notes.push_back(fmt::format("the file was not shrunk: the items freed less than a whole page of 0x{:x} "
                                          "bytes; the rest of {} is zeros", unit, name_));
    }
  }

  std::uint64_t new_offset(std::uint64_t off) const {
    if (off >= keep_from_) return off - shift_;
    if (off >= sec_off_ + sec_size_ && shift_ > 0) return std::max(used_end(), off - shift_);
    return off;
  }
  std::uint64_t used_end() const {
    return split_ ? phdr_at_ + (phdrs_.size() + 1) * sizeof(Phdr) : new_sec_end_;
  }

  // Whether an executable section has file bytes in [from, to).
  bool holds_code(std::uint64_t from, std::uint64_t to) const {
    for (const Shdr& s : elf_.shdrs)
      if ((s.sh_flags & elf::SHF_EXECINSTR) && s.sh_type != elf::SHT_NOBITS && s.sh_size > 0 && s.sh_offset < to &&
          s.sh_offset + s.sh_size > from)
        return true;
    return false;
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
        // A part of a split segment holding no code is not executable (with
        // .nv_fatbin inside the read-execute segment, as CUDA libraries have
        // it, .eh_frame would be: eu-elflint's "executable but contains no
        // executable sections").
        if (split_ && !holds_code(old.p_offset, keep_from_)) p.p_flags = p.p_flags & ~elf::PF_X;
        out.push_back(p);
        if (split_) {
          const std::uint64_t skip = keep_from_ - old.p_offset;  // bytes of the segment before the second part
          Phdr b = old;
          if (!holds_code(keep_from_, old.p_offset + old.p_filesz)) b.p_flags = b.p_flags & ~elf::PF_X;
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

  void emit(const codec::Sink& sink) {
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
      shdrs[*section_].sh_offset = sec_off_;
      shdrs[*section_].sh_size = new_sec_size_;
      std::vector<std::byte> table(shdrs.size() * sizeof(Shdr));
      std::memcpy(table.data(), shdrs.data(), table.size());
      patches_.put_bytes(elf_.ehdr.e_shoff, std::move(table));
    }
    patches_.put(0, eh);
    for (const InPlace& p : in_place_) {
      std::vector<Bytes> pieces;
      std::uint64_t at = 0;
      for (const Item& it : p.items) {
        for (; at < it.new_offset;) {  // alignment gaps: zeros
          const std::uint64_t k = std::min<std::uint64_t>(it.new_offset - at, sizeof kZeros);
          pieces.push_back(Bytes(kZeros, k));
          at += k;
        }
        for (Bytes piece : it.pieces) {
          pieces.push_back(piece);
          at += piece.size();
        }
      }
      patches_.put_region(p.off, p.size, std::move(pieces));
    }
    const std::uint64_t dropped_to = shift_ > 0 ? keep_from_ : sec_off_ + sec_size_;
    if (patches_.any_in(sec_off_, dropped_to))
      fail_at({file_, sec_off_}, "a pointer or table to rewrite lies in {} itself: not pruned", name_);

    std::uint64_t written = 0;
    auto out = [&](Bytes b) {
      written += b.size();
      sink(b);
    };
    patches_.emit(data_, 0, sec_off_, out);
    for (const Item& it : items_) {
      emit_zeros(sec_off_ + it.new_offset - written, out);
      for (Bytes piece : it.pieces) {
        out(piece);
        owned_.release(piece);
      }
    }
    if (split_) {
      emit_zeros(phdr_at_ - written, out);
      out(Bytes(reinterpret_cast<const std::byte*>(phdrs.data()), phdrs.size() * sizeof(Phdr)));
    }
    if (shift_ > 0) {
      emit_zeros(keep_from_ - shift_ - written, out);
      patches_.emit(data_, keep_from_, data_.size(), out);
    } else {
      emit_zeros(sec_off_ + sec_size_ - written, out);
      patches_.emit(data_, sec_off_ + sec_size_, data_.size(), out);
    }
    report_.size_after = written;
  }

  const InputFile& in_;
  Bytes data_;
  const char* verb_ = "pruned";  // "joined": the editor's errors say what was not done
  const Selection& selection_;
  const std::string& file_;
  ByteReader r_;
  object::ElfFile<E> elf_;
  Machine machine_{};
  std::vector<Phdr> phdrs_;
  std::optional<std::size_t> section_, segment_;
  std::vector<std::size_t> wrapper_sections_;  // .hipFatBinSegment, .nvFatBinSegment
  std::vector<InPlace> in_place_;              // CUDA: the fatbin section packed in place
  std::set<std::uint64_t> fixed_;              // addresses of items no record points at (CUDA)
  std::vector<std::byte> header_buf_;
  static constexpr std::byte kZeros[4096] = {};
  std::string name_;  // of the section: ".hip_fatbin", ".llvm.offloading"
  Kind kind_ = Kind::Hip;
  std::map<std::uint64_t, std::uint64_t> rela_;  // address -> file offset of the relative relocation writing it
  std::set<std::uint64_t> relr_;                 // addresses RELR relocates
  std::vector<std::pair<std::uint64_t, std::uint64_t>> fields_;  // image record fields and their new values
  std::uint64_t sec_off_ = 0, sec_size_ = 0, sec_addr_ = 0, new_sec_size_ = 0, new_sec_end_ = 0;
  std::vector<Item> items_;
  OwnedBytes owned_{file_};  // after file_
  Patches patches_;
  std::uint64_t keep_from_ = 0, shift_ = 0, phdr_at_ = 0;
  bool split_ = false;
  Report report_;
  std::uint64_t kp_size_ = 0;        // kpack split: the input's size
  std::vector<std::byte> kp_tail_;  // kpack split: what it appends at EOF
  std::map<std::uint64_t, std::vector<std::byte>> kp_input_writes_;  // kpack split: the program headers in place
};

}  // namespace

Report join_linked_elf(const InputFile& in, const JoinedFatbin& fatbin, const std::string& file,
                       const codec::Sink& sink) {
  static const Selection kNone;
  LinkedPruner p(in, kNone, file);
  return p.join(fatbin, sink);
}

KpackedBinary kpack_linked_elf(const InputFile& in, Bytes marker, std::span<const std::uint64_t> bundles,
                               const std::string& file, const codec::Sink& sink) {
  static const Selection kNone;
  LinkedPruner p(in, kNone, file);
  return p.kpack(marker, bundles, sink);
}

Report prune_linked_elf(const InputFile& in, const Selection& selection, const std::string& file,
                        const codec::Sink& sink) {
  LinkedPruner p(in, selection, file);
  Report r = p.run(sink);
  return r;
}

}  // namespace ot::prune
