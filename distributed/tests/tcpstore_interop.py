"""PyTorch's side of the TCPStore interop test (distributed/tests/store_interop.rs).

Run by the Rust test, never alone: `--port N --master 0|1 --libuv 0|1`. With `--master 1`
this process serves the store (PyTorch's TCPStore master, the libuv or the classic backend)
and the Rust test's stores are its clients; with `--master 0` it is a client of the Rust
test's master. Either way it plays the same part against the Rust side's (`py/...` keys are
written here, `rs/...` keys there) and exits non-zero when a value differs.
"""

import argparse
import sys
import threading
import time
from datetime import timedelta

import torch.distributed as dist


def check(what, got, expected):
    if got != expected:
        raise AssertionError(f"{what}: got {got!r}, expected {expected!r}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--master", type=int, required=True)
    p.add_argument("--libuv", type=int, default=1)
    a = p.parse_args()
    # world_size 2 with wait_for_workers: each side counts itself in under `init/`, and the
    # master waits for the other.
    store = dist.TCPStore(
        "127.0.0.1",
        a.port,
        world_size=2,
        is_master=bool(a.master),
        timeout=timedelta(seconds=60),
        wait_for_workers=True,
        use_libuv=bool(a.libuv),
    )

    # Writes the Rust side reads.
    store.set("py/key", b"hello")
    store.append("py/log", b"ab")
    store.append("py/log", b"cd")
    store.multi_set(["py/m1", "py/m2"], [b"x", b""])
    check("compare_set on a missing key, empty expected", store.compare_set("py/cas", b"", b"one"), b"one")
    check("compare_set, a match", store.compare_set("py/cas", b"one", b"two"), b"two")

    # Adds concurrent with the Rust side's (4 stores x 100 there, 2 threads x 50 here).
    def adds():
        s = dist.TCPStore("127.0.0.1", a.port, is_master=False, timeout=timedelta(seconds=60))
        for _ in range(50):
            s.add("counter", 1)

    threads = [threading.Thread(target=adds) for _ in range(2)]
    for t in threads:
        t.start()
    store.set("py/ready", b"1")

    # What the Rust side wrote.
    store.wait(["rs/ready"])
    check("get", store.get("rs/key"), b"world")
    check("append", store.get("rs/log"), b"rust")
    check("multi_get", store.multi_get(["rs/m1", "rs/m2"]), [b"1", b"22"])
    check("compare_set", store.get("rs/cas"), b"second")
    check("check, all set", store.check(["rs/key", "rs/m1"]), True)
    check("check, one missing", store.check(["rs/key", "nope"]), False)
    check("delete_key", store.delete_key("rs/del"), True)
    check("delete_key again", store.delete_key("rs/del"), False)

    # wait with a timeout: an error after it, and the store still serves.
    start = time.monotonic()
    try:
        store.wait(["never"], timedelta(milliseconds=200))
        raise AssertionError("wait for a key never set returned")
    except dist.DistStoreError:
        pass
    waited = time.monotonic() - start
    if not 0.19 <= waited < 30:
        raise AssertionError(f"the 200 ms wait took {waited:.3f} s")
    check("get after a timed-out wait", store.get("rs/key"), b"world")
    # A get blocked on a key the Rust side sets later.
    store.set("py/want_late", b"")
    check("get of a later set", store.get("rs/late"), b"late")

    for t in threads:
        t.join()
    store.wait(["rs/adds_done"])
    check("concurrent adds", store.add("counter", 0), 4 * 100 + 2 * 50)
    store.set("py/num_keys", str(store.num_keys()).encode())
    store.set("py/done", b"")
    store.wait(["rs/done"])
    # The master serves until the Rust side has no more requests, which it says by closing our
    # stdin: its last `set` (rs/done) is followed by a PING whose echo it still reads.
    if a.master:
        sys.stdin.read()
    print("tcpstore_interop.py: OK")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 -- reported to the Rust test through the exit status
        print(f"tcpstore_interop.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
