"""The PyTorch counterpart of the parts of `mnist.rs` that a PyTorch user writes: the model,
the training loop and the evaluation, between the same `pytorch-comparison` markers.

`torch/tests/main_job.rs` counts the tokens between the markers in both files and checks that
the Rust is at most 1.3 times as long (see docs/src/from-pytorch.md for how they are counted).
Argument parsing, data loading, resuming and progress display are left out of both. It runs
with PyTorch on the digits of `data/mnist_5k.csv.gz`: `python3 torch/examples/mnist_pytorch.py`.
"""

import argparse
import gzip
import types

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


# pytorch-comparison: begin
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
# pytorch-comparison: end


# pytorch-comparison: begin
@torch.no_grad()
def accuracy(model, test):
    images, labels = test
    n = images.shape[0]
    correct = 0
    for start in range(0, n, 1000):
        pred = model(images[start:start + 1000]).argmax(1)
        correct += (pred == labels[start:start + 1000]).sum().item()
    return correct / n
# pytorch-comparison: end


def load(path, seed):
    rows = [line.split(",") for line in gzip.open(path, "rt").read().split()]
    labels = torch.tensor([int(r[-1]) for r in rows])
    images = torch.tensor([[float(v) for v in r[:-1]] for r in rows]).view(-1, 1, 28, 28) / 255.0
    images = (images - 0.1307) / 0.3081
    g = torch.Generator()
    g.manual_seed(seed)
    perm = torch.randperm(len(rows), generator=g)
    train, test = perm[:4000], perm[4000:]
    return types.SimpleNamespace(train=TensorDataset(images[train], labels[train]), test=(images[test], labels[test]))


def run(args):
    torch.manual_seed(args.seed)
    split = load(args.data, args.seed)
    test = tuple(t.to(args.device) for t in split.test)
    epochs = args.epochs
    # pytorch-comparison: begin
    model = Net().to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    shuffle = torch.Generator()
    shuffle.manual_seed(args.seed)
    loader = DataLoader(split.train, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    steps_per_epoch = len(loader)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=epochs * steps_per_epoch)
    device_type = torch.device(args.device).type
    scaler = torch.amp.GradScaler(device_type, enabled=args.amp)
    # pytorch-comparison: end
    for epoch in range(epochs):
        # pytorch-comparison: begin
        model.train()
        # pytorch-comparison: end
        # pytorch-comparison: begin
        for x, y in loader:
            x, y = x.to(args.device), y.to(args.device)
            opt.zero_grad()
            with torch.autocast(device_type, dtype=torch.bfloat16, enabled=args.amp):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            # pytorch-comparison: end
        # pytorch-comparison: begin
        model.eval()
        acc = accuracy(model, test)
        # pytorch-comparison: end
        print(f"epoch {epoch + 1}: test accuracy {100 * acc:.2f}%")
        # pytorch-comparison: begin
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch + 1}, args.checkpoint)
        # pytorch-comparison: end


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/mnist_5k.csv.gz")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default="mnist_checkpoint.pt")
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true", help="bfloat16 autocast with a GradScaler")
    run(p.parse_args())
