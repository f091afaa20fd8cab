#include "event_decoder.hpp"

#include "event_fast_path.hpp"
#include "json_member.hpp"
#include "trace_phase.hpp"
#include "trace_time.hpp"

#include <algorithm>
#include <charconv>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <cstring>

namespace dftracer::analyze {
namespace ondemand = simdjson::ondemand;

namespace {

// `raw` points just past a key's opening quote (padded buffer: reading a few
// bytes past a short key is safe). Keys with escapes never match, which is right:
// none of the names we look for contain any.
template <size_t N>
inline bool key_is(const char* raw, const char (&lit)[N]) {
  return std::memcmp(raw, lit, N - 1) == 0 && raw[N - 1] == '"';
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// A number written bare or quoted. Returns false for any other type.
inline bool read_number(ondemand::value& v, double& out) {
  ondemand::json_type t;
  if (v.type().get(t)) return false;
  if (t == ondemand::json_type::number) return !v.get_double().get(out);
  if (t == ondemand::json_type::string) return !v.get_double_in_string().get(out);
  return false;
}

// A string value, or the literal text of a number/bool (graph ids may be ints).
inline bool read_text(ondemand::value& v, std::string_view& out) {
  ondemand::json_type t;
  if (v.type().get(t)) return false;
  if (t == ondemand::json_type::string) return !v.get_string().get(out);
  if (t == ondemand::json_type::number || t == ondemand::json_type::boolean) {
    out = trim(v.raw_json_token());
    return true;
  }
  return false;
}

// A Text arg; args.module "" is the compiled model's own path (kRootModulePath).
template <Field F>
inline bool read_text_arg(ondemand::value& v, std::string_view& out) {
  if (!read_text(v, out)) return false;
  if constexpr (F == Field::module) {
    if (out.empty()) out = format::kRootModulePath;
  }
  return true;
}

// ts/dur: microseconds written bare or quoted, as exact nanoseconds.
inline bool read_time(ondemand::value& v, int64_t& ns) {
  ondemand::json_type t;
  if (v.type().get(t)) return false;
  std::string_view text;
  if (t == ondemand::json_type::number) text = trim(v.raw_json_token());
  else if (t == ondemand::json_type::string) {
    if (v.get_string().get(text)) return false;
  } else {
    return false;
  }
  return us_text_to_ns(text, ns);
}

// pid/tid: a number, a numeric string, or (torch.profiler) an arbitrary string.
inline bool read_id(ondemand::value& v, int64_t& num, std::string_view& text, std::string& buf) {
  ondemand::json_type t;
  if (v.type().get(t)) return false;
  if (t == ondemand::json_type::number) {
    std::string_view tok = trim(v.raw_json_token());
    double d = 0;
    if (v.get_double().get(d)) return false;
    if (!(d >= -9.2e18 && d <= 9.2e18)) return false;  // not an id a process or thread can have
    num = static_cast<int64_t>(d);
    // Keep integral ids as written ("1338896"), normalise "12.0"-style to "12".
    if (tok.find_first_of(".eE") == std::string_view::npos) {
      text = tok;
    } else {
      buf = std::to_string(num);
      text = buf;
    }
    return true;
  }
  if (t == ondemand::json_type::string) {
    if (v.get_string().get(text)) return false;
    int64_t n = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), n);
    num = (r.ec == std::errc() && r.ptr == text.data() + text.size()) ? n : 0;
    return true;
  }
  return false;
}

// Json kind: a string's content, or any other value's JSON text.
inline bool read_json(ondemand::value& v, std::string_view& out) {
  ondemand::json_type t;
  if (v.type().get(t)) return false;
  if (t == ondemand::json_type::string) return !v.get_string().get(out);
  if (t == ondemand::json_type::array || t == ondemand::json_type::object) {
    std::string_view raw;
    if (t == ondemand::json_type::array) {
      ondemand::array a;
      if (v.get_array().get(a) || a.raw_json().get(raw)) return false;
    } else {
      ondemand::object o;
      if (v.get_object().get(o) || o.raw_json().get(raw)) return false;
    }
    out = trim(raw);
    return true;
  }
  out = trim(v.raw_json_token());
  return true;
}

DecodeStatus decode_args(ondemand::value& v, Event& ev, const ArgCapture* capture) {
  ondemand::object args;
  if (v.get_object().get(args)) return DecodeStatus::BadField;
  for (auto fr : args) {
    ondemand::field f;
    if (std::move(fr).get(f)) return DecodeStatus::Malformed;
    const char* k = f.key().raw();
    ondemand::value av = f.value();
    // The schema's args keys (event_schema.hpp); the first byte settles most.
#define DFT_ARG_READ_Text(m) read_text_arg<Field::m>(av, ev.m)
#define DFT_ARG_READ_Json(m) read_json(av, ev.m)
#define DFT_ARG_READ_Number(m) ev.has_##m = read_number(av, ev.m)
#define DFT_X(member, key, kind, column) \
  if (k[0] == key[0] && key_is(k, key)) { \
    DFT_ARG_READ_##kind(member);         \
    continue;                            \
  }
    DFT_ARG_FIELDS(DFT_X)
#undef DFT_X
#undef DFT_ARG_READ_Text
#undef DFT_ARG_READ_Json
#undef DFT_ARG_READ_Number
    if (capture) {
      // is_equal: the raw key against the name, reading no byte past the key.
      for (size_t i = 0; i < capture->size; ++i) {
        if (f.key().is_equal(capture->keys[i])) {
          read_json(av, ev.extra_args[i]);
          break;
        }
      }
    }
  }
  return DecodeStatus::Ok;
}

}  // namespace

std::string_view strip_trace_line(std::string_view line) {
  // A UTF-8 byte-order mark (an editor's or a Windows tool's) before the
  // first line is not part of the JSON.
  if (line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.remove_prefix(3);
  line = trim(line);
  if (!line.empty() && line.back() == ',') line.remove_suffix(1);
  line = trim(line);
  if (line == "[" || line == "]" || line == "[]") return {};
  // The writer's closing line is a last event followed by "]" on its own line,
  // but a hand-joined file may close on the same line: "{...}]".
  if (line.size() > 1 && line.back() == ']' && line.front() == '{') {
    std::string_view inner = trim(line.substr(0, line.size() - 1));
    if (!inner.empty() && inner.back() == '}') return inner;
  }
  return line;
}

EventDecoder::EventDecoder() : shapes_(std::make_unique<LineShapes>()) {}
EventDecoder::~EventDecoder() = default;
EventDecoder::EventDecoder(EventDecoder&&) noexcept = default;
EventDecoder& EventDecoder::operator=(EventDecoder&&) noexcept = default;

void EventDecoder::capture_args(const ArgCapture& capture) {
  capture_ = capture;
  shapes_->clear();  // shapes hold the readers of the keys captured so far
}

DecodeStatus EventDecoder::decode(std::string_view line, size_t padded_capacity, Event& ev) {
  if (line.empty() || line.front() != '{') {
    ev = Event{};
    return DecodeStatus::Malformed;
  }
  DecodeStatus st;
  if (!fast_decode_line(line, ev, st, capture(), *shapes_)) return decode_with_simdjson(line, padded_capacity, ev);
  // The usual line has no array or object value: two compares, no call.
  const bool container = !ev.shapes.empty() && (ev.shapes[0] == '[' || ev.shapes[0] == '{');
  if (st == DecodeStatus::Ok && (container || capture_.size != 0)) compact_json_values(line, ev);
  return st;
}

DecodeStatus EventDecoder::decode_with_simdjson(std::string_view line, size_t padded_capacity, Event& ev) {
  const DecodeStatus st = simdjson_decode(line, padded_capacity, ev);
  if (st == DecodeStatus::Ok) compact_json_values(line, ev);
  return st;
}

namespace {

// Whether `v` has a byte <= ' ' (whitespace, or a control byte). 16 bytes a
// compare: `v` lies in a line, which kLinePadding readable bytes follow.
inline bool has_byte_up_to_space(std::string_view v) {
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  for (size_t i = 0; i < v.size(); i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v.data() + i));
    unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, space), x)));
    if (v.size() - i < 16) m &= (1u << (v.size() - i)) - 1;
    if (m != 0) return true;
  }
  return false;
#else
  return std::any_of(v.begin(), v.end(), [](char c) { return static_cast<unsigned char>(c) <= ' '; });
#endif
}

// `v`, when it is an array or object's text in `line` (a string's content
// is no such text: it follows its quote, or lies in simdjson's buffer) with
// whitespace outside its strings, without that whitespace, in `buf`.
void compact_json(std::string_view line, std::string_view& v, std::string& buf) {
  if (v.empty() || (v[0] != '[' && v[0] != '{') || v.data() <= line.data() ||
      v.data() >= line.data() + line.size() || v.data()[-1] == '"')
    return;
  // Compact text has no byte <= ' ' (a space may be in a string: looked at below).
  if (!has_byte_up_to_space(v)) return;
  buf.clear();
  bool in_string = false;
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (in_string) {
      buf += c;
      if (c == '\\' && i + 1 < v.size()) buf += v[++i];
      else if (c == '"') in_string = false;
    } else if (!json_space(c)) {
      in_string = c == '"';
      buf += c;
    }
  }
  v = buf;
}

}  // namespace

void EventDecoder::compact_json_values(std::string_view line, Event& ev) {
  compact_json(line, ev.shapes, json_buf_[0]);
  for (size_t i = 0; i < capture_.size; ++i) compact_json(line, ev.extra_args[i], json_buf_[1 + i]);
}

DecodeStatus EventDecoder::simdjson_decode(std::string_view line, size_t padded_capacity, Event& ev) {
  ev = Event{};
  if (line.empty() || line.front() != '{') return DecodeStatus::Malformed;
  // One validity rule for every command: the whole line must be JSON, as
  // merge requires (On-Demand alone let "id":-, NaN, 01, tru through in
  // fields it skipped). The fast path already validates what it accepts.
  simdjson::dom::element whole;
  if (validator_.parse(line.data(), line.size(), false).get(whole)) return DecodeStatus::Malformed;
  ondemand::document doc;
  if (parser_.iterate(line.data(), line.size(), padded_capacity).get(doc)) return DecodeStatus::Malformed;
  ondemand::object obj;
  if (doc.get_object().get(obj)) return DecodeStatus::Malformed;
  bool have_name = false, have_ph = false, bad_field = false;
  for (auto fr : obj) {
    ondemand::field f;
    if (std::move(fr).get(f)) return DecodeStatus::Malformed;
    const char* k = f.key().raw();
    ondemand::value v = f.value();
    switch (k[0]) {
      case 'n':
        if (key_is(k, "name")) {
          have_name = !v.get_string().get(ev.name);
          bad_field |= !have_name;
        }
        break;
      case 'c':
        if (key_is(k, "cat")) bad_field |= !read_text(v, ev.cat);
        break;
      case 'p':
        if (key_is(k, "ph")) {
          ondemand::json_type t;
          uint64_t n = 0;
          if (!v.type().get(t) && t == ondemand::json_type::number) {  // DFTracer 2.x (trace_phase.hpp)
            have_ph = !v.get_uint64().get(n) && !(ev.ph = phase_letter(n)).empty();
          } else {
            have_ph = !v.get_string().get(ev.ph);
          }
          bad_field |= !have_ph;
        } else if (key_is(k, "pid")) {
          bad_field |= !read_id(v, ev.pid, ev.pid_text, pid_buf_);
        }
        break;
      case 't':
        if (key_is(k, "ts")) {
          ev.has_ts = read_time(v, ev.ts_ns);
          bad_field |= !ev.has_ts;
        } else if (key_is(k, "tid")) {
          bad_field |= !read_id(v, ev.tid, ev.tid_text, tid_buf_);
        }
        break;
      case 'd':
        if (key_is(k, "dur")) {
          ev.has_dur = read_time(v, ev.dur_ns);
          bad_field |= !ev.has_dur;
        }
        break;
      case 'a':
        if (key_is(k, "args")) {
          DecodeStatus s = decode_args(v, ev, capture());
          if (s == DecodeStatus::Malformed) return s;
          bad_field |= (s == DecodeStatus::BadField);
        }
        break;
      default:
        break;
    }
  }
  // On-Demand stops at the closing brace: anything after it means a broken line.
  const char* rest = nullptr;
  if (!doc.current_location().get(rest)) return DecodeStatus::Malformed;
  if (bad_field || !have_name || !have_ph) return DecodeStatus::BadField;
  if (ev.has_dur && ev.dur_ns < 0) return DecodeStatus::BadField;
  return DecodeStatus::Ok;
}

}  // namespace dftracer::analyze
