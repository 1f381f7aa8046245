// Schema migrations (coordinator/migrations.h) against a real PostgreSQL (KB_TEST_PG_URL).
#include "coordinator/migrations.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <pqxx/pqxx>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "tests/support/assert_ok.h"
#include "tests/support/postgres_test_db.h"
#include "tests/support/temp_dir.h"

namespace kb::coord {
namespace {

namespace fs = std::filesystem;

// A copy of the repository's schemas/ that a test may edit.
class SchemasCopy {
 public:
  SchemasCopy() {
    Result<std::vector<MigrationFile>> files = list_migrations(default_schemas_dir());
    for (const auto& file : files.value()) {
      fs::copy_file(file.path, dir_ / fs::path(file.path).filename());
    }
  }
  std::string dir() const { return dir_.string(); }
  void write(const std::string& name, const std::string& text, bool append = false) const {
    std::ofstream out(dir_ / name, append ? std::ios::app : std::ios::trunc);
    out << text;
  }

 private:
  ::kb::test::TempDir dir_{"kb-schemas-test"};
};

// The versions of the repository's migrations.
std::vector<int> all_versions() {
  std::vector<int> versions;
  Result<std::vector<MigrationFile>> files = list_migrations(default_schemas_dir());
  for (const auto& file : files.value()) versions.push_back(file.version);
  return versions;
}

int64_t count(const std::string& url, const std::string& query) {
  pqxx::connection conn(url);
  pqxx::nontransaction txn(conn);
  return txn.exec1(query)[0].as<int64_t>();
}

TEST(Migrations, ListsNumberedFilesInOrder) {
  Result<std::vector<MigrationFile>> files = list_migrations(default_schemas_dir());
  KB_ASSERT_OK(files);
  ASSERT_FALSE(files->empty());
  EXPECT_EQ(files->front().version, 1);
  EXPECT_EQ(files->front().name, "initial");
  EXPECT_EQ(list_migrations("/nonexistent/schemas").status().code(), StatusCode::kNotFound);
}

TEST(Migrations, ApplyThenReapplyIsANoop) {
  KB_REQUIRE_TEST_DB(db);
  Result<MigrationReport> first = apply_migrations(db.url(), default_schemas_dir());
  KB_ASSERT_OK(first);
  EXPECT_EQ(first->applied, all_versions());
  Result<MigrationReport> again = apply_migrations(db.url(), default_schemas_dir());
  KB_ASSERT_OK(again);
  EXPECT_TRUE(again->applied.empty());
  EXPECT_EQ(again->skipped, all_versions());
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM schema_migrations WHERE length(checksum) = 64"),
            static_cast<int64_t>(all_versions().size()));
}

TEST(Migrations, AppliesANewFileOnTopOfTheApplied) {
  KB_REQUIRE_TEST_DB(db);
  SchemasCopy schemas;
  KB_ASSERT_OK(apply_migrations(db.url(), schemas.dir()));
  schemas.write("0900_extra.sql", "CREATE TABLE extra (x int);");
  Result<MigrationReport> report = apply_migrations(db.url(), schemas.dir());
  KB_ASSERT_OK(report);
  EXPECT_EQ(report->applied, std::vector<int>{900});
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM extra"), 0);
}

TEST(Migrations, RefusesAnAppliedMigrationThatChanged) {
  KB_REQUIRE_TEST_DB(db);
  SchemasCopy schemas;
  KB_ASSERT_OK(apply_migrations(db.url(), schemas.dir()));
  schemas.write("0001_initial.sql", "\n-- edited after shipping\n", /*append=*/true);
  schemas.write("0900_extra.sql", "CREATE TABLE extra (x int);");
  Result<MigrationReport> report = apply_migrations(db.url(), schemas.dir());
  ASSERT_FALSE(report.is_ok());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(report.status().message().find("0001_initial.sql"), std::string::npos)
      << report.status().message();
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM pg_tables WHERE tablename = 'extra'"), 0);
}

TEST(Migrations, RefusesADatabaseNewerThanTheFiles) {
  KB_REQUIRE_TEST_DB(db);
  SchemasCopy schemas;
  schemas.write("0900_extra.sql", "CREATE TABLE extra (x int);");
  KB_ASSERT_OK(apply_migrations(db.url(), schemas.dir()));
  Result<MigrationReport> report = apply_migrations(db.url(), default_schemas_dir());
  EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
}

TEST(Migrations, AFailingMigrationIsRolledBack) {
  KB_REQUIRE_TEST_DB(db);
  SchemasCopy schemas;
  schemas.write("0901_bad.sql", "CREATE TABLE half (x int);\nSELECT no_such_function();");
  Result<MigrationReport> report = apply_migrations(db.url(), schemas.dir());
  ASSERT_FALSE(report.is_ok());
  EXPECT_NE(report.status().message().find("0901_bad.sql"), std::string::npos);
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM pg_tables WHERE tablename = 'half'"), 0);
  EXPECT_EQ(count(db.url(), "SELECT count(*) FROM schema_migrations"),  // the good ones committed
            static_cast<int64_t>(all_versions().size()));
}

TEST(Migrations, ConcurrentCoordinatorsApplyOnce) {
  KB_REQUIRE_TEST_DB(db);
  std::vector<Result<MigrationReport>> reports(4, Status::internal("not run"));
  std::vector<std::thread> threads;
  for (auto& report : reports) {
    threads.emplace_back([&] { report = apply_migrations(db.url(), default_schemas_dir()); });
  }
  for (auto& t : threads) t.join();
  int applied = 0;
  for (const auto& report : reports) {
    KB_ASSERT_OK(report);
    applied += static_cast<int>(report->applied.size());
  }
  EXPECT_EQ(applied, static_cast<int>(all_versions().size()));
}

// `url` connecting as `user` (libpq reads a query-string user after the authority's).
std::string as_user(const std::string& url, const std::string& user) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "user=" + user;
}

// Login roles are cluster-wide: unique names, dropped when the test ends.
struct LoginRoles {
  std::string admin_url, runtime, reader;
  LoginRoles(std::string url, const std::string& suffix)
      : admin_url(std::move(url)), runtime("kbt_rt_" + suffix), reader("kbt_ro_" + suffix) {
    pqxx::connection conn(admin_url);
    pqxx::nontransaction txn(conn);
    txn.exec("CREATE ROLE " + runtime + " LOGIN IN ROLE kb_runtime");
    txn.exec("CREATE ROLE " + reader + " LOGIN IN ROLE kb_readonly");
  }
  ~LoginRoles() {
    try {
      pqxx::connection conn(admin_url);
      pqxx::nontransaction txn(conn);
      txn.exec("DROP ROLE IF EXISTS " + runtime);
      txn.exec("DROP ROLE IF EXISTS " + reader);
    } catch (const std::exception&) {
    }
  }
};

// schemas/0003_roles.sql: once migrated by an admin, the coordinator's runtime role starts with no
// DDL or CREATEROLE, and the CLI's read-only role reads no pack bytes and no table added later.
TEST(Migrations, RuntimeRoleNeedsNoDdlAndReadOnlyRoleSeesNoPackBytesNorLaterTables) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(apply_migrations(db.url(), default_schemas_dir()));
  LoginRoles roles(db.url(), std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}()));
  {
    pqxx::connection conn(db.url());
    pqxx::nontransaction txn(conn);
    txn.exec("INSERT INTO packs (hash, bytes, size_bytes) VALUES ('h1', '\\x00', 1)");
  }
  Result<MigrationReport> again = apply_migrations(as_user(db.url(), roles.runtime), default_schemas_dir());
  KB_ASSERT_OK(again);
  EXPECT_TRUE(again->applied.empty());
  {
    pqxx::connection conn(as_user(db.url(), roles.runtime));
    pqxx::nontransaction txn(conn);
    EXPECT_FALSE(txn.exec1("SELECT rolcreaterole FROM pg_roles WHERE rolname = current_user")[0].as<bool>());
    EXPECT_EQ(txn.exec1("SELECT count(*) FROM packs WHERE bytes IS NOT NULL")[0].as<int>(), 1);
    EXPECT_THROW(txn.exec("CREATE TABLE runtime_made (x int)"), pqxx::sql_error);
  }
  {
    pqxx::connection admin(db.url());
    pqxx::nontransaction(admin).exec("CREATE TABLE added_later (x int)");
  }
  pqxx::connection conn(as_user(db.url(), roles.reader));
  EXPECT_EQ(pqxx::nontransaction(conn).exec1("SELECT count(*) FROM pack_catalog")[0].as<int>(), 1);
  EXPECT_EQ(pqxx::nontransaction(conn).exec1("SELECT count(*) FROM results")[0].as<int>(), 0);
  EXPECT_THROW(pqxx::nontransaction(conn).exec("SELECT bytes FROM packs"), pqxx::insufficient_privilege);
  EXPECT_THROW(pqxx::nontransaction(conn).exec("SELECT * FROM added_later"), pqxx::insufficient_privilege);
}

TEST(Migrations, UnreachableDatabaseIsAnIoError) {
  Result<MigrationReport> report =
      apply_migrations("postgresql://postgres@127.0.0.1:1/postgres", default_schemas_dir());
  EXPECT_EQ(report.status().code(), StatusCode::kIoError) << report.status().to_string();
}

}  // namespace
}  // namespace kb::coord
