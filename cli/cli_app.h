// How every `kb` subcommand ends: exit codes and error messages (README, "Using the fleet").
//
//   0  ok
//   1  a runtime failure: the coordinator or the database is unreachable, a job failed
//   2  bad arguments or setup: an unknown problem or preset, a missing endpoint or file
//
// Subcommand callbacks report a failure with fail(code, message): it prints "kb: <message>" to
// stderr and throws CLI::RuntimeError(code), which run_app() turns into the exit code. CLI11's
// own parse errors (unknown flag, missing argument) also exit with 2, after CLI11's message.
//
// Thread safety: called from main's thread only.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "common/status.h"

namespace kb::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

[[noreturn]] void fail(int exit_code, const std::string& message);
// fail() with kExitUsage for kInvalidArgument/kNotFound/kFailedPrecondition (the user can fix
// it by changing the command or the setup), kExitFailure otherwise.
[[noreturn]] void fail(const Status& status);

// Parses and runs `app`; returns the process exit code (see above).
int run_app(CLI::App& app, int argc, const char* const* argv);

}  // namespace kb::cli
