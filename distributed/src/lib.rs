//! `torch.distributed`, following c10d's layering: a [`store::Store`] that processes use to find
//! each other and exchange small values (rendezvous), process groups with collectives above it.
//!
//! - Stores: [`store::HashStore`] (in one process), [`store::TcpStore`] (a server on the master
//!   rank, a client on every rank), [`store::FileStore`] (a file on a shared file system) and
//!   [`store::PrefixStore`] (a namespace inside another store); the [`rendezvous`] of
//!   `init_process_group`'s `env://`, `tcp://` and `file://` methods.
//! - Process groups: [`init_process_group`] and the default group, [`new_group`], the
//!   collectives ([`all_reduce`], [`broadcast`], ...; asynchronous through [`ProcessGroup`]'s
//!   methods, which return a [`Work`]). The backends are Gloo (the `gloo` feature; PyTorch's
//!   default for CPU tensors, ranks started by the `launch` binary or any launcher), MPI (the
//!   `mpi` feature; start the ranks with `mpirun -np N`) and NCCL for CUDA tensors on GPUs (the
//!   `cuda` feature).
//! - [`DistributedDataParallel`]: gradients averaged over the ranks in buckets whose
//!   all-reduces overlap the backward pass, or a [`comm_hooks`] hook's communication
//!   (half-precision compression).
//! - [`FullyShardedDataParallel`]: parameters, gradients and optimizer state sharded over the
//!   ranks, each unit's parameters gathered only while it computes; [`checkpoint`] saves and
//!   loads its shards at any world size. [`ZeroRedundancyOptimizer`] shards optimizer state
//!   alone.
//! - The `launch` binary starts a job's ranks as `torchrun` does.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod api;
pub mod checkpoint;
pub mod comm_hooks;
pub mod ddp;
pub mod fsdp;
#[cfg(feature = "gloo")]
mod gloo;
#[cfg(any(feature = "mpi", feature = "gloo"))]
mod host;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "cuda")]
mod nccl;
mod process_group;
pub mod rendezvous;
pub mod store;
mod work;
pub mod zero;

pub use api::{
    all_gather, all_gather_into_tensor, all_gather_object, all_gather_object_in, all_reduce, all_to_all, barrier,
    broadcast, broadcast_object_list, default_backend, default_group, destroy_process_group, gather, get_backend,
    get_rank, get_world_size, init_process_group, init_process_group_with, irecv, is_gloo_available, is_initialized,
    is_mpi_available, is_nccl_available, isend, new_group, recv, reduce, reduce_scatter, reduce_scatter_tensor,
    scatter, send, InitOptions, DEFAULT_PG_TIMEOUT,
};
pub use comm_hooks::{CommFuture, CommHook, GradBucket};
pub use ddp::{DdpOptions, DistributedDataParallel};
pub use fsdp::{
    AutoWrapPolicy, BackwardPrefetch, FsdpOptions, FullyShardedDataParallel, MixedPrecision, ShardingStrategy,
};
pub use process_group::{ProcessGroup, ReduceOp};
pub use store::{FileStore, HashStore, PrefixStore, Store, TcpStore, TcpStoreOptions, DEFAULT_STORE_TIMEOUT};
pub use work::Work;
pub use zero::ZeroRedundancyOptimizer;
