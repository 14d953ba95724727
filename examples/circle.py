"""Inside or outside a circle, with the scalar engine: MLP(2, [8, 8, 1]) with tanh.

60 random points in [-1, 1]^2, labelled +1 where x0^2 + x1^2 < 0.5 and -1 elsewhere; mean
squared error; 200 full-batch SGD steps, lr 0.1 for the first 100 and 0.03 after. One article
prints "113 parameters" for this network; this program counts them.

    python examples/circle.py
"""

import random

from scratchgrad.scalar import MLP


def main(seed: int = 0) -> None:
    rng = random.Random(seed)  # one generator: the points first, then the weights
    xs = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(60)]
    ys = [1.0 if x0 * x0 + x1 * x1 < 0.5 else -1.0 for x0, x1 in xs]
    model = MLP(2, [8, 8, 1], rng=rng)

    n = len(model.parameters())
    by_layer = " + ".join(f"({nin}*{nout} + {nout})" for nin, nout in [(2, 8), (8, 8), (8, 1)])
    print(f"MLP(2, [8, 8, 1]) has {n} parameters: {by_layer}.")
    print("  (The article's 113 is the count for three inputs: MLP(3, [8, 8, 1]).)")

    params = model.parameters()
    for step in range(1, 201):
        preds = [model(x) for x in xs]
        loss = sum((p - y) ** 2 for p, y in zip(preds, ys)) / len(ys)
        model.zero_grad()
        loss.backward()
        lr = 0.1 if step <= 100 else 0.03
        for p in params:
            p.data -= lr * p.grad
        if step % 20 == 0:
            correct = sum((p.data > 0) == (y > 0) for p, y in zip(preds, ys))
            print(f"  step {step:3d}  lr {lr}  loss {loss.data:.4f}  accuracy {correct}/60")

    correct = sum((model(x).data > 0) == (y > 0) for x, y in zip(xs, ys))
    print(f"Final: {correct}/60 training points right ({100 * correct / 60:.1f}%).")


if __name__ == "__main__":
    main()
