#include "common/log.h"
#include "coordinator/db_thread.h"

#include <cstdio>
#include <type_traits>

namespace kb::coord {
namespace {

template <typename T>
Batch with_only(std::vector<T> Batch::*member, const std::vector<T>& items, size_t begin, size_t end) {
  Batch b;
  (b.*member).assign(items.begin() + static_cast<std::ptrdiff_t>(begin),
                     items.begin() + static_cast<std::ptrdiff_t>(end));
  return b;
}

// The result row that says why the worker's result could not be stored.
ResultRow unstorable(const ResultRow& row, const Status& why) {
  ResultRow r = row;
  const nlohmann::json& original = row.result;
  r.result = {{"status", "runtime_error"},
              {"message", "the coordinator could not store this result: " + why.message()},
              {"problem_id", original.is_object() ? original.value("problem_id", "") : ""},
              {"preset", original.is_object() ? original.value("preset", "") : ""}};
  return r;
}

// Applies items [begin, end) of one kind; halves on a data error. `inserted` gets the results'
// outcome at their indices.
template <typename T>
Status apply_range(JobStore& store, std::vector<T> Batch::*member, const std::vector<T>& items,
                   size_t begin, size_t end, std::vector<bool>* inserted) {
  if (begin >= end) return Status::ok();
  Result<BatchOutcome> r = store.apply(with_only(member, items, begin, end));
  if (r.is_ok()) {
    for (size_t i = 0; i < r->result_inserted.size() && inserted; ++i)
      (*inserted)[begin + i] = r->result_inserted[i];
    return Status::ok();
  }
  if (store.is_connection_error(r.status())) return r.status();
  if (end - begin > 1) {
    const size_t middle = begin + (end - begin) / 2;
    KB_TRY(apply_range(store, member, items, begin, middle, inserted));
    return apply_range(store, member, items, middle, end, inserted);
  }
  std::fprintf(stderr, "kb-coordinator: one entry of a batch cannot be applied: %s\n",
               r.status().to_string().c_str());
  if constexpr (std::is_same_v<T, ResultRow>) {
    std::fprintf(stderr, "kb-coordinator: job %lld: stored as runtime_error instead\n",
                 static_cast<long long>(items[begin].job_id));
    Batch b;
    b.results.push_back(unstorable(items[begin], r.status()));
    Result<BatchOutcome> fallback = store.apply(b);
    if (!fallback.is_ok()) {
      if (store.is_connection_error(fallback.status())) return fallback.status();
      std::fprintf(stderr, "kb-coordinator: job %lld: not even that could be stored: %s\n",
                   static_cast<long long>(items[begin].job_id), fallback.status().to_string().c_str());
      return Status::ok();
    }
    if (inserted && !fallback->result_inserted.empty()) (*inserted)[begin] = fallback->result_inserted[0];
  }
  return Status::ok();
}

}  // namespace

Result<BatchOutcome> DbThread::apply_isolating(JobStore& store, const Batch& batch) {
  Result<BatchOutcome> whole = store.apply(batch);
  if (whole.is_ok() || store.is_connection_error(whole.status())) return whole;
  std::fprintf(stderr, "kb-coordinator: a batch failed (%s); applying it in parts to find the bad entry\n",
               whole.status().to_string().c_str());
  BatchOutcome outcome;
  outcome.result_inserted.assign(batch.results.size(), false);
  // The store's order: requeues, leases, failures, results, worker states, run states.
  KB_TRY(apply_range(store, &Batch::requeues, batch.requeues, 0, batch.requeues.size(), nullptr));
  KB_TRY(apply_range(store, &Batch::leases, batch.leases, 0, batch.leases.size(), nullptr));
  KB_TRY(apply_range(store, &Batch::failures, batch.failures, 0, batch.failures.size(), nullptr));
  KB_TRY(apply_range(store, &Batch::results, batch.results, 0, batch.results.size(),
                     &outcome.result_inserted));
  KB_TRY(apply_range(store, &Batch::worker_states, batch.worker_states, 0,
                     batch.worker_states.size(), nullptr));
  KB_TRY(apply_range(store, &Batch::run_states, batch.run_states, 0, batch.run_states.size(),
                     nullptr));
  return outcome;
}

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
    KB_ASSIGN_OR_RETURN(*outcome, apply_isolating(store, *batch));
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
  int failures = 0;
  while (true) {
    Status status = op.attempt(*store_);
    const bool outage = !status.is_ok() && store_->is_connection_error(status);
    {
      std::lock_guard lock(mutex_);
      up_ = !outage;
    }
    if (status.is_ok()) return status;
    if (status.code() == StatusCode::kNotFound || status.code() == StatusCode::kInvalidArgument)
      return status;  // about the request: the same again
    if (!outage) {  // not the database's state but this call's: a few more tries, then give up
      if (++failures > kRetries) return status;
      KB_LOGF_WARN("database call failed (%s); retry %d of %d",
                   status.message().c_str(), failures, kRetries);
      if (!wait_backoff(delay)) return Status::failed_precondition("database thread stopped");
      delay = std::min(delay * 2, options_.max_backoff);
      continue;
    }
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
