#include "compress/bundle_file.h"

#include "formats/bundle_sequence.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::compress {
namespace {

// The bundles of a file; a file that holds no binary bundle or CCOB at its
// start is, when `whole_if_none`, one uncompressed bundle (text bundles).
std::vector<formats::BundleSpan> bundles_of(Bytes data, const std::string& file, bool whole_if_none) {
  std::vector<formats::BundleSpan> spans = formats::split_bundles(data, file);
  if (spans.empty()) {
    if (!whole_if_none || data.empty()) fail(file, "not an offload bundle or compressed offload bundle");
    spans.push_back({0, data.size(), false});
  }
  return spans;
}

std::uint64_t common_alignment(const std::vector<formats::BundleSpan>& spans) {
  std::uint64_t align = 4096;
  for (const formats::BundleSpan& s : spans)
    while (align > 1 && s.offset % align != 0) align /= 2;
  return spans.size() > 1 ? align : 1;
}

}  // namespace

void recode_file(const std::string& input, const std::string& output, const RecodeOptions& options) {
  std::shared_ptr<InputFile> in = InputFile::open(input);
  Bytes data = in->bytes();
  std::vector<formats::BundleSpan> spans = bundles_of(data, input, options.action != Action::Decompress);
  const std::uint64_t align = common_alignment(spans);
  OutputFile out(output);
  auto check_hash = [&](const DecodedCcob& d, std::uint64_t base) {
    if (d.hash_matches()) return;
    Error e = hash_mismatch_error(d, input, base);
    if (options.hash == RecodeOptions::Hash::Check) throw e;
    if (options.warn) options.warn(e.what());
  };
  // A CCOB straight into the output: the header is written last, over a
  // placeholder, where the output can seek; otherwise (a pipe) built in memory.
  // `mapped`: the mapping `plain` lies in (from its start), whose pages are
  // dropped once read; null when it is in memory.
  auto write_ccob = [&](Bytes plain, const InputFile* mapped) {
    if (!out.seekable()) {
      out.write(make_ccob(plain, options.ccob, input));
      return;
    }
    std::uint64_t at = out.written();
    out.zeros(formats::ccob_header_size(options.ccob.version == 3 ? 3 : 2));
    formats::CcobHeader h = compress_ccob(
        plain, options.ccob, input, [&](Bytes b) { out.write(b); },
        [&](std::uint64_t n) {
          const std::uint64_t from = mapped ? static_cast<std::uint64_t>(plain.data() - mapped->bytes().data()) : 0;
          if (mapped) mapped->release(from, n);
          if (options.progress && mapped == in.get()) options.progress(from + n, data.size());
        });
    out.write_at(at, formats::write_ccob_header(h));
  };
  // A CCOB decompressed into `target` (the output or a scratch file): straight
  // into its mapping where it is a file (codec::decompress_to).
  auto decompress_ccob = [&](OutputFile& target, Bytes item, std::uint64_t at) {
    return decode_ccob_to(target, item, input, at, options.hash != RecodeOptions::Hash::Skip,
                          [&](std::uint64_t n) {
                            in->release(at, n);
                            if (options.progress) options.progress(at + n, data.size());
                          });
  };
  for (const formats::BundleSpan& s : spans) {
    out.zeros(align_to(out.written(), align) - out.written());
    Bytes item = data.subspan(s.offset, s.size);
    switch (options.action) {
      case Action::Compress:
        if (s.compressed)
          fail_at({input, s.offset}, "the bundle is already compressed (--recompress changes its settings)");
        write_ccob(item, in.get());
        break;
      case Action::Decompress:
        if (!s.compressed) {
          out.copy_from(*in, s.offset, s.size);
          break;
        }
        check_hash(decompress_ccob(out, item, s.offset), s.offset);
        break;
      case Action::Recompress: {
        if (!s.compressed) {
          write_ccob(item, in.get());
          break;
        }
        // The new CCOB is compressed from the whole decompressed bundle at once
        // (LLVM's bytes need it in one piece): a small one is held in memory, a
        // large one goes to an unlinked scratch file beside the output and is
        // compressed from its mapping, whose pages are dropped behind the
        // compressor.
        formats::CcobHeader h = formats::read_ccob_header(item, input);
        auto check = [&](const DecodedCcob& d) { check_hash(d, s.offset); };
        const bool hash = options.hash != RecodeOptions::Hash::Skip;
        if (h.uncompressed_size <= codec::kInMemoryLimit) {
          std::vector<std::byte> plain;
          check(decode_ccob(item, input, s.offset, [&](Bytes b) { plain.insert(plain.end(), b.begin(), b.end()); },
                            hash));
          write_ccob(plain, nullptr);
        } else {
          OutputFile scratch = OutputFile::scratch(output);
          check(decompress_ccob(scratch, item, s.offset));
          std::shared_ptr<InputFile> plain = scratch.map(input);
          write_ccob(plain->bytes(), plain.get());
        }
        break;
      }
    }
    in->release(s.offset, s.size);
  }
  out.commit();
}

std::vector<BundleInfo> inspect_file(const std::string& input) {
  std::shared_ptr<InputFile> in = InputFile::open(input);
  Bytes data = in->bytes();
  std::vector<BundleInfo> result;
  for (const formats::BundleSpan& s : bundles_of(data, input, false)) {
    result.push_back(inspect_bundle(data.subspan(s.offset, s.size), s.compressed, input, s.offset));
    in->release(s.offset, s.size);
  }
  return result;
}

BundleInfo inspect_bundle(Bytes item, bool compressed, const std::string& file, std::uint64_t offset) {
  BundleInfo info{offset, item.size(), compressed, std::nullopt, std::nullopt};
  if (compressed) {
    info.ccob = decode_ccob(item, file, offset, [](Bytes) {});
    info.stream = stream_info(info.ccob->header.method, formats::ccob_payload(item, info.ccob->header));
  }
  return info;
}

}  // namespace ot::compress
