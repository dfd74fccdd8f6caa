// offloadtool package: create, extract or list offload binaries (the format
// clang embeds in .llvm.offloading sections), over the same engine as the
// clang-offload-packager personality.
//
//   offloadtool package create -o OUT --image file=F,triple=T[,arch=A][,kind=K][,key=value...]...
//   offloadtool package extract INPUT [--image key=value,...]... [--archive] [-C DIR]
//   offloadtool package list INPUT [--json] [--bytes]
//
// `list --json` prints one JSON object, schema json::Schema::PackageList
// (support/json_schemas.cpp documents its members; offloadtool-json(7)).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/diagnostics.h"
#include "packager/packager.h"
#include "support/json_schemas.h"
#include "support/mapped_file.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

// Length of the UTF-8 sequence at s[i], or 0 when it is not valid UTF-8.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  const std::uint32_t b1 = static_cast<unsigned char>(s[i + 1 < s.size() ? i + 1 : i]);
  if (n == 2 && c < 0xc2) return 0;                       // overlong
  if (n == 3 && c == 0xe0 && b1 < 0xa0) return 0;         // overlong
  if (n == 3 && c == 0xed && b1 >= 0xa0) return 0;        // surrogates
  if (n == 4 && ((c == 0xf0 && b1 < 0x90) || c > 0xf4 || (c == 0xf4 && b1 >= 0x90))) return 0;
  return n;
}

std::string json(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
      ++i;
    } else if (std::size_t n = utf8_length(s, i); n != 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\u{:04x}", c);
      ++i;
    }
  }
  return out + "\"";
}

void print_json(const std::string& input, const std::vector<packager::FoundImage>& images) {
  std::string out = fmt::format("{{\n  \"schema\": {},\n  \"file\": {},\n  \"images\": [",
                                json(json::schema_name(json::Schema::PackageList)), json(input));
  for (std::size_t i = 0; i < images.size(); ++i) {
    const packager::FoundImage& f = images[i];
    const formats::OffloadEntry& e = f.entry;
    out += i == 0 ? "\n" : ",\n";
    out += fmt::format("    {{\n      \"index\": {},\n      \"origin\": {},\n      \"container\": {},\n", i, json(f.origin),
                       json(f.container));
    out += fmt::format("      \"binary\": {{\"offset\": {}, \"size\": {}, \"version\": {}, \"entry\": {}}},\n",
                       f.binary_offset, f.binary_size, f.version, f.entry_index);
    out += fmt::format("      \"image_kind\": {{\"value\": {}, \"name\": {}, \"description\": {}}},\n", e.image_kind,
                       json(formats::image_kind_extension(e.image_kind)),
                       json(formats::image_kind_description(e.image_kind)));
    out += fmt::format("      \"offload_kind\": {{\"value\": {}, \"name\": {}}},\n", e.offload_kind,
                       json(formats::offload_kind_name(e.offload_kind)));
    out += fmt::format("      \"flags\": {},\n      \"triple\": {},\n      \"arch\": {},\n      \"strings\": [", e.flags,
                       json(e.triple()), json(e.arch()));
    for (std::size_t k = 0; k < e.strings.size(); ++k)
      out += fmt::format("{}{{\"key\": {}, \"value\": {}}}", k == 0 ? "" : ", ", json(e.strings[k].key),
                         json(e.strings[k].value));
    out += fmt::format("],\n      \"image\": {{\"offset\": {}, \"size\": {}}}\n    }}", e.image_offset, e.image_size);
  }
  out += images.empty() ? "]\n}\n" : "\n  ]\n}\n";
  print(out);
}

// Sizes as people read them (support/human_size.h), exact with --bytes; offsets in hex.
void print_text(const std::string& input, const std::vector<packager::FoundImage>& images, SizeStyle sizes) {
  std::string out = fmt::format("{}: {} offload image{}\n", input, images.size(), images.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < images.size(); ++i) {
    const packager::FoundImage& f = images[i];
    const formats::OffloadEntry& e = f.entry;
    out += fmt::format("\nimage {}: {}, binary at 0x{:x} ({}, version {}", i, f.container, f.binary_offset,
                       size_text(f.binary_size, sizes), f.version);
    out += f.version >= 2 ? fmt::format(", entry {})\n", f.entry_index) : ")\n";
    out += fmt::format("  {:<10}{} ({})\n", "kind", formats::image_kind_description(e.image_kind), e.image_kind);
    out += fmt::format("  {:<10}{} ({})\n", "producer", formats::offload_kind_name(e.offload_kind), e.offload_kind);
    if (e.flags != 0) out += fmt::format("  {:<10}0x{:x}\n", "flags", e.flags);
    out += fmt::format("  {:<10}{} at 0x{:x}\n", "image", size_text(e.image_size, sizes), e.image_offset);
    for (const formats::OffloadString& s : e.strings) out += fmt::format("  {:<10}{}\n", s.key, s.value);
  }
  print(out);
}

// Creating, a kind the release has no number for is a mistake worth an error
// (LLVM silently writes 0): sycl is one under 19.
std::vector<packager::ImageArgs> parse_images(const std::vector<std::string>& texts, bool creating,
                                              target::LlvmRelease release) {
  std::vector<packager::ImageArgs> out;
  for (const std::string& t : texts) {
    out.push_back(packager::ImageArgs::parse(t));
    if (const std::string* kind = out.back().find("kind");
        creating && kind && *kind != "none" && formats::offload_kind_number(*kind, release) == 0)
      fail({}, "--image {}: unknown offload kind '{}' ({} or none)", t, *kind,
           target::traits(release).sycl_offload_kind != 0 ? "openmp, cuda, hip, sycl" : "openmp, cuda, hip");
  }
  return out;
}

struct PackageOptions {
  std::string output, input, directory;
  std::vector<std::string> image_texts;
  bool archive = false, as_json = false;
  SizeStyle sizes = SizeStyle::Human;  // list's text
};

// Written in the impersonated release's numbering (hip 3 or 4, sycl 0 or 8):
// what that release's clang-linker-wrapper and offload runtime look for.
void create(const PackageOptions& o, target::LlvmRelease release) {
  packager::create_package(parse_images(o.image_texts, true, release), o.output, packager::Diagnostics::Native,
                           release);
}

void extract(const PackageOptions& o, const cli::Invocation& inv) {
  packager::ExtractOptions options;
  options.selectors = parse_images(o.image_texts, false, inv.release);
  // kind= by name, whatever the release: kind=hip selects what 19 (3) and 22 (4) wrote.
  options.kind_release = std::nullopt;
  options.archive = o.archive;
  options.directory = o.directory;
  options.warn = [&](const std::string& w) { cli::print_warning(inv.prog, w); };
  if (o.image_texts.empty()) {
    // Every image under its generated name: a selector without keys.
    options.selectors = {packager::ImageArgs()};
  }
  packager::extract_package(o.input, options, packager::Diagnostics::Native);
}

void list(const PackageOptions& o) {
  const auto in = InputFile::open(o.input);
  const auto images = packager::find_offload_images(in, packager::Diagnostics::Native);
  if (o.as_json)
    print_json(o.input, images);
  else
    print_text(o.input, images, o.sizes);
}

}  // namespace

cli::AppletBody define_package(CLI::App& app) {
  auto o = std::make_shared<PackageOptions>();
  app.description("Create, extract or list offload binaries (the OffloadBinary format clang embeds in\n"
                  ".llvm.offloading sections; what clang-offload-packager reads and writes).");
  app.require_subcommand(1);

  CLI::App* create_cmd = app.add_subcommand("create", "package device images into concatenated offload binaries");
  create_cmd->add_option("-o,--output", o->output, "the file to write ('-' for standard output)")->required();
  create_cmd
      ->add_option("--image", o->image_texts,
                   "one image: file=<path>,triple=<triple>[,arch=<arch>][,kind=openmp|cuda|hip|sycl][,<key>=<value>...] "
                   "(kind numbered as the impersonated LLVM release does: hip 3 in 19, 4 in 22; sycl only in 22); "
                   "a repeated key joins its values with ','")
      ->allow_extra_args(false);

  CLI::App* extract_cmd = app.add_subcommand("extract", "write out the images of a file");
  extract_cmd->add_option("input", o->input, "raw offload binary, object, executable, library or archive ('-' = stdin)")
      ->required();
  extract_cmd
      ->add_option("--image", o->image_texts,
                   "select images whose every key=value matches (kind= by producer name, any release's "
                   "number); file=<path> names the "
                   "output, else <stem>-<triple>-<arch>.<n>.<ext>; default: every image")
      ->allow_extra_args(false);
  extract_cmd->add_flag("--archive", o->archive,
                        "write the matches of each --image into one static archive named by file=");
  extract_cmd->add_option("-C,--directory", o->directory, "folder for generated names (default: the current one)");

  CLI::App* list_cmd = app.add_subcommand("list", "describe the offload images a file contains");
  list_cmd->add_option("input", o->input, "raw offload binary, object, executable, library or archive ('-' = stdin)")
      ->required();
  list_cmd->add_flag("--json", o->as_json,
                     fmt::format("machine-readable output (schema {}; offloadtool-json(7))",
                                 json::schema_name(json::Schema::PackageList)));
  add_bytes_flag(*list_cmd, o->sizes);

  // The subcommands belong to `app`, which outlives the body (cli/run.cpp).
  return [o, create_cmd, extract_cmd](const cli::Invocation& inv) {
    if (create_cmd->parsed())
      create(*o, inv.release);
    else if (extract_cmd->parsed())
      extract(*o, inv);
    else
      list(*o);
    return 0;
  };
}

}  // namespace ot::tools
