// offloadtool list: every device-code entry of every file given, through any
// container contents/walker.h knows (bundles, CCOBs, offload binaries, ELF and
// COFF sections, ar, tar, zip, cpio, rpm, .deb), nested to any depth. Entries
// are printed as they are found: memory stays flat however many there are.
//
// Text: per container one header line (its chain and entry count), then one
// line per entry (index, ID, processor from the code object's header, size,
// offset in the named file); per file a total line. Sizes as people read them
// (support/human_size.h: 1.7 MiB), or exact with --bytes; offsets in hex.
//
// --json prints ONE object, schema json::Schema::List (support/json_schemas.cpp
// documents its members; offloadtool-json(7)): the entries as they are found,
// then per file the count (and the error of a file that failed).
//
// A directory is walked file by file (contents/tree.h, in byte order of the
// paths): files without device code are not listed, symbolic links are not
// followed and hard links are listed once (each reported as such), fifos,
// sockets and devices are skipped and reported; a directory without any
// device code is an error as a file is.
//
// A file without device code is an error ("no device code found"), and so is
// a file that cannot be read to its end: the other files are still listed,
// the error (one line on stderr) follows what was listed, and the exit code is 1.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/diagnostics.h"
#include "contents/tree.h"
#include "contents/uri.h"
#include "contents/walker.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "support/json.h"
#include "support/json_schemas.h"
#include "support/printable.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct ListOptions {
  std::vector<std::string> inputs;
  bool json = false;
  SizeStyle sizes = SizeStyle::Human;
  contents::Limits limits;
  Progress::Mode progress = Progress::Mode::Auto;
};

// The listing, printed as the walk finds each entry: nothing of the walk is
// kept but a container's text rows, and the output goes out every 32 KiB.
// Collecting the entries first (an Entry with its strings copied per entry)
// or the whole text (a buffer growing to the listing's size) was most of the
// time of `list --json` on a ROCm library: each page of memory touched for
// the first time costs a page fault, 10-16 us on the machines measured.
//
// JSON: each entry as ",\n    {...}"; what is the same for many entries (the
// file, its URI, a container's path) is made once. Text: a container's rows
// wait for its header, which counts them and sizes the columns.
class Listing : public contents::Visitor {
 public:
  // The buffer has its full size from the start: grown by doubling, it
  // would move into new pages (page faults) at each step.
  Listing(bool json, SizeStyle sizes) : json_(json), sizes_(sizes) { out_.reserve(kFlushSize + 8192); }
  ~Listing() { flush(); }

  // `in_directory`: a file of a directory, whose other files include the
  // archives its kpack'd records name: their entries are listed here (the
  // binary's view) but counted only with the archives' own files.
  void begin(const std::string& file, bool in_directory = false) {
    file_ = file;
    in_directory_ = in_directory;
    entries_ = refused_ = containers_ = bytes_ = kpack_records_ = via_entries_ = via_bytes_ = 0;
    kpack_missing_.clear();
    rows_.clear();
    name_.clear();
    duplicates_.clear();
    if (!json_) return;
    file_json_.clear();
    json::append_str(file_json_, file);
    // No path to name for standard input: no offset either (uri is null exactly when offset is).
    addressable_ = file != "-";
    uri_json_.clear();
    if (addressable_) {
      json::append_str(uri_json_, contents::file_uri(file));
      uri_json_.resize(uri_json_.size() - 1);  // the URI goes on: no closing quote yet
    }
  }
  // Entries and refused duplicates found: none is an error.
  // A kpack'd binary counts as found with no archive at hand (they are named).
  std::uint64_t found() const { return entries_ + refused_ + kpack_records_; }
  std::uint64_t entries() const { return entries_; }
  // A kpack'd binary's search paths where no archive was found (or why none was looked up).
  const std::vector<std::string>& kpack_missing() const { return kpack_missing_; }
  // The file is done: `ok` when it was read to its end. The text form then
  // gives its total; a file that failed lists what came before the failure.
  void end(bool ok) {
    if (json_) return;
    flush_rows();
    if (!ok) return;
    fmt::format_to(fmt::appender(out_), "{}: {} {} in {} {}, {}", printable(file_), entries_,
                   entries_ == 1 ? "entry" : "entries", containers_, containers_ == 1 ? "container" : "containers",
                   size_text(bytes_, sizes_));
    if (via_entries_)
      fmt::format_to(fmt::appender(out_), " (and {} {}, {}, in kpack archives counted with their own files)",
                     via_entries_, via_entries_ == 1 ? "entry" : "entries", size_text(via_bytes_, sizes_));
    out_.push_back('\n');
  }
  void add(std::string_view s) { add(out_, s); }
  void flush() {
    print(std::string_view(out_.data(), out_.size()));
    out_.clear();
  }

  void container(const contents::Container& c) override {
    ++containers_;
    refused_ += c.refused_duplicates.size();
    if (!c.kpack_key.empty()) ++kpack_records_;
    via_binary_ = !c.kpack_key.empty();
    kpack_missing_.insert(kpack_missing_.end(), c.kpack_missing.begin(), c.kpack_missing.end());
    if (json_) {
      path_.clear();
      for (const contents::Link& l : c.chain) {
        if (path_.size()) add(path_, ", ");
        json::append_str(path_, l.text);
      }
      return;
    }
    flush_rows();
    name_ = printable(c.name());
    kpack_archive_ = !c.kpack_key.empty();
    duplicates_.clear();
    for (const std::string& id : c.refused_duplicates) duplicates_.push_back(printable(id));
    missing_.clear();
    for (const std::string& m : c.kpack_missing) missing_.push_back(printable(m));
  }

  // Listed from the tables and the ELF headers: a compressed bundle is decoded that far.
  bool wants_payloads() const override { return false; }
  void entry(const contents::Container&, const contents::Entry& e) override {
    if (in_directory_ && via_binary_) {
      ++via_entries_;
      via_bytes_ += e.size;
    } else {
      ++entries_;
      bytes_ += e.size;
    }
    if (json_)
      json_entry(e);
    else
      rows_.push_back({e.index, printable(e.id), printable(e.processor.value_or("-")), e.size, e.offset, e.compressed,
                       e.local_offset, e.fatbin ? compression_note(e) : e.kpack ? kpack_note(e) : std::string()});
  }

 private:
  struct Row {
    std::uint64_t index;
    std::string id, processor;
    std::uint64_t size;
    std::optional<std::uint64_t> offset;
    bool compressed;
    std::uint64_t local_offset;
    std::string note;  // a fatbin entry's kind and compression: "cubin, LZ4 of 4.0 KiB"
  };

  std::string compression_note(const contents::Entry& e) const {
    if (!e.compressed) return e.kind;
    return fmt::format("{}, {} of {}", e.kind,
                       e.fatbin->compression() == formats::FatbinCompression::Lz4 ? "LZ4" : "zstd",
                       size_text(e.uncompressed_size, sizes_));
  }

  // A kpack entry's binary key, and its compression: "lib/libx.so#0, zstd of 4.0 KiB".
  std::string kpack_note(const contents::Entry& e) const {
    std::string note = printable(e.kpack->binary);
    if (e.compressed) note += fmt::format(", zstd of {}", size_text(e.uncompressed_size, sizes_));
    return note;
  }

  static void add(fmt::memory_buffer& to, std::string_view s) { to.append(s.data(), s.data() + s.size()); }
  void add(const fmt::memory_buffer& b) { out_.append(b.data(), b.data() + b.size()); }
  void number(std::uint64_t n) {
    fmt::format_int text(n);
    out_.append(text.data(), text.data() + text.size());
  }

  void json_entry(const contents::Entry& e) {
    add(listed_ ? ",\n    {\"file\": " : "\n    {\"file\": ");
    listed_ = true;
    add(file_json_);
    add(", \"path\": [");
    add(path_);
    add("], \"index\": ");
    number(e.index);
    add(", \"id\": ");
    json::append_str(out_, e.id);
    add(", \"target\": ");
    json::append_str(out_, e.target);
    add(", \"triple\": ");
    if (e.triple.empty())
      add("null");
    else
      json::append_str(out_, e.triple);
    add(", \"processor\": ");
    if (e.processor)
      json::append_str(out_, *e.processor);
    else
      add("null");
    add(", \"offset\": ");
    bool addressed = e.offset && addressable_;
    if (addressed)
      number(*e.offset);
    else
      add("null");
    add(", \"size\": ");
    number(e.size);
    add(", \"compressed\": ");
    add(json::boolean(e.compressed));
    add(", \"uri\": ");
    if (addressed) {
      contents::append_code_object_uri(out_, std::string_view(uri_json_.data(), uri_json_.size()), *e.offset, e.size);
      out_.push_back('"');
    } else {
      add("null");
    }
    add(", \"kind\": ");
    if (e.kind.empty())
      add("null");
    else
      json::append_str(out_, e.kind);
    add(", \"uncompressed_size\": ");
    number(e.uncompressed_size);
    add(", \"kpack\": ");
    if (e.kpack) {
      add("{\"archive\": ");
      json::append_str(out_, e.kpack_archive);
      add(", \"binary\": ");
      json::append_str(out_, e.kpack->binary);
      add(", \"arch\": ");
      json::append_str(out_, e.kpack->arch);
      add(", \"ordinal\": ");
      number(e.kpack->ordinal);
      add(", \"offset\": ");
      number(e.kpack->offset);
      add("}");
    } else {
      add("null");
    }
    add("}");
    if (out_.size() >= kFlushSize) flush();
  }

  // The text form of the container before: its header, then its rows.
  void flush_rows() {
    if (name_.empty()) return;
    // Sizes right-aligned in at least the width of the widest human size ("1023.9 KiB").
    std::size_t id_width = 2, proc_width = 1, size_width = 10;
    for (const Row& r : rows_) {
      id_width = std::max(id_width, r.id.size());
      proc_width = std::max(proc_width, r.processor.size());
      size_width = std::max(size_width, size_cell(r.size, sizes_).size());
    }
    auto to = fmt::appender(out_);
    fmt::format_to(to, "{}: {} {}\n", name_, rows_.size(), rows_.size() == 1 ? "entry" : "entries");
    for (const Row& r : rows_) {
      std::string where = r.offset       ? fmt::format("at 0x{:x}", *r.offset)
                          : kpack_archive_ ? fmt::format("at 0x{:x} of the archive", r.local_offset)
                          : r.compressed && r.note.empty() ? "compressed"
                                         : fmt::format("at 0x{:x} of the member", r.local_offset);
      if (!r.note.empty()) where += fmt::format(" ({})", r.note);
      fmt::format_to(to, "  {:>3}  {:<{}}  {:<{}}  {:>{}}  {}\n", r.index, r.id, id_width, r.processor, proc_width,
                     size_cell(r.size, sizes_), size_width, where);
    }
    for (const std::string& id : duplicates_)
      fmt::format_to(to, "  the bundle stores '{}' twice: its entries are not read (run 'compat verify')\n", id);
    for (const std::string& m : missing_) {
      if (m.starts_with("archives not looked up"))
        fmt::format_to(to, "  {}\n", m);
      else
        fmt::format_to(to, "  no kpack archive found at {}\n", m);
    }
    rows_.clear();
    name_.clear();
    if (out_.size() >= kFlushSize) flush();
  }

  static constexpr std::size_t kFlushSize = 32 << 10;
  bool json_;
  SizeStyle sizes_;
  fmt::memory_buffer out_;
  std::string file_;
  std::uint64_t entries_ = 0, refused_ = 0, containers_ = 0, bytes_ = 0, kpack_records_ = 0;
  std::uint64_t via_entries_ = 0, via_bytes_ = 0;  // reached through a kpack'd binary's records, in a directory
  bool in_directory_ = false, via_binary_ = false;
  std::vector<std::string> kpack_missing_;
  // JSON
  bool listed_ = false;  // an entry is out: the next one needs a comma
  bool addressable_ = false;
  fmt::memory_buffer file_json_, uri_json_, path_;
  // text: the container being listed, its names escaped (support/printable.h)
  std::string name_;
  std::vector<std::string> duplicates_;
  std::vector<std::string> missing_;  // a kpack'd binary's search paths where no archive was found
  bool kpack_archive_ = false;         // the container is an archive a kpack'd binary's record found
  std::vector<Row> rows_;
};

int list(const ListOptions& o, const cli::Invocation& inv) {
  int rc = 0;
  Listing listing(o.json, o.sizes);
  fmt::memory_buffer files;    // --json: the "files" array, after the entries
  fmt::memory_buffer skipped;  // --json: the "skipped" array of directories' links and special files
  bool any_directory = false;
  if (o.json)
    listing.add(fmt::format("{{\n  \"schema\": {},\n  \"entries\": [", json::str(json::schema_name(json::Schema::List))));
  auto report = [&](const std::string& file, const std::optional<std::string>& error) {
    listing.end(!error);
    if (error) {
      listing.flush();  // the error after what was listed before it
      std::fflush(stdout);
      cli::print_error(inv.prog, *error);
      rc = 1;
    }
    if (o.json) {
      files.append(std::string_view(files.size() ? ",\n    {\"file\": " : "\n    {\"file\": "));
      json::append_str(files, file);
      fmt::format_to(fmt::appender(files), ", \"entries\": {}", listing.entries());
      if (!listing.kpack_missing().empty()) {
        files.append(std::string_view(", \"kpack_missing\": ["));
        for (std::size_t i = 0; i < listing.kpack_missing().size(); ++i) {
          if (i) files.append(std::string_view(", "));
          json::append_str(files, listing.kpack_missing()[i]);
        }
        files.push_back(']');
      }
      if (error) {
        files.append(std::string_view(", \"error\": "));
        json::append_str(files, *error);
      }
      files.push_back('}');
    }
  };
  // Walks `file`; nullopt when it was read to its end. `required`: a file
  // without device code is an error (a file named on the command line); a
  // file of a directory without any is simply not listed.
  auto walk = [&](const std::string& file, bool required) {
    listing.begin(file, !required);
    std::optional<std::string> error;
    try {
      {
        Progress progress(o.progress, fmt::format("{} {}", inv.prog, printable(file)), true);
        contents::walk_file(file, listing, with_progress(o.limits, progress));
      }
      if (required && listing.found() == 0) fail_no_device_code(file);
    } catch (const Error& e) {
      error = e.what();
    }
    bool listed = required || error || listing.found() > 0;
    if (listed) report(file, error);
    return listed;
  };
  for (const std::string& input : o.inputs) {
    if (!contents::is_directory(input)) {
      walk(input, true);
      continue;
    }
    // A directory: each regular file walked as if it were named, in the
    // tree's order (contents/tree.h); links and special files reported.
    any_directory = true;
    std::vector<contents::TreeItem> items;
    try {
      items = contents::read_tree(input);
    } catch (const Error& e) {
      listing.begin(input);
      report(input, std::string(e.what()));
      continue;
    }
    bool any = false;
    for (const contents::TreeItem& item : items) {
      if (item.kind == contents::TreeKind::Directory) continue;
      if (item.kind == contents::TreeKind::File) {
        any = walk(item.path, false) || any;
        continue;
      }
      if (o.json)
        append_skipped_json(skipped, item, input);
      else
        listing.add(fmt::format("{}: {}\n", printable(item.path), printable(skipped_text(item, input))));
    }
    if (!any) {
      listing.begin(input);
      report(input, Error::render({input}, kNoDeviceCode));
    }
  }
  if (o.json) {
    listing.add("\n  ],\n  \"files\": [");
    listing.add(std::string_view(files.data(), files.size()));
    listing.add("\n  ]");
    if (any_directory) {
      listing.add(",\n  \"skipped\": [");
      listing.add(std::string_view(skipped.data(), skipped.size()));
      listing.add("\n  ]");
    }
    listing.add("\n}\n");
  }
  return rc;
}

}  // namespace

cli::AppletBody define_list(CLI::App& app) {
  auto o = std::make_shared<ListOptions>();
  app.description(
      "List every device-code entry of every file given, through any container: binary and text bundles, compressed "
      "bundles (CCOB), offload binaries, NVIDIA fat binaries (cubins, PTX), ELF and COFF objects and libraries "
      "(__CLANG_OFFLOAD_BUNDLE__ sections, .hip_fatbin, .llvm.offloading, .nv_fatbin, __nv_relfatbin), ar archives, "
      "tar (gzip, xz, zstd, bzip2), zip, cpio, rpm and .deb packages, nested to any depth. Per container a header "
      "line with its chain and entry count, then index, ID, processor (from the code object's header), size (in "
      "binary units, 1.7 MiB; exact with --bytes) and offset in the file (where the bytes lie there uncompressed; a "
      "fatbin entry's stored bytes, with its kind and compression), printed as they are found. A file without device code, or one that cannot be read to its end, is an error (exit 1): "
      "what was found before the failure is listed, and so are the other files. A directory is read "
      "recursively, its files in byte order of their paths: files without device code are not listed, symbolic "
      "links are not followed, a file with several hard links is listed once, and each link, fifo, socket or "
      "device is reported on a line of its own (JSON: \"skipped\"); a directory without device code is an error.");
  app.add_option("input", o->inputs,
                 "files to read ('-' for standard input); a directory is read file by file, in byte order of the "
                 "paths, symbolic links not followed")
      ->required();
  app.add_flag("--json", o->json,
               fmt::format("print one JSON object (schema {}; offloadtool-json(7))", json::schema_name(json::Schema::List)));
  add_bytes_flag(app, o->sizes);
  add_threads_option(app, o->limits);
  add_progress_option(app, o->progress);
  return [o](const cli::Invocation& inv) { return list(*o, inv); };
}

}  // namespace ot::tools
