#include "bundler/offload_bundler.h"
#include "bundler/archive_unbundle.h"
#include "bundler/bundle_input.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <unistd.h>

#include "compress/ccob.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_sequence.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "object/bundle_sections.h"
#include "object/object_file.h"
#include "support/llvm_stringmap.h"
#include "support/mapped_file.h"
#include "support/md5.h"
#include "support/output_file.h"
#include "target/target_id.h"

namespace ot::bundler {

using formats::BundleEntry;
using target::BundleId;

namespace {

std::string quoted_command(const std::string& program, const std::vector<std::string>& args) {
  std::string line = fmt::format("\"{}\"", program);
  for (const std::string& a : args) line += fmt::format(" \"{}\"", a);
  return line + "\n";
}

// A deterministic stand-in for the temporary file name LLVM would have created.
std::string temp_name_for_display() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  if (dir.back() == '/') dir.pop_back();
  return dir + "/clang-offload-bundler-000000.tmp";
}

void write_stripped_host(const Config& config, const OpenedBundle& b, OutputFile& out) {
  if (config.print_commands) {
    if (config.err)
      config.err(quoted_command(config.objcopy_path, {"--regex", "--remove-section=__CLANG_OFFLOAD_BUNDLE__.*", "--",
                                                      b.file->path(), temp_name_for_display()}));
    return;  // like LLVM with -###: the output stays empty
  }
  write_stripped_object(b, out);
}

formats::CcobHeader ccob_header_for(const Config& config, std::uint64_t total, std::uint64_t compressed_size,
                                    std::uint64_t hash) {
  formats::CcobHeader h;
  h.version = config.ccob_version;
  h.method = config.compression.method;
  h.uncompressed_size = total;
  h.hash = hash;
  h.header_size = formats::ccob_header_size(h.version);
  h.total_size = h.header_size + compressed_size;
  if (h.version == 2 && *h.total_size > 0xffffffffu) fail_llvm("Total file size exceeds version 2 limit");
  return h;
}

// LLVM's -verbose statistics after compressing (reference 2.13).
void print_compression_stats(const Config& config, const formats::CcobHeader& h, std::uint64_t compressed_size,
                             double secs) {
  if (!config.verbose || !config.err) return;
  secs = std::max(secs, 1e-9);
  double rate = static_cast<double>(h.uncompressed_size) / static_cast<double>(compressed_size);
  config.err(fmt::format(
      "Compressed bundle format version: {}\nTotal file size (including headers): {} bytes\n"
      "Compression method used: {}\nCompression level: {}\nBinary size before compression: {} bytes\n"
      "Binary size after compression: {} bytes\nCompression rate: {:.2f}\nCompression ratio: {:.2f}%\n"
      "Compression speed: {:.2f} MB/s\nTruncated MD5 hash: 0x{:014x}\n",
      h.version, with_commas(*h.total_size), codec::method_name(h.method), config.compression.level,
      with_commas(h.uncompressed_size), with_commas(compressed_size), rate, 100.0 / rate,
      static_cast<double>(h.uncompressed_size) / (1024.0 * 1024.0) / secs, h.hash));
}

}  // namespace

std::string join_missing(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) s += names.size() == 2 ? " and " : (i + 1 == names.size() ? ", and " : ", ");
    s += names[i];
  }
  return s;
}

std::vector<BundleId> check_targets(const Config& config, bool unbundling) {
  std::vector<BundleId> parsed;
  std::set<std::string> seen;
  std::map<std::string, std::set<std::string>> ids_by_group;
  std::size_t hosts = 0;
  bool hip_only = true;
  const bool five_pieces = config.id_rules != target::BundleIdRules::LastDashArch;
  const int major = target::traits(config.reading).major;
  for (const std::string& raw : config.targets) {
    if (!seen.insert(raw).second) fail_llvm("Duplicate targets are not allowed");
    BundleId id(raw, config.id_rules);
    if (!id.has_five_pieces())
      fail_llvm("Targets need to follow the format '<offload kind>-<target triple>', where '<target triple>' "
                "follows the format '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'.");
    if (!id.is_valid()) {
      std::string msg = fmt::format("invalid target '{}'", raw);
      if (!id.has_valid_kind()) msg += fmt::format(", unknown offloading kind '{}'", id.kind());
      if (!id.has_valid_triple()) msg += fmt::format(", unknown target triple '{}'", id.triple().str());
      throw LlvmError(msg);
    }
    // LLVM 22 would write such a target under an ID that lost its processor
    // (or put it in the environment's place) without a word: refused, with
    // the spelling that keeps it. Requests when unbundling stay 22's (they
    // find nothing, as 22 says).
    if (five_pieces && !unbundling) {
      if (auto lossy = target::lossy_under_five_pieces(raw, config.id_rules)) {
        std::string msg = fmt::format("target '{}': LLVM {} would write it as '{}', losing '{}'", raw, major,
                                      lossy->would_write, lossy->lost);
        msg += lossy->use_instead.empty()
                   ? fmt::format(" (not an offload architecture LLVM {} knows)", major)
                   : fmt::format("; write '{}'", lossy->use_instead);
        throw LlvmError(msg);
      }
    }
    ids_by_group[id.kind_and_triple()].insert(id.target_id());
    if (id.is_host()) ++hosts;
    hip_only = hip_only && id.is_hip();
    parsed.push_back(std::move(id));
  }
  // LLVM checks the groups in byte order of "<kind>-<triple>" (a std::map).
  for (const auto& [group, ids] : ids_by_group) {
    if (auto c = target::conflicting_target_ids(ids))
      fail_llvm("Cannot bundle inputs with conflicting targets: '{}-{}' and '{}-{}'", group, c->first, group, c->second);
  }
  if ((unbundling && hosts > 1) || (!unbundling && hosts != 1 && !hip_only))
    fail_llvm("expecting exactly one host target but got {}", hosts);
  // Two spellings of one target (hip-amdgcn-amd-amdhsa-gfx906 and ...--gfx906)
  // standardise to the same ID; LLVM then writes a bundle whose header and
  // payloads disagree. Refused instead, after LLVM's own checks.
  std::map<std::string, std::string> by_standard_name;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    auto [it, fresh] = by_standard_name.emplace(parsed[i].str(), config.targets[i]);
    if (!fresh)
      fail_llvm("targets '{}' and '{}' are the same bundle ID '{}'", it->second, config.targets[i], it->first);
  }
  return parsed;
}

void bundle(const Config& config, const std::vector<BundleId>& targets) {
  std::vector<std::shared_ptr<InputFile>> inputs;
  for (const std::string& path : config.inputs) inputs.push_back(InputFile::open(path));
  std::size_t host_index = 0;
  bool has_host = false;
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (targets[i].is_host()) host_index = i, has_host = true;
  Handler handler = handler_for(config.type, inputs[has_host ? host_index : 0]->bytes());
  std::vector<std::string> ids;
  for (const BundleId& t : targets) ids.push_back(t.str());

  OutputFile out(config.outputs[0]);
  if (handler == Handler::Object) {
    if (!has_host)
      fail("", "bundling an object file needs a host target: its input is the object the device code is added to");
    if (config.compress) {
      // LLVM compresses its (empty) in-memory buffer and writes it before
      // llvm-objcopy replaces the output: only the -verbose statistics remain.
      auto t0 = std::chrono::steady_clock::now();
      Md5 md5;
      auto empty = codec::compress_all(config.compression, {});
      print_compression_stats(config, ccob_header_for(config, 0, empty.size(), md5.truncated()), empty.size(),
                              seconds_since(t0));
    }
    if (config.print_commands) {
      std::vector<std::string> args;
      for (std::size_t i = 0; i < targets.size(); ++i) {
        std::string section = std::string(kSectionPrefix) + ids[i];
        args.push_back(fmt::format("--add-section={}={}", section,
                                   i == host_index ? temp_name_for_display() : config.inputs[i]));
        args.push_back(fmt::format("--set-section-flags={}=readonly,exclude", section));
      }
      args.insert(args.end(), {"--", config.inputs[host_index], config.outputs[0]});
      if (config.err) config.err(quoted_command(config.objcopy_path, args));
      out.commit();  // LLVM leaves an empty output behind with -###
      return;
    }
    std::vector<object::AddedSection> sections;
    for (std::size_t i = 0; i < targets.size(); ++i)
      sections.push_back({std::string(kSectionPrefix) + ids[i], i == host_index ? nullptr : inputs[i]});
    object::write_with_added_sections(*inputs[host_index], sections, out);
    out.commit();
    return;
  }

  // The uncompressed bundle is produced as a sequence of pieces, each either
  // literal bytes or a range of an input; it is streamed to the output directly
  // or through the compressor, never assembled in memory.
  struct Piece {
    std::vector<std::byte> literal;
    const InputFile* input = nullptr;
    std::uint64_t zeros = 0;
  };
  std::vector<Piece> pieces;
  std::uint64_t total = 0;
  auto add_literal = [&](std::string_view s) {
    pieces.push_back({{reinterpret_cast<const std::byte*>(s.data()), reinterpret_cast<const std::byte*>(s.data()) + s.size()}});
    total += s.size();
  };
  if (handler == Handler::Text) {
    std::string_view comment = *formats::text_comment_for_type(config.type);
    std::string start = formats::text_start_marker(comment), end = formats::text_end_marker(comment);
    for (std::size_t i = 0; i < targets.size(); ++i) {
      add_literal(start + ids[i] + "\n");
      pieces.push_back({{}, inputs[i].get(), 0});
      total += inputs[i]->size();
      add_literal(end + ids[i] + "\n");
    }
  } else {
    std::vector<std::uint64_t> sizes;
    for (const auto& in : inputs) sizes.push_back(in->size());
    formats::BinaryBundleLayout layout = formats::layout_binary_bundle(ids, sizes, config.bundle_align);
    std::uint64_t at = layout.header.size();
    pieces.push_back({std::move(layout.header)});
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (layout.offsets[i] > at) pieces.push_back({{}, nullptr, layout.offsets[i] - at});
      pieces.push_back({{}, inputs[i].get(), 0});
      at = layout.offsets[i] + sizes[i];
    }
    total = layout.total_size;
  }

  if (!config.compress) {
    for (const Piece& p : pieces) {
      if (p.input)
        out.copy_from(*p.input, 0, p.input->size());
      else if (p.zeros)
        out.zeros(p.zeros);
      else
        out.write(p.literal);
    }
    out.commit();
    return;
  }

  if (config.ccob_version == 2 && total > 0xffffffffu) fail_llvm("Uncompressed size exceeds version 2 limit");
  auto t0 = std::chrono::steady_clock::now();
  // The compressed bytes go to the output behind room for the header, which is
  // written last (it holds their size and the hash); a stream output (stdout)
  // cannot be rewritten, so there they wait in memory.
  const bool direct = out.seekable();
  const std::uint64_t header_size = formats::ccob_header_size(config.ccob_version);
  std::vector<std::byte> compressed;
  std::uint64_t compressed_size = 0;
  if (direct) out.zeros(header_size);
  codec::Sink sink = [&](Bytes b) {
    compressed_size += b.size();
    if (config.ccob_version == 2 && header_size + compressed_size > 0xffffffffu)
      fail_llvm("Total file size exceeds version 2 limit");
    if (direct)
      out.write(b);
    else
      compressed.insert(compressed.end(), b.begin(), b.end());
  };
  // LLVM's bytes (one compression call over the whole uncompressed bundle)
  // need the bundle in one piece of memory: a small one is laid out in memory,
  // a large one in an unlinked scratch file beside the output, mapped. There
  // an input that starts on a page (HIP's -bundle-align=4096) and whose last
  // page holds nothing after it but zeros is a hole, with the input's own pages
  // mapped over it: nothing is copied. Other inputs are copied in
  // (copy_file_range). compress::compress_ccob reads it in place and hashes it
  // on a second thread meanwhile; the pages behind zstd's window leave memory.
  std::vector<std::byte> plain;
  std::shared_ptr<InputFile> view;
  if (total <= kInMemoryLimit) {
    plain.reserve(total);
    for (const Piece& p : pieces) {
      if (p.input) {
        plain.insert(plain.end(), p.input->bytes().begin(), p.input->bytes().end());
        p.input->release(0, p.input->size());
      } else {
        plain.resize(plain.size() + p.zeros);
        plain.insert(plain.end(), p.literal.begin(), p.literal.end());
      }
    }
  } else {
    const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    std::vector<std::uint64_t> at(pieces.size() + 1);
    for (std::size_t i = 0; i < pieces.size(); ++i)
      at[i + 1] = at[i] + (pieces[i].input ? pieces[i].input->size() : pieces[i].zeros + pieces[i].literal.size());
    // Whether the bundle holds only zeros from the end of piece i to the end of its page.
    auto zeros_to_page_end = [&](std::size_t i) {
      const std::uint64_t end = align_to(at[i + 1], page);
      for (std::size_t j = i + 1; j < pieces.size() && at[j] < end; ++j)
        if (!pieces[j].zeros && at[j + 1] > at[j]) return false;
      return true;
    };
    OutputFile scratch = OutputFile::scratch(config.outputs[0]);
    scratch.resize(total);
    std::vector<std::size_t> holes;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      if (p.input && p.input->mappable() && at[i] % page == 0 && zeros_to_page_end(i)) {
        scratch.skip(p.input->size());
        holes.push_back(i);
      } else if (p.input) {
        scratch.copy_from(*p.input, 0, p.input->size());
      } else if (p.zeros) {
        scratch.skip(p.zeros);
      } else {
        scratch.write(p.literal);
      }
    }
    view = scratch.map(config.outputs[0]);
    for (std::size_t i : holes) view->map_over(at[i], *pieces[i].input);
  }
  compress::CcobOptions ccob;
  ccob.params = config.compression;
  ccob.version = config.ccob_version;
  const formats::CcobHeader h =
      compress::compress_ccob(view ? view->bytes() : Bytes(plain), ccob, config.outputs[0], sink,
                              [&](std::uint64_t n) {
                                if (view) view->release(0, n);
                              });
  if (direct) {
    out.write_at(0, formats::write_ccob_header(h));
  } else {
    out.write(formats::write_ccob_header(h));
    out.write(compressed);
  }
  out.commit();
  print_compression_stats(config, h, compressed_size, seconds_since(t0));
}

Requested standardised(const std::vector<BundleId>& targets, target::BundleIdRules rules) {
  Requested r;
  for (const BundleId& t : targets) {
    r.names.push_back(t.str());
    r.ids.emplace_back(r.names.back(), rules);
  }
  return r;
}

std::shared_ptr<InputFile> open_first_input(const Config& config) {
  return config.first_input ? config.first_input : InputFile::open(config.inputs[0]);
}

void unbundle(const Config& config, const std::vector<BundleId>& targets) {
  if (config.type == "a") return unbundle_archive(config, targets);  // reference 2.16
  std::vector<OpenedBundle> bundles = open_bundles(config, open_first_input(config));

  // The worklist: requested targets in llvm::StringMap order (that is the order
  // LLVM tries them in for each bundle), by their standardised names.
  const auto [names, requested] = standardised(targets, config.id_rules);
  std::vector<std::size_t> order = stringmap_order(names);
  std::vector<bool> pending(targets.size(), false);
  for (std::size_t i : order) pending[i] = true;
  std::size_t remaining = order.size();

  std::vector<std::optional<OutputFile>> outs(targets.size());
  auto output_for = [&](std::size_t i) -> OutputFile& {
    if (!outs[i]) outs[i].emplace(config.outputs[i]);
    return *outs[i];
  };

  for (const OpenedBundle& b : bundles) {
    for (std::size_t entry_index : b.llvm_order()) {
      const BundleEntry& e = b.entries[entry_index];
      if (remaining == 0) break;
      BundleId code_object(e.id, config.id_rules);
      std::optional<std::size_t> match;
      for (std::size_t i : order) {
        if (pending[i] && target::is_code_object_compatible(code_object, requested[i], config.hip_openmp_compatible)) {
          match = i;
          break;
        }
      }
      if (!match) continue;
      OutputFile& out = output_for(*match);
      if (b.is_host_marker(e))
        write_stripped_host(config, b, out);
      else
        out.copy_from(*b.file, b.base + e.offset, e.size);
      pending[*match] = false;
      --remaining;
    }
  }

  if (remaining > 0 && !config.allow_missing_bundles) {
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < targets.size(); ++i)
      if (pending[i]) missing.push_back(names[i]);
    fail_llvm("Can't find bundles for {}", join_missing(std::move(missing)));
  }
  if (remaining == targets.size()) {
    // Nothing found (only reachable with -allow-missing-bundles): the host
    // outputs get the (decompressed) input itself, the others are empty. Of
    // several concatenated bundles, as newer LLVM, the raw input.
    const InputFile& whole = bundles.size() == 1 ? *bundles[0].file : *bundles[0].input;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      OutputFile& out = output_for(i);
      if (targets[i].is_host()) out.copy_from(whole, 0, whole.size());
    }
  } else {
    for (std::size_t i = 0; i < targets.size(); ++i)
      if (pending[i]) output_for(i);
  }
  std::vector<OutputFile> all;
  for (auto& o : outs)
    if (o) all.push_back(std::move(*o));
  OutputFile::commit_all(all);
}

void list(const Config& config) {
  std::shared_ptr<InputFile> in = open_first_input(config);
  if (std::optional<std::string> text = list_as_23(config, in)) {
    if (config.out) config.out(*text);
    return;
  }
  std::string text;
  for (const OpenedBundle& b : open_bundles(config, in))
    for (const BundleEntry& e : b.entries) text += e.id + "\n";
  if (config.out) config.out(text);
}

}  // namespace ot::bundler
