// Pruning relocatable ELF and COFF objects (see kinds.h). Three containers live in them:
//
//   .hip_fatbin                 one or more bundles (binary or CCOB) one after another, each at the
//                               section's alignment: each pruned, packed again at that alignment;
//                               symbols and addends (ELF RELA, COFF in the relocated bytes) at a
//                               bundle start move with it; anything else pointing into it is refused
//   __CLANG_OFFLOAD_BUNDLE__<id>  one entry per section (what the bundler's -type=o writes): a
//                               dropped entry's section is removed, the sections renumbered
//   .llvm.offloading            concatenated OffloadBinaries (SHT_LLVM_OFFLOADING)
//   .nv_fatbin, __nv_relfatbin  NVIDIA fatbins one after another, each pruned (one may keep no
//                               entry: an empty fatbin) and packed as .hip_fatbin's bundles; the
//                               relocations of .nvFatBinSegment's records at a fatbin start move
//
// The same for COFF objects. object::edit_object re-lays the object out (a
// relocatable file has no addresses) and fixes section indices, symbols and
// relocations; what it cannot fix it refuses.
#include <bit>
#include <map>
#include <set>

#include "object/bundle_sections.h"
#include "object/object_file.h"
#include "formats/bundle_sequence.h"
#include "formats/nv_fatbin.h"
#include "prune/kinds.h"
#include "prune/object_plan.h"
#include "support/error.h"

namespace ot::prune {
namespace {

constexpr std::string_view kBundleSectionPrefix = "__CLANG_OFFLOAD_BUNDLE__";

// Runs prune_container on `data` (the bytes at `at` in the object) with errors
// naming `where` and offsets inside the object; its pieces go to `out`.
Report prune_piece(const InputFile& in, Bytes data, std::uint64_t at, const Selection& selection,
                   const std::string& where, object::Layout& out) {
  return rebase_errors(at, [&] {
    return prune_container(data, selection, where, [&](Bytes b) { out.bytes_of(in, b); });
  });
}

// A section as the planning sees it, from either format.
struct SectionView {
  std::size_t index;        // for ObjectEdit::replace
  std::string name;
  Bytes data;               // empty without data
  bool has_data;
  std::uint64_t at;         // file offset of the contents (for errors)
  std::uint64_t header;     // file offset of the section header (for errors)
  std::uint64_t align;      // a power of two
  std::uint32_t type;       // ELF sh_type; 0 for COFF
};

std::uint64_t power_of_two_or_1(std::uint64_t a) { return std::has_single_bit(a) && a <= 0x10000 ? a : 1; }

std::vector<SectionView> elf_sections(Bytes obj, const std::string& file, std::uint16_t& e_type) {
  return object::visit_elf_class(*object::elf_class_of(obj), [&](auto e) {
    using E = decltype(e);
    const auto f = object::ElfFile<E>::parse(obj, file);
    e_type = f.ehdr.e_type;
    std::vector<SectionView> out;
    for (std::size_t i = 1; i < f.shdrs.size(); ++i)
      out.push_back({i, f.names[i], f.contents(i), f.has_data(i), f.shdrs[i].sh_offset, f.header_offset(i),
                     power_of_two_or_1(f.shdrs[i].sh_addralign), f.shdrs[i].sh_type});
    return out;
  });
}

std::vector<SectionView> coff_sections(Bytes obj, const std::string& file) {
  const auto f = object::CoffFile::parse(obj, file);
  std::vector<SectionView> out;
  for (std::size_t i = 0; i < f.sections.size(); ++i) {
    const std::uint32_t a = (f.sections[i].Characteristics & object::coff::IMAGE_SCN_ALIGN_MASK) >> 20;
    out.push_back({i, f.names[i], f.contents(i), f.has_data(i), f.sections[i].PointerToRawData, f.header_offset(i),
                   a == 0 ? 1 : std::uint64_t{1} << (a - 1), 0});
  }
  return out;
}

std::optional<ObjectPlan> plan_sections(const InputFile& in, std::uint64_t base, Bytes obj,
                                        const std::vector<SectionView>& views, std::string container,
                                        const Selection& selection, const std::string& file,
                                        const std::string& where_prefix, bool member) {
  ObjectPlan plan;
  plan.report.container = std::move(container);
  plan.report.size_before = obj.size();
  object::ObjectEdit edit;
  edit.keep_defined_symbols = true;
  std::set<std::string, std::less<>> remove;
  Report sections{"bundle sections", {}, 0, 0};  // the __CLANG_OFFLOAD_BUNDLE__ entries, for check_not_empty
  Report& fatbin_entries = plan.fatbin_entries;  // every fatbin section's, for check_not_empty
  bool found = false;

  for (const SectionView& v : views) {
    const std::string& name = v.name;
    const std::uint64_t at = v.at;
    const std::string where = where_prefix + "section " + name;
    const std::string label = fmt::format("{}: section {}", file, name);
    if (name.starts_with(kBundleSectionPrefix)) {
      found = true;
      const std::string id = name.substr(kBundleSectionPrefix.size());
      const bool kept = stays(selection, id, {file, v.header});
      sections.entries.push_back({id, v.data.size(), kept, where});
      plan.report.entries.push_back(sections.entries.back());
      if (!kept) remove.insert(name);
      continue;
    }
    if (!v.has_data) continue;
    const Bytes data = v.data;
    // An empty section holds no container: with nothing else, prune_object
    // says there is nothing to prune (an archive member is then not an object
    // holding device code).
    if (data.empty() && (name == ".hip_fatbin" || formats::is_fatbin_section(name) || name == ".llvm.offloading" ||
                         v.type == object::elf::SHT_LLVM_OFFLOADING))
      continue;
    const bool hip = name == ".hip_fatbin", nv = formats::is_fatbin_section(name);
    if (hip || nv) {
      found = true;
      // The items one after another: bundles, or NVIDIA fatbins (each may keep
      // no entry: the file as a whole must keep some, checked below).
      std::vector<std::pair<std::uint64_t, std::uint64_t>> items;
      if (hip) {
        for (const formats::BundleSpan& sp : rebase_errors(at, [&] { return formats::split_bundles(data, label); }))
          items.emplace_back(sp.offset, sp.size);
        if (items.empty() && !data.empty()) fail_at({label, at}, "the section does not start with an offload bundle");
      } else {
        if (!formats::has_fatbin_magic(data)) fail_at({label, at}, "the section does not start with an NVIDIA fatbin");
        for (const formats::Fatbin& f : formats::read_fatbins(ByteSource(data), label, at))
          items.emplace_back(f.offset, f.size);
      }
      Selection each = selection;
      if (nv) each.allow_empty = true;
      const char* item_name = hip ? "bundle" : "fatbin";
      object::NewContents c;
      std::map<std::uint64_t, std::uint64_t> starts;  // old item start -> new
      bool dropped = false;
      for (std::size_t k = 0; k < items.size(); ++k) {
        const auto [offset, size] = items[k];
        c.bytes.pad_to(v.align);
        starts[offset] = c.bytes.size();
        object::Layout pruned;
        const Bytes item = data.subspan(offset, size);
        Report r = prune_piece(in, item, at + offset, each, label, pruned);
        for (EntryReport& e : r.entries) {
          e.where = items.size() == 1 ? where : fmt::format("{}, {} {} at 0x{:x}", where, item_name, k + 1, offset);
          plan.report.entries.push_back(e);
          if (nv) fatbin_entries.entries.push_back(e);
        }
        if (r.dropped() == 0) {  // as it was (a CCOB is not compressed again)
          c.bytes.bytes_of(in, item);
          continue;
        }
        dropped = true;
        c.bytes.append(std::move(pruned));
      }
      if (!dropped) continue;
      starts[data.size()] = c.bytes.size();
      c.move = [starts](std::uint64_t off) -> std::optional<std::uint64_t> {
        auto it = starts.find(off);
        if (it == starts.end()) return std::nullopt;
        return it->second;
      };
      c.places = hip ? "the start of a bundle" : "the start of a fatbin";
      edit.replace.emplace(v.index, std::move(c));
      continue;
    }
    if (name == ".llvm.offloading" || v.type == object::elf::SHT_LLVM_OFFLOADING) {
      found = true;
      object::NewContents c;
      Report r = prune_piece(in, data, at, selection, label, c.bytes);
      for (EntryReport& e : r.entries) {
        e.where = where;
        plan.report.entries.push_back(e);
      }
      if (r.dropped() == 0) continue;
      const std::uint64_t old_end = data.size(), new_end = c.bytes.size();
      c.move = [old_end, new_end](std::uint64_t off) -> std::optional<std::uint64_t> {
        if (off == 0) return 0;
        if (off == old_end) return new_end;
        return std::nullopt;
      };
      c.places = "its start or end";
      edit.replace.emplace(v.index, std::move(c));
    }
  }
  if (!found) return std::nullopt;
  check_not_empty(selection, sections, file);
  if (!member) check_not_empty(selection, fatbin_entries, file);
  if (!remove.empty()) edit.remove = [remove](std::string_view n) { return remove.contains(n); };
  // Nothing dropped: the object as it is (laying it out again would give its
  // bytes back, at the cost of reading its tables: most of the time an archive
  // of CUDA objects takes, where many members keep everything).
  if (edit.replace.empty() && remove.empty()) {
    plan.layout.copy(in, base, obj.size());
  } else {
    plan.layout = object::edit_object(in, base, obj, file, std::move(edit));
  }
  plan.report.size_after = plan.layout.size();
  return plan;
}

}  // namespace

bool holds_container(Bytes obj, const std::string& file) {
  for (const object::SectionInfo& s : object::read_sections(obj, file))
    if (s.name.starts_with(kBundleSectionPrefix) || s.name == ".hip_fatbin" || formats::is_fatbin_section(s.name) ||
        s.name == ".llvm.offloading" || s.type == object::elf::SHT_LLVM_OFFLOADING)
      return true;
  return false;
}

std::optional<ObjectPlan> plan_object(const InputFile& in, std::uint64_t base, Bytes obj, const Selection& selection,
                                      const std::string& file, const std::string& where_prefix, bool member) {
  switch (object::identify_object(obj)) {
    case object::ObjectKind::Elf: {
      std::uint16_t type = 0;
      std::vector<SectionView> views = elf_sections(obj, file, type);
      if (type != object::elf::ET_REL) fail_at({file, 0}, "not a relocatable object (e_type 0x{:x})", type);
      return plan_sections(in, base, obj, views, "relocatable object (ELF)", selection, file, where_prefix, member);
    }
    case object::ObjectKind::Coff:
      return plan_sections(in, base, obj, coff_sections(obj, file), "relocatable object (COFF)", selection, file,
                           where_prefix, member);
    default:
      fail_at({file, 0}, "not an ELF or COFF relocatable object");
  }
}

Report prune_object(const InputFile& in, const Selection& selection, const std::string& file,
                    const codec::Sink& sink) {
  std::optional<ObjectPlan> plan = plan_object(in, 0, in.bytes(), selection, file, "");
  if (!plan)
    for (const object::SectionInfo& s : object::read_sections(in.bytes(), file))
      if (s.name == ".hip_fatbin" || formats::is_fatbin_section(s.name) || s.name == ".llvm.offloading" ||
          s.type == object::elf::SHT_LLVM_OFFLOADING)
        fail_at({file, 0}, "section {} is empty: nothing to prune", s.name);
  if (!plan)
    fail_at({file, 0}, "the object holds no offload container (.hip_fatbin, __CLANG_OFFLOAD_BUNDLE__ sections, "
            ".llvm.offloading, .nv_fatbin, __nv_relfatbin)");
  plan->layout.emit(sink);
  return std::move(plan->report);
}

}  // namespace ot::prune
