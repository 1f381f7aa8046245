#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>

namespace kb::logging {
namespace {

constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%eZ %l %n: %v";

// JSON string contents: the message and the component may hold quotes, backslashes, newlines.
void append_escaped(std::string_view text, spdlog::memory_buf_t& out) {
  for (char c : text) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out.append(std::string_view(buf));
        } else {
          out.push_back(c);
        }
    }
  }
}

// %* : the message, escaped for a JSON string.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    append_escaped(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

// %& : the logger's name, escaped.
class EscapedName : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    append_escaped(std::string_view(msg.logger_name.data(), msg.logger_name.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedName>();
  }
};

Format g_format = Format::kText;

std::unique_ptr<spdlog::formatter> make_formatter(Format format) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == Format::kJson) {
    formatter->add_flag<EscapedMessage>('*').add_flag<EscapedName>('&').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","component":"%&","msg":"%*"})");
  } else {
    formatter->set_pattern(kTextPattern);
  }
  return formatter;
}

}  // namespace

Result<Format> parse_format(const std::string& name) {
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  return Status::invalid_argument("log format '" + name + "': expected text or json");
}

Status init(const std::string& component_name, Format format, const std::string& level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return Status::invalid_argument("log level '" + level +
                                    "': expected trace, debug, info, warn or error");
  }
  g_format = format;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(component_name, sink);
  logger->set_formatter(make_formatter(format));
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::trace);  // stderr lines must survive a crash
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace kb::logging
