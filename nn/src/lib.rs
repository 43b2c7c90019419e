//! `nn`: the `Module` trait and `#[derive(Module)]`, layers with PyTorch's constructor
//! arguments, initialisation and state_dict names, losses, `init`, `optim`, `data` and
//! serialization (safetensors in `serialize`; PyTorch's `torch.save` files read in `pt`, over the
//! unpickler in `pickle`, and written in `pt_write`, over the pickler in `pickler`).
//!
//! ```
//! use nn::{Forward, Linear, Module, ReLU, Sequential};
//! torch_free_example();
//! fn torch_free_example() {
//!     aten::manual_seed(0);
//!     let net = Sequential::new().add(Linear::new(4, 8).unwrap()).add(ReLU::new()).add(Linear::new(8, 2).unwrap());
//!     let keys: Vec<&str> = net.state_dict().keys().map(|k| k.to_string().leak() as &str).collect();
//!     assert_eq!(keys, ["0.weight", "0.bias", "2.weight", "2.bias"]);
//!     let x = aten::ops::randn(&[3, 4], None, None, None, None).unwrap();
//!     assert_eq!(net.call(&x).unwrap().sizes(), &[3, 2]);
//! }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate self as nn;

pub mod amp;
pub mod data;
mod declare;
pub mod functional;
mod hooks;
pub mod init;
pub mod layers;
pub mod module;
pub mod optim;
pub mod parallel;
pub mod pickle;
pub mod pickler;
pub mod pt;
pub mod pt_write;
pub mod serialize;

#[doc(hidden)]
pub use declare::__private;
pub use layers::*;
pub use module::{
    Buffer, Forward, HookHandle, Hooks, IncompatibleKeys, Member, MemberMut, Members, Module, Parameter, StateDict,
};
pub use nn_derive::Module;
pub use parallel::DataParallel;
pub use pt::{load_pt, load_pt_into, PtArchive};
pub use pt_write::{save_pt, PtWriter};
