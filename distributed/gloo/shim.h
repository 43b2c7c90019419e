/* A C interface to the Gloo collective library (Debian's libgloo-dev), for the `gloo` feature
 * of the `distributed` crate. bindgen reads this header; shim.cc implements it in C++.
 *
 * Every call that can fail returns a status (GLOO_SHIM_OK, GLOO_SHIM_ERROR or
 * GLOO_SHIM_TIMEOUT) and, when it fails, writes a NUL-terminated message into `err` (at most
 * `errlen` bytes). No C++ exception crosses this interface.
 *
 * Buffers are raw bytes: element sizes are passed where Gloo needs them (reductions segment a
 * buffer on element boundaries). Reductions call back `gloo_shim_reduce_fn(c, a, b, n)`, which
 * writes `a op b` into `c` for `n` elements; `c` may be `a` or `b`. */
#ifndef TORCH_GLOO_SHIM_H
#define TORCH_GLOO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GLOO_SHIM_OK 0
#define GLOO_SHIM_ERROR 1
#define GLOO_SHIM_TIMEOUT 2

typedef void (*gloo_shim_reduce_fn)(void* c, const void* a, const void* b, size_t n);

/* Receives a value read from the store (copied before the call returns). */
typedef void (*gloo_shim_sink_fn)(void* sink, const char* data, size_t len);

/* The rendezvous store, implemented by the caller. Each function returns a status and fills
 * `err` as above. `get` blocks until the key exists (or the store's timeout passes) and hands
 * the value to `sinkfn(sink, ...)`. */
typedef struct gloo_shim_store {
  void* user;
  int (*set)(void* user, const char* key, size_t keylen, const char* data, size_t len, char* err,
             size_t errlen);
  int (*get)(void* user, const char* key, size_t keylen, void* sink, gloo_shim_sink_fn sinkfn,
             char* err, size_t errlen);
  int (*wait)(void* user, const char* const* keys, const size_t* keylens, size_t nkeys,
              int64_t timeout_ms, char* err, size_t errlen);
} gloo_shim_store;

typedef struct gloo_shim_context gloo_shim_context;
typedef struct gloo_shim_buffer gloo_shim_buffer;

/* A TCP device on `hostname` (an address to bind, or NULL) or the network interface `iface`
 * (or NULL), and a context of `size` ranks connected in a full mesh through `store`. */
int gloo_shim_connect(const gloo_shim_store* store, int rank, int size, const char* hostname,
                      const char* iface, int64_t timeout_ms, gloo_shim_context** out, char* err,
                      size_t errlen);
void gloo_shim_context_free(gloo_shim_context* ctx);

/* Collectives. `tag` tells concurrent operations apart; every rank passes the same one. */
int gloo_shim_allreduce(gloo_shim_context* ctx, void* buf, size_t count, size_t elsize,
                        gloo_shim_reduce_fn fn, uint32_t tag, int64_t timeout_ms, char* err,
                        size_t errlen);
/* `out` (root only; NULL elsewhere) receives the reduction of every rank's `in`. */
/* Reduce-scatter of `buf` (size blocks of `block_count` elements, only read) into `out` (this
 * rank's block), as a ring over Gloo's point-to-point messages. */
int gloo_shim_reduce_scatter(gloo_shim_context* ctx, void* buf, void* out, size_t block_count,
                             size_t elsize, gloo_shim_reduce_fn fn, uint32_t tag,
                             int64_t timeout_ms, char* err, size_t errlen);

int gloo_shim_reduce(gloo_shim_context* ctx, void* in, void* out, size_t count, size_t elsize,
                     gloo_shim_reduce_fn fn, int root, uint32_t tag, int64_t timeout_ms, char* err,
                     size_t errlen);
int gloo_shim_broadcast(gloo_shim_context* ctx, void* buf, size_t nbytes, int root, uint32_t tag,
                        int64_t timeout_ms, char* err, size_t errlen);
/* `out` holds `size` blocks of `nbytes`. */
int gloo_shim_allgather(gloo_shim_context* ctx, void* in, void* out, size_t nbytes, uint32_t tag,
                        int64_t timeout_ms, char* err, size_t errlen);
/* `out` (root only; NULL elsewhere) holds `size` blocks of `nbytes`. */
int gloo_shim_gather(gloo_shim_context* ctx, void* in, void* out, size_t nbytes, int root,
                     uint32_t tag, int64_t timeout_ms, char* err, size_t errlen);
/* `in` (root only; NULL elsewhere) holds `size` blocks of `nbytes`. */
int gloo_shim_scatter(gloo_shim_context* ctx, void* in, void* out, size_t nbytes, int root,
                      uint32_t tag, int64_t timeout_ms, char* err, size_t errlen);
/* Block j of `in` (`send_bytes[j]` bytes) goes to rank j; rank j's block lands in `out`
 * (`recv_bytes[j]` bytes), blocks in rank order. */
int gloo_shim_alltoallv(gloo_shim_context* ctx, void* in, const int64_t* send_bytes, void* out,
                        const int64_t* recv_bytes, uint32_t tag, int64_t timeout_ms, char* err,
                        size_t errlen);
int gloo_shim_barrier(gloo_shim_context* ctx, uint32_t tag, int64_t timeout_ms, char* err,
                      size_t errlen);

/* Point to point: a buffer over `nbytes` at `ptr`, posted once with send or recv and waited on.
 * The memory must stay valid until the wait returned (or the buffer was freed after an abort). */
gloo_shim_buffer* gloo_shim_buffer_new(gloo_shim_context* ctx, void* ptr, size_t nbytes, char* err,
                                       size_t errlen);
void gloo_shim_buffer_free(gloo_shim_buffer* buf);
int gloo_shim_send(gloo_shim_buffer* buf, int dst, uint64_t slot, char* err, size_t errlen);
/* From one of `srcs` (`nsrcs` ranks). */
int gloo_shim_recv(gloo_shim_buffer* buf, const int* srcs, size_t nsrcs, uint64_t slot, char* err,
                   size_t errlen);
int gloo_shim_wait_send(gloo_shim_buffer* buf, int64_t timeout_ms, char* err, size_t errlen);
/* `*src` is the rank the message came from. */
int gloo_shim_wait_recv(gloo_shim_buffer* buf, int* src, int64_t timeout_ms, char* err,
                        size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
