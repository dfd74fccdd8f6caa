#include "packager/image_args.h"

#include <unordered_map>

#include "formats/llvm_densemap_order.h"

namespace ot::packager {

ImageArgs ImageArgs::parse(std::string_view text) {
  ImageArgs out;
  std::unordered_map<std::string_view, std::size_t> index;  // views into `text`
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view piece = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const std::size_t eq = piece.find('=');
    const std::string_view key = piece.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1);
    if (auto [it, inserted] = index.try_emplace(key, out.args_.size()); inserted)
      out.args_.push_back({std::string(key), std::string(value)});
    else
      out.args_[it->second].value.append(",").append(value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<const formats::OffloadString*> ImageArgs::llvm_order(bool llvm23) const {
  std::vector<std::string_view> keys;
  keys.reserve(args_.size());
  for (const auto& a : args_) keys.push_back(a.key);
  std::vector<const formats::OffloadString*> out;
  out.reserve(args_.size());
  for (std::size_t i : formats::densemap_iteration_order(keys, llvm23 ? formats::llvm23_hash_value : formats::llvm_hash_value,
                                                        llvm23))
    out.push_back(&args_[i]);
  return out;
}

const std::string* ImageArgs::find(std::string_view key) const {
  for (const auto& a : args_)
    if (a.key == key) return &a.value;
  return nullptr;
}

}  // namespace ot::packager
