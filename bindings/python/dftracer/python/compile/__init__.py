"""torch.compile capture, the Python half of src/capture/compile: the Dynamo
backend (dynamo_backend), the graph pass that marks each op (dynamo_graph_pass,
dynamo_nodes, dynamo_sizes, dynamo_pairing), the graph table and calls
(dynamo_graphs, dynamo_graph_call, dynamo_hooks), module attribution
(dynamo_modules, dynamo_metadata), compile-time events (compile_events) and
optimizer steps (optimizer_events). pydftracer's API for it is
dftracer.python.dynamo.
"""
