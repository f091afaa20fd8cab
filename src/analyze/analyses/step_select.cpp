#include "step_select.hpp"

#include <algorithm>
#include <charconv>
#include <memory>
#include <stdexcept>
#include <utility>

#include "reader_threads.hpp"

namespace dftracer::analyze {

namespace {

bool parse_int(std::string_view s, std::optional<int64_t>* out) {
  if (s.empty()) return true;  // left out: the slice's default
  int64_t v = 0;
  const char* b = s.data();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  *out = v;
  return true;
}

}  // namespace

StepSlice parse_step_slice(std::string_view text) {
  const std::string form =
      "--steps needs START:STOP, START:, :STOP or one step number (0 is the first step, as summary --by step numbers "
      "them; negative counts from the last), not '" +
      std::string(text) + "'";
  StepSlice r;
  const size_t colon = text.find(':');
  if (text.empty() || (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos))
    throw std::invalid_argument(form);
  if (colon == std::string_view::npos) {
    if (!parse_int(text, &r.start) || !r.start) throw std::invalid_argument(form);
    r.single = true;
  } else if (!parse_int(text.substr(0, colon), &r.start) || !parse_int(text.substr(colon + 1), &r.stop)) {
    throw std::invalid_argument(form);
  }
  r.text = std::string(text);
  return r;
}

std::vector<size_t> StepSlice::pick(size_t n) const {
  const int64_t len = static_cast<int64_t>(n);
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + len : v, 0, len); };
  std::vector<size_t> out;
  if (single) {
    const int64_t i = *start < 0 ? *start + len : *start;
    if (i >= 0 && i < len) out.push_back(static_cast<size_t>(i));
    return out;
  }
  const int64_t b = start ? clamp(*start) : 0, e = stop ? clamp(*stop) : len;
  for (int64_t i = b; i < e; ++i) out.push_back(static_cast<size_t>(i));
  return out;
}

StepPlan find_steps(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options) {
  threads = useful_threads(files, threads, options);
  std::vector<std::unique_ptr<StepFinder>> finders;
  std::vector<LineConsumer*> consumers;
  for (unsigned t = 0; t < threads; ++t) {
    finders.push_back(std::make_unique<StepFinder>(options.runtime_files));
    consumers.push_back(finders.back().get());
  }
  read_traces(files, consumers, options);
  for (unsigned t = 1; t < threads; ++t) finders[0]->merge(*finders[t]);
  return finders[0]->plan();
}

std::string no_step_chosen(const StepSlice& range, size_t most) {
  if (most == 0)
    return "--steps " + range.text +
           ": the input has no steps (no step mark or step arg, no optimizer step, no repeated "
           "region, no inference loop; summary --by step says what it looks for)";
  return "--steps " + range.text + " picks no step: the processes have at most " + std::to_string(most) +
         " steps, numbered from 0 (summary --by step lists them)";
}

StepSpans select_steps(const StepPlan& plan, const StepSlice& range) {
  if (plan.processes.empty()) throw std::invalid_argument(no_step_chosen(range, 0));
  StepSpans out;
  size_t most = 0;
  for (const ProcessSteps& p : plan.processes) {
    most = std::max(most, p.steps.size());
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (size_t i : range.pick(p.steps.size())) spans.emplace_back(p.steps[i].ts, p.steps[i].end);
    if (!spans.empty()) out.by_process[{p.file, p.pid}] = std::move(spans);
  }
  if (out.by_process.empty()) throw std::invalid_argument(no_step_chosen(range, most));
  return out;
}

namespace {
// Keeps, per process of `r`, the steps at the positions `pick(process)`
// gives (ascending) and their rows; a process left with none is dropped
// when `drop_empty`. Returns how many steps were kept.
template <class Pick>
size_t keep_steps(StepReport& r, Pick pick, bool drop_empty) {
  std::vector<ProcessSteps> processes;
  std::vector<StepRow> rows;
  size_t row = 0;  // rows run by process, then step, as r.processes
  for (ProcessSteps& p : r.processes) {
    std::vector<StepInterval> steps;
    for (size_t i : pick(p)) {
      steps.push_back(p.steps[i]);
      rows.push_back(r.rows[row + i]);
    }
    row += p.steps.size();
    if (steps.empty() && drop_empty) continue;
    p.steps = std::move(steps);
    processes.push_back(std::move(p));
  }
  r.processes = std::move(processes);
  r.rows = std::move(rows);
  return r.rows.size();
}
}  // namespace

void keep_step_rows(const StepSlice& range, StepReport& r) {
  // The line for no step, or none picked, about the steps found (before trimming).
  std::string none = "--steps " + range.text + " picks no step";
  {
    StepPlan plan;
    plan.processes = r.processes;
    try {
      select_steps(plan, range);
    } catch (const std::invalid_argument& e) {
      none = e.what();
    }
  }
  if (r.processes.empty() ||
      keep_steps(r, [&](const ProcessSteps& p) { return range.pick(p.steps.size()); }, false) == 0)
    throw std::invalid_argument(none);
}

void apply_step_filter(const StepSlice& range, const std::vector<std::string>& files, unsigned threads,
                       ReadOptions* options) {
  if (!range.set()) return;
  apply_step_spans(select_steps(find_steps(files, threads, *options), range), options);
}

void apply_step_spans(StepSpans chosen, ReadOptions* options) {
  chosen.outer_from_ns = options->from_ns;
  chosen.outer_to_ns = options->to_ns;
  auto spans = std::make_shared<StepSpans>(std::move(chosen));
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& [key, s] : spans->by_process) {
    lo = std::min(lo, s.front().first);
    for (const auto& sp : s) hi = std::max(hi, sp.second);
  }
  options->from_ns = std::max(options->from_ns, lo);
  options->to_ns = std::min(options->to_ns, hi);
  options->steps = std::move(spans);
}

StepReport analyze_chosen_steps(const std::vector<std::string>& files, unsigned threads, const ReadOptions& options) {
  StepReport r = analyze_steps(files, threads, options);
  if (!options.steps) return r;
  ReadOptions all = options;
  all.steps.reset();
  all.from_ns = options.steps->outer_from_ns;
  all.to_ns = options.steps->outer_to_ns;
  StepReport found = analyze_steps(files, threads, all);
  keep_steps(
      found,
      [&](const ProcessSteps& p) {
        std::vector<size_t> chosen;
        if (const auto* spans = options.steps->spans(p.file, p.pid))
          for (size_t i = 0; i < p.steps.size(); ++i)
            if (std::any_of(spans->begin(), spans->end(), [&](const auto& s) { return s.first == p.steps[i].ts; }))
              chosen.push_back(i);
        return chosen;
      },
      true);
  r.processes = std::move(found.processes);
  r.rows = std::move(found.rows);
  return r;
}

}  // namespace dftracer::analyze
