#include "compat/detect.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "support/error.h"
#include "target/processors.h"

namespace ot::compat {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kCapSramEdc = 0x04000000;  // HSA_CAP_SRAM_EDCSUPPORTED
constexpr std::uintmax_t kMaxProperties = 1 << 16;  // node_show writes ~1.5 KiB

std::map<std::string, std::uint64_t> read_properties(const fs::path& path) {
  std::error_code ec;
  std::uintmax_t size = fs::file_size(path, ec);
  // sysfs reports 4096 for every attribute; a fixture file reports its size.
  if (!ec && size > kMaxProperties) fail(path.string(), "properties file is larger than 0x{:x} bytes", kMaxProperties);
  std::ifstream in(path);
  if (!in) fail(path.string(), "cannot read the properties file");
  std::map<std::string, std::uint64_t> out;
  std::string line;
  std::uint64_t line_no = 0, total = 0;
  while (std::getline(in, line)) {
    ++line_no;
    total += line.size() + 1;
    if (total > kMaxProperties) fail(path.string(), "properties file is larger than 0x{:x} bytes", kMaxProperties);
    if (line.empty()) continue;
    auto sp = line.find(' ');
    if (sp == std::string::npos || sp == 0) fail(path.string(), "line {}: expected '<name> <value>', got '{}'", line_no, line);
    std::string name = line.substr(0, sp);
    std::string_view value(line);
    value.remove_prefix(sp + 1);
    std::uint64_t v = 0;
    auto [ptr, err] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (err != std::errc() || ptr != value.data() + value.size())
      fail(path.string(), "line {}: '{}' is not a decimal number (property {})", line_no, value, name);
    out[name] = v;
  }
  return out;
}

}  // namespace

std::optional<bool> chosen_xnack(const std::string& option) {
  std::string source = "--xnack";
  std::string value = option;
  if (value.empty()) {
    const char* env = std::getenv("HSA_XNACK");
    if (env && *env) {
      value = env;
      source = "HSA_XNACK";
    }
  }
  if (value == "on" || value == "1" || value == "+") return true;
  if (value == "off" || value == "0" || value == "-") return false;
  if (!value.empty()) throw Error({}, fmt::format("{}: '{}' is not on or off (1 or 0)", source, value));
  return std::nullopt;
}

DetectResult detect(const std::string& sysfs_root, std::optional<bool> xnack) {
  DetectResult r;
  fs::path nodes = fs::path(sysfs_root) / "class" / "kfd" / "kfd" / "topology" / "nodes";
  r.topology = nodes.string();
  std::error_code ec;
  if (!fs::is_directory(nodes, ec)) return r;
  r.found_topology = true;
  std::vector<std::pair<std::uint32_t, fs::path>> dirs;
  for (const fs::directory_entry& d : fs::directory_iterator(nodes, ec)) {
    std::string name = d.path().filename().string();
    std::uint32_t n = 0;
    auto [ptr, err] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (err != std::errc() || ptr != name.data() + name.size()) continue;  // not a node directory
    dirs.emplace_back(n, d.path());
  }
  if (ec) fail(nodes.string(), "cannot list the topology nodes: {}", ec.message());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& [n, dir] : dirs) {
    fs::path props = dir / "properties";
    if (!fs::exists(props, ec)) continue;
    auto p = read_properties(props);
    auto get = [&](const char* key) { auto it = p.find(key); return it == p.end() ? std::uint64_t{0} : it->second; };
    if (get("simd_count") == 0) {
      r.cpu_nodes.push_back(n);
      continue;
    }
    DetectedGpu g;
    g.node = n;
    g.properties = props.string();
    g.apu = get("cpu_cores_count") > 0;
    g.vendor_id = static_cast<std::uint32_t>(get("vendor_id"));
    g.device_id = static_cast<std::uint32_t>(get("device_id"));
    if (!p.count("gfx_target_version")) {
      g.note = "no gfx_target_version property (kernel too old to name the processor)";
      r.gpus.push_back(std::move(g));
      continue;
    }
    std::uint64_t version = get("gfx_target_version");
    if (version > 0xffffffff) fail(props.string(), "gfx_target_version {} is out of range", version);
    g.gfx_target_version = static_cast<std::uint32_t>(version);
    g.processor = target::gfx_name_from_version(g.gfx_target_version);
    const target::ProcessorInfo* info = target::find_processor(g.processor);
    if (!info) {
      g.note = g.processor.empty()
                   ? fmt::format("gfx_target_version {} names no gfx processor", version)
                   : fmt::format("{} is not in offloadtool's processor table", g.processor);
      r.gpus.push_back(std::move(g));
      continue;
    }
    g.known = true;
    g.target_id = g.processor;
    if (info->sramecc) {
      g.sramecc = (get("capability") & kCapSramEdc) != 0;
      g.target_id += *g.sramecc ? ":sramecc+" : ":sramecc-";
    }
    g.xnack_supported = info->xnack;
    if (info->xnack) {
      g.xnack = xnack;
      if (xnack)
        g.target_id += *xnack ? ":xnack+" : ":xnack-";
      else
        g.note = "xnack is chosen per process and not visible in sysfs: set HSA_XNACK or pass --xnack to fix it";
    }
    r.gpus.push_back(std::move(g));
  }
  return r;
}

std::string amd_no_gpu_reason(const DetectResult& r) {
  if (!r.found_topology) return fmt::format("no amdkfd topology at {} (is the amdgpu driver loaded?)", r.topology);
  if (r.gpus.empty()) return fmt::format("no AMD GPU in {}", r.topology);
  return {};
}

}  // namespace ot::compat
