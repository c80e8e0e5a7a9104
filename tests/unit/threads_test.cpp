// The thread-count setting of the CPU backend: MOEPERM_NUM_THREADS, else
// moeperm::set_num_threads, else the hardware threads (moeperm.hpp).
#include <gtest/gtest.h>

#include <thread>

#include "testing.hpp"

namespace moeperm::testing {
namespace {

int hardware_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

TEST(Threads, DefaultIsTheHardwareThreads) {
  ScopedEnv env("MOEPERM_NUM_THREADS", nullptr);
  set_num_threads(0);
  EXPECT_EQ(get_num_threads(), hardware_threads());
}

TEST(Threads, SetValueIsUsedAndNonPositiveRestoresDefault) {
  ScopedEnv env("MOEPERM_NUM_THREADS", nullptr);
  {
    ScopedThreads threads(3);
    EXPECT_EQ(get_num_threads(), 3);
    set_num_threads(7);
    EXPECT_EQ(get_num_threads(), 7);
    set_num_threads(-2);
    EXPECT_EQ(get_num_threads(), hardware_threads());
  }
  EXPECT_EQ(get_num_threads(), hardware_threads());
}

TEST(Threads, EnvironmentWinsOverSetValue) {
  ScopedThreads threads(2);
  {
    ScopedEnv env("MOEPERM_NUM_THREADS", "5");
    EXPECT_EQ(get_num_threads(), 5);
  }
  EXPECT_EQ(get_num_threads(), 2);
}

TEST(Threads, InvalidEnvironmentValuesAreIgnored) {
  ScopedThreads threads(2);
  for (const char *bad : {"0", "-4", "many", ""}) {
    ScopedEnv env("MOEPERM_NUM_THREADS", bad);
    EXPECT_EQ(get_num_threads(), 2) << "MOEPERM_NUM_THREADS='" << bad << "'";
  }
}

}  // namespace
}  // namespace moeperm::testing
