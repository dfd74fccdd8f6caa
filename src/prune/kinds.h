// The pruners of files that hold containers, behind prune_file (prune.h). Each
// checks everything before the first byte reaches the sink, and hands ranges
// of the input on as pieces of in.bytes() (copied in the kernel by the caller).
#pragma once

#include <string>

#include "prune/prune.h"
#include "support/mapped_file.h"

namespace ot::prune {

// ELF shared libraries and executables: prune/linked_elf.cpp.
Report prune_linked_elf(const InputFile& in, const Selection& selection, const std::string& file,
                        const codec::Sink& sink);
// A kpack'd ELF shared library or executable given its device code back
// (join): prune/linked_elf.cpp, with the bundles `fatbin` describes.
struct JoinedFatbin;
Report join_linked_elf(const InputFile& in, const JoinedFatbin& fatbin, const std::string& file,
                       const codec::Sink& sink);
// The same for a kpack'd PE image: prune/pe_image.cpp.
Report join_pe_image(const InputFile& in, const JoinedFatbin& fatbin, const std::string& file,
                     const codec::Sink& sink);
// PE images (DLLs, EXEs): prune/pe_image.cpp.
Report prune_pe_image(const InputFile& in, const Selection& selection, const std::string& file,
                      const codec::Sink& sink);
// ELF relocatable and COFF objects: prune/object.cpp.
Report prune_object(const InputFile& in, const Selection& selection, const std::string& file,
                    const codec::Sink& sink);
// ar archives: prune/archive.cpp.
Report prune_archive(const InputFile& in, const Selection& selection, const std::string& file,
                     const codec::Sink& sink);

}  // namespace ot::prune
