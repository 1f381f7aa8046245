#include "common/log.h"
#include "coordinator/db_thread.h"

#include <cstdio>

namespace kb::coord {

DbThread::DbThread(std::unique_ptr<JobStore> store, DbThreadOptions options)
    : store_(std::move(store)), options_(options), thread_([this] { run(); }) {}

DbThread::~DbThread() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void DbThread::submit(Attempt attempt, Finished finished) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back({std::move(attempt), std::move(finished)});
      wake_.notify_one();
      return;
    }
  }
  if (finished) finished(Status::failed_precondition("database thread stopped"));
}

void DbThread::submit_batch(std::shared_ptr<const Batch> batch, std::shared_ptr<BatchOutcome> outcome,
                            Finished finished) {
  auto attempt = [this, batch, outcome](JobStore& store) -> Status {
    if (batch->empty()) return Status::ok();  // only acks ride on it: the order is what counts
    const auto start = std::chrono::steady_clock::now();
    Result<BatchOutcome> r = store.apply(*batch);
    if (!r.is_ok()) return r.status();
    *outcome = std::move(r.value());
    std::lock_guard lock(mutex_);
    ++batches_;
    batch_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Status::ok();
  };
  submit(std::move(attempt), std::move(finished));
}

bool DbThread::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
}

void DbThread::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  wake_.notify_all();
}

bool DbThread::healthy() const {
  std::lock_guard lock(mutex_);
  return up_;
}

DbStats DbThread::stats() const {
  std::lock_guard lock(mutex_);
  return DbStats{up_, batches_, batch_seconds_, queue_.size() + (busy_ ? 1 : 0)};
}

bool DbThread::wait_backoff(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, delay, [&] { return stopping_; });
}

Status DbThread::run_one(Op& op) {
  auto delay = options_.initial_backoff;
  while (true) {
    Status status = op.attempt(*store_);
    const bool outage = !status.is_ok() && store_->is_connection_error(status);
    {
      std::lock_guard lock(mutex_);
      up_ = !outage;
    }
    if (!outage) return status;
    KB_LOGF_WARN("database unavailable (%s); retrying in %lld ms",
                 status.message().c_str(), static_cast<long long>(delay.count()));
    if (!wait_backoff(delay)) return Status::failed_precondition("database thread stopped");
    delay = std::min(delay * 2, options_.max_backoff);
    Status reconnected = store_->reconnect();
    if (!reconnected.is_ok() && !store_->is_connection_error(reconnected)) {
      KB_LOGF_WARN("reconnect: %s", reconnected.message().c_str());
    }
  }
}

void DbThread::run() {
  while (true) {
    Op op;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      op = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    Status status = run_one(op);
    if (op.finished) op.finished(status);
    std::lock_guard lock(mutex_);
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  std::deque<Op> rest;
  {
    std::lock_guard lock(mutex_);
    rest.swap(queue_);
    busy_ = false;
    idle_.notify_all();
  }
  for (Op& op : rest) {
    if (op.finished) op.finished(Status::failed_precondition("database thread stopped"));
  }
}

}  // namespace kb::coord
