// The coordinator's database thread: owns the JobStore and runs every call to it, one after
// another in submission order, so that the event loop never waits on PostgreSQL.
//
// An operation is a function of the store that may be called more than once: when it returns a
// connection error (JobStore::is_connection_error), the thread marks the database down, waits
// (backoff 100 ms doubling to 2 s), reconnects and calls it again with the same arguments, for as
// long as it takes (an outage loses nothing; the loop keeps running and keeps queueing). An answer
// about the request itself is final at once: kNotFound (no such run or pack) and kInvalidArgument
// (a value the database refused, pg_status.h) would come back the same, and retrying them held
// the thread, every other write waiting, for 0.7 s a request (a CANCEL of a run that does not
// exist, from any submitter key). Any other error is retried kRetries times with the same
// backoff, then ends the operation. `finished` then
// runs once, ON THIS THREAD, with the final Status; callers post their completion to their own
// loop (asio::post).
//
// A batch (submit_batch) that fails with an error that is not an outage is split to isolate the
// bad entry: its kinds are applied one after another in the store's order, each halved until the
// failing entry is alone. A result that cannot be stored is stored instead as a runtime_error
// result saying why (its job ends; the worker is acked); any other entry that cannot be applied
// is logged and skipped (a lease, requeue or state that the next restart's load corrects). Nothing
// is forgotten silently. The split batch is no longer one transaction; every statement is
// idempotent and unacked results are resent, so a crash in between loses nothing.
//
// stop() ends the thread after the current call; operations not yet finished get
// finished(kFailedPrecondition "stopped"). flush(timeout) waits until the queue is empty.
//
// Thread safety: submit(), flush(), stats() and healthy() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "coordinator/job_store.h"
#include "coordinator/metrics.h"

namespace kb::coord {

struct DbThreadOptions {
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{2000};
};

class DbThread {
 public:
  using Attempt = std::function<Status(JobStore&)>;
  using Finished = std::function<void(const Status&)>;

  DbThread(std::unique_ptr<JobStore> store, DbThreadOptions options = {});
  ~DbThread();  // stop() and join
  DbThread(const DbThread&) = delete;
  DbThread& operator=(const DbThread&) = delete;

  static constexpr int kRetries = 3;

  void submit(Attempt attempt, Finished finished);
  // Applies one batch (timed and counted in stats()); outcome is filled before finished(ok).
  void submit_batch(std::shared_ptr<const Batch> batch, std::shared_ptr<BatchOutcome> outcome,
                    Finished finished);
  bool flush(std::chrono::milliseconds timeout);
  void stop();

  bool healthy() const;
  DbStats stats() const;

  // apply(batch), isolating a bad entry as described above; a connection error is returned as is
  // (the caller retries the whole batch). Exposed for tests.
  static Result<BatchOutcome> apply_isolating(JobStore& store, const Batch& batch);

 private:
  struct Op {
    Attempt attempt;
    Finished finished;
  };
  void run();
  Status run_one(Op& op);
  bool wait_backoff(std::chrono::milliseconds delay);  // false when stopping

  std::unique_ptr<JobStore> store_;
  DbThreadOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Op> queue_;
  bool busy_ = false, stopping_ = false, up_ = true;
  uint64_t batches_ = 0;
  double batch_seconds_ = 0;
  std::thread thread_;
};

}  // namespace kb::coord
