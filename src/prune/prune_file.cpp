// prune_file: which pruner a file goes to (prune.h, kinds.h).
#include <array>
#include <map>

#include "archive/ar_reader.h"
#include "archive/stream_reader.h"
#include "compat/code_object.h"
#include "contents/walker.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "object/object_file.h"
#include "object/pe_image.h"
#include "prune/kinds.h"
#include "prune/per_gpu_rule.h"
#include "support/error.h"

namespace ot::prune {
namespace {

// e_type of an ELF file (identify_object has checked its header).
std::uint16_t elf_type(Bytes data, const std::string& file) {
  return object::visit_elf_class(*object::elf_class_of(data), [&]<typename E>(E) -> std::uint16_t {
    return ByteReader(data, file).read<object::elf::ElfEhdr<E>>(0, "the ELF header").e_type;
  });
}

// Whether a walk of `in` meets any device entry (stopping at the first).
bool holds_device_code(const InputFile& in, const std::string& file) {
  struct Found {};
  class Finder : public contents::Visitor {
   public:
    void entry(const contents::Container&, const contents::Entry&) override { throw Found{}; }
    bool wants_code_object_headers() const override { return false; }
    bool wants_payloads() const override { return false; }
  } finder;
  try {
    contents::walk_input(in, finder, prune_walk_limits(), file);
  } catch (const Found&) {
    return true;
  }
  return false;
}

// The entries of a standalone container (bundle, compressed bundle, offload
// binaries, fatbins), read from its tables alone (a compressed bundle is not
// decoded further), and whether every one stays: then nothing need be
// rewritten (a compressed bundle would be decompressed and compressed again
// for nothing). Not where it holds NVIDIA fatbins: the CUDA driver's rules are
// per fatbin, and prune_file decides.
struct Standalone {
  std::vector<EntryReport> entries;  // each marked kept
  bool all_stay = true;
};

Standalone standalone_entries(const InputFile& in, const Selection& selection, const std::string& file) {
  class Entries : public contents::Visitor {
   public:
    Entries(const Selection& s, const std::string& file) : s_(s), file_(file) {}
    Standalone found;
    void entry(const contents::Container&, const contents::Entry& e) override {
      // A kpack archive's arch key is matched as prune_container matches it: a target ID.
      const std::string& id = e.kpack ? e.id : e.bundle_id;
      found.all_stay = found.all_stay && !e.fatbin && stays(s_, id, {file_, e.offset});
      found.entries.push_back({e.id, e.uncompressed_size, true});
    }
    bool wants_code_object_headers() const override { return false; }
    bool wants_payloads() const override { return false; }

   private:
    const Selection& s_;
    const std::string& file_;
  } v(selection, file);
  contents::walk_input(in, v, prune_walk_limits(), file);
  return std::move(v.found);
}

// Whether the bare device code `b` stays: an AMDGPU code object by its target
// ID (as a bundle's entry), a cubin or PTX as a fatbin holding it alone.
bool bare_stays(const Selection& selection, const compat::BareCode& b, const std::string& file) {
  if (b.kind == compat::BareCode::Kind::AmdgpuCodeObject) return stays(selection, b.id, {file, 0});
  formats::FatbinEntry e;
  e.kind = b.kind == compat::BareCode::Kind::Cubin ? formats::kFatbinKindElf : formats::kFatbinKindPtx;
  std::string_view digits = std::string_view(b.id).substr(b.id.find('_') + 1);
  if (digits.ends_with('a')) e.flags |= formats::kFatbinFlagArchSpecific;
  if (digits.ends_with('f')) e.flags |= formats::kFatbinFlagFamily;
  for (char c : digits)
    if (c >= '0' && c <= '9') e.arch = e.arch * 10 + static_cast<unsigned>(c - '0');
  formats::Fatbin f;
  f.entries.push_back(e);
  return fatbin_keeps(selection, f).front();
}

}  // namespace

contents::Limits prune_walk_limits() {
  contents::Limits l;
  l.kpack_records = false;
  return l;
}

bool prune_reads(Bytes prefix) { return contents::may_hold_device_code(prefix); }

FileOutcome prune_tree_file(const InputFile& in, const Selection& selection, const std::string& file,
                            const codec::Sink& sink, const PerGpuRule* rule, std::string_view path) {
  std::array<std::byte, compat::kBareCodeSniff> head{};
  const std::uint64_t size = in.size();
  const Bytes prefix = in.head(head);
  FileOutcome o;
  o.report.size_before = o.report.size_after = size;
  // A file without device code: a per-GPU file follows its GPU, any other is copied.
  auto without_code = [&] {
    if (rule)
      if (std::optional<FileOutcome> p = rule->decide(path, size, selection)) return std::move(*p);
    return std::move(o);
  };
  if (!prune_reads(prefix)) return without_code();
  if (auto b = compat::bare_code(prefix); b) {
    o.report.container = std::string(b->description());
    if (!b->known) {
      o.report.entries.push_back({b->id, size, true});
      o.report.notes.push_back(fmt::format("kept: the {} names no target this build knows ({})", b->description(), b->id));
      return o;
    }
    const bool kept = bare_stays(selection, *b, file);
    o.report.entries.push_back({b->id, size, kept});
    if (!kept) {
      o.action = FileAction::Remove;
      o.report.size_after = 0;
    }
    return o;
  }
  // A package inside a tree or package is copied, not rewritten: say so where
  // it holds device code.
  if (archive::has_stream_archive_magic(prefix) || archive::has_compression_magic(prefix)) {
    if (holds_device_code(in, file)) {
      o.report.container = "package";
      o.report.notes.push_back("copied as it is: device code inside a package within the input is not pruned");
    }
    return o;
  }
  if (!contents::is_standalone_device_code(prefix)) {
    if (!holds_device_code(in, file)) return without_code();
    o.action = FileAction::Write;
    try {
      o.report = prune_file(in, selection, file, sink);
    } catch (const NothingStays& e) {
      // An object, library or executable none of whose device entries stays
      // cannot be left out as a standalone file is (its host code is needed),
      // and an empty fat binary is what --allow-empty asks for: it is copied as
      // it is. CUDA 13's cuFFT holds one sm_75 cubin: a prune of a CUDA 13
      // install for sm_90 stopped at it (seen with scripts/gpu-survey-cuda).
      // Nothing reached the sink: the check comes before the first byte.
      o.action = FileAction::Copy;
      o.report = e.report();
      for (EntryReport& entry : o.report.entries) entry.kept = true;
      o.report.size_before = o.report.size_after = size;
      o.report.none_for_targets = true;
      o.report.notes.push_back(
          "no device entry for the kept targets: copied as it is (--allow-empty writes it without any)");
    }
    return o;
  }
  // One walk of its tables says whether it holds device code and whether all of it stays.
  Standalone s = standalone_entries(in, selection, file);
  if (s.entries.empty()) return without_code();
  if (s.all_stay) {
    o.report = Report{contents::container_kind(prefix), std::move(s.entries), size, size};
    return o;
  }
  o.action = FileAction::Write;
  // A standalone file of dropped targets only goes, as a bare code object
  // does (nothing reached the sink: every check comes before the first byte).
  try {
    o.report = prune_file(in, selection, file, sink);
  } catch (const NothingStays& e) {
    o.action = FileAction::Remove;
    o.report = e.report();
    o.report.container = contents::container_kind(prefix);
    o.report.size_before = size;
    o.report.size_after = 0;
    o.report.notes.push_back("no device entry stays: the file is left out");
  }
  return o;
}

std::vector<TreeReport::Dropped> TreeReport::dropped_by_target() const {
  std::map<std::string, Dropped> by;
  for (const FileReport& f : files)
    if (f.per_gpu && f.action == FileAction::Remove) {
      Dropped& d = by[f.per_gpu->target];
      d.target = f.per_gpu->target;
      ++d.per_gpu_files;
      d.per_gpu_bytes += f.report.size_before;
    }
  for (const FileReport& f : files)
    for (const EntryReport& e : f.report.entries)
      if (!e.kept) {
        // By target ID: a bare code object's "gfx906" and a bundle's
        // "hipv4-amdgcn-amd-amdhsa--gfx906" are the same GPU's code.
        std::string t = e.id;
        try {
          t = compat::parse_spec(e.id).target_id();
        } catch (const Error&) {
        }
        Dropped& d = by[t];
        d.target = t;
        ++d.entries;
        d.bytes += e.size;
      }
  std::vector<Dropped> out;
  for (auto& [t, d] : by) out.push_back(std::move(d));
  return out;
}

Report prune_file(const InputFile& in, const Selection& selection, const std::string& file,
                  const codec::Sink& sink) {
  Bytes data = in.bytes();
  if (auto b = compat::bare_code(data.first(std::min<std::size_t>(data.size(), compat::kBareCodeSniff))))
    fail_at({file, 0}, "the file is one {} ({}): it stays or goes whole, as prune does with the files of a directory "
            "or package it is in", b->description(), b->id);
  if (archive::is_archive(data) || archive::is_thin_archive(data)) return prune_archive(in, selection, file, sink);
  if (object::is_pe_image(data)) return prune_pe_image(in, selection, file, sink);
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
