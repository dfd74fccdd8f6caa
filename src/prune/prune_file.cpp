// prune_file: which pruner a file goes to (prune.h, kinds.h).
#include "archive/ar_reader.h"
#include "object/object_file.h"
#include "prune/kinds.h"
#include "support/error.h"

namespace ot::prune {
namespace {

// e_type of an ELF file (identify_object has checked its header).
std::uint16_t elf_type(Bytes data, const std::string& file) {
  return object::visit_elf_class(*object::elf_class_of(data), [&]<typename E>(E) -> std::uint16_t {
    return ByteReader(data, file).read<object::elf::ElfEhdr<E>>(0, "the ELF header").e_type;
  });
}

}  // namespace

Report prune_file(const InputFile& in, const Selection& selection, const std::string& file,
                  const compress::Sink& sink) {
  Bytes data = in.bytes();
  if (archive::is_archive(data) || archive::is_thin_archive(data)) return prune_archive(in, selection, file, sink);
  switch (object::identify_object(data)) {
    case object::ObjectKind::Elf:
      if (elf_type(data, file) == object::elf::ET_REL) return prune_object(in, selection, file, sink);
      return prune_linked_elf(in, selection, file, sink);
    case object::ObjectKind::Coff:
      return prune_object(in, selection, file, sink);
    case object::ObjectKind::OtherObject:
      fail_at({file, 0}, "Mach-O, Wasm, XCOFF and GOFF objects are not pruned");
    case object::ObjectKind::NotObject:
      break;
  }
  return prune_container(data, selection, file, sink);
}

}  // namespace ot::prune
