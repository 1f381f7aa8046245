// An in-memory JobStore for the coordinator's tests, with a switch that simulates a database
// outage (every call fails with a connection error until it is turned off).
//
// Thread safety: every method locks; tests inspect it while the database thread uses it.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "coordinator/job_store.h"

namespace kb::coord::testing {

class FakeJobStore final : public JobStore {
 public:
  std::atomic<bool> down{false};
  std::atomic<int> reconnects{0};

  Status reconnect() override {
    ++reconnects;
    return down ? outage() : Status::ok();
  }
  bool is_connection_error(const Status& s) const override {
    return s.code() == StatusCode::kIoError;
  }
  Result<int64_t> upsert_worker(const WorkerIdentity& w) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    auto [it, inserted] = workers_.emplace(w.name, static_cast<int64_t>(workers_.size() + 1));
    return it->second;
  }
  Result<bool> has_pack(const std::string& hash) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    return packs_.count(hash) > 0;
  }
  Status store_pack(const PackInfo& info, const std::string& bytes) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    packs_[info.hash] = bytes;
    return Status::ok();
  }
  Result<std::string> load_pack(const std::string& hash) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    auto it = packs_.find(hash);
    if (it == packs_.end()) return Status::not_found("no pack " + hash);
    return it->second;
  }
  Result<std::vector<JobRecord>> create_run(const NewRun& run, int64_t* run_id) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    *run_id = ++last_run_;
    runs_[*run_id] = run;
    std::vector<JobRecord> jobs;
    for (const NewJob& j : run.jobs) {
      JobRecord r;
      r.id = ++last_job_;
      r.run_id = *run_id;
      r.problem_id = j.problem_id;
      r.preset = j.preset;
      r.gpu_model = j.gpu_model;
      r.seed = j.seed;
      r.predicted_ms = j.predicted_ms;
      r.params = j.params;
      r.state = "queued";
      r.max_attempts = j.max_attempts;
      r.pack_hash = run.pack_hash;
      r.run_config = run.config;
      jobs.push_back(r);
      job_ids_.insert(r.id);
    }
    return jobs;
  }
  Result<std::string> run_submitter(int64_t run_id) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return Status::not_found("no run");
    return it->second.submitted_by;
  }
  Result<std::vector<int64_t>> cancel_run(int64_t run_id) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    if (!runs_.count(run_id)) return Status::not_found("no run");
    cancelled_.insert(run_id);
    return std::vector<int64_t>{};
  }
  Result<std::vector<JobRecord>> load_open_jobs() override {
    std::lock_guard lock(mutex_);
    for (const JobRecord& r : open_jobs) job_ids_.insert(r.id);
    return open_jobs;
  }
  Result<double> predicted_wall_ms(const std::string&, const std::string&,
                                   const std::string&) override {
    return 0.0;
  }
  Result<BatchOutcome> apply(const Batch& batch) override {
    std::lock_guard lock(mutex_);
    if (down) return outage();
    BatchOutcome out;
    for (const ResultRow& r : batch.results) {  // all or nothing, as one transaction
      if (!job_ids_.count(r.job_id)) return Status::internal("foreign key: no job " + std::to_string(r.job_id));
      // A row the database refuses for its content (e.g. an invalid byte sequence).
      if (r.result.is_object() && r.result.value("poison", false)) return Status::internal("22021: bad bytes");
    }
    for (const ResultRow& r : batch.results) out.result_inserted.push_back(results_.emplace(r.job_id, r).second);
    for (const Lease& l : batch.leases) leases_.push_back(l);
    ++batches_;
    return out;
  }

  void add_job(int64_t id) {
    std::lock_guard lock(mutex_);
    job_ids_.insert(id);
  }
  std::string stored_status(int64_t job_id) const {
    std::lock_guard lock(mutex_);
    auto it = results_.find(job_id);
    return it == results_.end() ? "" : it->second.result.value("status", "");
  }
  size_t result_count() const {
    std::lock_guard lock(mutex_);
    return results_.size();
  }
  bool has_pack_bytes(const std::string& hash) const {
    std::lock_guard lock(mutex_);
    return packs_.count(hash) > 0;
  }
  size_t run_count() const {
    std::lock_guard lock(mutex_);
    return runs_.size();
  }
  size_t worker_count() const {
    std::lock_guard lock(mutex_);
    return workers_.size();
  }
  std::string submitted_by(int64_t run_id) const {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(run_id);
    return it == runs_.end() ? "" : it->second.submitted_by;
  }
  bool is_cancelled(int64_t run_id) const {
    std::lock_guard lock(mutex_);
    return cancelled_.count(run_id) > 0;
  }
  void add_pack(const std::string& hash, const std::string& bytes) {
    std::lock_guard lock(mutex_);
    packs_[hash] = bytes;
  }

  std::vector<JobRecord> open_jobs;  // what load_open_jobs returns (set before create)

 private:
  static Status outage() { return Status::io_error("connection refused (fake outage)"); }

  mutable std::mutex mutex_;
  std::map<std::string, int64_t> workers_;
  std::map<std::string, std::string> packs_;
  std::map<int64_t, NewRun> runs_;
  std::set<int64_t> job_ids_, cancelled_;
  std::map<int64_t, ResultRow> results_;
  std::vector<Lease> leases_;
  int64_t last_run_ = 0, last_job_ = 0;
  uint64_t batches_ = 0;
};

}  // namespace kb::coord::testing
