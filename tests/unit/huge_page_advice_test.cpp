// The problem model's huge-page advice (`moeperm bench --huge-pages`, problem_model.hpp):
// with it on, a large Storage's pages are eligible for transparent huge pages, as the
// kernel's own accounting (/proc/self/smaps, THPeligible) says.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "problem_model.hpp"

namespace moeperm::problem_model {
namespace {

// THPeligible of the mapping that holds `address`: 0 or 1, -1 where smaps does not say.
int thp_eligible(uintptr_t address) {
  std::ifstream in("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

class HugePageAdvice : public ::testing::Test {
 protected:
  void TearDown() override { set_huge_page_advice(false); }
};

TEST_F(HugePageAdvice, OffByDefault) { EXPECT_FALSE(huge_page_advice()); }

TEST_F(HugePageAdvice, LargeStorageBecomesEligible) {
  const std::string mode = thp_mode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "THP mode '" << mode << "'";
  set_huge_page_advice(true);
  Storage s(size_t{16} << 20);
  // A byte in the middle lies in the 2 MiB-aligned part that was advised.
  const auto middle = reinterpret_cast<uintptr_t>(s.data()) + s.size() / 2;
  const int eligible = thp_eligible(middle);
  if (eligible < 0) GTEST_SKIP() << "this kernel's smaps has no THPeligible";
  EXPECT_EQ(eligible, 1);
}

}  // namespace
}  // namespace moeperm::problem_model
