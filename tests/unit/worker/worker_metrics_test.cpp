#include "worker/worker_metrics.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kb {
namespace {

namespace fs = std::filesystem;

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(WorkerMetrics, RendersJobsByStatusSecondsSpawnsAndPackCache) {
  WorkerMetrics m;
  m.set_job_log_level(spdlog::level::debug);
  m.job_finished("w", 1, 1, "ok", 2.0);
  m.job_finished("w", 2, 1, "ok", 1.0);
  m.job_finished("w", 3, 2, "mismatch", 0.5);
  m.executor_spawned(0.25);
  m.pack_lookup(true);
  m.pack_lookup(false);
  m.pack_lookup(true);
  m.loop_tick({{"registered", 1}});
  WorkerGauges g;
  g.spool_depth = 4;
  g.pack_cache_bytes = 1024;
  const std::string text = m.render(g);
  EXPECT_TRUE(has_line(text, "kb_worker_jobs_total{status=\"ok\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_jobs_total{status=\"mismatch\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_job_seconds_sum 3.5")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_job_seconds_count 3")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_executor_spawn_seconds_sum 0.25")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_pack_cache_hits_total 2")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_pack_cache_misses_total 1")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_pack_cache_bytes 1024")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_spool_depth 4")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_sessions{state=\"registered\"} 1")) << text;
  EXPECT_EQ(text.find("gpu_temperature"), std::string::npos) << "no GPU lines without NVML";
}

TEST(WorkerMetrics, GpuLinesCarryTheUuid) {
  WorkerMetrics m;
  WorkerGauges g;
  g.gpu = WorkerGauges::Gpu{"GPU-1234", 41, 1980, 1980};
  const std::string text = m.render(g);
  EXPECT_TRUE(has_line(text, "kb_worker_gpu_temperature_celsius{uuid=\"GPU-1234\"} 41")) << text;
  EXPECT_TRUE(has_line(text, "kb_worker_gpu_sm_clock_mhz{uuid=\"GPU-1234\"} 1980")) << text;
}

TEST(WorkerMetrics, HealthFollowsTheLoop) {
  WorkerMetrics m;
  EXPECT_FALSE(m.loop_alive(std::chrono::seconds(10)));  // never ticked
  m.loop_tick({});
  EXPECT_TRUE(m.loop_alive(std::chrono::seconds(10)));
}

TEST(WorkerMetrics, SpoolDepthCountsResultFilesAndCacheBytesSumsFiles) {
  const ::kb::test::TempDir dir("kb-worker-metrics-test");
  fs::create_directories(dir / "results");
  fs::create_directories(dir / "packs" / "ab");
  std::ofstream(dir / "results" / "1-1.json") << "{}";
  std::ofstream(dir / "results" / "2-1.json") << "{}";
  std::ofstream(dir / "results" / "3-1.json.bad") << "x";
  std::ofstream(dir / "packs" / "ab" / "pack.so") << std::string(100, 'x');
  EXPECT_EQ(count_files((dir / "results").string()), 2);
  EXPECT_EQ(directory_bytes((dir / "packs").string()), 100);
  EXPECT_EQ(count_files((dir / "missing").string()), 0);
}

}  // namespace
}  // namespace kb
