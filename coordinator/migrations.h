// Schema migrations: the numbered SQL files in schemas/ (NNNN_name.sql), applied in numeric order
// when kb-coordinator starts (and by the tests on a fresh database).
//
// Each migration runs in its own transaction together with its row in schema_migrations(version,
// name, checksum, applied_at); applied versions are skipped. Every transaction first takes a
// transaction-scoped advisory lock (kMigrationLockKey), so two coordinators starting at once
// serialize: the second finds the work done. Shipped migrations are immutable: when the sha256 of
// an applied migration's file differs from the recorded checksum, or the database records a
// version that has no file here (a newer coordinator migrated it), nothing is applied and a
// kFailedPrecondition Status says which file.
//
// Errors: kNotFound (no schemas directory), kInvalidArgument (a badly named or duplicate file),
// kFailedPrecondition (checksum / unknown version), kIoError (cannot connect or the connection
// broke: retry), kInternal (a migration's SQL failed; that migration is rolled back).
//
// Thread safety: free functions; each call opens its own connection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb::coord {

inline constexpr int64_t kMigrationLockKey = 0x6b62666c656574;  // "kbfleet"

struct MigrationFile {
  int version = 0;
  std::string name;  // "initial" for 0001_initial.sql
  std::string path;
  std::string sql;
};

struct MigrationReport {
  std::vector<int> applied;  // versions applied by this call, in order
  std::vector<int> skipped;  // versions already present
};

// env KB_SCHEMAS_DIR when set, else the source tree's schemas/ (compiled in).
std::string default_schemas_dir();

// The migration files of `dir`, sorted by version. Other files (protocol.md) are ignored.
Result<std::vector<MigrationFile>> list_migrations(const std::string& dir);

// Applies the pending migrations of `schemas_dir` to the database at `db_url`.
Result<MigrationReport> apply_migrations(const std::string& db_url, const std::string& schemas_dir);

}  // namespace kb::coord
