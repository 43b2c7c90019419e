"""MNIST with torchrs, written as a PyTorch user writes it: the only change from a PyTorch
script is the imports (``import torchrs as torch`` and friends).

The model, data split and evaluation are those of torch/examples/mnist_pytorch.py (the PyTorch
original of the Rust main job), trained with SGD (lr 0.02, momentum 0.9) on the 4000/1000 split of
data/mnist_5k.csv.gz:

    python python/examples/mnist.py --epochs 3 --min-accuracy 0.95
"""

import argparse
import gzip
import sys
import time
import types

import torchrs as torch
import torchrs.nn as nn
import torchrs.nn.functional as F
from torchrs.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(1600, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout(torch.flatten(x, 1))
        x = self.dropout(F.relu(self.fc1(x)))
        return self.fc2(x)


@torch.no_grad()
def accuracy(model, test):
    images, labels = test
    n = images.shape[0]
    correct = 0
    for start in range(0, n, 1000):
        pred = model(images[start:start + 1000]).argmax(1)
        correct += (pred == labels[start:start + 1000]).sum().item()
    return correct / n


def load(path, seed, limit=None):
    rows = [line.split(",") for line in gzip.open(path, "rt").read().split()]
    labels = torch.tensor([int(r[-1]) for r in rows])
    images = torch.tensor([[float(v) for v in r[:-1]] for r in rows]).view(-1, 1, 28, 28) / 255.0
    images = (images - 0.1307) / 0.3081
    g = torch.Generator()
    g.manual_seed(seed)
    perm = torch.randperm(len(rows), generator=g)
    if limit is not None:  # a random subset (the file is sorted by digit), split 4:1 as the whole
        perm = perm[:limit]
    n_train = perm.shape[0] * 4 // 5
    train, test = perm[:n_train], perm[n_train:]
    return types.SimpleNamespace(train=TensorDataset(images[train], labels[train]), test=(images[test], labels[test]))


def run(args):
    torch.manual_seed(args.seed)
    split = load(args.data, args.seed, args.limit)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    shuffle = torch.Generator()
    shuffle.manual_seed(args.seed)
    loader = DataLoader(split.train, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    acc = 0.0
    for epoch in range(args.epochs):
        start = time.time()
        model.train()
        total, batches = 0.0, 0
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        model.eval()
        acc = accuracy(model, split.test)
        print(f"epoch {epoch + 1}: loss {total / batches:.4f}, test accuracy {100 * acc:.2f}%, "
              f"{time.time() - start:.1f} s", flush=True)
    return acc


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/mnist_5k.csv.gz")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None, help="use a random LIMIT rows of the data")
    p.add_argument("--min-accuracy", type=float, default=None,
                   help="exit with status 1 if the final test accuracy (a fraction) is below this")
    args = p.parse_args()
    final = run(args)
    if args.min_accuracy is not None and final < args.min_accuracy:
        print(f"test accuracy {final:.4f} is below --min-accuracy {args.min_accuracy}", file=sys.stderr)
        sys.exit(1)
