#include "tests/support/postgres_test_db.h"

#include <unistd.h>
#include <pqxx/pqxx>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>

#include "coordinator/migrations.h"

namespace kb::testing {
namespace {

std::string fresh_name() {
  static std::atomic<int> counter{0};
  std::random_device random;
  return "kbtest_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
         std::to_string(random() % 1000000);
}

Status admin_exec(const std::string& admin_url, const std::string& sql) {
  try {
    pqxx::connection conn(admin_url);
    pqxx::nontransaction txn(conn);  // CREATE/DROP DATABASE cannot run in a transaction block
    txn.exec(sql);
  } catch (const std::exception& e) {
    return Status::io_error(std::string("on ") + admin_url + ": " + e.what());
  }
  return Status::ok();
}

}  // namespace

std::string url_with_database(const std::string& url, const std::string& dbname) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url + " dbname=" + dbname;  // key=value: last wins
  const size_t query = url.find('?', scheme + 3);
  const size_t authority_end = std::min(url.find('/', scheme + 3), query);
  std::string result = url.substr(0, authority_end) + "/" + dbname;
  if (query != std::string::npos) result += url.substr(query);
  return result;
}

TestDatabase::TestDatabase() {
  const char* env = std::getenv("KB_TEST_PG_URL");
  if (env == nullptr || *env == '\0') return;
  admin_url_ = env;
  name_ = fresh_name();
  url_ = url_with_database(admin_url_, name_);
  status_ = admin_exec(admin_url_, "CREATE DATABASE " + name_);
  if (!status_.is_ok()) name_.clear();
}

TestDatabase::~TestDatabase() {
  if (name_.empty()) return;
  Status dropped = admin_exec(admin_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  if (!dropped.is_ok()) ADD_FAILURE() << "cannot drop " << name_ << ": " << dropped.to_string();
}

Status apply_migrations(const std::string& url) {
  Result<coord::MigrationReport> report =
      coord::apply_migrations(url, coord::default_schemas_dir());
  return report.status();
}

}  // namespace kb::testing
