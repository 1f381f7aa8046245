// The daemons' configuration: one YAML file per program (/etc/kbfleet/coordinator.yaml,
// /etc/kbfleet/worker.yaml, or --config FILE), then the environment, then flags. A value is
// resolved on its own, highest first:
//
//   1. a flag given on the command line   (--workers-bind tcp://...)
//   2. the key's environment variable      (KB_DB_URL, ...; only keys that declare one)
//   3. the file                            (workers_bind: tcp://...)
//   4. the program's built-in default
//
// which is the order `kb` already uses for its own config (cli/cli_config.h), so one rule holds for
// every kbfleet program. A YAML key is the flag's name without the dashes, with '_' for '-'.
//
// Errors name where the value came from and what was expected: "FILE: key 'liveness': expected
// an integer in [2, 100], got 'x'", "FILE: unknown key 'liveliness' (known: ...)", "environment
// KB_GPU: ...". A missing default file is not an error; a missing --config FILE is.
//
// Thread safety: a ConfigSchema is built and applied on one thread (at start-up).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_env_value(const std::string& name);  // getenv; "" = unset

// PREFIX/share/kbfleet/RELATIVE for a program installed as PREFIX/bin/PROGRAM (the Debian
// packages: /usr/bin/kb -> /usr/share/kbfleet/problems), when that exists; else nullopt (a
// build tree, which falls back to the source tree's directories).
std::optional<std::string> installed_data_path(const std::string& relative);

class ConfigSchema {
 public:
  // Setters parse and check a textual value; they return what was expected when it is bad.
  using Setter = std::function<std::optional<std::string>(const std::string& text)>;

  ConfigSchema& text(const std::string& key, std::string* target, const std::string& env = "");
  ConfigSchema& choice(const std::string& key, std::string* target,
                       std::vector<std::string> choices, const std::string& env = "");
  ConfigSchema& integer(const std::string& key, int64_t* target, int64_t min, int64_t max,
                        const std::string& env = "");
  ConfigSchema& integer(const std::string& key, int* target, int min, int max,
                        const std::string& env = "");
  ConfigSchema& boolean(const std::string& key, bool* target, const std::string& env = "");
  ConfigSchema& custom(const std::string& key, Setter setter, const std::string& env = "");

  // Reads `path` (when it exists, or always when `path_is_explicit`) and the environment, and
  // sets every key not in `given` (the keys given as flags), highest source first.
  Status apply(const std::string& path, bool path_is_explicit, const std::set<std::string>& given,
               const EnvLookup& env = process_env_value) const;

  std::vector<std::string> keys() const;

 private:
  struct Entry {
    std::string key, env;
    Setter set;
  };
  const Entry* find(const std::string& key) const;
  std::vector<Entry> entries_;
};

// The keys given on the command line of a parsed CLI11 app: flag --foo-bar is key foo_bar.
// (A template so that common/ does not include CLI11.)
template <class App>
std::set<std::string> keys_given(const App& app) {
  std::set<std::string> given;
  for (const auto* option : app.get_options()) {
    if (option->count() == 0) continue;
    for (std::string name : option->get_lnames()) {
      for (char& c : name)
        if (c == '-') c = '_';
      given.insert(name);
    }
  }
  return given;
}

}  // namespace kb
