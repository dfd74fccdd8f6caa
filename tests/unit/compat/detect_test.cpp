#include <doctest/doctest.h>

#include <string>

#include "compat/detect.h"
#include "support/error.h"

using namespace ot::compat;

namespace {

std::string sysfs(const char* tree) { return std::string(OT_TEST_DATA) + "/sysfs/" + tree; }

}  // namespace

TEST_CASE("detect: KFD topology fixtures") {
  auto mi210 = detect(sysfs("gfx90a-mi210"), std::nullopt);
  CHECK(mi210.found_topology);
  CHECK(mi210.cpu_nodes == std::vector<std::uint32_t>{0});
  REQUIRE(mi210.gpus.size() == 1);
  CHECK(mi210.gpus[0].processor == "gfx90a");
  CHECK(mi210.gpus[0].target_id == "gfx90a:sramecc+");
  CHECK(mi210.gpus[0].note == "xnack is chosen per process and not visible in sysfs: set HSA_XNACK or pass --xnack to fix it");
  CHECK(detect(sysfs("gfx90a-mi210"), true).gpus[0].target_id == "gfx90a:sramecc+:xnack+");

  auto navi = detect(sysfs("gfx1100-navi31"), true);
  REQUIRE(navi.gpus.size() == 1);
  CHECK(navi.gpus[0].target_id == "gfx1100");  // no xnack or sramecc on gfx11
  CHECK(navi.gpus[0].note.empty());

  auto two = detect(sysfs("gfx906-gfx90c"), false);
  REQUIRE(two.gpus.size() == 2);
  CHECK(two.gpus[0].target_id == "gfx906:sramecc-:xnack-");
  CHECK(two.gpus[1].target_id == "gfx90c:xnack-");
  CHECK(two.gpus[1].node == 2);

  auto apu = detect(sysfs("kaveri-apu"), std::nullopt);
  REQUIRE(apu.gpus.size() == 1);
  CHECK(apu.gpus[0].apu);
  CHECK(apu.gpus[0].target_id == "gfx700");

  CHECK(detect(sysfs("cpu-only"), std::nullopt).gpus.empty());
  auto future = detect(sysfs("future-gpu"), std::nullopt);
  REQUIRE(future.gpus.size() == 1);
  CHECK(future.gpus[0].target_id.empty());
  CHECK(future.gpus[0].note == "gfx1450 is not in offloadtool's processor table");
  CHECK_FALSE(detect(sysfs("no-such-tree"), std::nullopt).found_topology);
  CHECK_THROWS_WITH_AS(detect(sysfs("malformed"), std::nullopt),
                       (sysfs("malformed") +
                        "/class/kfd/kfd/topology/nodes/1/properties: line 2: '4x' is not a decimal number (property simd_count)")
                           .c_str(),
                       ot::Error);
}
