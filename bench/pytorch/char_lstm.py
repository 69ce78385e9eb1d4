#!/usr/bin/env python3
"""PyTorch's nn.LSTM in the shape of models/char_lstm: Embedding(76, 32),
LSTM(32 -> 128) over T = 50 steps of N = 32 streams, Linear(128 -> 76),
cross-entropy at every step. Prints one JSON line.

  char_lstm.py [--iterations K] [--threads 2]              time iterations
  char_lstm.py --train ITERS --data data/char_lstm  train as solver.prototxt does

Timing: one untimed iteration, then K iterations on random characters, each
split into forward + loss + backward and the step (SGD with momentum 0.9 and
weight decay 5e-4, as `xtrain time --training_step` does). Training: Adam
from 0.005, gradients clipped to an L2 norm of 5 (Caffe's clip_gradients),
the state carried from batch to batch as the xtrain net does; prints the
next-character accuracy on the test file after the last iteration.
Run it with the BLAS pointed at OpenBLAS (bench/char_lstm.py does).
"""
import argparse
import json
import time

import torch
from torch import nn

VOCABULARY, EMBEDDING, HIDDEN, STEPS, STREAMS = 76, 32, 128, 50, 32


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, EMBEDDING)
        self.lstm = nn.LSTM(EMBEDDING, HIDDEN)  # input T x N x E
        self.predict = nn.Linear(HIDDEN, VOCABULARY)

    def forward(self, chars, state=None):
        hidden, state = self.lstm(self.embed(chars), state)
        return self.predict(hidden), state


def time_iterations(model, iterations):
    chars = torch.randint(0, VOCABULARY, (STEPS, STREAMS))
    targets = torch.randint(0, VOCABULARY, (STEPS, STREAMS))
    criterion = nn.CrossEntropyLoss()
    solver = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=5e-4)

    def iteration():
        start = time.perf_counter()
        scores, _ = model(chars)
        criterion(scores.reshape(-1, VOCABULARY), targets.reshape(-1)).backward()
        backward_done = time.perf_counter()
        solver.step()
        solver.zero_grad(set_to_none=True)
        return backward_done - start, time.perf_counter() - backward_done

    iteration()
    forward_backward = step = 0.0
    for _ in range(iterations):
        fb, s = iteration()
        forward_backward += fb
        step += s
    return {"forward_backward_ms": 1000 * forward_backward / iterations,
            "step_ms": 1000 * step / iterations,
            "iteration_ms": 1000 * (forward_backward + step) / iterations}


def train(model, iterations, data):
    import h5py  # only training reads the data files

    def load(name):
        with h5py.File(f"{data}/{name}.h5", "r") as f:
            return (torch.tensor(f["input"][:]).long(), torch.tensor(f["target"][:]).long())

    train_in, train_out = load("train")
    test_in, test_out = load("test")
    criterion = nn.CrossEntropyLoss()
    solver = torch.optim.Adam(model.parameters(), lr=0.005, betas=(0.9, 0.999), eps=1e-8)
    state, row, losses = None, 0, []
    for _ in range(iterations):
        if row + STEPS > train_in.shape[0]:
            row = 0
        scores, state = model(train_in[row:row + STEPS], state)
        state = tuple(s.detach() for s in state)
        loss = criterion(scores.reshape(-1, VOCABULARY), train_out[row:row + STEPS].reshape(-1))
        solver.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        solver.step()
        losses.append(loss.item())
        row += STEPS
    with torch.no_grad():
        scores, _ = model(test_in)
        accuracy = (scores.argmax(2) == test_out).float().mean().item()
    return {"final_train_loss": sum(losses[-20:]) / 20, "test_accuracy": accuracy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train", type=int, default=0)
    parser.add_argument("--data", default="data/char_lstm")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = CharLSTM().train()
    result = train(model, args.train, args.data) if args.train else time_iterations(
        model, args.iterations)
    result.update({"torch": torch.__version__, "threads": torch.get_num_threads()})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
