// The C interface of shim.h over Gloo's C++ API (see the header). Each entry point catches every
// exception and turns it into a status and a message: Gloo reports transport failures (a peer
// that closed its connection, a timeout) as gloo::IoException and failed checks as
// gloo::EnforceNotMet.
#include "shim.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <pthread.h>
#include <sched.h>

struct gloo_shim_context {
  std::shared_ptr<gloo::rendezvous::Context> ctx;
};

struct gloo_shim_buffer {
  std::unique_ptr<gloo::transport::UnboundBuffer> buf;
};

namespace {

// Note [Gloo's loop thread]: a Gloo TCP device runs one thread that waits in epoll for its
// sockets and handles each event under the pair's mutex, taken with try_lock: when the thread
// that runs a collective holds that mutex (it does while posting a send), the loop returns to
// epoll, which reports the same level-triggered event at once, and spins. A loop thread woken by
// a peer's message preempts the collective's thread, often while it holds the mutex, and then
// spins until the scheduler's next tick (4 ms at HZ=250): on two ranks with a core each, a 1 MB
// all-reduce took 4.0 ms instead of 0.5, and 8.0 ms with both ranks on one core. So the loop
// thread runs under SCHED_BATCH: the same share of the CPU as any thread, but its wakeups never
// preempt a running thread, so the mutex's holder finishes first. The device creates its thread
// in CreateDevice and a thread inherits its creator's policy: the creating thread switches to
// SCHED_BATCH around that call and back (a normal thread may move between SCHED_OTHER and
// SCHED_BATCH freely). A thread under any other policy (real-time, idle) is left alone.
struct BatchPolicyScope {
  int policy = SCHED_OTHER;
  sched_param param{};
  bool changed = false;
  BatchPolicyScope() {
    if (pthread_getschedparam(pthread_self(), &policy, &param) == 0 && policy == SCHED_OTHER) {
      sched_param batch{};
      changed = pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch) == 0;
    }
  }
  ~BatchPolicyScope() {
    if (changed) {
      pthread_setschedparam(pthread_self(), policy, &param);
    }
  }
  BatchPolicyScope(const BatchPolicyScope&) = delete;
  BatchPolicyScope& operator=(const BatchPolicyScope&) = delete;
};

// A failure reported by the caller's store callbacks.
struct StoreError : std::runtime_error {
  int status;
  StoreError(int status, const std::string& msg) : std::runtime_error(msg), status(status) {}
};

void write_error(char* err, size_t errlen, const std::string& msg) {
  if (err == nullptr || errlen == 0) {
    return;
  }
  size_t n = msg.size() < errlen - 1 ? msg.size() : errlen - 1;
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// Gloo's timeouts are IoExceptions whose text says so ("Timed out ...").
int classify(const std::string& msg) {
  return msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos
             ? GLOO_SHIM_TIMEOUT
             : GLOO_SHIM_ERROR;
}

template <typename F>
int guarded(char* err, size_t errlen, F&& f) {
  try {
    f();
    return GLOO_SHIM_OK;
  } catch (const StoreError& e) {
    write_error(err, errlen, e.what());
    return e.status;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    write_error(err, errlen, msg);
    return classify(msg);
  } catch (...) {
    write_error(err, errlen, "unknown C++ exception in Gloo");
    return GLOO_SHIM_ERROR;
  }
}

std::chrono::milliseconds ms(int64_t timeout_ms) {
  return std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 1);
}

// The caller's store as Gloo's rendezvous store.
class CallbackStore : public gloo::rendezvous::Store {
 public:
  explicit CallbackStore(const gloo_shim_store* s) : s_(*s) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    char err[1024] = {0};
    int rc = s_.set(s_.user, key.data(), key.size(), data.data(), data.size(), err, sizeof err);
    if (rc != GLOO_SHIM_OK) {
      throw StoreError(rc, err);
    }
  }

  std::vector<char> get(const std::string& key) override {
    char err[1024] = {0};
    std::vector<char> out;
    int rc = s_.get(s_.user, key.data(), key.size(), &out, &CallbackStore::sink, err, sizeof err);
    if (rc != GLOO_SHIM_OK) {
      throw StoreError(rc, err);
    }
    return out;
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, gloo::rendezvous::Store::kDefaultTimeout);
  }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& k : keys) {
      ptrs.push_back(k.data());
      lens.push_back(k.size());
    }
    char err[1024] = {0};
    int rc = s_.wait(s_.user, ptrs.data(), lens.data(), keys.size(), timeout.count(), err, sizeof err);
    if (rc != GLOO_SHIM_OK) {
      throw StoreError(rc, err);
    }
  }

 private:
  static void sink(void* out, const char* data, size_t len) {
    static_cast<std::vector<char>*>(out)->assign(data, data + len);
  }

  gloo_shim_store s_;
};

// Note [Gloo segment size]: the largest send or receive of the all-reduce ring. Measured with
// Debian's Gloo (0.0~git20220518) on the 2-vCPU Intel Xeon VM of BENCHMARKS.md, two ranks on
// one host, median of 16 to 40 calls: 64 MB all-reduce 73-77 ms with Gloo's default (1 MiB),
// 70-71 ms with 4 MiB, 66-67 ms with 8 MiB, 81-83 ms with 16 MiB; 16 MB 17 -> 14 ms; 4 MB
// 4.4-4.8 -> 4.5-5.3 ms (noise). PyTorch's Gloo takes 65-66 ms for 64 MB on the same machine.
constexpr size_t kAllreduceSegment = 8 << 20;

// An element of `N` bytes: Gloo's typed setters only need the size.
template <size_t N>
struct Elem {
  unsigned char bytes[N];
};

// Calls `f(Elem<elsize>{})` for the element sizes of the dtypes (1, 2, 4, 8, 16 bytes).
template <typename F>
void by_size(size_t elsize, F&& f) {
  switch (elsize) {
    case 1: f(Elem<1>{}); break;
    case 2: f(Elem<2>{}); break;
    case 4: f(Elem<4>{}); break;
    case 8: f(Elem<8>{}); break;
    case 16: f(Elem<16>{}); break;
    default: throw std::runtime_error("unsupported element size " + std::to_string(elsize));
  }
}

}  // namespace

extern "C" {

int gloo_shim_connect(const gloo_shim_store* store, int rank, int size, const char* hostname,
                      const char* iface, int64_t timeout_ms, gloo_shim_context** out, char* err,
                      size_t errlen) {
  *out = nullptr;
  return guarded(err, errlen, [&] {
    gloo::transport::tcp::attr attr;
    if (iface != nullptr) {
      attr.iface = iface;
    } else if (hostname != nullptr) {
      attr.hostname = hostname;
    }
    std::shared_ptr<gloo::transport::Device> dev;
    {
      BatchPolicyScope batch;  // Note [Gloo's loop thread]
      dev = gloo::transport::tcp::CreateDevice(attr);
    }
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(ms(timeout_ms));
    CallbackStore s(store);
    ctx->connectFullMesh(s, dev);
    *out = new gloo_shim_context{ctx};
  });
}

void gloo_shim_context_free(gloo_shim_context* ctx) {
  delete ctx;
}

int gloo_shim_allreduce(gloo_shim_context* c, void* buf, size_t count, size_t elsize,
                        gloo_shim_reduce_fn fn, uint32_t tag, int64_t timeout_ms, char* err,
                        size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::AllreduceOptions opts(c->ctx);
    by_size(elsize, [&](auto e) {
      using T = decltype(e);
      opts.setOutput(static_cast<T*>(buf), count);
    });
    opts.setReduceFunction(fn);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    // Gloo's ring moves at most this much per send or receive (two in flight). Its default,
    // 1 MiB, makes a 64 MB all-reduce of two ranks on one host take 73-77 ms here against
    // 66-67 ms with 8 MiB, PyTorch's bundled Gloo's time; 4 and 16 MB buffers gain too, 1 MB
    // ones (one segment either way) are unchanged (Note [Gloo segment size]).
    opts.setMaxSegmentSize(kAllreduceSegment);
    gloo::allreduce(opts);
  });
}

// The slot prefix of our reduce-scatter's messages: Gloo's collectives use 1 to 8 in the top
// byte, our point-to-point messages 0x7e and 0x7f (gloo.rs).
constexpr uint8_t kReduceScatterSlotPrefix = 0x7d;

int gloo_shim_reduce_scatter(gloo_shim_context* c, void* buf, void* out, size_t block_count,
                             size_t elsize, gloo_shim_reduce_fn fn, uint32_t tag,
                             int64_t timeout_ms, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    const auto& ctx = c->ctx;
    const int n = ctx->size;
    const int r = ctx->rank;
    const size_t block = block_count * elsize;
    auto* base = static_cast<unsigned char*>(buf);
    if (n == 1 || block == 0) {
      std::memcpy(out, base + static_cast<size_t>(r) * block, block);
      return;
    }
    // Note [Gloo reduce-scatter]: a ring. In step k (0 <= k < n-1) rank r sends its partial
    // sum of block (r-k-1) mod n to rank r+1 and adds what rank r-1 sends, its partial sum of
    // block (r-k-2) mod n, to its own input's block; after n-1 steps the sum of block r holds
    // every rank's contribution. Each rank sends (n-1)/n of the buffer once, where an
    // all-reduce sends it twice. The input is only read: a partial sum goes to one of two
    // block-sized accumulators (the one not being sent), the last one to `out`.
    std::vector<unsigned char> inbox(block);
    std::vector<unsigned char> acc(2 * block);
    auto inputbuf = ctx->createUnboundBuffer(base, block * n);
    auto accbuf = ctx->createUnboundBuffer(acc.data(), 2 * block);
    auto recvbuf = ctx->createUnboundBuffer(inbox.data(), block);
    const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, tag);
    const int next = (r + 1) % n;
    const int prev = (r + n - 1) % n;
    for (int k = 0; k < n - 1; k++) {
      const size_t sent = static_cast<size_t>(((r - k - 1) % n + n) % n);
      const size_t added = static_cast<size_t>(((r - k - 2) % n + 2 * n) % n);
      // Step 0 sends the input's block; step k > 0 the partial sum step k-1 wrote.
      auto& sender = k == 0 ? inputbuf : accbuf;
      sender->send(next, slot, k == 0 ? sent * block : static_cast<size_t>((k - 1) % 2) * block, block);
      recvbuf->recv(prev, slot, 0, block);
      if (!recvbuf->waitRecv(ms(timeout_ms))) {
        throw std::runtime_error("reduce_scatter: receive aborted");
      }
      void* sum = k == n - 2 ? out : acc.data() + static_cast<size_t>(k % 2) * block;
      fn(sum, base + added * block, inbox.data(), block_count);
      if (!sender->waitSend(ms(timeout_ms))) {
        throw std::runtime_error("reduce_scatter: send aborted");
      }
    }
  });
}

int gloo_shim_reduce(gloo_shim_context* c, void* in, void* out, size_t count, size_t elsize,
                     gloo_shim_reduce_fn fn, int root, uint32_t tag, int64_t timeout_ms, char* err,
                     size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::ReduceOptions opts(c->ctx);
    // Gloo's reduce also writes partial results on the other ranks: they get a scratch output,
    // so their input is left as it was.
    std::vector<unsigned char> scratch;
    if (out == nullptr) {
      scratch.resize(count * elsize);
      out = scratch.data();
    }
    by_size(elsize, [&](auto e) {
      using T = decltype(e);
      if (in != out) {
        opts.setInput(static_cast<T*>(in), count);
      }
      opts.setOutput(static_cast<T*>(out), count);
    });
    opts.setRoot(root);
    opts.setReduceFunction(fn);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::reduce(opts);
  });
}

int gloo_shim_broadcast(gloo_shim_context* c, void* buf, size_t nbytes, int root, uint32_t tag,
                        int64_t timeout_ms, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::BroadcastOptions opts(c->ctx);
    opts.setOutput(static_cast<unsigned char*>(buf), nbytes);
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::broadcast(opts);
  });
}

int gloo_shim_allgather(gloo_shim_context* c, void* in, void* out, size_t nbytes, uint32_t tag,
                        int64_t timeout_ms, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::AllgatherOptions opts(c->ctx);
    opts.setInput(static_cast<unsigned char*>(in), nbytes);
    opts.setOutput(static_cast<unsigned char*>(out), nbytes * c->ctx->size);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::allgather(opts);
  });
}

int gloo_shim_gather(gloo_shim_context* c, void* in, void* out, size_t nbytes, int root,
                     uint32_t tag, int64_t timeout_ms, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::GatherOptions opts(c->ctx);
    opts.setInput(static_cast<unsigned char*>(in), nbytes);
    if (out != nullptr) {
      opts.setOutput(static_cast<unsigned char*>(out), nbytes * c->ctx->size);
    }
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::gather(opts);
  });
}

int gloo_shim_scatter(gloo_shim_context* c, void* in, void* out, size_t nbytes, int root,
                      uint32_t tag, int64_t timeout_ms, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::ScatterOptions opts(c->ctx);
    if (in != nullptr) {
      std::vector<unsigned char*> blocks;
      for (int r = 0; r < c->ctx->size; r++) {
        blocks.push_back(static_cast<unsigned char*>(in) + r * nbytes);
      }
      opts.setInputs(blocks, nbytes);
    }
    opts.setOutput(static_cast<unsigned char*>(out), nbytes);
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::scatter(opts);
  });
}

int gloo_shim_alltoallv(gloo_shim_context* c, void* in, const int64_t* send_bytes, void* out,
                        const int64_t* recv_bytes, uint32_t tag, int64_t timeout_ms, char* err,
                        size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::AlltoallvOptions opts(c->ctx);
    std::vector<int64_t> sends(send_bytes, send_bytes + c->ctx->size);
    std::vector<int64_t> recvs(recv_bytes, recv_bytes + c->ctx->size);
    opts.setInput(static_cast<unsigned char*>(in), sends);
    opts.setOutput(static_cast<unsigned char*>(out), recvs);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::alltoallv(opts);
  });
}

int gloo_shim_barrier(gloo_shim_context* c, uint32_t tag, int64_t timeout_ms, char* err,
                      size_t errlen) {
  return guarded(err, errlen, [&] {
    gloo::BarrierOptions opts(c->ctx);
    opts.setTag(tag);
    opts.setTimeout(ms(timeout_ms));
    gloo::barrier(opts);
  });
}

gloo_shim_buffer* gloo_shim_buffer_new(gloo_shim_context* c, void* ptr, size_t nbytes, char* err,
                                       size_t errlen) {
  gloo_shim_buffer* out = nullptr;
  guarded(err, errlen, [&] {
    out = new gloo_shim_buffer{c->ctx->createUnboundBuffer(ptr, nbytes)};
  });
  return out;
}

void gloo_shim_buffer_free(gloo_shim_buffer* buf) {
  delete buf;
}

int gloo_shim_send(gloo_shim_buffer* b, int dst, uint64_t slot, char* err, size_t errlen) {
  return guarded(err, errlen, [&] { b->buf->send(dst, slot); });
}

int gloo_shim_recv(gloo_shim_buffer* b, const int* srcs, size_t nsrcs, uint64_t slot, char* err,
                   size_t errlen) {
  return guarded(err, errlen, [&] {
    std::vector<int> ranks(srcs, srcs + nsrcs);
    if (ranks.size() == 1) {
      b->buf->recv(ranks[0], slot);
    } else {
      b->buf->recv(ranks, slot);
    }
  });
}

int gloo_shim_wait_send(gloo_shim_buffer* b, int64_t timeout_ms, char* err, size_t errlen) {
  bool done = false;
  int rc = guarded(err, errlen, [&] { done = b->buf->waitSend(ms(timeout_ms)); });
  if (rc == GLOO_SHIM_OK && !done) {
    write_error(err, errlen, "the send was aborted");
    return GLOO_SHIM_ERROR;
  }
  return rc;
}

int gloo_shim_wait_recv(gloo_shim_buffer* b, int* src, int64_t timeout_ms, char* err,
                        size_t errlen) {
  bool done = false;
  int rc = guarded(err, errlen, [&] { done = b->buf->waitRecv(src, ms(timeout_ms)); });
  if (rc == GLOO_SHIM_OK && !done) {
    write_error(err, errlen, "the receive was aborted");
    return GLOO_SHIM_ERROR;
  }
  return rc;
}

}  // extern "C"
