// The daemons' log (spdlog to stderr): every line carries a UTC timestamp, the level and the
// component (kb-coordinator, kb-worker, kb-worker-gpus for the --gpu all parent).
//
//   text: 2026-12-01T18:40:02.123Z info kb-worker: job=12 attempt=1 L1_003 started on node1-gpu0
//   json: {"ts":"2026-12-01T18:40:02.123Z","level":"info","component":"kb-worker",
//          "msg":"job=12 attempt=1 L1_003 started on node1-gpu0"}     (one object per line, for log shippers)
//
// Lines about a job start with "job=ID attempt=N " (KB_LOG_JOB), which log shippers parse as
// logfmt fields and `grep job=12` finds.
//
// Call sites use the KB_LOG_* macros (fmt syntax), or KB_LOGF_* (printf syntax, for the call sites
// that were fprintf(stderr, ...) before). A worker session's lines name it after the component:
// "kb-worker: node1-gpu0: ...".
//
// Thread safety: init() once at start-up, before other threads log; logging itself is
// thread-safe (spdlog's _mt sinks).
#pragma once

#include <fmt/printf.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace kb::logging {

enum class Format { kText, kJson };

Result<Format> parse_format(const std::string& name);  // "text" or "json"

// Makes `component` the default logger, writing to stderr in `format`; `level` is one of
// trace, debug, info, warn, error.
Status init(const std::string& component, Format format, const std::string& level = "info");

}  // namespace kb::logging

#define KB_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define KB_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define KB_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
#define KB_LOGF_INFO(...) ::spdlog::info(::fmt::sprintf(__VA_ARGS__))
#define KB_LOGF_WARN(...) ::spdlog::warn(::fmt::sprintf(__VA_ARGS__))
#define KB_LOGF_ERROR(...) ::spdlog::error(::fmt::sprintf(__VA_ARGS__))
// A line about one job, at LEVEL (a spdlog::level::level_enum): "job=ID attempt=N " + FORMAT.
#define KB_LOG_JOB(LEVEL, JOB_ID, ATTEMPT, FORMAT, ...)                                  \
  ::spdlog::log((LEVEL), "job={} attempt={} " FORMAT, static_cast<long long>(JOB_ID),    \
                static_cast<long long>(ATTEMPT) __VA_OPT__(, ) __VA_ARGS__)
