// The LibTorch observer end to end: a small C++ model runs with the observer
// on, the trace file is read back and parsed with simdjson (never with the
// code under test), and the op events are checked: names, counts, nesting,
// thread ids, shapes, and what must not be recorded.
#include <gtest/gtest.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "dftracer/dftracer.h"
#include "dftracer/torch.h"
#include "trace_file.h"

using namespace dftracer_test;

namespace {

struct Mlp : torch::nn::Module {
  Mlp() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

// Starts tracing into a fresh directory; finish() finalizes and parses.
class Trace {
 public:
  Trace() : dir_(temp_dir("torch")), env_("DFTRACER_TRACE_COMPRESSION", "0") {
    EXPECT_EQ(dft_init_opt_in((dir_ + "/t").c_str(), nullptr, -1), 0);
    path_ = dft_trace_path();
  }
  std::vector<Event> finish() {
    dftracer::torch::disable();
    dft_finalize();
    return parse_events(event_lines(read_all(path_)));
  }

 private:
  std::string dir_;
  ScopedEnv env_;
  std::string path_;
};

std::vector<Event> with_cat(const std::vector<Event>& all, const std::string& cat) {
  std::vector<Event> out;
  for (const Event& e : all)
    if (e.ph == "X" && e.cat == cat) out.push_back(e);
  return out;
}

std::map<std::string, int> count_names(const std::vector<Event>& evs) {
  std::map<std::string, int> n;
  for (const Event& e : evs) ++n[e.name];
  return n;
}

// The first complete event of that name (a failure and an empty event when none).
Event first_named(const std::vector<Event>& all, const std::string& name) {
  auto it = std::find_if(all.begin(), all.end(), [&](const Event& e) { return e.ph == "X" && e.name == name; });
  EXPECT_NE(it, all.end()) << name;
  return it == all.end() ? Event{} : *it;
}

bool inside(const Event& child, const Event& parent) {
  // ts is epoch microseconds: as a double (the parser's type) it keeps only
  // ~0.25 us, so allow half a microsecond at each end.
  constexpr double kSlack = 0.5;
  return child.tid == parent.tid && child.ts >= parent.ts - kSlack &&
         child.ts + child.dur <= parent.ts + parent.dur + kSlack;
}

}  // namespace

TEST(Observer, ForwardOpsNamesCountsAndNesting) {
  torch::manual_seed(0);
  Mlp model;
  torch::Tensor x = torch::randn({2, 8});
  Trace trace;
  dftracer::torch::enable();
  constexpr int kSteps = 3;
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < kSteps; ++i) model.forward(x);
  }
  const std::vector<Event> all = trace.finish();
  const std::vector<Event> ops = with_cat(all, "aten");
  auto n = count_names(ops);
  // Per step: two Linear layers (the C++ API's F::linear on 2-D input is
  // addmm(bias, x, w.t())) and one relu, as the ATen dispatcher runs them.
  EXPECT_EQ(n["aten::addmm"], 2 * kSteps);
  EXPECT_EQ(n["aten::t"], 2 * kSteps);
  EXPECT_EQ(n["aten::transpose"], 2 * kSteps);  // t's implementation
  EXPECT_EQ(n["aten::relu"], kSteps);
  EXPECT_EQ(n["aten::clamp_min"], kSteps);  // relu's kernel
  EXPECT_EQ(n.count("aten::linear"), 0u);
  // Nesting: every transpose lies within a t, every clamp_min within a relu.
  for (const Event& e : ops) {
    if (e.name != "aten::transpose" && e.name != "aten::clamp_min") continue;
    const char* parent = e.name == "aten::transpose" ? "aten::t" : "aten::relu";
    const bool nested = std::any_of(ops.begin(), ops.end(), [&](const Event& p) {
      return p.name == parent && inside(e, p);
    });
    EXPECT_TRUE(nested) << e.name << " at " << e.ts << " is not inside a " << parent;
  }
  for (const Event& e : ops) {
    EXPECT_EQ(e.tid, dft_tid()) << e.name;
    EXPECT_GE(e.dur, 0.0);
    EXPECT_EQ(e.args_json.find("shapes"), std::string::npos) << "shapes recorded without asking";
  }
}

// A Scalar overload redispatching to the Tensor one (div_(Scalar) calls
// div_(Tensor), both "aten::div_") is one op, as torch.profiler counts it:
// no event nested directly in one of the same name.
// Grad mode off is written ("grad": 0) on a thread's outermost work only:
// the top-level ops of a no_grad forward, not the ops nested in them; never
// in a training forward or backward (the engine runs nodes with grad mode
// off), nor inside an optimizer step's scope. set_optimizer_number() numbers
// the optimizer step scope open innermost.
TEST(Observer, GradOffOnOutermostWorkAndTheOptimizerNumber) {
  torch::manual_seed(0);
  Mlp model;
  torch::Tensor x = torch::randn({2, 8});
  Trace trace;
  dftracer::torch::enable();
  model.forward(x).sum().backward();  // training: grad on
  {
    torch::NoGradGuard no_grad;
    model.forward(x);  // an evaluation
  }
  {
    RECORD_USER_SCOPE("Optimizer.step#SGD.step");
    dftracer::torch::set_optimizer_number(3);
    torch::NoGradGuard no_grad;
    for (auto& p : model.parameters()) p.add_(1.0);
  }
  dftracer::torch::set_optimizer_number(4);  // no optimizer scope open: nothing
  const std::vector<Event> all = trace.finish();
  std::vector<Event> off;
  for (const Event& e : all)
    if (e.ph == "X" && int_arg(e, "grad") == 0) off.push_back(e);
  // The evaluation's top-level ops: 2 x (t, addmm) and relu; not transpose
  // (inside t) nor clamp_min (inside relu).
  auto n = count_names(off);
  EXPECT_EQ(n["aten::t"], 2);
  EXPECT_EQ(n["aten::addmm"], 2);
  EXPECT_EQ(n["aten::relu"], 1);
  EXPECT_EQ(off.size(), 5u) << "grad off elsewhere";
  const std::vector<Event> scopes = with_cat(all, "torch");
  auto step = std::find_if(scopes.begin(), scopes.end(), [](const Event& e) { return e.name == "Optimizer.step#SGD.step"; });
  ASSERT_NE(step, scopes.end());
  EXPECT_EQ(int_arg(*step, "opt"), 3);
  EXPECT_EQ(int_arg(*step, "grad"), -1);
  for (const Event& e : off) EXPECT_FALSE(inside(e, *step)) << e.name;
}

// Each recorded event carries the phase the capture backend would write
// (args.phase): forward for a training forward's ops, backward for the
// autograd nodes and the ops they run, optimizer inside torch's optimizer
// scopes (also under a region opened with grad on), inference under
// no_grad. A region opened with grad on carries none; one
// opened with grad off carries none but makes its ops inference.
TEST(Observer, EachEventCarriesItsPhase) {
  torch::manual_seed(0);
  Mlp model;
  torch::Tensor x = torch::randn({2, 8});
  Trace trace;
  dftracer::torch::enable();
  {
    RECORD_USER_SCOPE("train_step");
    torch::Tensor loss = model.forward(x).sum();
    loss.backward();
    {
      RECORD_USER_SCOPE("Optimizer.zero_grad#SGD.zero_grad");
      for (auto& p : model.parameters()) p.grad().zero_();
    }
  }
  {
    torch::NoGradGuard no_grad;
    RECORD_USER_SCOPE("eval");
    model.forward(x);
  }
  const std::vector<Event> all = trace.finish();
  const Event step = first_named(all, "train_step"), zero = first_named(all, "Optimizer.zero_grad#SGD.zero_grad"),
              eval = first_named(all, "eval");
  EXPECT_EQ(str_arg(step, "phase"), "<missing>");
  EXPECT_EQ(str_arg(zero, "phase"), "optimizer");
  EXPECT_EQ(str_arg(eval, "phase"), "<missing>");
  EXPECT_EQ(int_arg(eval, "grad"), 0);
  std::map<std::string, int> by_phase;
  for (const Event& e : all) {
    if (e.ph != "X" || (e.cat != "aten" && e.cat != "autograd")) continue;
    const std::string phase = str_arg(e, "phase");
    ++by_phase[phase];
    if (e.cat == "autograd") {
      EXPECT_EQ(phase, "backward") << e.name;
    } else if (inside(e, zero)) {
      EXPECT_EQ(phase, "optimizer") << e.name;
    } else if (inside(e, eval)) {
      EXPECT_EQ(phase, "inference") << e.name;
    } else if (e.name == "aten::addmm" || e.name == "aten::relu" || e.name == "aten::linear") {
      // a forward op, or one the engine runs inside a node
      bool in_node = false;
      for (const Event& n : with_cat(all, "autograd")) in_node = in_node || inside(e, n);
      EXPECT_EQ(phase, in_node ? "backward" : "forward") << e.name;
    }
  }
  EXPECT_GT(by_phase["forward"], 0);
  EXPECT_GT(by_phase["backward"], 0);
  EXPECT_GT(by_phase["optimizer"], 0);
  EXPECT_GT(by_phase["inference"], 0);
}

// optimizer.step(closure) (LBFGS, Lightning's automatic optimization): the
// closure runs inside the step's scope, under enable_grad while the step
// holds no_grad. Marked by set_closure_step, its forward ops are forward,
// its backward's seed and nodes backward, a zero_grad scope in it and the
// update's grad-off ops optimizer, its model call an event of phase forward,
// and after the scope grad-off work is inference again. Unmarked, the
// forward ops read optimizer (the scope's) and the call has no event.
TEST(Observer, AClosuresForwardInsideItsOptimizerStepIsForward) {
  for (const bool marked : {true, false}) {
    torch::manual_seed(0);
    Mlp model;
    torch::Tensor x = torch::randn({2, 8});
    Trace trace;
    dftracer::torch::enable();
    {
      RECORD_USER_SCOPE("Optimizer.step#LBFGS.step");
      dftracer::torch::set_closure_step(marked);
      torch::NoGradGuard no_grad;  // the step's own grad mode
      {
        torch::AutoGradMode closure(true);
        {
          RECORD_USER_SCOPE("Optimizer.zero_grad#LBFGS.zero_grad");
          torch::zeros({1}).add_(1);  // (grad mode on)
        }
        dftracer::torch::set_module(dft_intern_cstr("mlp"), 1, dft_intern_cstr("nn.Module: Mlp"));
        torch::Tensor loss = model.forward(x).sum();
        dftracer::torch::set_module(0, 0);
        dftracer::torch::set_in_backward(true);
        loss.backward();
        dftracer::torch::set_in_backward(false);
      }
      for (auto& p : model.parameters()) p.add_(p.grad(), -0.1);
    }
    {
      torch::NoGradGuard no_grad;
      RECORD_USER_SCOPE("eval");
      model.forward(x);
    }
    const std::vector<Event> all = trace.finish();
    const Event step = first_named(all, "Optimizer.step#LBFGS.step"),
                zero = first_named(all, "Optimizer.zero_grad#LBFGS.zero_grad"), eval = first_named(all, "eval");
    EXPECT_EQ(str_arg(step, "phase"), "optimizer");
    std::map<std::string, int> forward_ops, update_ops, eval_ops;
    for (const Event& e : all) {
      if (e.ph != "X" || (e.cat != "aten" && e.cat != "autograd")) continue;
      const std::string phase = str_arg(e, "phase");
      bool in_node = false;
      for (const Event& n : with_cat(all, "autograd")) in_node = in_node || inside(e, n);
      if (e.cat == "autograd" || in_node) {
        EXPECT_EQ(phase, "backward") << e.name << " marked " << marked;
      } else if (inside(e, zero)) {
        EXPECT_EQ(phase, "optimizer") << e.name << " marked " << marked;
      } else if (inside(e, eval)) {
        ++eval_ops[phase];
      } else if (e.name == "aten::addmm" || e.name == "aten::relu" || e.name == "aten::linear") {
        ++forward_ops[phase];
      } else if (e.name == "aten::add_") {
        ++update_ops[phase];
      }
    }
    const auto call = std::find_if(all.begin(), all.end(), [](const Event& e) { return e.name == "nn.Module: Mlp"; });
    if (marked) {
      ASSERT_NE(call, all.end()) << "the closure's model call";
      EXPECT_EQ(str_arg(*call, "phase"), "forward");
      EXPECT_GT(forward_ops["forward"], 0);
      EXPECT_EQ(forward_ops.size(), 1u) << "forward ops of another phase";
      EXPECT_GT(eval_ops["inference"], 0);
      EXPECT_EQ(eval_ops.size(), 1u) << "evaluation ops of another phase";
    } else {
      EXPECT_GT(forward_ops["optimizer"], 0);
      EXPECT_EQ(forward_ops.size(), 1u);
      EXPECT_EQ(call, all.end()) << "a model call inside the update's work";
    }
    EXPECT_GT(update_ops["optimizer"], 0) << marked;
    EXPECT_EQ(update_ops.size(), 1u) << marked;
  }
}

// A wrapper optimizer (SAM) whose closure step calls its base optimizer's
// step without a closure: the inner step's pre hook (off) leaves the outer
// mark, so the closure's second forward, after the inner step, is still
// forward. After the outer scope ends, a grad-on op directly inside a later
// step without a closure is the update's again.
TEST(Observer, AnInnerStepWithoutAClosureKeepsTheOuterStepsMark) {
  Trace trace;
  dftracer::torch::enable();
  torch::Tensor w = torch::randn({4, 4}, torch::requires_grad());
  {
    RECORD_USER_SCOPE("Optimizer.step#SAM.step");
    dftracer::torch::set_closure_step(true);
    torch::NoGradGuard no_grad;
    {
      RECORD_USER_SCOPE("Optimizer.step#SGD.step");  // the base optimizer's
      dftracer::torch::set_closure_step(false);
    }
    torch::AutoGradMode closure(true);
    torch::mm(w, w);  // the closure's forward, after the inner step
  }
  {
    RECORD_USER_SCOPE("Optimizer.step#SGD.step");
    dftracer::torch::set_closure_step(false);
    torch::mm(w, w);  // grad mode on inside a step without a closure
  }
  const std::vector<Event> all = trace.finish();
  std::vector<std::string> phases;
  for (const Event& e : all)
    if (e.ph == "X" && e.name == "aten::mm") phases.push_back(str_arg(e, "phase"));
  EXPECT_EQ(phases, (std::vector<std::string>{"forward", "optimizer"}));
}

// set_data_thread(): a DataLoader worker's (or pin-memory) thread's ops are
// the dataset's: phase data with grad mode on or off, after a backward call
// or an optimizer scope, and no module call event; another thread's ops
// keep theirs.
TEST(Observer, ADataLoaderThreadsOpsArePhaseData) {
  Trace trace;
  dftracer::torch::enable();
  std::thread worker([] {
    dftracer::torch::set_data_thread();
    torch::Tensor x = torch::randn({4, 8});
    torch::Tensor m = x.mean(0);  // grad mode on, outside any model call
    {
      torch::NoGradGuard no_grad;
      (m * 2).sum();
    }
    EXPECT_FALSE(dftracer::torch::set_in_backward(true));  // no mark on a data thread
    torch::ones_like(m);
    dftracer::torch::set_in_backward(false);
    dftracer::torch::set_module(dft_intern_cstr("aug"), 1, dft_intern_cstr("nn.Module: Aug"));
    torch::relu(m);
    dftracer::torch::set_module(0, 0);
  });
  worker.join();
  torch::randn({2}).mean();  // this thread: forward
  const std::vector<Event> all = trace.finish();
  int worker_ops = 0, main_ops = 0;
  for (const Event& e : all) {
    if (e.ph != "X") continue;
    EXPECT_NE(e.name, "nn.Module: Aug") << "a data thread's module call records no call event";
    if (e.cat != "aten") continue;
    if (e.tid == e.pid) {
      ++main_ops;
      EXPECT_EQ(str_arg(e, "phase"), "forward") << e.name;
    } else {
      ++worker_ops;
      EXPECT_EQ(str_arg(e, "phase"), "data") << e.name;
    }
  }
  EXPECT_GT(worker_ops, 4);
  EXPECT_GT(main_ops, 0);
}

// set_in_backward(): while the thread is marked, its outermost work with
// grad mode on (the seed gradient a backward call makes before the engine
// runs) is backward; the mark returns its previous value, and unmarked the
// same op is forward again.
TEST(Observer, TheSeedOfABackwardCallIsBackward) {
  torch::Tensor w = torch::randn({4}, torch::requires_grad());
  Trace trace;
  dftracer::torch::enable();
  torch::Tensor loss = (w * 2).sum();
  EXPECT_FALSE(dftracer::torch::set_in_backward(true));
  torch::Tensor seed = torch::ones_like(loss);
  loss.backward(seed);
  EXPECT_TRUE(dftracer::torch::set_in_backward(false));
  torch::ones_like(loss);  // not in a backward call: forward
  const std::vector<Event> all = trace.finish();
  std::vector<std::string> seeds;
  for (const Event& e : all)
    if (e.ph == "X" && e.name == "aten::ones_like") seeds.push_back(str_arg(e, "phase"));
  EXPECT_EQ(seeds, (std::vector<std::string>{"backward", "forward"}));
  for (const Event& e : with_cat(all, "autograd")) EXPECT_EQ(str_arg(e, "phase"), "backward") << e.name;
  int forward_muls = 0;  // the forward's w * 2 (MulBackward0's own mul is backward)
  for (const Event& e : all) forward_muls += e.ph == "X" && e.name == "aten::mul" && str_arg(e, "phase") == "forward";
  EXPECT_EQ(forward_muls, 1);
}

// From the end of a backward() call (set_in_backward back off) to the next
// optimizer scope or backward() call, the thread's outermost grad-off work
// outside a model call is the update's (gradient clipping): optimizer; a
// model call there (an evaluation) stays inference, and a grad-off region
// there is a wrapper whose work decides; after the optimizer's scope
// grad-off work is inference again.
TEST(Observer, GradOffWorkBetweenBackwardAndTheUpdateIsTheOptimizers) {
  torch::Tensor w = torch::randn({4}, torch::requires_grad());
  Trace trace;
  dftracer::torch::enable();
  torch::Tensor loss = (w * 2).sum();
  dftracer::torch::set_in_backward(true);
  loss.backward();
  dftracer::torch::set_in_backward(false);
  {
    torch::NoGradGuard no_grad;
    torch::Tensor norm = w.grad().norm();  // clip_grad_norm_'s work
    dftracer::torch::set_module(7, 1);     // a model called under no_grad
    torch::Tensor eval = w.neg();
    dftracer::torch::set_module(0, 0);
    RECORD_USER_SCOPE("clip");  // a region opened with grad off: the work inside decides
    w.grad().mul_(0.5);
  }
  {
    RECORD_USER_SCOPE("Optimizer.step#SGD.step");
    torch::NoGradGuard no_grad;
    w.sub_(w.grad());
  }
  {
    torch::NoGradGuard no_grad;
    torch::Tensor after = w.abs();  // after the update: inference again
  }
  const std::vector<Event> all = trace.finish();
  std::map<std::string, std::string> phase;
  for (const Event& e : all)
    if (e.ph == "X" && e.cat == "aten" && !phase.count(e.name)) phase[e.name] = str_arg(e, "phase");
  EXPECT_EQ(phase["aten::norm"], "optimizer");
  EXPECT_EQ(phase["aten::neg"], "inference");
  EXPECT_EQ(phase["aten::mul_"], "optimizer");
  EXPECT_EQ(phase["aten::sub_"], "optimizer");
  EXPECT_EQ(phase["aten::abs"], "inference");
  for (const Event& e : all)
    if (e.ph == "X" && e.name == "clip") {
      EXPECT_EQ(str_arg(e, "phase"), "<missing>");
      EXPECT_EQ(int_arg(e, "grad"), 0);
    }
}

// set_in_update(): a GradScaler's step and update. While marked, the
// thread's outermost work is optimizer work, grad mode on (the scale's
// update) or off (the unscale); the mark's end ends the update even where no
// optimizer scope ran (the scaler skipped it): grad-off work is inference
// again and grad-on work forward. Inside a backward call the mark is
// ignored.
TEST(Observer, AnUpdateMarkMakesItsWorkOptimizerAndItsEndEndsTheUpdate) {
  torch::Tensor w = torch::randn({4}, torch::requires_grad());
  torch::Tensor scale = torch::ones({1});
  Trace trace;
  dftracer::torch::enable();
  torch::Tensor loss = (w * 2).sum();
  dftracer::torch::set_in_backward(true);
  loss.backward();
  EXPECT_FALSE(dftracer::torch::set_in_update(true));  // in a backward call: ignored
  dftracer::torch::set_in_backward(false);
  EXPECT_FALSE(dftracer::torch::set_in_update(true));  // the scaler's step
  {
    torch::NoGradGuard no_grad;
    w.grad().mul_(0.5);  // the unscale; no optimizer step follows (skipped)
  }
  EXPECT_TRUE(dftracer::torch::set_in_update(false));
  EXPECT_FALSE(dftracer::torch::set_in_update(true));  // the scaler's update, grad mode on
  scale.add_(1);
  EXPECT_TRUE(dftracer::torch::set_in_update(false));
  {
    torch::NoGradGuard no_grad;
    torch::Tensor metric = w.abs();  // after the update: inference, no optimizer scope having run
  }
  torch::Tensor next = w.neg();  // the next iteration's forward
  const std::vector<Event> all = trace.finish();
  std::map<std::string, std::string> phase;
  for (const Event& e : all)
    if (e.ph == "X" && e.cat == "aten" && !phase.count(e.name)) phase[e.name] = str_arg(e, "phase");
  EXPECT_EQ(phase["aten::mul_"], "optimizer");
  EXPECT_EQ(phase["aten::add_"], "optimizer");
  EXPECT_EQ(phase["aten::abs"], "inference");
  EXPECT_EQ(phase["aten::neg"], "forward");
}

// A training forward that turns grad mode off inside (a reentrant activation
// checkpoint's segment, a frozen backbone under no_grad) is forward work;
// a model called under no_grad is an evaluation's.
TEST(Observer, GradOffWorkInsideATrainingForwardIsForward) {
  torch::Tensor w = torch::randn({4}, torch::requires_grad());
  Trace trace;
  dftracer::torch::enable();
  dftracer::torch::set_module(7, 1);  // the model, called with grad mode on
  torch::Tensor h = w * 2;
  {
    torch::NoGradGuard no_grad;
    torch::Tensor frozen = h.neg();
  }
  dftracer::torch::set_module(0, 0);
  {
    torch::NoGradGuard no_grad;
    dftracer::torch::set_module(7, 1);  // an evaluation
    torch::Tensor eval = w.abs();
    dftracer::torch::set_module(0, 0);
  }
  const std::vector<Event> all = trace.finish();
  std::map<std::string, const Event*> first;
  for (const Event& e : all)
    if (e.ph == "X" && e.cat == "aten" && !first.count(e.name)) first[e.name] = &e;
  ASSERT_TRUE(first.count("aten::mul") && first.count("aten::neg") && first.count("aten::abs"));
  EXPECT_EQ(str_arg(*first["aten::mul"], "phase"), "forward");
  EXPECT_EQ(str_arg(*first["aten::neg"], "phase"), "forward");
  EXPECT_EQ(int_arg(*first["aten::neg"], "grad"), 0);
  EXPECT_EQ(str_arg(*first["aten::abs"], "phase"), "inference");
}

// A scope opened with grad mode on inside a training forward -- a custom
// autograd Function's apply, as a reentrant checkpoint's CheckpointFunction
// -- is the forward's own Python time: its event is phase forward, and the
// segment it runs under no_grad is forward too. Outside a model call such a
// scope is a wrapper with no phase of its own.
TEST(Observer, AScopeInsideATrainingForwardIsForwardAndItsGradOffSegmentToo) {
  torch::Tensor w = torch::randn({4}, torch::requires_grad());
  Trace trace;
  dftracer::torch::enable();
  dftracer::torch::set_module(7, 1);  // the model, called with grad mode on
  {
    RECORD_USER_SCOPE("CheckpointFunction");
    torch::NoGradGuard no_grad;
    torch::Tensor segment = w.neg();
  }
  dftracer::torch::set_module(0, 0);
  {
    RECORD_USER_SCOPE("loop_region");
    torch::Tensor outside = w.abs();
  }
  const std::vector<Event> all = trace.finish();
  const Event fn = first_named(all, "CheckpointFunction"), region = first_named(all, "loop_region");
  EXPECT_EQ(str_arg(fn, "phase"), "forward");
  EXPECT_EQ(str_arg(region, "phase"), "<missing>");
  std::map<std::string, const Event*> first;
  for (const Event& e : all)
    if (e.ph == "X" && e.cat == "aten" && !first.count(e.name)) first[e.name] = &e;
  ASSERT_TRUE(first.count("aten::neg") && first.count("aten::abs"));
  EXPECT_EQ(str_arg(*first["aten::neg"], "phase"), "forward");
  EXPECT_EQ(int_arg(*first["aten::neg"], "grad"), 0);
  EXPECT_EQ(str_arg(*first["aten::abs"], "phase"), "forward");
}

TEST(Observer, AGradOffScopeInsideATrainingForwardIsForward) {
  torch::Tensor w = torch::randn({4}, torch::requires_grad());
  Trace trace;
  dftracer::torch::enable();
  dftracer::torch::set_module(7, 1);  // the model, called with grad mode on
  {
    torch::NoGradGuard no_grad;  // a mask or position table built in forward
    RECORD_USER_SCOPE("build_mask");
    torch::Tensor mask = w.neg();
  }
  dftracer::torch::set_module(0, 0);
  {
    torch::NoGradGuard no_grad;  // outside any model call: no phase of its own
    RECORD_USER_SCOPE("loop_region");
    torch::Tensor outside = w.abs();
  }
  const std::vector<Event> all = trace.finish();
  EXPECT_EQ(str_arg(first_named(all, "build_mask"), "phase"), "forward");
  EXPECT_EQ(int_arg(first_named(all, "build_mask"), "grad"), 0);
  EXPECT_EQ(str_arg(first_named(all, "loop_region"), "phase"), "<missing>");
  std::map<std::string, const Event*> first;
  for (const Event& e : all)
    if (e.ph == "X" && e.cat == "aten" && !first.count(e.name)) first[e.name] = &e;
  ASSERT_TRUE(first.count("aten::neg"));
  EXPECT_EQ(str_arg(*first["aten::neg"], "phase"), "forward");
}

TEST(Observer, AnOverloadRedispatchIsOneOp) {
  torch::Tensor x = torch::randn({4, 4});
  Trace trace;
  dftracer::torch::enable();
  {
    torch::NoGradGuard no_grad;
    x.div_(2.0);
    x.mul(3.0);
    x.add(1.0);
  }
  const std::vector<Event> ops = with_cat(trace.finish(), "aten");
  auto n = count_names(ops);
  EXPECT_EQ(n["aten::div_"], 1);
  EXPECT_EQ(n["aten::mul"], 1);
  EXPECT_EQ(n["aten::add"], 1);
  // Each still holds the ops it ran (the scalar wrapped into a tensor).
  EXPECT_GT(ops.size(), 3u);
}

TEST(Observer, ShapesWhenAsked) {
  torch::Tensor a = torch::randn({4, 8});
  torch::Tensor b = torch::randn({8, 3});
  Trace trace;
  dftracer::torch::enable(/*with_shapes=*/true);
  EXPECT_TRUE(dftracer::torch::shapes_enabled());
  torch::mm(a, b);
  const auto ops = with_cat(trace.finish(), "aten");
  auto mm = std::find_if(ops.begin(), ops.end(), [](const Event& e) { return e.name == "aten::mm"; });
  ASSERT_NE(mm, ops.end());
  EXPECT_EQ(str_arg(*mm, "shapes"), "[[4, 8], [8, 3]]");
}

TEST(Observer, NothingBeforeEnableAfterDisableOrWhileTracingOff) {
  torch::Tensor a = torch::randn({4, 4});
  dftracer::torch::enable();
  torch::sin(a);  // tracing (the core) is off: not recorded, no crash
  Trace trace;
  dftracer::torch::disable();
  EXPECT_FALSE(dftracer::torch::enabled());
  torch::cos(a);  // observer off
  dftracer::torch::enable();
  EXPECT_TRUE(dftracer::torch::enabled());
  torch::tan(a);
  dftracer::torch::disable();
  torch::exp(a);
  auto n = count_names(with_cat(trace.finish(), "aten"));
  EXPECT_EQ(n.count("aten::sin"), 0u);
  EXPECT_EQ(n.count("aten::cos"), 0u);
  EXPECT_EQ(n["aten::tan"], 1);
  EXPECT_EQ(n.count("aten::exp"), 0u);
}

TEST(Observer, NoopBenchmarkModeRecordsNothingAndSwitchesBack) {
  torch::Tensor a = torch::randn({4, 4});
  Trace trace;
  dftracer::torch::enable_noop_for_benchmark();
  EXPECT_FALSE(dftracer::torch::enabled());
  torch::sin(a);  // callbacks run, record nothing
  dftracer::torch::enable(true);  // replaces the no-op callback
  EXPECT_TRUE(dftracer::torch::enabled());
  EXPECT_TRUE(dftracer::torch::shapes_enabled());
  torch::cos(a);
  dftracer::torch::enable_noop_for_benchmark();
  EXPECT_FALSE(dftracer::torch::enabled());
  EXPECT_FALSE(dftracer::torch::shapes_enabled());
  torch::tan(a);
  dftracer::torch::disable();
  auto evs = with_cat(trace.finish(), "aten");
  auto n = count_names(evs);
  EXPECT_EQ(n.count("aten::sin"), 0u);
  EXPECT_EQ(n["aten::cos"], 1);
  EXPECT_EQ(n.count("aten::tan"), 0u);
}

TEST(Observer, BackwardOnAnotherThreadCarriesThatThreadsId) {
  torch::manual_seed(0);
  Mlp model;
  torch::Tensor x = torch::randn({2, 8});
  Trace trace;
  dftracer::torch::enable();
  torch::Tensor loss = model.forward(x).sum();
  int64_t worker_tid = 0;
  std::thread worker([&] {
    worker_tid = dft_tid();
    loss.backward();
  });
  worker.join();
  const std::vector<Event> all = trace.finish();
  ASSERT_NE(worker_tid, 0);
  ASSERT_NE(worker_tid, dft_tid());
  const auto ops = with_cat(all, "aten");
  const auto nodes = with_cat(all, "autograd");
  auto n = count_names(nodes);
  EXPECT_EQ(n["AddmmBackward0"], 2);
  EXPECT_EQ(n["ReluBackward0"], 1);
  EXPECT_EQ(n["SumBackward0"], 1);
  for (const Event& e : nodes) EXPECT_EQ(e.tid, worker_tid) << e.name;
  int backward_ops = 0, forward_ops = 0;
  for (const Event& e : ops) {
    if (e.name == "aten::threshold_backward") {
      EXPECT_EQ(e.tid, worker_tid);
      ++backward_ops;
    }
    if (e.name == "aten::addmm" || e.name == "aten::relu") {
      EXPECT_EQ(e.tid, dft_tid());
      ++forward_ops;
    }
  }
  EXPECT_EQ(backward_ops, 1);
  EXPECT_EQ(forward_ops, 3);
  // Forward ops and their backward nodes share the autograd sequence number.
  std::vector<int64_t> fw_seq, bw_seq;
  for (const Event& e : ops)
    if (e.name == "aten::relu") fw_seq.push_back(int_arg(e, "seq_nr"));
  for (const Event& e : nodes)
    if (e.name == "ReluBackward0") bw_seq.push_back(int_arg(e, "seq_nr"));
  ASSERT_EQ(fw_seq.size(), 1u);
  ASSERT_EQ(bw_seq.size(), 1u);
  EXPECT_GE(fw_seq[0], 0);
  EXPECT_EQ(fw_seq[0], bw_seq[0]);
}

// set_module(): ops started while a module is set carry it as args.module;
// an autograd node, run on another thread, and the ops inside it carry the
// module of the forward op that made the node (by seq_nr and the forward's
// thread); a node whose forward op ran outside any module carries none.
TEST(Observer, ModuleOfForwardOpsAndOfTheirBackwardNodes) {
  torch::manual_seed(0);
  Mlp model;
  torch::Tensor x = torch::randn({2, 8});
  const uint32_t fc1 = dft_intern_cstr("fc1"), fc2 = dft_intern_cstr("fc2");
  Trace trace;
  dftracer::torch::enable();
  dftracer::torch::set_module(fc1, 1);
  torch::Tensor h = model.fc1->forward(x);
  dftracer::torch::set_module(0, 0);
  h = torch::relu(h);
  dftracer::torch::set_module(fc2, 1);
  torch::Tensor loss = model.fc2->forward(h);
  dftracer::torch::set_module(0, 0);
  loss = loss.sum();
  std::thread worker([&] { loss.backward(); });
  worker.join();
  const std::vector<Event> all = trace.finish();
  const auto ops = with_cat(all, "aten");
  const auto nodes = with_cat(all, "autograd");
  std::map<std::string, std::vector<std::string>> module_of;
  for (const Event& e : ops) module_of[e.name].push_back(str_arg(e, "module"));
  EXPECT_EQ(module_of["aten::addmm"], (std::vector<std::string>{"fc1", "fc2"}));
  EXPECT_EQ(module_of["aten::relu"], (std::vector<std::string>{"<missing>"}));  // outside any module
  std::vector<std::string> addmm_bw;
  for (const Event& n : nodes) {
    if (n.name == "AddmmBackward0") addmm_bw.push_back(str_arg(n, "module"));
    if (n.name == "ReluBackward0" || n.name == "SumBackward0") {
      EXPECT_EQ(n.args_json.find("module"), std::string::npos) << n.name;
    }
    for (const Event& e : ops) {
      if (e.tid == n.tid && inside(e, n) && n.name == "AddmmBackward0") {
        EXPECT_EQ(str_arg(e, "module"), str_arg(n, "module")) << e.name << " inside " << n.name;
      }
    }
  }
  // Backward runs fc2's node first.
  EXPECT_EQ(addmm_bw, (std::vector<std::string>{"fc2", "fc1"}));
}

TEST(Observer, InsideCompiledFunctionScopeOnlyTheGraphsOwnOpsAreRecorded) {
  torch::Tensor a = torch::randn({4, 4});
  torch::Tensor b = torch::randn({4, 4});
  Trace trace;
  dftracer::torch::enable();
  torch::sin(a);
  {
    // The scope AOT autograd's compiled forward runs in (torch.compile): the
    // ops its code calls (Inductor's extern kernels) are recorded, not the
    // ops they call in turn (aten::linear runs aten::t and aten::matmul ...).
    RECORD_FUNCTION("CompiledFunction", std::vector<c10::IValue>());
    torch::cos(a);
    torch::linear(a, b);
  }
  torch::exp(a);
  const std::vector<Event> all = trace.finish();
  auto ops = count_names(with_cat(all, "aten"));
  EXPECT_EQ(ops["aten::sin"], 1);
  EXPECT_EQ(ops["aten::exp"], 1);
  EXPECT_EQ(ops["aten::cos"], 1);
  EXPECT_EQ(ops["aten::linear"], 1);
  EXPECT_EQ(ops.count("aten::t"), 0u);
  EXPECT_EQ(ops.count("aten::matmul"), 0u);
  EXPECT_EQ(ops.count("aten::mm"), 0u);
  EXPECT_EQ(count_names(with_cat(all, "torch"))["CompiledFunction"], 1);
}

namespace {
thread_local int tl_open_graphs = 0;
int open_graphs() { return tl_open_graphs; }
}  // namespace

TEST(Observer, GraphDepthProbeSkipsOpsOnlyWhileAGraphIsOpen) {
  torch::Tensor a = torch::randn({4, 4});
  Trace trace;
  dftracer::torch::set_graph_depth_probe(&open_graphs);
  dftracer::torch::enable();
  torch::sin(a);
  tl_open_graphs = 1;
  torch::cos(a);
  std::thread other([&] { torch::tan(a); });  // another thread has no open graph
  other.join();
  tl_open_graphs = 0;
  torch::exp(a);
  dftracer::torch::set_graph_depth_probe(nullptr);
  auto ops = count_names(with_cat(trace.finish(), "aten"));
  EXPECT_EQ(ops["aten::sin"], 1);
  EXPECT_EQ(ops.count("aten::cos"), 0u);
  EXPECT_EQ(ops["aten::tan"], 1);
  EXPECT_EQ(ops["aten::exp"], 1);
}

TEST(Observer, EnvironmentSwitch) {
  {
    ScopedEnv e("DFTRACER_TRACE_EAGER", "shapes");
    EXPECT_TRUE(dftracer::torch::enable_from_env());
    EXPECT_TRUE(dftracer::torch::shapes_enabled());
  }
  dftracer::torch::disable();
  {
    ScopedEnv e("DFTRACER_TRACE_EAGER", "On");
    EXPECT_TRUE(dftracer::torch::enable_from_env());
    EXPECT_FALSE(dftracer::torch::shapes_enabled());
  }
  dftracer::torch::disable();
  for (const char* off : {"0", "off", "", "bogus"}) {
    ScopedEnv e("DFTRACER_TRACE_EAGER", off);
    EXPECT_FALSE(dftracer::torch::enable_from_env()) << off;
  }
}

// Memory capture: an allocation inside an op is that op's alloc_bytes, the
// counter track has the allocator's total, a thread that did not turn it on
// reports nothing, and off again removes it from this thread.
TEST(Observer, MemoryCaptureAttributesAllocationsToTheInnermostOp) {
  Trace trace;
  dftracer::torch::enable();
  EXPECT_FALSE(dftracer::torch::memory_reported_on_this_thread());
  dftracer::torch::enable_memory();
  EXPECT_TRUE(dftracer::torch::memory_enabled());
  EXPECT_TRUE(dftracer::torch::memory_reported_on_this_thread());
  torch::Tensor a = torch::empty({256}, torch::kFloat);  // 1024 bytes in aten::empty
  std::thread other([] {
    EXPECT_FALSE(dftracer::torch::memory_reported_on_this_thread());
    torch::Tensor b = torch::ones({512}, torch::kFloat);
  });
  other.join();
  torch::Tensor c = a.neg();  // aten::neg allocates its 1024-byte result
  { torch::Tensor t = torch::empty({256}, torch::kFloat); }  // 1024 bytes allocated and freed: a "free" event
  dftracer::torch::enable_memory(false);
  EXPECT_FALSE(dftracer::torch::memory_enabled());
  EXPECT_FALSE(dftracer::torch::memory_reported_on_this_thread());
  torch::Tensor d = torch::empty({64}, torch::kFloat);  // off again: no args
  const std::vector<Event> all = trace.finish();
  std::map<std::string, int> alloc_events;
  bool counter = false;
  int blocks_1024 = 0, frees = 0;
  for (const Event& e : all) {
    // The per-block events: a's and c's 1024-byte allocations by their ops, nothing from the other thread.
    if (e.ph == "i" && e.name == "alloc") {
      EXPECT_EQ(e.tid, dft_tid());
      EXPECT_NE(e.args_json.find("\"addr\":"), std::string::npos) << e.args_json;
      if (e.args_json.find("\"size\":1024") != std::string::npos) {
        ++blocks_1024;
        EXPECT_TRUE(e.args_json.find("\"op\":\"aten::empty\"") != std::string::npos ||
                    e.args_json.find("\"op\":\"aten::neg\"") != std::string::npos)
            << e.args_json;
      }
    }
    // A free carries its address alone (the replay has its size from the allocation).
    if (e.ph == "i" && e.name == "free") {
      ++frees;
      EXPECT_EQ(e.args_json.rfind("{\"addr\":", 0), 0u) << e.args_json;
      EXPECT_EQ(e.args_json.find(','), std::string::npos) << e.args_json;
    }
    if (e.ph == "C") {
      EXPECT_EQ(e.name, "memory");
      EXPECT_NE(e.args_json.find("\"cpu\":"), std::string::npos) << e.args_json;
      counter = true;
    }
    if (e.ph != "X" || e.args_json.find("alloc_bytes") == std::string::npos) continue;
    ++alloc_events[e.name];
    EXPECT_EQ(e.tid, dft_tid()) << e.name << " on another thread";
    // a's, t's and c's 1024 bytes
    if (e.name == "aten::empty" || e.name == "aten::neg")
      EXPECT_NE(e.args_json.find("\"alloc_bytes\":1024"), std::string::npos) << e.args_json;
  }
  EXPECT_EQ(alloc_events["aten::empty"], 2);  // a and t; d, after memory capture went off, has none
  EXPECT_EQ(alloc_events["aten::neg"], 1);
  EXPECT_EQ(alloc_events.count("aten::ones"), 0u);  // the other thread's
  EXPECT_EQ(blocks_1024, 3);  // a, t and c
  EXPECT_GE(frees, 1);
  EXPECT_TRUE(counter);
}

// The allocator's total after each allocation of one thread, in order (-1:
// written without a total), from a trace's "alloc" block events.
std::vector<long long> alloc_totals(const std::vector<Event>& all) {
  std::vector<long long> out;
  for (const Event& e : all) {
    if (e.ph != "i" || e.name != "alloc") continue;
    const size_t at = e.args_json.find("\"total\":");
    out.push_back(at == std::string::npos ? -1 : std::stoll(e.args_json.substr(at + 8)));
  }
  return out;
}

// An allocation carries its total only when it is higher than every total
// its thread wrote in this trace file: the highest total (the peak's event,
// the earliest of equal ones) always has it, an allocation back at a level
// written before has none. A new trace file starts its own highs.
TEST(Observer, AnAllocationCarriesItsTotalOnlyWhenANewHighForItsThreadInTheFile) {
  long long first_high = 0;
  {
    Trace trace;
    dftracer::torch::enable();
    dftracer::torch::enable_memory();
    { torch::Tensor t = torch::empty({256}, torch::kFloat); }  // up to a level, then back
    { torch::Tensor t = torch::empty({256}, torch::kFloat); }  // the same level again: no total
    { torch::Tensor a = torch::empty({512}, torch::kFloat); }  // higher: a total
    dftracer::torch::enable_memory(false);
    const std::vector<long long> totals = alloc_totals(trace.finish());
    ASSERT_EQ(totals.size(), 3u);
    EXPECT_GE(totals[0], 1024);
    EXPECT_EQ(totals[1], -1);
    EXPECT_EQ(totals[2], totals[0] + 2048 - 1024);  // t freed, a's 2048 bytes allocated
    first_high = totals[2];
  }
  Trace trace;  // another file: its first allocation has its total, though lower than the last file's high
  dftracer::torch::enable();
  dftracer::torch::enable_memory();
  { torch::Tensor t = torch::empty({256}, torch::kFloat); }
  dftracer::torch::enable_memory(false);
  const std::vector<long long> totals = alloc_totals(trace.finish());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_GE(totals[0], 1024);
  EXPECT_LT(totals[0], first_high);
}

// The counter track's pending peak, driven through the reporter c10 calls
// (what the CPU allocator calls), with totals as other threads' allocations
// make them: the highest total since a thread's last sample is an
// allocation's -- a free's total (other threads allocated meanwhile) is never
// it --, the earliest of equal ones, and it is written before the next
// sample even when that sample's total equals it; turning capture off writes
// what is pending. Each sample is checked exactly, by value and by the time
// of the allocation it came from; an allocation's block event carries its
// total only on a new high.
TEST(Observer, MemoryTrackPendingPeakIsTheEarliestAllocationsAcrossInterleavedFrees) {
  using std::chrono::milliseconds;
  // Samples 1 s apart at least, and 1.6 s between the groups of reports: a
  // group (10 ms of reports) stays within one interval on a loaded machine
  // that stalls the thread for most of a second.
  ScopedEnv interval("DFTRACER_MEMORY_INTERVAL_US", "1000000");
  Trace trace;
  dftracer::torch::enable();
  dftracer::torch::enable_memory();
  auto* reporter = dynamic_cast<c10::MemoryReportingInfoBase*>(
      c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE));
  ASSERT_NE(reporter, nullptr);
  auto report = [reporter](uintptr_t addr, int64_t size, size_t total) {
    reporter->reportMemoryUsage(reinterpret_cast<void*>(addr), size, total, 0, c10::Device(c10::kCPU));
    std::this_thread::sleep_for(milliseconds(2));  // distinct microsecond times
  };
  auto past_interval = [] { std::this_thread::sleep_for(milliseconds(1600)); };
  past_interval();         // whatever this thread sampled before
  report(0xa0, 100, 1100);  // A: the first sample
  report(0xb0, 200, 1300);  // B: pending 1300
  report(0xb0, -200, 1100);
  report(0xc0, 200, 1300);  // C: 1300 again, later: B stays the pending peak
  report(0xa0, -100, 5000);  // a free after other threads allocated: not this thread's peak
  past_interval();
  report(0xd0, 100, 1300);  // D: a sample of 1300, B's 1300 before it
  report(0xe0, 50, 1350);   // E: pending 1350
  report(0xe0, -50, 1300);
  past_interval();
  report(0xf0, 50, 1350);   // F: a sample equal to E's pending 1350, written after it
  report(0x10, 50, 1400);   // G: pending when capture turns off
  dftracer::torch::enable_memory(false);
  const std::vector<Event> all = trace.finish();

  std::map<uintptr_t, double> alloc_ts;  // by address: the last allocation there
  std::vector<long long> totals = alloc_totals(all);
  std::vector<std::pair<double, long long>> samples;
  for (const Event& e : all) {
    if (e.ph == "i" && e.name == "alloc") {
      const size_t at = e.args_json.find("\"addr\":");
      ASSERT_NE(at, std::string::npos) << e.args_json;
      alloc_ts[std::stoull(e.args_json.substr(at + 7))] = e.ts;
    }
    if (e.ph == "C" && e.name == "memory") {
      const size_t at = e.args_json.find("\"cpu\":");
      ASSERT_NE(at, std::string::npos) << e.args_json;
      samples.emplace_back(e.ts, std::stoll(e.args_json.substr(at + 6)));
    }
  }
  ASSERT_EQ(alloc_ts.size(), 7u);
  const std::vector<std::pair<double, long long>> want = {
      {alloc_ts[0xa0], 1100}, {alloc_ts[0xb0], 1300}, {alloc_ts[0xd0], 1300}, {alloc_ts[0xe0], 1350},
      {alloc_ts[0xf0], 1350}, {alloc_ts[0x10], 1400}};
  // Each sample carries its allocation's time. Near, not equal: the two are
  // converted from the same tick when each is written, and the clock's rate
  // may be refined in between (this failed once on a loaded machine, the
  // times equal to 6 digits); allocations are 2 ms apart, so 100 us still
  // names one.
  ASSERT_EQ(samples.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(samples[i].first, want[i].first, 100.0) << "sample " << i;
    EXPECT_EQ(samples[i].second, want[i].second) << "sample " << i;
  }
  EXPECT_LT(alloc_ts[0xb0], alloc_ts[0xc0]);
  // A, B, E and G were new highs of this thread in the file; C, D and F were not.
  EXPECT_EQ(totals, (std::vector<long long>{1100, 1300, -1, -1, 1350, -1, 1400}));
}

// The reporter sits under torch's profiler-state slot: torch must read it as
// a disabled profiler state (no profiler), and nothing stays there after.
TEST(Observer, MemoryCaptureLeavesTorchProfilerOff) {
  Trace trace;
  dftracer::torch::enable_memory();
  EXPECT_FALSE(torch::profiler::impl::profilerEnabled());
  EXPECT_EQ(torch::profiler::impl::profilerType(), torch::profiler::impl::ActiveProfilerType::NONE);
  EXPECT_TRUE(torch::profiler::impl::getProfilerConfig().disabled());
  dftracer::torch::enable_memory(false);
  EXPECT_EQ(torch::profiler::impl::ProfilerStateBase::get(/*global=*/false), nullptr);
  trace.finish();
}

// Launch scopes (dft_launch_scope): a fake device side records the ids each
// op pushes; while clamp_min (relu's kernel) runs, the top of the stack --
// what a kernel launched there would carry -- is clamp_min's own id, and
// every op event carries its id as "External id".
namespace launch_scope {
std::vector<uint64_t> stack;
std::map<uint64_t, size_t> depth_at_push;
uint64_t next = 1;
int pops = 0;
uint64_t push() {
  depth_at_push[next] = stack.size();
  stack.push_back(next);
  return next++;
}
void pop() {
  ++pops;
  if (!stack.empty()) stack.pop_back();
}
const dft_launch_scope kFake = {sizeof(dft_launch_scope), &push, &pop};
}  // namespace launch_scope

TEST(Observer, EachRecordedOpRunsInALaunchScopeAndCarriesItsId) {
  namespace ls = launch_scope;
  torch::Tensor x = torch::randn({4, 4});
  Trace trace;
  dftracer::torch::enable();
  ASSERT_EQ(dft_set_launch_scope(&ls::kFake), 0);
  torch::relu(x);
  dft_set_launch_scope(nullptr);
  torch::relu(x);  // after the source stopped: no id
  const std::vector<Event> ops = with_cat(trace.finish(), "aten");
  EXPECT_TRUE(ls::stack.empty()) << "every push popped";
  EXPECT_EQ(ls::pops, static_cast<int>(ls::next - 1));
  int64_t relu_id = -1, clamp_id = -1;
  int without = 0;
  for (const Event& e : ops) {
    const int64_t id = int_arg(e, "External id");
    if (id < 0) {
      ++without;
      continue;
    }
    if (e.name == "aten::relu") relu_id = id;
    if (e.name == "aten::clamp_min") clamp_id = id;
  }
  ASSERT_GT(relu_id, 0);
  ASSERT_GT(clamp_id, 0);
  EXPECT_NE(relu_id, clamp_id);
  // clamp_min was pushed above relu: a kernel launched inside it is tagged with clamp_min's id.
  EXPECT_EQ(ls::depth_at_push[static_cast<uint64_t>(clamp_id)], ls::depth_at_push[static_cast<uint64_t>(relu_id)] + 1);
  EXPECT_GE(without, 2) << "the second relu and its clamp_min pushed nothing";
}

// set_module() with a call name on a thread's first module call, and
// set_in_backward()'s marked span: one event each (cat torch) holding the
// call's ops, phase forward (inference with grad mode off) and backward; a
// module call inside a backward call is none (the backward holds it).
TEST(Observer, OutermostModuleCallAndBackwardCallAreOneEventEach) {
  torch::manual_seed(0);
  Mlp model;
  torch::Tensor x = torch::randn({2, 8});
  const uint32_t root = dft_intern_cstr(""), name = dft_intern_cstr("nn.Module: Mlp");
  Trace trace;
  dftracer::torch::enable();
  dftracer::torch::set_module(root, 1, name);
  torch::Tensor loss = model.fc2->forward(torch::relu(model.fc1->forward(x))).sum();
  dftracer::torch::set_module(0, 0);
  {
    torch::NoGradGuard no_grad;
    dftracer::torch::set_module(root, 1, name);
    model.fc1->forward(x);
    dftracer::torch::set_module(0, 0);
  }
  dftracer::torch::set_in_backward(true);
  dftracer::torch::set_module(root, 1, name);  // a recompute: inside the backward call
  dftracer::torch::set_module(0, 0);
  loss.backward();
  dftracer::torch::set_in_backward(false);
  const std::vector<Event> all = trace.finish();
  std::vector<Event> calls, backward;
  for (const Event& e : with_cat(all, "torch")) {
    if (e.name == "nn.Module: Mlp") calls.push_back(e);
    if (e.name == "Tensor.backward") backward.push_back(e);
  }
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(str_arg(calls[0], "phase"), "forward");
  EXPECT_EQ(str_arg(calls[1], "phase"), "inference");
  ASSERT_EQ(backward.size(), 1u);
  EXPECT_EQ(str_arg(backward[0], "phase"), "backward");
  int addmm_in_first = 0, nodes_in_backward = 0;
  for (const Event& e : with_cat(all, "aten")) addmm_in_first += e.name == "aten::addmm" && inside(e, calls[0]);
  for (const Event& n : with_cat(all, "autograd")) nodes_in_backward += inside(n, backward[0]);
  EXPECT_EQ(addmm_in_first, 2);
  EXPECT_EQ(nodes_in_backward, static_cast<int>(with_cat(all, "autograd").size()));
  EXPECT_GT(nodes_in_backward, 0);
}
