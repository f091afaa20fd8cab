// classify_name (name_and_env.cc beside it), built here with the standard
// library's bounds assertions (_GLIBCXX_ASSERTIONS, see CMakeLists.txt), so
// an out-of-range read of a name aborts the test instead of passing silently.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "op_name_cache.h"

using dftracer::torch_observer::classify_name;
using dftracer::torch_observer::event_name_offset;
using dftracer::torch_observer::kAutogradNode;
using dftracer::torch_observer::kCompiledScope;
using dftracer::torch_observer::kInductorKernel;
using dftracer::torch_observer::kOperator;
using dftracer::torch_observer::kDataScope;
using dftracer::torch_observer::kOptimizerScope;
using dftracer::torch_observer::kOptimizerStep;

namespace {

// Classifies `name` from a heap block of exactly its length (no NUL), so a
// read past the end is also an AddressSanitizer error.
uint8_t classify(const std::string& name) {
  std::unique_ptr<char[]> exact(new char[name.size()]);
  std::memcpy(exact.get(), name.data(), name.size());
  return classify_name(exact.get(), name.size());
}

}  // namespace

TEST(NameClassification, Operators) {
  EXPECT_EQ(classify("aten::mm"), kOperator);
  EXPECT_EQ(classify("aten::add.Tensor"), kOperator);
  EXPECT_EQ(classify("mylib::custom_op"), kOperator);
  EXPECT_EQ(classify("aten::"), 0);
  EXPECT_EQ(classify("::mm"), 0);
  EXPECT_EQ(classify("torch::autograd::AccumulateGrad"), 0);  // two namespaces: not an op
  EXPECT_EQ(classify("Optimizer.step#SGD.step"), kOptimizerStep | kOptimizerScope);  // a scope, not an op
  EXPECT_EQ(classify("Optimizer.step#"), kOptimizerStep | kOptimizerScope);
  EXPECT_EQ(classify("Optimizer.step"), 0);
  EXPECT_EQ(classify("Optimizer.zero_grad#SGD.zero_grad"), kOptimizerScope);
  EXPECT_EQ(classify("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), kDataScope);
}

TEST(NameClassification, EngineScopeIsTheAutogradNode) {
  const std::string prefix = "autograd::engine::evaluate_function: ";
  EXPECT_EQ(classify(prefix + "MmBackward0"), kAutogradNode);
  EXPECT_EQ(classify(prefix + "torch::autograd::AccumulateGrad"), kAutogradNode);
  // One namespace and identifier characters after the prefix: a node, never
  // an operator, and classified without reading past the shortened name.
  EXPECT_EQ(classify(prefix + "mylib::FooBackward"), kAutogradNode);
  EXPECT_EQ(classify(prefix + "CompiledFunctionBackward"), kAutogradNode | kCompiledScope);
  EXPECT_EQ(event_name_offset(kAutogradNode), prefix.size());
  EXPECT_EQ(event_name_offset(kOperator), 0u);
}

TEST(NameClassification, InductorKernelScopes) {
  EXPECT_EQ(classify("graph_0_cpp_fused_native_layer_norm_relu_0"), kInductorKernel);
  EXPECT_EQ(classify("graph_12_cpp_fused_sum_1"), kInductorKernel);
  EXPECT_EQ(classify("graph_cpp_fused_sum_1"), 0);  // no graph number
  EXPECT_EQ(classify("graph_0_triton_poi_0"), 0);
  EXPECT_EQ(classify("graph_0"), 0);
}

TEST(NameClassification, CompiledScopes) {
  EXPECT_EQ(classify("CompiledFunction"), kCompiledScope);
  EXPECT_EQ(classify("CompiledFunctionBackward"), kCompiledScope);
  EXPECT_EQ(classify("CompiledFunctionX"), 0);
}
