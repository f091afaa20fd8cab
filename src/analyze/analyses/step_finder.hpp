// Finding a run's training (or inference) steps without configuration: the
// first pass of the step analysis (steps.hpp).
//
// A step is one iteration of the loop, from its start to the next
// iteration's start; work after the last iteration, and between epochs, is
// outside. What a run gives to find the iterations, per process:
//   - step marks: the instant events `step` (cat "dftracer", args.step) that
//     Dynamo.update(step=...) and dft_ai.update(step=...) write when the step
//     changes; each starts a step;
//   - the `step` arg on events (pydftracer and DFTracer traces): a value's
//     first event starts its step (compile work just before it included);
//   - a repeated region at any depth of the main thread (the user's
//     `train_step`, inside an `epoch` or not): each occurrence starts a step;
//     where the main thread has optimizer steps, only a region whose
//     occurrences hold one optimizer cycle each (at least two thirds of them;
//     the others none: a GradScaler's skipped steps), not a micro-batch's
//     (mostly none), a layer's or an epoch's (many), and not one around the
//     optimizer steps alone (holding under a quarter of a cycle's time
//     outside them);
//   - else torch's optimizer steps (`Optimizer.step#AdamW.step`, any depth of
//     the main thread; a GradScaler's step around one, or in its place where
//     the scaler skipped it): the last of each cycle ends a step, which begins at
//     the previous one's end, or at its first model work when that comes far
//     later than usual with more works or top-level events before it than
//     usual (not a preempted wait: the usual works, later), or when the wait holds more grad-off work than the
//     usual waits (an evaluation between); the first step where the work
//     before its optimizer step holds the last step's, and the compile work
//     before it;
//   - else, with no training work, an inference loop's work (compiled
//     inference graph calls, else grad-off eager ops): the longest stretch
//     of it repeating one sequence; each period of it is a step, from its
//     first work (or the compile, or the DataLoader fetch, right before);
//     periods that are calls of a model called several times per
//     iteration are grouped by the gaps between them (every m-th gap far
//     longer), else by the other work between them (every m-th gap, and
//     no other, holds some: the result read); stretches of the same period
//     parted from it by a recompile mid-loop (new graphs) are more of it; the calls after the last period, recompiled, one more step.
// The optimizer cycle: with args.opt on every optimizer step, the optimizer
// of the last one closes a cycle (a GAN's generator after its
// discriminator), which holds the usual number of optimizer steps between
// two closing ones; without it, one optimizer step (a region with a
// step-like name may hold another same number).
// Where marks or args exist, a region whose occurrences hold one step start
// each bounds the steps (exact last step); else the marks or args do, and the
// last step ends after as many top-level events as the others had, plus their
// usual tail. Without marks or args, the region is chosen among the user
// regions (not ops, compile, I/O, data loading or optimizer events) repeated
// on the main thread and covering at least half as much as the one covering
// most: a step-like name (step, iter, batch) first, the one covering most
// among those; an epoch-like name last; among the others the fewest
// occurrences (one per iteration, not per layer).
// A step reaches the next step's start unless an enclosing region (an epoch)
// ends between them, or the gap is far longer than the usual gap (evaluation,
// a checkpoint): then it ends with its region.
// A process that runs no model work (ops, compile, optimizer) while another
// process of the input does is a helper (a DataLoader worker): it has no steps.
// A DataLoader worker (torch names its thread "pt_data_worker") runs none,
// whatever ops its dataset's transforms run.
// The device tracks dftracer's CUDA source writes (pids of their own,
// format/device_track.hpp) are no process: GPU time is not thread time, so
// both passes leave them out.
//
// Memory: per process, one entry per step mark or arg value, the main thread's
// top-level events and the occurrences of its user regions (capped), and the
// wall-time unions (wall_time.hpp); never the whole trace.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "event_decoder.hpp"
#include "runtime_files.hpp"
#include "trace_reader.hpp"
#include "wall_time.hpp"

namespace dftracer::analyze {

struct StepInterval {
  int64_t ts = 0, end = 0;
  std::string label;  // the step mark's or arg's value, else the region's name
  // The last step of marks or args: nothing in the trace says where the
  // loop's last iteration ended, so its end is estimated (step_finder.cpp).
  bool end_estimated = false;
};

// What pass 1 found for one process.
struct ProcessSteps {
  size_t file = 0;
  std::string pid;
  // "region" (bounded by a repeated region), "marks" (Dynamo/dft_ai update
  // marks), "args.step" (the step arg's first events); without steps: "" or "helper".
  // "optimizer" (each step ends with one of torch's Optimizer.step events);
  // "inference" (an inference loop: the recurring sequence of its inference
  // graph calls or grad-off eager ops, step_finder.cpp);
  std::string source;
  // The repeated region's name (source "region"), the optimizer step's
  // ("optimizer"), an iteration's first inference work's ("inference").
  std::string region;
  bool model_work = false;  // ops, compile or optimizer events (a helper has none)
  std::vector<StepInterval> steps;  // by start
  ProcessWall wall;    // for the steps' and the run's wall-time split
};

// Every process of the input: those with steps, and those without.
struct StepPlan {
  std::vector<ProcessSteps> processes;  // with steps, ordered by (file, pid)
  // Without steps, same order; source "helper" for a process with no model
  // work beside one with some (a DataLoader worker), else "".
  std::vector<ProcessSteps> without_steps;
  size_t capped = 0;  // region occurrences not kept (memory cap)
  // The runtime's files (their I/O is other work): the read's own, or those it was given.
  std::shared_ptr<const RuntimeFiles> runtime_files;
};

// Pass 1 (one per reader thread; merge, then plan()).
class StepFinder : public LineConsumer {
 public:
  // `runtime`: the runtime's files when an earlier read found them (a Dask
  // client's); null: found from this read's FH records.
  explicit StepFinder(std::shared_ptr<const RuntimeFiles> runtime = nullptr);
  void begin_piece(size_t file_index) override { file_ = file_index; }
  DecodeStatus consume(std::string_view line, size_t padded_capacity) override;
  // add_event() reads these args in Event::extra_args' first slots.
  static ArgCapture arg_capture();
  void add_event(size_t file, const Event& e);
  void merge(StepFinder& other);
  StepPlan plan();

  struct Span {
    int64_t ts, end;
  };
  // An optimizer step; `opt` its optimizer's number (args.opt, written by
  // dftracer's optimizer hooks), -1 where the event has none.
  struct OptStep {
    int64_t ts, end;
    int64_t opt;
  };
  struct Blip {
    int64_t ts;
    size_t category;
    uint64_t name_hash;  // std::hash of its name: one per blip, and a long run holds millions
  };
  // The LibTorch observer's outermost module call (`nn.Module: Net`) of
  // phase forward (the model trained) or inference (run without training
  // it); its class name by hash (one per call: a long loop holds millions).
  struct ModelCall {
    int64_t ts, end;
    uint64_t name_hash;
    bool grad_off;
  };
  struct Top {
    int64_t end;
    std::string name;
    size_t category;
  };
  using TopLevel = std::multimap<int64_t, Top>;  // a thread's top-level events by start
  struct Thread {
    TopLevel top;
    std::map<std::string, std::vector<Span>, std::less<>> regions;  // user regions' occurrences, any depth
    size_t region_count = 0;
    // The model's work alone (ops, graph calls, compile, optimizer; inference
    // calls kept apart): where an optimizer-ended step begins, inside a
    // user region around the whole loop too.
    TopLevel work;
    std::vector<OptStep> optimizer;  // torch's Optimizer.step and GradScaler.step events, any depth
    std::vector<Span> fetches;       // the DataLoader's batch fetches (`enumerate(DataLoader)...`), any depth
    // Zero-length work (in whole microseconds a sub-microsecond op lasts 0,
    // so it is in no TopLevel) that no later work event of the thread holds: the
    // other work between two calls may be no more (group_by_other_work).
    std::vector<Blip> blips;
    std::vector<ModelCall> calls;  // outermost module calls, by end (merged threads: any order)
    // Garbage collections' and checkpoints' spans: the work inside them is
    // theirs (plan() drops it), any order until then.
    std::vector<Span> aside;
    std::string optimizer_name;   // the earliest one's name
    int64_t optimizer_first = INT64_MAX;
    bool trains = false;  // holds training work (see trains_work in step_finder.cpp)
  };
  struct Process {
    std::map<std::string, std::pair<int64_t, int64_t>> by_arg;  // step value -> first start, last end
    std::vector<std::pair<int64_t, std::string>> marks;         // step marks: ts, value
    Thread main;                                                 // the tid == pid thread's
    std::map<std::string, Thread> others;  // other threads', while no tid == pid thread is seen
    bool model_work = false;
    bool data_worker = false;  // a DataLoader worker (its thread "pt_data_worker"): no model work
    ProcessWall wall;
  };

 private:
  static const Thread& main_thread(const Process& p);
  EventDecoder decoder_;
  Event ev_;
  size_t file_ = 0;
  size_t capped_ = 0;
  std::shared_ptr<const RuntimeFiles> runtime_;
  FileNames names_;  // without runtime_: the FH records, for plan()
  std::map<std::pair<size_t, std::string>, Process> processes_;
  Process* last_ = nullptr;  // the process of the last event (map nodes do not move)
  size_t last_file_ = 0;
  std::string last_pid_;
};

}  // namespace dftracer::analyze
