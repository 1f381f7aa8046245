#include "coordinator/instance_lock.h"

#include <stdexcept>

#include "coordinator/pg_status.h"

namespace kb::coord {

Result<std::unique_ptr<InstanceLock>> InstanceLock::acquire(const std::string& db_url,
                                                            std::chrono::milliseconds wait) {
  std::unique_ptr<InstanceLock> lock(new InstanceLock(db_url));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    const Status taken = lock->take();
    if (taken.is_ok()) return lock;
    // Held elsewhere: a coordinator killed a moment ago leaves its backend to notice, so wait a
    // little before calling it a second coordinator.
    if (taken.code() != StatusCode::kFailedPrecondition || std::chrono::steady_clock::now() >= deadline) {
      return taken;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

InstanceLock::~InstanceLock() {
  {
    std::lock_guard guard(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

Status InstanceLock::take() {
  try {
    conn_.reset();
    auto conn = std::make_unique<pqxx::connection>(with_connect_timeout(url_));
    pqxx::nontransaction txn(*conn);
    txn.exec("SET application_name = 'kb-coordinator'");
    if (txn.exec_params1("SELECT pg_try_advisory_lock($1)", kCoordinatorLockKey)[0].as<bool>()) {
      conn_ = std::move(conn);
      return Status::ok();
    }
    // Who holds it: the other coordinator's backend, as PostgreSQL sees it.
    const pqxx::result holder = txn.exec_params(
        "SELECT a.pid, COALESCE(host(a.client_addr), 'local socket') FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
        "AND l.objid = ($1::bigint & 4294967295)::oid AND l.classid = ($1::bigint >> 32)::oid",
        kCoordinatorLockKey);
    std::string who = "another session";
    if (!holder.empty()) {
      who = "backend pid " + holder[0][0].as<std::string>() + " from " + holder[0][1].as<std::string>();
    }
    return Status::failed_precondition(
        "another kb-coordinator is already serving this database (" + who +
        "): one coordinator per database, or every job would be dispatched twice. Stop it first.");
  } catch (...) {
    return current_pg_status("the coordinator lock");
  }
}

void InstanceLock::watch(std::chrono::milliseconds period,
                         std::function<void(const std::string&)> on_lost) {
  watcher_ = std::thread([this, period, on_lost = std::move(on_lost)] { watch_loop(period, on_lost); });
}

void InstanceLock::watch_loop(std::chrono::milliseconds period,
                              std::function<void(const std::string&)> on_lost) {
  std::unique_lock guard(mutex_);
  while (!stop_cv_.wait_for(guard, period, [this] { return stop_; })) {
    bool alive = false;
    try {
      if (!conn_) throw std::runtime_error("no connection");
      pqxx::nontransaction txn(*conn_);
      alive = txn.exec_params1("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                               "pid = pg_backend_pid() AND granted AND objid = ($1::bigint & 4294967295)::oid",
                               kCoordinatorLockKey)[0].as<int>() > 0;
    } catch (...) {
      alive = false;
    }
    if (alive) continue;
    const Status retaken = take();
    if (retaken.is_ok()) continue;
    if (retaken.code() == StatusCode::kFailedPrecondition) {  // someone else holds it now
      on_lost(retaken.message());
      return;
    }
    // The database is down: nobody else can take the lock either; try again next period.
  }
}

}  // namespace kb::coord
