#include "packager/packager.h"

#include <sys/stat.h>

#include <cerrno>
#include <deque>
#include <memory>
#include <variant>

#include "archive/ar_writer.h"
#include "packager/llvm_messages.h"
#include "support/llvm_path.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::packager {
namespace {

// InputFile and OutputFile report "'<path>': <strerror>"; LLVM 19's packager
// prints only the strerror part for its inputs and outputs.
[[noreturn]] void rethrow_io(const Error& e, const std::string& path, Diagnostics d) {
  if (std::string reason = open_error_reason(e, path); d == Diagnostics::Llvm19 && !reason.empty())
    throw LlvmError(reason);
  throw e;
}

std::shared_ptr<InputFile> open_input(const std::string& path, Diagnostics d) {
  try {
    return InputFile::open(path);
  } catch (const Error& e) {
    rethrow_io(e, path, d);
  }
}

OutputFile open_output(const std::string& path, Diagnostics d) {
  // LLVM writes through a temporary file inside the folder a name ending with
  // '/' names: where that folder is missing, that fails first (ENOENT).
  struct stat st {};
  if (d == Diagnostics::Llvm19 && path.ends_with('/') && ::stat(path.c_str(), &st) != 0)
    throw LlvmError(errno_text(errno));
  try {
    return OutputFile(path);
  } catch (const Error& e) {
    rethrow_io(e, path, d);
  }
}

void commit_outputs(std::vector<OutputFile>& outs, const std::vector<std::string>& paths, Diagnostics d) {
  try {
    OutputFile::commit_all(outs);
  } catch (const Error& e) {
    for (const std::string& p : paths)
      if (e.message().starts_with(fmt::format("'{}': ", p))) rethrow_io(e, p, d);
    throw;
  }
}

struct SingleOutput {
  const FoundImage* image;
};
struct ArchiveOutput {
  std::vector<const FoundImage*> members;
};
struct PlannedOutput {
  std::string path;
  std::variant<SingleOutput, ArchiveOutput> what;
};

}  // namespace

formats::ImageKind image_kind_for(const std::string& path, Bytes head, target::LlvmRelease release) {
  if (formats::is_llvm_bitcode(head)) return formats::ImageKind::Bitcode;
  const std::string_view ext = llvm_path::extension(path);  // ".cubin"
  return formats::image_kind_from_extension(ext.empty() ? ext : ext.substr(1), release);
}

void create_package(const std::vector<ImageArgs>& images, const std::string& output, Diagnostics d,
                    target::LlvmRelease release) {
  // 23 writes one version-2 binary for all images, its keys in 23's hash order.
  const bool v2 = target::traits(release).offload_binary_version == 2;
  const bool triple_optional = d == Diagnostics::Llvm19 && !target::traits(release).packager_requires_triple;
  struct Prepared {
    std::shared_ptr<InputFile> file;
    formats::OffloadImageDesc desc;
  };
  std::vector<Prepared> prepared;
  prepared.reserve(images.size());
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ImageArgs& args = images[i];
    if (triple_optional && !args.has("file")) throw LlvmError(std::string(llvm_text::kFileRequired22));
    if (!triple_optional && (!args.has("file") || !args.has("triple"))) {
      if (d == Diagnostics::Llvm19) throw LlvmError(std::string(llvm_text::kFileAndTripleRequired19));
      fail({}, "image {}: {}", i, llvm_text::kFileAndTripleRequired19);
    }
    // Several files in one --image (file=a.o,file=b.o, or file=a.o,b.o) give
    // one binary each, all with the image's other keys.
    const std::string& files = *args.find("file");
    const std::vector<const formats::OffloadString*> keys = args.llvm_order(v2);
    for (std::size_t start = 0;;) {
      const std::size_t comma = files.find(',', start);
      const std::string path = files.substr(start, comma == std::string::npos ? comma : comma - start);
      Prepared p;
      p.file = open_input(path, d);
      const Bytes bytes = p.file->bytes();
      const Bytes head = bytes.first(std::min<std::size_t>(4, bytes.size()));
      p.desc.image_kind = static_cast<std::uint16_t>(image_kind_for(path, head, release));
      p.desc.image_size = p.file->size();
      for (const formats::OffloadString* a : keys) {
        if (a->key == "kind")
          p.desc.offload_kind = formats::offload_kind_number(a->value, release);
        else if (a->key != "file")
          p.desc.strings.push_back(*a);
      }
      prepared.push_back(std::move(p));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }

  std::vector<OutputFile> outs;
  outs.push_back(open_output(output, d));
  OutputFile& out = outs.back();
  if (v2) {
    std::vector<formats::OffloadImageDesc> descs;
    for (const Prepared& p : prepared) descs.push_back(p.desc);
    const formats::OffloadBinaryFrame frame = formats::frame_offload_binary_v2(descs);
    out.write(frame.head);
    for (const Prepared& p : prepared) out.copy_from(*p.file, 0, p.desc.image_size);
    out.zeros(frame.tail_padding);
    commit_outputs(outs, {output}, d);
    return;
  }
  for (const Prepared& p : prepared) {
    const formats::OffloadBinaryFrame frame = formats::frame_offload_binary_v1(p.desc);
    out.write(frame.head);
    out.copy_from(*p.file, 0, frame.image_size);
    out.zeros(frame.tail_padding);
  }
  commit_outputs(outs, {output}, d);
}

bool image_matches(const ImageArgs& args, const formats::OffloadEntry& entry,
                   std::optional<target::LlvmRelease> kind_release) {
  for (const formats::OffloadString& a : args.in_order()) {
    if (a.key == "file") continue;
    if (a.key == "kind") {
      const bool same = kind_release ? entry.offload_kind == formats::offload_kind_number(a.value, *kind_release)
                                     : formats::offload_kind_name(entry.offload_kind) == a.value;
      if (!same) return false;
      continue;
    }
    if (entry.get(a.key) != a.value) return false;
  }
  return true;
}

ExtractResult extract_package(const std::string& input, const ExtractOptions& options, Diagnostics d) {
  const std::shared_ptr<InputFile> in = InputFile::open(input);  // "'<path>': <strerror>" in both styles
  const std::vector<FoundImage> images = find_offload_images(in, d, options.release);
  const target::ReleaseTraits& traits = target::traits(options.release);
  const bool llvm23 = d == Diagnostics::Llvm19 && traits.packager_extracts_all;

  ExtractResult result;
  std::vector<PlannedOutput> plan;
  // LLVM 23 reads a nested binary when it reaches its image; they are read
  // here while planning (an error leaves nothing). Held in a deque: the plan
  // points at them.
  std::deque<FoundImage> nested;
  const std::string stem(llvm_path::stem(input));
  const auto generate = [&](const std::vector<const FoundImage*>& matches) {
    std::uint64_t n = 0;
    // Depth first, each image's nested images in place of it. Iterative: a
    // binary nested in each previous one costs 72 bytes a level.
    std::vector<const FoundImage*> todo(matches.rbegin(), matches.rend());
    while (!todo.empty()) {
      const FoundImage* f = todo.back();
      todo.pop_back();
      const Bytes image = f->source->bytes().subspan(f->entry.image_offset, f->entry.image_size);
      if (llvm23 && formats::has_offload_binary_magic(image)) {
        const std::size_t first = nested.size();
        for (FoundImage& inner : find_nested_images(*f, d, options.release)) nested.push_back(std::move(inner));
        for (std::size_t i = nested.size(); i > first; --i) todo.push_back(&nested[i - 1]);
        continue;
      }
      const formats::OffloadEntry& e = f->entry;
      const std::string arch = llvm23 && e.arch().empty() ? std::string() : fmt::format("-{}", e.arch());
      std::string name = fmt::format("{}-{}{}.{}.{}", stem, e.triple(), arch, n++,
                                     formats::image_kind_extension(e.image_kind, options.release));
      result.generated.push_back(name);
      if (!options.directory.empty()) name = options.directory + "/" + name;
      plan.push_back({std::move(name), SingleOutput{f}});
    }
  };

  if (llvm23 && options.selectors.empty()) {
    std::vector<const FoundImage*> all;
    for (const FoundImage& f : images) all.push_back(&f);
    generate(all);
  }
  for (const ImageArgs& args : options.selectors) {
    std::vector<const FoundImage*> matches;
    for (const FoundImage& f : images)
      if (image_matches(args, f.entry, options.kind_release)) matches.push_back(&f);
    if (matches.empty()) continue;
    const std::string* file = args.find("file");
    if (options.archive) {
      if (!file) {
        if (d == Diagnostics::Llvm19) throw LlvmError(std::string(llvm_text::kArchiveNeedsFile));
        fail({}, "--archive needs a 'file' argument in every --image that matches");
      }
      plan.push_back({*file, ArchiveOutput{std::move(matches)}});
    } else if (file) {
      if (matches.size() > 1) options.warn(fmt::format(fmt::runtime(llvm_text::kMultipleMatches), *file));
      plan.push_back({*file, SingleOutput{matches.back()}});
    } else {
      generate(matches);
    }
  }

  std::vector<OutputFile> outs;
  outs.reserve(plan.size());
  for (const PlannedOutput& p : plan) {
    outs.push_back(open_output(p.path, d));
    OutputFile& out = outs.back();
    if (const auto* single = std::get_if<SingleOutput>(&p.what)) {
      const FoundImage& f = *single->image;
      out.copy_from(*f.source, f.entry.image_offset, f.entry.image_size);
    } else {
      std::vector<archive::NewMember> members;
      for (const FoundImage* f : std::get<ArchiveOutput>(p.what).members)
        members.push_back({f->origin, f->source->bytes().subspan(f->entry.image_offset, f->entry.image_size),
                           f->source.get()});
      archive::write_gnu_archive(out, members, {.symbol_table = true, .sym64_threshold = options.sym64_threshold});
    }
    result.written.push_back(p.path);
  }
  commit_outputs(outs, result.written, d);
  return result;
}

}  // namespace ot::packager
