// The moeperm command's subcommands and help texts. Exit codes: 0 success, 1 operator
// error or verification failure, 2 bad command line.
#pragma once

#include <span>
#include <string_view>

namespace moeperm::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// `moeperm run [flags]`; args are the arguments after "run".
int run_command(std::span<const std::string_view> args);

// `moeperm bench [flags]`; args are the arguments after "bench".
int bench_command(std::span<const std::string_view> args);

extern const char *const kMainHelp;
extern const char *const kRunHelp;
extern const char *const kBenchHelp;

}  // namespace moeperm::cli
