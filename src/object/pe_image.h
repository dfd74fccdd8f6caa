// PE images (Windows DLLs and EXEs, PE32 and PE32+): the headers, data
// directories and section table, checked (Microsoft PE/COFF specification).
//
//   "MZ" ... e_lfanew (at 0x3c) -> "PE\0\0" | COFF file header | optional header
//   (magic 0x10b PE32 / 0x20b PE32+: ImageBase, alignments, SizeOfImage,
//   CheckSum, data directories) | section table | section raw data | overlay
//   (the Authenticode certificate table: a file offset, not an RVA)
//
// Linked images keep 8-character section names ("..hip_fat" of .hip_fatbin,
// ".nv_fatb", "__nv_rel" of __nv_relfatbin, ".hipFatB" of .hipFatBinSegment);
// a linker that writes a COFF string table into the image (GNU ld, mingw) may
// keep the long names as "/<offset>" references: both are read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "object/coff_types.h"
#include "support/bytes.h"

namespace ot::object {

// "MZ" with e_lfanew pointing at "PE\0\0" inside the file.
bool is_pe_image(Bytes data);

struct PeImage {
  static constexpr std::uint16_t kPe32 = 0x10b, kPe32Plus = 0x20b;
  static constexpr std::size_t kDirCertificates = 4, kDirBaseRelocations = 5, kDirDebug = 6;

  // Throws ot::Error naming `file` and the offset of the bad header, table or
  // range: sections whose raw data or RVAs lie outside the file or image, or
  // overlap; data directories outside the image; a certificate table outside the file.
  static PeImage parse(Bytes data, const std::string& file);

  struct Directory {
    std::uint32_t rva = 0, size = 0;  // the certificate table's `rva` is a file offset
  };

  Bytes data;
  std::string file;
  std::uint64_t coff_header_offset = 0;      // the COFF file header, after "PE\0\0"
  std::uint64_t optional_header_offset = 0;
  std::uint16_t machine = 0;
  bool pe32plus = false;
  std::uint64_t image_base = 0;
  std::uint32_t section_alignment = 0, file_alignment = 0, size_of_image = 0, size_of_headers = 0;
  std::uint64_t checksum_offset = 0;  // of the optional header's CheckSum
  std::uint32_t checksum = 0;
  std::uint64_t directories_offset = 0;  // of data directory 0
  std::vector<Directory> directories;
  std::uint64_t section_table_offset = 0;
  std::vector<coff::SectionHeader> sections;
  std::vector<std::string> names;  // long names resolved

  std::uint64_t header_offset(std::size_t i) const { return section_table_offset + i * sizeof(coff::SectionHeader); }
  // The bytes of section i's contents in the file: its raw data, up to its
  // VirtualSize where that is smaller (the rest is the linker's padding to
  // FileAlignment); empty without raw data.
  std::uint64_t content_size(std::size_t i) const;
  // The section whose RVA range [VirtualAddress, + max(VirtualSize, SizeOfRawData)) holds `rva`.
  std::optional<std::size_t> section_at(std::uint64_t rva) const;
  const Directory& directory(std::size_t i) const;  // a zero entry when the image has fewer
  // A registration record: HIP's __hip_fatbin_wrapper (in .hipFatB, or
  // .hipFatBinSegment where the long name was kept) or CUDA's
  // __fatBinC_Wrapper_t (.nvFatBi, .nvFatBinSegment): 24 bytes, its magic
  // first, the fat binary's absolute address (ImageBase + RVA) at +8.
  struct Registration {
    bool cuda = false;
    std::size_t section = 0;   // the section holding the record
    std::uint64_t slot = 0;    // file offset of the address
    std::uint64_t address = 0;
  };
  // Every record of the image's registration sections, in file order.
  std::vector<Registration> registrations() const;
  // The file offset of CheckSum's 4 bytes is skipped; the file length added.
  static std::uint32_t compute_checksum(Bytes file, std::uint64_t checksum_offset);
};

}  // namespace ot::object
