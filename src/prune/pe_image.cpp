// Pruning PE images (Windows DLLs and EXEs, PE32+: x86_64 and ARM64).
//
// A PE image places each section's bytes in the file (PointerToRawData,
// SizeOfRawData) apart from its place in memory (VirtualAddress,
// VirtualSize), and the loader zero-fills a section's memory past its raw
// data. So no address needs to move:
//   * each device code section (.hip_fatbin, .nv_fatbin, __nv_relfatbin; 8
//     characters in lld-link's images: ".hip_fat", ".nv_fatb", "__nv_rel") is
//     pruned item by item and packed at its start (prune/packing.h, as for ELF);
//   * its SizeOfRawData shrinks to the packed bytes rounded up to
//     FileAlignment, its VirtualSize stays (so SizeOfImage and every RVA stay);
//   * the raw data of the sections after it in the file, the COFF symbol table
//     (GNU ld's images keep one) and the debug directory's file pointers move
//     down by what it lost, which is a multiple of FileAlignment;
//   * the registration records (__hip_fatbin_wrapper in .hipFatB,
//     __fatBinC_Wrapper_t in .nvFatBi) hold the absolute address ImageBase +
//     RVA of their item: the value changes where the item moved within its
//     section; the DIR64 base relocation at the pointer's own place stays;
//   * CheckSum is computed again where it was set.
// Refused: base relocations or data directories that point into a device
// code section (bytes there would move or become zeros), a record pointing
// into the middle of an item or outside the device code sections, and an
// Authenticode-signed image unless the caller strips the signature (the
// certificate table, which must then end the file, is left out).
//
// The same editor makes the other two edits of a HIP image: kpack (split:
// the code objects moved out to archives, as AMD's rocm-kpack splitter does)
// and join (the way back); each is described where it is defined.
#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "formats/bundle_sequence.h"
#include "formats/nv_fatbin.h"
#include "formats/kpack.h"
#include "object/kpack_records.h"
#include "object/pe_image.h"
#include "prune/kinds.h"
#include "prune/packing.h"
#include "prune/split.h"

namespace ot::prune {
namespace {

constexpr std::uint16_t kRelBasedAbsolute = 0, kRelBasedDir64 = 10;
constexpr std::uint64_t kDebugEntrySize = 28, kDebugPointerToRawData = 24;
constexpr std::uint64_t kMaxItemAlign = 4096;

struct DeviceSection {
  std::size_t index = 0;
  std::uint64_t off = 0, size = 0, rva = 0;  // its contents: file offset, bytes, RVA
  std::uint64_t raw_size = 0, new_raw_size = 0;
  std::vector<Item> items;
};

// The PE checksum of bytes handed over in pieces (CheckSum's own 4 bytes count as zeros).
class Checksum {
 public:
  explicit Checksum(std::uint64_t skip) : skip_(skip) {}
  void add(Bytes b) {
    for (std::byte c : b) {
      std::uint32_t v = (pos_ >= skip_ && pos_ - skip_ < 4) ? 0 : std::to_integer<std::uint32_t>(c);
      if (pos_ % 2 == 0) {
        low_ = v;
      } else {
        fold(low_ | v << 8);
      }
      ++pos_;
    }
  }
  std::uint32_t value() {
    if (pos_ % 2 == 1) fold(low_);
    sum_ = (sum_ & 0xffff) + (sum_ >> 16);
    return static_cast<std::uint32_t>(sum_ + pos_);
  }

 private:
  void fold(std::uint32_t w) {
    sum_ += w;
    sum_ = (sum_ & 0xffff) + (sum_ >> 16);
  }
  std::uint64_t skip_, pos_ = 0, sum_ = 0;
  std::uint32_t low_ = 0;
};

class PePruner {
 public:
  PePruner(const InputFile& in, const Selection& selection, const std::string& file)
      : in_(in), data_(in.bytes()), selection_(selection), file_(file), patches_(file) {}

  Report run(const codec::Sink& sink) {
    const bool dll = parse("pruned");
    report_.container = fmt::format("{} (PE32+, {})", dll ? "DLL" : "executable",
                                    pe_.machine == object::coff::IMAGE_FILE_MACHINE_AMD64 ? "x86_64" : "ARM64");
    report_.size_before = data_.size();
    find_sections();
    prune_items();
    move_records();
    check_base_relocations();
    check_directories();
    lay_out();
    return write([this](const codec::Sink& out) { emit(out); }, sink);
  }

  // join: the kpack'd image given its device code back. No address moves:
  // .hip_fat kept its VirtualAddress and VirtualSize when the splitter cut its
  // raw data, so the joined bundles go back there (raw data of SizeOfRawData
  // rounded up to FileAlignment, the raw data after it moved up by what it
  // gained, as prune moves it down); the records get clang's magic, their
  // bundle's address (their DIR64 base relocations stay) and a null index;
  // the .kpackrf section goes where it is the last one, its raw data ending the
  // file (as the splitter appends it), else it stays, unused; CheckSum again.
  Report join(const JoinedFatbin& fb, const codec::Sink& sink) {
    const bool dll = parse("joined");
    report_.container = fmt::format("kpack'd {} (PE32+)", dll ? "DLL" : "executable");
    report_.size_before = data_.size();
    std::optional<std::size_t> fat, marker;
    for (std::size_t i = 0; i < pe_.sections.size(); ++i) {
      std::optional<std::size_t>* slot = hip_name(pe_.names[i])                            ? &fat
                                         : pe_.names[i] == formats::kKpackRefPeSection ||
                                                   pe_.names[i] == ".rocm_kp"              ? &marker
                                                                                            : nullptr;
      if (!slot) continue;
      if (*slot) fail_at({file_, pe_.header_offset(i)}, "the image holds two {} sections: not joined", pe_.names[i]);
      *slot = i;
    }
    if (!fat) fail_at({file_, 0}, "no .hip_fat section to give the device code back to");
    const std::optional<object::KpackedBinary> kb = object::find_kpack_records(pe_, file_);
    if (!kb || !marker) fail_at({file_, 0}, "no HIPK record: not a kpack'd image, nothing to join");
    if (kb->records.size() != fb.bundle_offsets.size())
      fail_at({file_, kb->records.front().offset}, "{} holds {} HIPK records, not the {} joined", kb->records_section,
              kb->records.size(), fb.bundle_offsets.size());
    const object::coff::SectionHeader h = pe_.sections[*fat];
    if (fb.size > h.VirtualSize)
      fail_at({file_, pe_.header_offset(*fat)}, "the joined bundles (0x{:x} bytes) do not fit in {} (VirtualSize "
              "0x{:x}): not joined", fb.size, pe_.names[*fat], static_cast<std::uint32_t>(h.VirtualSize));
    if (h.SizeOfRawData % pe_.file_alignment != 0 || h.PointerToRawData % pe_.file_alignment != 0 ||
        (h.SizeOfRawData == 0 && h.PointerToRawData == 0))
      fail_at({file_, pe_.header_offset(*fat)}, "{} has no raw data place aligned to FileAlignment 0x{:x}: not joined",
              pe_.names[*fat], pe_.file_alignment);
    if (pe_.directory(object::PeImage::kDirCertificates).size != 0)
      fail_at({file_, pe_.directories_offset + 8 * object::PeImage::kDirCertificates},
              "the image is signed (an Authenticode certificate table): joining invalidates the signature");
    // The checks prune makes of what points into the section: base relocations, data directories.
    devices_.push_back({*fat, h.PointerToRawData, h.SizeOfRawData, h.VirtualAddress, h.SizeOfRawData, 0, {}});
    check_base_relocations();
    check_directories();

    DeviceSection& d = devices_.front();
    d.new_raw_size = align_up(fb.size, pe_.file_alignment);
    const object::coff::SectionHeader& m = pe_.sections[*marker];
    const bool drop_marker = *marker + 1 == pe_.sections.size() && m.SizeOfRawData > 0 &&
                             std::uint64_t{m.PointerToRawData} + m.SizeOfRawData == data_.size() &&
                             m.PointerToRawData >= d.off + d.raw_size;
    end_ = drop_marker ? std::uint64_t{m.PointerToRawData} : data_.size();
    // Records: clang's magic, the bundle's address, a null index.
    for (const object::KpackRecord& r : kb->records) {
      patches_.put<std::uint32_t>(r.offset, kHipWrapperMagic);
      patches_.put<std::uint64_t>(r.offset + kHipWrapperBinary,
                                  pe_.image_base + h.VirtualAddress + fb.bundle_offsets[r.position]);
      patches_.put<std::uint64_t>(r.offset + formats::kHipWrapperIndex, 0);
    }
    // Headers: .hip_fat's raw size, later raw data moved, the marker gone.
    for (std::size_t i = 0; i < pe_.sections.size(); ++i) {
      object::coff::SectionHeader x = pe_.sections[i];
      if (i == *fat) x.SizeOfRawData = static_cast<std::uint32_t>(d.new_raw_size);
      if (x.SizeOfRawData != 0 && i != *fat) x.PointerToRawData = static_cast<std::uint32_t>(new_offset(x.PointerToRawData));
      if (i == *marker && drop_marker) x = {};
      if (std::memcmp(&x, &pe_.sections[i], sizeof x) != 0) patches_.put(pe_.header_offset(i), x);
    }
    if (drop_marker) {
      patches_.put<std::uint16_t>(pe_.coff_header_offset + 2, static_cast<std::uint16_t>(pe_.sections.size() - 1));
      std::uint64_t image = 0;
      for (std::size_t i = 0; i + 1 < pe_.sections.size(); ++i)
        image = std::max<std::uint64_t>(image, std::uint64_t{pe_.sections[i].VirtualAddress} +
                                                   std::max<std::uint64_t>(pe_.sections[i].VirtualSize, pe_.sections[i].SizeOfRawData));
      patches_.put<std::uint32_t>(pe_.optional_header_offset + 56,
                                  static_cast<std::uint32_t>(align_up(image, pe_.section_alignment)));
    } else {
      report_.notes.push_back(fmt::format("{} is not the last section with the last raw data: kept, unused",
                                          pe_.names[*marker]));
    }
    move_pointers();
    fatbin_ = &fb;
    return write([this](const codec::Sink& out) { emit_joined(out); }, sink);
  }

  // kpack (split, prune/split.h): the image rewritten as AMD's rocm-kpack
  // splitter rewrites a PE image (coff/kpack_transform.py at e3483286):
  //   * .kpackrf appended: its header in the slot after the section table
  //     (below SizeOfHeaders and the first raw data, and holding zeros; else
  //     refused, as AMD refuses), its raw data `marker` zero-padded to
  //     FileAlignment after every other section's raw data, its RVA after
  //     every other section's rounded up to SectionAlignment, MEM_READ |
  //     CNT_INITIALIZED_DATA; NumberOfSections and SizeOfImage with it;
  //   * each record of .hipFatB: magic HIPK, its position i at +16 (a u64),
  //     ImageBase + the RVA of .kpackrf at +8 (its DIR64 base relocation stays
  //     and applies the load delta);
  //   * .hip_fat's whole 4 KiB pages (by RVA) cut from its raw data, what is
  //     left (the head before the first page boundary, the tail after the
  //     last) kept at its start, SizeOfRawData that rounded up to
  //     FileAlignment (or 0), the raw data after it moved down by what it lost
  //     (lay_out and move_pointers, as prune moves it); VirtualAddress,
  //     VirtualSize and SizeOfImage stay, so the loader zero-fills the section.
  //     Without a whole page nothing is cut (the records are HIPK all the same).
  // Where AMD's splitter is wrong this does otherwise: CheckSum, which it
  // leaves stale, is computed again where the input had one (write); data
  // after the last section's raw data (an overlay, a COFF symbol table, a
  // certificate), after which it appends the marker while the header points
  // below them, is refused; a signed image is refused (the signature would
  // no longer match); a base-relocated pointer other than a record's left
  // pointing into .hip_fat is refused (AMD's self-check, made here).
  KpackedBinary kpack(Bytes marker, std::span<const std::uint64_t> bundles, const codec::Sink& sink) {
    parse("split");
    report_.size_before = data_.size();
    std::optional<std::size_t> fat, records;
    for (std::size_t i = 0; i < pe_.sections.size(); ++i) {
      const std::string& n = pe_.names[i];
      if (n == formats::kKpackRefPeSection || n == formats::kKpackRefSection)
        fail_at({file_, pe_.header_offset(i)}, "the image already has a {} section: it was split before", n);
      std::optional<std::size_t>* slot = hip_name(n)                                  ? &fat
                                         : n == ".hipFatB" || n == ".hipFatBinSegment" ? &records
                                                                                        : nullptr;
      if (!slot) continue;
      if (*slot) fail_at({file_, pe_.header_offset(i)}, "the image holds two {} sections: not split", n);
      *slot = i;
    }
    if (!fat || pe_.content_size(*fat) == 0) fail_at({file_, 0}, "no .hip_fat section with raw data: nothing to split");
    if (!records) fail_at({file_, 0}, "no .hipFatB section: no record registers the device code");
    const object::coff::SectionHeader h = pe_.sections[*fat];
    if (h.SizeOfRawData % pe_.file_alignment != 0 || h.PointerToRawData % pe_.file_alignment != 0)
      fail_at({file_, pe_.header_offset(*fat)}, "{}'s raw data (0x{:x} bytes at 0x{:x}) is not aligned to FileAlignment "
              "0x{:x}: not split", pe_.names[*fat], static_cast<std::uint32_t>(h.SizeOfRawData),
              static_cast<std::uint32_t>(h.PointerToRawData), pe_.file_alignment);
    if (const object::PeImage::Directory& cert = pe_.directory(object::PeImage::kDirCertificates); cert.size != 0)
      fail_at({file_, pe_.directories_offset + 8 * object::PeImage::kDirCertificates},
              "the image is signed (an Authenticode certificate table of 0x{:x} bytes at 0x{:x}): splitting "
              "invalidates the signature; not split", cert.size, cert.rva);
    // The marker's raw data goes after every section's: nothing may follow them.
    std::uint64_t raw_end = pe_.size_of_headers, first_raw = data_.size();
    std::uint64_t va_end = 0;
    for (const object::coff::SectionHeader& x : pe_.sections) {
      if (x.SizeOfRawData != 0) {
        raw_end = std::max<std::uint64_t>(raw_end, std::uint64_t{x.PointerToRawData} + x.SizeOfRawData);
        first_raw = std::min<std::uint64_t>(first_raw, x.PointerToRawData);
      }
      va_end = std::max<std::uint64_t>(va_end, std::uint64_t{x.VirtualAddress} +
                                                   std::max<std::uint64_t>(x.VirtualSize, x.SizeOfRawData));
    }
    if (data_.size() > raw_end)
      fail_at({file_, raw_end}, "0x{:x} bytes follow the last section's raw data (an overlay, a COFF symbol table or "
              "a certificate), where {}'s raw data would go: not split", data_.size() - raw_end,
              formats::kKpackRefPeSection);
    // Its header: the slot after the section table, below SizeOfHeaders and the first raw data, unused.
    const std::size_t n = pe_.sections.size();
    const std::uint64_t slot = pe_.header_offset(n), slot_end = slot + sizeof(object::coff::SectionHeader);
    if (slot_end > pe_.size_of_headers || slot_end > first_raw || n + 1 > 0xffff)
      fail_at({file_, slot}, "no room for the section header of {} after the section table (it would end at 0x{:x}; "
              "SizeOfHeaders 0x{:x}, the first raw data at 0x{:x}): not split", formats::kKpackRefPeSection, slot_end,
              pe_.size_of_headers, first_raw);
    if (std::ranges::any_of(data_.subspan(slot, slot_end - slot), [](std::byte b) { return b != std::byte{0}; }))
      fail_at({file_, slot}, "the 0x{:x} bytes after the section table, where the section header of {} would go, "
              "are in use: not split", slot_end - slot, formats::kKpackRefPeSection);
    const std::uint64_t m = marker.size();
    if (m == 0 || m > 0xffffffffu) fail_at({file_, 0}, "the marker has 0x{:x} bytes", m);
    const std::uint64_t marker_rva = align_up(va_end, pe_.section_alignment);
    const std::uint64_t image_size = align_up(marker_rva + m, pe_.section_alignment);
    if (image_size > 0xffffffffu)
      fail_at({file_, pe_.optional_header_offset + 56}, "{} would end the image past 4 GiB: not split",
              formats::kKpackRefPeSection);

    // The records.
    KpackedBinary result;
    result.marker_addr = pe_.image_base + marker_rva;
    const std::string& rname = pe_.names[*records];
    const object::coff::SectionHeader& rs = pe_.sections[*records];
    const std::uint64_t rsize = pe_.content_size(*records);
    if (rsize == 0 || rsize % kHipWrapperSize != 0)
      fail_at({file_, pe_.header_offset(*records)}, "{} (0x{:x} bytes) is not an array of __hip_fatbin_wrapper records "
              "of 0x{:x} bytes", rname, rsize, kHipWrapperSize);
    const std::uint64_t fat_size = pe_.content_size(*fat);
    std::set<std::uint64_t> record_slots;  // the RVAs of the records' pointers
    for (std::uint64_t i = 0; i < rsize / kHipWrapperSize; ++i) {
      const std::uint64_t at = rs.PointerToRawData + i * kHipWrapperSize;
      const std::uint32_t magic = load_le<std::uint32_t>(data_.data() + at);
      if (magic == formats::kHipkMagic)
        fail_at({file_, at}, "record {} of {} is already HIPK: the image was split before", i, rname);
      if (magic != kHipWrapperMagic)
        fail_at({file_, at}, "record {} of {} has magic 0x{:x}, not 0x{:x}", i, rname, magic, kHipWrapperMagic);
      const std::uint64_t va = load_le<std::uint64_t>(data_.data() + at + kHipWrapperBinary);
      const std::uint64_t rva = va >= pe_.image_base ? va - pe_.image_base : ~std::uint64_t{0};
      if (rva < h.VirtualAddress || rva - h.VirtualAddress >= fat_size)
        fail_at({file_, at + kHipWrapperBinary}, "record {} of {} points to 0x{:x}, outside {}", i, rname, va,
                pe_.names[*fat]);
      const auto bundle = std::ranges::find(bundles, rva - h.VirtualAddress);
      if (bundle == bundles.end())
        fail_at({file_, at + kHipWrapperBinary}, "record {} of {} points into the middle of a bundle (0x{:x})", i,
                rname, va);
      result.record_bundles.push_back(static_cast<std::uint64_t>(bundle - bundles.begin()));
      patches_.put<std::uint32_t>(at, formats::kHipkMagic);
      patches_.put<std::uint64_t>(at + kHipWrapperBinary, result.marker_addr);
      patches_.put<std::uint64_t>(at + formats::kHipWrapperIndex, i);
      record_slots.insert(rs.VirtualAddress + i * kHipWrapperSize + kHipWrapperBinary);
      ++result.records;
    }

    // Zero-paging: the whole pages of .hip_fat cut from its raw data.
    DeviceSection d{*fat, h.PointerToRawData, fat_size, h.VirtualAddress, h.SizeOfRawData, h.SizeOfRawData, {}};
    const std::uint64_t start = align_up(d.rva, kKpackPage), end = align_down(d.rva + fat_size, kKpackPage);
    if (end > start) {
      kp_head_ = start - d.rva;
      kp_cut_ = end - start;
      d.new_raw_size = align_up(fat_size - kp_cut_, pe_.file_alignment);
      result.pages_cut = kp_cut_ / kKpackPage;
    } else {
      result.notes.push_back(fmt::format("{} holds no whole 4 KiB page: its raw data stays, unused (as AMD's splitter "
                                         "leaves it)", pe_.names[*fat]));
    }
    devices_.push_back(std::move(d));
    check_base_relocations();
    check_directories();
    // AMD's self-check: no other base-relocated pointer may point into .hip_fat.
    for_each_base_relocation([&](std::uint16_t type, std::uint64_t rva, std::uint64_t entry) {
      if (type != kRelBasedDir64 || record_slots.contains(rva)) return;
      const std::optional<std::size_t> i = pe_.section_at(rva);
      if (!i || rva - pe_.sections[*i].VirtualAddress + 8 > pe_.content_size(*i)) return;  // zero-filled memory
      const std::uint64_t value =
          load_le<std::uint64_t>(data_.data() + pe_.sections[*i].PointerToRawData + (rva - pe_.sections[*i].VirtualAddress));
      if (value >= pe_.image_base + h.VirtualAddress && value - pe_.image_base - h.VirtualAddress < fat_size)
        fail_at({file_, entry}, "the pointer at RVA 0x{:x} (base-relocated) points into {} (0x{:x}), whose bytes "
                "split moves to the archives: not split", rva, pe_.names[*fat], value);
    });

    // The headers: .hip_fat's raw size and the raw data after it (lay_out), .kpackrf, the counts.
    lay_out();
    kp_marker_ = marker;
    kp_marker_at_ = align_up(new_offset(data_.size()), pe_.file_alignment);
    object::coff::SectionHeader k{};
    std::memcpy(k.Name, formats::kKpackRefPeSection.data(), std::min<std::size_t>(sizeof k.Name,
                                                                                 formats::kKpackRefPeSection.size()));
    k.VirtualSize = static_cast<std::uint32_t>(m);
    k.VirtualAddress = static_cast<std::uint32_t>(marker_rva);
    k.SizeOfRawData = static_cast<std::uint32_t>(align_up(m, pe_.file_alignment));
    k.PointerToRawData = static_cast<std::uint32_t>(kp_marker_at_);
    k.Characteristics = object::coff::IMAGE_SCN_MEM_READ | object::coff::IMAGE_SCN_CNT_INITIALIZED_DATA;
    if (kp_marker_at_ + k.SizeOfRawData > 0xffffffffu)
      fail_at({file_, slot}, "{}'s raw data would lie past 4 GiB: not split", formats::kKpackRefPeSection);
    patches_.put(slot, k);
    patches_.put<std::uint16_t>(pe_.coff_header_offset + 2, static_cast<std::uint16_t>(n + 1));
    patches_.put<std::uint32_t>(pe_.optional_header_offset + 56, static_cast<std::uint32_t>(image_size));
    if (pe_.checksum != 0)
      result.notes.push_back("CheckSum computed again (AMD's splitter leaves the input's, which no longer matches)");
    const Report r = write([this](const codec::Sink& out) { emit_kpacked(out); }, sink);
    result.size_before = r.size_before;
    result.size_after = r.size_after;
    return result;
  }

  // The output `pieces` hands over, to `sink`: the checksum covers the whole
  // output, so the pieces are handed over once to sum them, then again to the sink.
  Report write(const std::function<void(const codec::Sink&)>& pieces, const codec::Sink& sink) {
    if (pe_.checksum != 0) {
      Checksum c(pe_.checksum_offset);
      pieces([&](Bytes b) { c.add(b); });
      patches_.put<std::uint32_t>(pe_.checksum_offset, c.value());
    }
    std::uint64_t written = 0;
    pieces([&](Bytes b) {
      written += b.size();
      sink(b);
    });
    report_.size_after = written;
    return std::move(report_);
  }

 private:
  static constexpr std::uint64_t kKpackPage = 4096;  // AMD's PAGE_SIZE: the zero-paging unit

  // Parses the image: a PE32+ image for x86_64 or ARM64 (else refused, the
  // edit named by `done`: "pruned"). True for a DLL.
  bool parse(const char* done) {
    done_ = done;
    pe_ = object::PeImage::parse(data_, file_);
    if (!pe_.pe32plus || (pe_.machine != object::coff::IMAGE_FILE_MACHINE_AMD64 &&
                          pe_.machine != object::coff::IMAGE_FILE_MACHINE_ARM64))
      fail_at({file_, pe_.coff_header_offset}, "only PE32+ images for x86_64 and ARM64 are {} (machine 0x{:x})", done,
              pe_.machine);
    return load_le<std::uint16_t>(data_.data() + pe_.coff_header_offset + 18) & object::coff::IMAGE_FILE_DLL;
  }

  static bool hip_name(std::string_view n) { return n.starts_with(".hip_fat"); }
  static bool cuda_name(std::string_view n) { return formats::is_fatbin_section(n) || n == "__nv_rel"; }

  void find_sections() {
    for (std::size_t i = 0; i < pe_.sections.size(); ++i) {
      const std::string& n = pe_.names[i];
      if (n == ".llvm.offloading" || n == ".llvm.of")
        fail_at({file_, pe_.header_offset(i)}, "section {} of a PE image is not pruned", n);
      if (n.starts_with("__CLANG_OFFLOAD_BUNDLE__") || n.starts_with("__CLANG_"))
        fail_at({file_, pe_.header_offset(i)}, "section {} of a linked file is not pruned", n);
      const bool hip = hip_name(n), cuda = cuda_name(n);
      if (!hip && !cuda) continue;
      if (!devices_.empty() && cuda_ != cuda)
        fail_at({file_, pe_.header_offset(i)}, "the image holds both HIP and CUDA device code sections: not pruned");
      cuda_ = cuda;
      const object::coff::SectionHeader& s = pe_.sections[i];
      if (s.SizeOfRawData == 0) continue;
      if (s.SizeOfRawData % pe_.file_alignment != 0 || s.PointerToRawData % pe_.file_alignment != 0)
        fail_at({file_, pe_.header_offset(i)}, "section {}'s raw data (0x{:x} bytes at 0x{:x}) is not aligned to "
                "FileAlignment 0x{:x}: not pruned", n, static_cast<std::uint32_t>(s.SizeOfRawData),
                static_cast<std::uint32_t>(s.PointerToRawData), pe_.file_alignment);
      devices_.push_back({i, s.PointerToRawData, pe_.content_size(i), s.VirtualAddress, s.SizeOfRawData, 0, {}});
    }
    if (devices_.empty())
      fail_at({file_, 0}, "no .hip_fatbin, .nv_fatbin or __nv_relfatbin section: nothing to prune");
  }

  // Each record of this image's kind (HIP or CUDA): its slot's file offset and its value.
  template <typename F>
  void for_each_record(F&& f) const {
    for (const object::PeImage::Registration& r : pe_.registrations())
      if (r.cuda == cuda_) f(r.slot, r.address);
  }

  void prune_items() {
    std::set<std::uint64_t> pointed;  // RVAs records point at
    for_each_record([&](std::uint64_t, std::uint64_t va) {
      if (va >= pe_.image_base) pointed.insert(va - pe_.image_base);
    });
    Selection each = selection_;
    each.allow_empty = cuda_ || selection_.allow_empty;
    Report all{"", {}, 0, 0};
    for (DeviceSection& d : devices_) {
      const std::string& name = pe_.names[d.index];
      const Bytes section = data_.subspan(d.off, d.size);
      const ByteSource source(section, [this, at = d.off](std::uint64_t o, std::byte* to, std::uint64_t len) {
        in_.read_at(at + o, to, len);
      });
      std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // offset, size
      if (cuda_) {
        if (!formats::has_fatbin_magic(source.prefix(4, header_buf_)))
          fail_at({file_, d.off}, "{} does not start with an NVIDIA fatbin", name);
        for (const formats::Fatbin& f : formats::read_fatbins(source, file_, d.off)) spans.push_back({f.offset, f.size});
      } else {
        for (const formats::BundleSpan& b : rebase_errors(d.off, [&] { return formats::split_bundles(source, file_); }))
          spans.push_back({b.offset, b.size});
        if (spans.empty()) fail_at({file_, d.off}, "{} does not start with an offload bundle", name);
      }
      std::uint64_t cursor = 0;
      for (std::size_t k = 0; k < spans.size(); ++k) {
        Item it{spans[k].first, spans[k].second, 0, 0, {}};
        Report r = prune_item(in_, it, section, d.off, cuda_, each, file_, owned_);
        for (EntryReport e : r.entries) {
          e.where = fmt::format("section {}, {} {} at 0x{:x}", name, cuda_ ? "fatbin" : "bundle", k + 1, d.off + it.offset);
          all.entries.push_back(e);
          report_.entries.push_back(std::move(e));
        }
        // Each item keeps the alignment its address had (up to a page); a
        // fatbin no record points at keeps its place (CUDA's prelinked ones).
        std::uint64_t align = kMaxItemAlign;
        while (align > 1 && (d.rva + it.offset) % align != 0) align /= 2;
        it.new_offset = it.new_size ? align_up(cursor, align) : cursor;
        if (cuda_ && !pointed.contains(d.rva + it.offset)) it.new_offset = it.offset;
        cursor = it.new_offset + it.new_size;
        d.items.push_back(std::move(it));
      }
      if (cursor > d.size)
        fail_at({file_, d.off}, "the pruned {} (0x{:x} bytes) would be larger than the section (0x{:x} bytes): its "
                "compressed bundles compress worse at the default level than they were; not pruned", name, cursor, d.size);
      d.new_raw_size = std::min(d.raw_size, align_up(cursor, pe_.file_alignment));
    }
    check_not_empty(selection_, all, file_);
  }

  const DeviceSection* device_at(std::uint64_t rva) const {
    for (const DeviceSection& d : devices_) {
      const object::coff::SectionHeader& s = pe_.sections[d.index];
      if (rva >= s.VirtualAddress && rva - s.VirtualAddress < std::max<std::uint64_t>(s.VirtualSize, s.SizeOfRawData))
        return &d;
    }
    return nullptr;
  }

  void move_records() {
    const char* record = cuda_ ? "__fatBinC_Wrapper_t" : "__hip_fatbin_wrapper";
    for_each_record([&](std::uint64_t slot, std::uint64_t va) {
      const std::uint64_t rva = va >= pe_.image_base ? va - pe_.image_base : ~std::uint64_t{0};
      const DeviceSection* d = device_at(rva);
      if (!d)
        fail_at({file_, slot}, "the {} at file offset 0x{:x} points to 0x{:x}, outside the device code sections",
                record, slot - kHipWrapperBinary, va);
      const Item* hit = nullptr;
      for (const Item& it : d->items)
        if (d->rva + it.offset == rva) hit = &it;
      if (!hit)
        fail_at({file_, slot}, "the {} at file offset 0x{:x} points into the middle of a {} (0x{:x})", record,
                slot - kHipWrapperBinary, cuda_ ? "fatbin" : "bundle", va);
      if (hit->new_offset != hit->offset) patches_.put<std::uint64_t>(slot, pe_.image_base + d->rva + hit->new_offset);
    });
  }

  // The base relocation blocks, checked; none may fix up bytes of a device code section.
  void check_base_relocations() {
    for_each_base_relocation([&](std::uint16_t type, std::uint64_t rva, std::uint64_t entry) {
      if (const DeviceSection* d = device_at(rva))
        fail_at({file_, entry}, "a base relocation (type {}) fixes up RVA 0x{:x}, inside {}: not {}", type, rva,
                pe_.names[d->index], done_);
      if (type != kRelBasedDir64 && type != 3 /* HIGHLOW */)
        fail_at({file_, entry}, "base relocation type {} at RVA 0x{:x} is not one a PE32+ image holds", type, rva);
    });
  }

  // f(type, RVA fixed up, file offset of the entry) for each base relocation
  // but the padding ones, the blocks checked on the way.
  template <typename F>
  void for_each_base_relocation(F&& f) const {
    const object::PeImage::Directory& dir = pe_.directory(object::PeImage::kDirBaseRelocations);
    if (dir.size == 0) return;
    const std::uint64_t at = file_offset_of(dir.rva, dir.size, "the base relocation table");
    for (std::uint64_t b = 0; b < dir.size;) {
      if (dir.size - b < 8)
        fail_at({file_, at + b}, "a base relocation block header (8 bytes) runs past the table's end (0x{:x} bytes)",
                dir.size);
      const std::uint32_t page = load_le<std::uint32_t>(data_.data() + at + b);
      const std::uint32_t size = load_le<std::uint32_t>(data_.data() + at + b + 4);
      if (size < 8 || size % 2 != 0 || size > dir.size - b)
        fail_at({file_, at + b + 4}, "a base relocation block of 0x{:x} bytes overflows the table (0x{:x} of 0x{:x} "
                "bytes left)", size, dir.size - b, dir.size);
      for (std::uint64_t e = 8; e < size; e += 2) {
        const std::uint16_t v = load_le<std::uint16_t>(data_.data() + at + b + e);
        const std::uint16_t type = v >> 12;
        if (type == kRelBasedAbsolute) continue;
        f(type, std::uint64_t{page} + (v & 0xfff), at + b + e);
      }
      b += size;
    }
  }

  // The data directories (but the certificate table, which is no RVA) must
  // not lie in a device code section; the signature is refused or stripped.
  void check_directories() {
    for (std::size_t i = 0; i < pe_.directories.size(); ++i) {
      const object::PeImage::Directory& d = pe_.directories[i];
      if (d.size == 0 || i == object::PeImage::kDirCertificates) continue;
      for (const DeviceSection& s : devices_) {
        const object::coff::SectionHeader& h = pe_.sections[s.index];
        const std::uint64_t end = std::uint64_t{h.VirtualAddress} + std::max<std::uint64_t>(h.VirtualSize, h.SizeOfRawData);
        if (d.rva < end && std::uint64_t{d.rva} + d.size > h.VirtualAddress)
          fail_at({file_, pe_.directories_offset + 8 * i}, "data directory {} (RVA 0x{:x}) lies in {}: not {}", i,
                  d.rva, pe_.names[s.index], done_);
      }
    }
    const object::PeImage::Directory& cert = pe_.directory(object::PeImage::kDirCertificates);
    cert_size_ = cert.size;
    if (cert.size == 0) return;
    const std::uint64_t at = pe_.directories_offset + 8 * object::PeImage::kDirCertificates;
    if (!selection_.strip_signature)
      fail_at({file_, at}, "the image is signed (an Authenticode certificate table of 0x{:x} bytes at 0x{:x}): pruning "
              "invalidates the signature; give --strip-signature to remove it", cert.size, cert.rva);
    if (std::uint64_t{cert.rva} + cert.size != data_.size())
      fail_at({file_, at}, "the certificate table (0x{:x} bytes at 0x{:x}) does not end the file (0x{:x} bytes): not "
              "stripped", cert.size, cert.rva, data_.size());
    patches_.put_bytes(at, std::vector<std::byte>(8));
    report_.notes.push_back(fmt::format("the Authenticode signature (0x{:x} bytes) was removed: sign the image again",
                                        cert.size));
  }

  std::uint64_t file_offset_of(std::uint64_t rva, std::uint64_t size, const char* what) const {
    const std::optional<std::size_t> i = pe_.section_at(rva);
    if (!i || rva - pe_.sections[*i].VirtualAddress + size > pe_.content_size(*i))
      fail_at({file_, 0}, "{} (0x{:x} bytes at RVA 0x{:x}) lies in no section's file data", what, size, rva);
    return pe_.sections[*i].PointerToRawData + (rva - pe_.sections[*i].VirtualAddress);
  }

  // Where input offset `off` (not inside a device section's freed bytes) lands.
  std::uint64_t new_offset(std::uint64_t off) const {
    std::uint64_t shift = 0;
    for (const DeviceSection& d : devices_)
      if (off >= d.off + d.raw_size) shift += d.raw_size - d.new_raw_size;  // join: wraps, and adds what it gained
    return off - shift;
  }

  void lay_out() {
    // The section table: device sections' raw sizes, the others' file offsets.
    for (std::size_t i = 0; i < pe_.sections.size(); ++i) {
      object::coff::SectionHeader h = pe_.sections[i];
      bool changed = false;
      for (const DeviceSection& d : devices_)
        if (d.index == i && d.new_raw_size != d.raw_size) {
          h.SizeOfRawData = static_cast<std::uint32_t>(d.new_raw_size);
          changed = true;
        }
      if (h.SizeOfRawData != 0 && new_offset(h.PointerToRawData) != h.PointerToRawData) {
        h.PointerToRawData = static_cast<std::uint32_t>(new_offset(h.PointerToRawData));
        changed = true;
      }
      if (changed) patches_.put(pe_.header_offset(i), h);
    }
    move_pointers();
    for (const DeviceSection& d : devices_)
      if (patches_.any_in(d.off, d.off + d.raw_size))
        fail_at({file_, d.off}, "a pointer or table to rewrite lies in {} itself: not {}", pe_.names[d.index], done_);
  }

  // The file pointers outside the section table: the COFF symbol table's, the debug directory's.
  void move_pointers() {
    const std::uint64_t symptr_at = pe_.coff_header_offset + 8;
    if (const std::uint32_t p = load_le<std::uint32_t>(data_.data() + symptr_at); p != 0 && new_offset(p) != p)
      patches_.put<std::uint32_t>(symptr_at, static_cast<std::uint32_t>(new_offset(p)));
    const object::PeImage::Directory& dbg = pe_.directory(object::PeImage::kDirDebug);
    if (dbg.size != 0) {
      const std::uint64_t at = file_offset_of(dbg.rva, dbg.size, "the debug directory");
      for (std::uint64_t e = 0; e + kDebugEntrySize <= dbg.size; e += kDebugEntrySize) {
        const std::uint64_t field = at + e + kDebugPointerToRawData;
        const std::uint32_t p = load_le<std::uint32_t>(data_.data() + field);
        if (p != 0 && new_offset(p) != p) patches_.put<std::uint32_t>(field, static_cast<std::uint32_t>(new_offset(p)));
      }
    }
  }

  void emit(const codec::Sink& out) const {
    std::vector<const DeviceSection*> order;
    for (const DeviceSection& d : devices_) order.push_back(&d);
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->off < b->off; });
    const std::uint64_t end = data_.size() - cert_size_;
    std::uint64_t from = 0;
    for (const DeviceSection* d : order) {
      patches_.emit(data_, from, d->off, out);
      std::uint64_t at = 0;
      for (const Item& it : d->items) {
        if (it.new_size == 0) continue;
        emit_zeros(it.new_offset - at, out);
        for (Bytes piece : it.pieces) {
        out(piece);
        owned_.release(piece);
      }
        at = it.new_offset + it.new_size;
      }
      emit_zeros(d->new_raw_size - at, out);
      from = d->off + d->raw_size;
    }
    patches_.emit(data_, from, end, out);
  }

  // kpack: the image with .hip_fat's head and tail (its pages cut), zeros to
  // its raw size, the rest, then the marker's raw data.
  void emit_kpacked(const codec::Sink& out) const {
    const DeviceSection& d = devices_.front();
    if (kp_cut_ == 0) {
      patches_.emit(data_, 0, data_.size(), out);
    } else {
      patches_.emit(data_, 0, d.off + kp_head_, out);
      patches_.emit(data_, d.off + kp_head_ + kp_cut_, d.off + d.size, out);
      emit_zeros(d.new_raw_size - (d.size - kp_cut_), out);
      patches_.emit(data_, d.off + d.raw_size, data_.size(), out);
    }
    emit_zeros(kp_marker_at_ - new_offset(data_.size()), out);
    out(kp_marker_);
    emit_zeros(align_up(kp_marker_.size(), pe_.file_alignment) - kp_marker_.size(), out);
  }

  // join: the image up to .hip_fat, the joined bundles, zeros to the raw
  // size, the rest (without the marker's raw data where it goes).
  void emit_joined(const codec::Sink& out) const {
    const DeviceSection& d = devices_.front();
    patches_.emit(data_, 0, d.off, out);
    std::uint64_t n = 0;
    fatbin_->emit([&](Bytes b) {
      n += b.size();
      out(b);
    });
    if (n != fatbin_->size)
      fail_at({file_, d.off}, "the joined bundles have 0x{:x} bytes, not the 0x{:x} laid out", n, fatbin_->size);
    emit_zeros(d.new_raw_size - n, out);
    patches_.emit(data_, d.off + d.raw_size, end_, out);
  }

  const InputFile& in_;
  Bytes data_;
  const Selection& selection_;
  const std::string& file_;
  const JoinedFatbin* fatbin_ = nullptr;
  std::uint64_t end_ = 0;
  const char* done_ = "pruned";  // the edit, in messages
  std::uint64_t kp_head_ = 0, kp_cut_ = 0;  // kpack: .hip_fat's bytes before the cut, and cut
  Bytes kp_marker_;                        // kpack: the marker's bytes
  std::uint64_t kp_marker_at_ = 0;         // kpack: their file offset in the output
  object::PeImage pe_;
  std::vector<DeviceSection> devices_;
  bool cuda_ = false;
  std::uint64_t cert_size_ = 0;
  std::vector<std::byte> header_buf_;
  OwnedBytes owned_{file_};  // after file_
  Patches patches_;
  Report report_;
};

}  // namespace

Report join_pe_image(const InputFile& in, const JoinedFatbin& fatbin, const std::string& file, const codec::Sink& sink) {
  static const Selection kNone;
  return PePruner(in, kNone, file).join(fatbin, sink);
}

KpackedBinary kpack_pe_image(const InputFile& in, Bytes marker, std::span<const std::uint64_t> bundles,
                             const std::string& file, const codec::Sink& sink) {
  static const Selection kNone;
  return PePruner(in, kNone, file).kpack(marker, bundles, sink);
}

Report prune_pe_image(const InputFile& in, const Selection& selection, const std::string& file,
                      const codec::Sink& sink) {
  return PePruner(in, selection, file).run(sink);
}

}  // namespace ot::prune
