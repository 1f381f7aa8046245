#include "coordinator/migrations.h"

#include <pqxx/pqxx>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/config_file.h"
#include "common/files.h"
#include "coordinator/pg_status.h"

namespace kb::coord {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "  version integer PRIMARY KEY,"
    "  name text NOT NULL,"
    "  checksum text NOT NULL,"
    "  applied_at timestamptz NOT NULL DEFAULT now())";

void lock(pqxx::work& txn) {
  txn.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
}

std::string checksum_of(pqxx::work& txn, const std::string& sql) {
  return txn.exec_params1("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')", sql)[0]
      .as<std::string>();
}

// version -> checksum of what the database has applied. Creates the table on first use only: a
// runtime role (kb_runtime, schemas/0003_roles.sql) may not CREATE, even "IF NOT EXISTS".
std::map<int, std::string> applied_versions(pqxx::work& txn) {
  if (txn.exec("SELECT to_regclass('schema_migrations') IS NULL")[0][0].as<bool>()) {
    txn.exec(kCreateTable);
  }
  std::map<int, std::string> applied;
  for (const auto& row : txn.exec("SELECT version, checksum FROM schema_migrations")) {
    applied[row[0].as<int>()] = row[1].as<std::string>();
  }
  return applied;
}

// Every applied migration must still have its file, unchanged.
Status check_applied(const std::map<int, std::string>& applied,
                     const std::vector<MigrationFile>& files,
                     const std::map<int, std::string>& file_checksums) {
  for (const auto& [version, checksum] : applied) {
    auto file = std::find_if(files.begin(), files.end(),
                             [&](const MigrationFile& f) { return f.version == version; });
    if (file == files.end()) {
      return Status::failed_precondition(
          "the database has schema migration " + std::to_string(version) +
          ", which this kb-coordinator does not know: it is older than the database");
    }
    if (file_checksums.at(version) != checksum) {
      return Status::failed_precondition("schema migration " + file->path +
                                         " changed after it was applied (checksum " +
                                         file_checksums.at(version) + ", applied " + checksum +
                                         "): never edit a shipped migration, add the next number");
    }
  }
  return Status::ok();
}

// Applies one migration unless another process did meanwhile; true when this call applied it.
bool apply_one(pqxx::connection& conn, const MigrationFile& file, const std::string& checksum) {
  pqxx::work txn(conn);
  lock(txn);
  if (!txn.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", file.version)
           .empty()) {
    return false;
  }
  txn.exec(file.sql);
  txn.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                  file.version, file.name, checksum);
  txn.commit();
  return true;
}

}  // namespace

std::string default_schemas_dir() {
  if (const char* env = std::getenv("KB_SCHEMAS_DIR"); env != nullptr && *env != '\0') return env;
  if (auto installed = installed_data_path("schemas")) return *installed;  // a Debian package
#ifdef KB_DEFAULT_SCHEMAS_DIR
  return KB_DEFAULT_SCHEMAS_DIR;
#else
  return "schemas";
#endif
}

Result<std::vector<MigrationFile>> list_migrations(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::not_found("no schemas directory " + dir);
  static const std::regex kName(R"((\d+)_([A-Za-z0-9_\-]+)\.sql)");
  std::vector<MigrationFile> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string filename = entry.path().filename().string();
    if (entry.path().extension() != ".sql") continue;
    std::smatch match;
    if (!std::regex_match(filename, match, kName)) {
      return Status::invalid_argument("migration file " + entry.path().string() +
                                      " is not named NNNN_name.sql");
    }
    KB_ASSIGN_OR_RETURN(std::string sql, read_file(entry.path().string()));
    files.push_back(
        {std::stoi(match[1].str()), match[2].str(), entry.path().string(), std::move(sql)});
  }
  if (ec) return Status::io_error("cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end(),
            [](const MigrationFile& a, const MigrationFile& b) { return a.version < b.version; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].version == files[i - 1].version) {
      return Status::invalid_argument("two migrations with version " +
                                      std::to_string(files[i].version) + ": " + files[i - 1].path +
                                      " and " + files[i].path);
    }
  }
  return files;
}

Result<MigrationReport> apply_migrations(const std::string& db_url,
                                         const std::string& schemas_dir) {
  KB_ASSIGN_OR_RETURN(std::vector<MigrationFile> files, list_migrations(schemas_dir));
  MigrationReport report;
  try {
    pqxx::connection conn(with_connect_timeout(db_url));
    conn.set_variable("client_min_messages", "warning");
    std::map<int, std::string> checksums;
    {
      pqxx::work txn(conn);
      lock(txn);
      for (const auto& file : files) checksums[file.version] = checksum_of(txn, file.sql);
      KB_TRY(check_applied(applied_versions(txn), files, checksums));
      txn.commit();
    }
    for (const auto& file : files) {
      try {
        bool applied = apply_one(conn, file, checksums[file.version]);
        (applied ? report.applied : report.skipped).push_back(file.version);
      } catch (...) {
        return current_pg_status("schema migration " + file.path);
      }
    }
  } catch (...) {
    return current_pg_status("schema migrations");
  }
  return report;
}

}  // namespace kb::coord
