// A kpack'd host binary (AMD's rocm-kpack splitter, docs/kpack.md): its HIP
// registration records carry the magic "HIPK" and an index instead of
// pointing at a bundle, and a marker section (.rocm_kpack_ref in ELF, .kpackrf
// in PE) names the archives that hold its code objects. This finds and checks
// them; formats/kpack reads the marker, contents/kpack_search the archives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "object/object_file.h"
#include "support/bytes.h"

namespace ot::object {

struct PeImage;

struct KpackRecord {
  std::uint64_t offset = 0;  // of the 24-byte record, in the file
  std::uint64_t position = 0;  // its place in the records' section
  std::uint32_t index = 0;   // co_index: the "#<index>" of its code objects' binary key
};

struct KpackedBinary {
  std::string records_section;  // ".hipFatBinSegment", ".hipFatB"
  std::vector<KpackRecord> records;  // the HIPK ones, in file order
  std::string marker_section;   // ".rocm_kpack_ref", ".kpackrf"
  std::uint64_t marker_offset = 0;  // where the marker starts, in the file
  Bytes marker;                 // from there to the end of its section
};

// nullopt when no record is HIPK (clang's own records are HIPF). Errors, naming
// `file` and the offset: a records section that is not a whole number of
// records, a record of another magic or version, an index at or past the
// number of records or used twice, no marker section, and in PE a record that
// does not point at the marker.
std::optional<KpackedBinary> find_kpack_records(Bytes data, const std::vector<SectionInfo>& sections,
                                                const std::string& file);
std::optional<KpackedBinary> find_kpack_records(const PeImage& pe, const std::string& file);

}  // namespace ot::object
