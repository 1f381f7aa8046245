// One kb-coordinator per database (docs/security.md): a session-level PostgreSQL advisory lock,
// taken on a connection of its own at start and held for the coordinator's lifetime. A second
// coordinator on the same database would dispatch every job again; it exits instead, with a
// message naming the holder (its host and PostgreSQL backend pid).
//
// The lock lives as long as its connection. watch() checks that connection every `period`; when
// it broke (a database restart) it reconnects and takes the lock again, and when another
// coordinator got the lock meanwhile it calls `on_lost` (kb-coordinator then drains and exits).
//
// Thread safety: acquire() from one thread; watch() runs its own thread, joined by the destructor.
#pragma once

#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace kb::coord {

inline constexpr int64_t kCoordinatorLockKey = 0x6b62636f6f7264;  // "kbcoord"

class InstanceLock {
 public:
  // kFailedPrecondition "another kb-coordinator ..." when the lock is still held elsewhere after
  // `wait` (a coordinator killed just before leaves a backend that takes a moment to notice).
  static Result<std::unique_ptr<InstanceLock>> acquire(
      const std::string& db_url, std::chrono::milliseconds wait = std::chrono::milliseconds(3000));
  ~InstanceLock();

  void watch(std::chrono::milliseconds period, std::function<void(const std::string&)> on_lost);

 private:
  explicit InstanceLock(std::string url) : url_(std::move(url)) {}
  Status take();  // (re)connects and takes the lock
  void watch_loop(std::chrono::milliseconds period, std::function<void(const std::string&)> on_lost);

  std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
  std::thread watcher_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace kb::coord
