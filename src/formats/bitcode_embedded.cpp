#include "formats/bitcode_embedded.h"

#include <map>

#include "formats/llvm_bitstream.h"

namespace ot::formats {
namespace {

// Block IDs and record codes of llvm/Bitcode/LLVMBitCodes.h.
constexpr std::uint64_t kBlockInfoBlock = 0, kModuleBlock = 8, kConstantsBlock = 11;
constexpr std::uint64_t kModuleVersion = 1, kModuleSectionName = 5, kModuleGlobalVar = 7, kModuleFunction = 8,
                        kModuleAliasOld = 9, kModuleAlias = 14, kModuleIFunc = 15;
constexpr std::uint64_t kCstSetType = 1, kCstString = 8, kCstCString = 9;
constexpr std::string_view kSection = ".llvm.offloading";

class ModuleReader {
 public:
  explicit ModuleReader(bitstream::Cursor& c) : c_(c) {}

  std::vector<std::vector<std::byte>> read(unsigned width) {
    bitstream::Block m(c_, width, kModuleBlock, nullptr);
    for (;;) {
      const bitstream::Entry e = m.next();
      if (e.kind == bitstream::Entry::EndBlock) break;
      if (e.kind == bitstream::Entry::SubBlock) {
        if (e.id == kBlockInfoBlock)
          bitstream::read_block_info(c_, m.enter_sub_block(), info_);
        else if (e.id == kConstantsBlock)
          constants(m.enter_sub_block());
        else
          m.skip_sub_block();
        continue;
      }
      record(m.read_record(e.id));
    }
    std::vector<std::vector<std::byte>> out;
    for (auto& [order, bytes] : found_) out.push_back(std::move(bytes));
    return out;
  }

 private:
  void record(const bitstream::Record& r) {
    switch (r.code) {
      case kModuleVersion:
        if (!r.ops.empty()) version_ = r.ops[0];
        break;
      case kModuleSectionName: {
        std::string name;
        for (std::uint64_t ch : r.ops) name.push_back(static_cast<char>(ch));
        sections_.push_back(std::move(name));
        break;
      }
      case kModuleGlobalVar: {
        // v2: [strtab offset, strtab size, type, isconst, initid, linkage, alignment, section, ...]
        // v0/1: the same without the two strtab fields.
        const std::size_t shift = version_ >= 2 ? 2 : 0;
        const std::uint64_t id = values_++;
        if (r.ops.size() <= shift + 5) break;
        const std::uint64_t init = r.ops[shift + 2], section = r.ops[shift + 5];
        if (init != 0 && section != 0 && section <= sections_.size() && sections_[section - 1] == kSection)
          targets_[init - 1].push_back(id);  // equal initialisers are one uniqued constant
        break;
      }
      case kModuleFunction:
      case kModuleAliasOld:
      case kModuleAlias:
      case kModuleIFunc: ++values_; break;
      default: break;
    }
  }

  void constants(unsigned width) {
    bitstream::Block b(c_, width, kConstantsBlock, &info_);
    for (;;) {
      const bitstream::Entry e = b.next();
      if (e.kind == bitstream::Entry::EndBlock) return;
      if (e.kind == bitstream::Entry::SubBlock) {
        b.skip_sub_block();
        continue;
      }
      // Every record but SETTYPE defines the next value; keep the elements of
      // the ones that initialise an embedded object.
      const auto target = targets_.find(values_);
      std::vector<std::byte> bytes;
      bool bytes_ok = true;
      const auto where = c_.here();
      const bitstream::Record r = b.read_record(e.id, [&](std::uint64_t v) {
        if (target == targets_.end()) return;
        bytes_ok = bytes_ok && v <= 0xff;
        bytes.push_back(static_cast<std::byte>(v));
      });
      if (r.code == kCstSetType) continue;
      if (target != targets_.end()) {
        if (r.code != kCstString && r.code != kCstCString)
          fail_at(where, "the initialiser of a {} global is not a byte string (constant code {})", kSection, r.code);
        if (!bytes_ok) fail_at(where, "the initialiser of a {} global holds values above 0xff", kSection);
        if (r.code == kCstCString) bytes.push_back(std::byte{0});
        for (std::uint64_t global : target->second) found_.emplace(global, bytes);
      }
      ++values_;
    }
  }

  bitstream::Cursor& c_;
  bitstream::BlockInfo info_;
  std::uint64_t version_ = 0;
  std::uint64_t values_ = 0;
  std::vector<std::string> sections_;
  std::map<std::uint64_t, std::vector<std::uint64_t>> targets_;  // initialiser value ID -> global value IDs
  std::map<std::uint64_t, std::vector<std::byte>> found_;        // global value ID -> bytes
};

}  // namespace

std::vector<std::vector<std::byte>> read_bitcode_embedded_objects(Bytes data, const std::string& file) {
  const auto [stream, base] = bitstream::bitcode_stream(data, file);
  bitstream::Cursor c(stream, file, base);
  c.fixed(32);  // magic
  bitstream::Block top(c, 2, ~std::uint64_t{0}, nullptr);
  while (c.bits_left() >= 32) {
    const bitstream::Entry e = top.next();
    if (e.kind != bitstream::Entry::SubBlock) fail_at(c.here(), "bitcode top level holds something other than a block");
    if (e.id != kModuleBlock) {
      top.skip_sub_block();
      continue;
    }
    return ModuleReader(c).read(top.enter_sub_block());
  }
  return {};
}

}  // namespace ot::formats
