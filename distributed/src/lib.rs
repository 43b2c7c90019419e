//! `torch.distributed`, following c10d's layering: a [`store::Store`] that processes use to find
//! each other and exchange small values (rendezvous), process groups with collectives above it.
//!
//! This crate has the stores so far: [`store::HashStore`] (in one process), [`store::TcpStore`]
//! (a server on the master rank, a client on every rank), [`store::FileStore`] (a file on a
//! shared file system) and [`store::PrefixStore`] (a namespace inside another store); the
//! [`rendezvous`] of `init_process_group`'s `env://`, `tcp://` and `file://` methods; and the
//! `launch` binary, which starts a job's ranks as `torchrun` does.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod rendezvous;
pub mod store;

pub use store::{FileStore, HashStore, PrefixStore, Store, TcpStore, TcpStoreOptions, DEFAULT_STORE_TIMEOUT};
