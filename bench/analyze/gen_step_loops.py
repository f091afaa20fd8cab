"""Writes the two loop shapes the step finder's cost is measured on
(docs/performance.md, "Steps of inference loops"): one process's eager
loop as the LibTorch observer records it, one line per event in the
writer's format.

    python3 gen_step_loops.py train|infer STEPS OUT.pfw

train  per step: zero_grad, a forward (linear, relu, linear), a metric under
       no_grad, two autograd nodes, AdamW's step and an EMA under no_grad
       (source `optimizer`); an evaluation of three no_grad forwards every 50
       steps
infer  per iteration: a DataLoader fetch with its collate, then a no_grad
       forward (linear, relu, linear, softmax) (source `inference`)
"""
import sys


def main():
    shape, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    n = 0

    def ev(f, name, cat, ts, dur, args=""):
        nonlocal n
        a = ',"args":{' + args + '}' if args else ""
        f.write(f'{{"id":{n},"name":"{name}","cat":"{cat}","pid":7,"tid":7,"ts":{ts},"dur":{dur},"ph":"X"{a}}}\n')
        n += 1

    off = '"grad":0'
    with open(out, "w") as f:
        f.write("[\n")
        t = 1_000_000
        for k in range(8):  # the model's init under no_grad
            ev(f, "aten::uniform_", "aten", t + 10 * k, 5, off)
        t += 1000
        for k in range(steps):
            if shape == "train":
                ev(f, "Optimizer.zero_grad#AdamW.zero_grad", "torch", t, 5)
                ev(f, "aten::linear", "aten", t + 10, 20)
                ev(f, "aten::relu", "aten", t + 31, 3)
                ev(f, "aten::linear", "aten", t + 35, 10)
                ev(f, "aten::argmax", "aten", t + 47, 2, off)
                ev(f, "AddmmBackward0", "autograd", t + 50, 20)
                ev(f, "AddmmBackward0", "autograd", t + 72, 20)
                ev(f, "Optimizer.step#AdamW.step", "torch", t + 95, 30)
                ev(f, "aten::_foreach_lerp_", "aten", t + 127, 3, off)
                t += 200
                if k % 50 == 49:
                    for e in range(3):
                        ev(f, "aten::linear", "aten", t + 30 * e, 25, off)
                    t += 100
            else:
                ev(f, "aten::stack", "aten", t + 2, 6)
                ev(f, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "torch", t, 10)
                ev(f, "aten::linear", "aten", t + 15, 10, off)
                ev(f, "aten::relu", "aten", t + 26, 3, off)
                ev(f, "aten::linear", "aten", t + 30, 10, off)
                ev(f, "aten::softmax", "aten", t + 41, 4, off)
                t += 100
        f.write("]\n")


if __name__ == "__main__":
    main()
