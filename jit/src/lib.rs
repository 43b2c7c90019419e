//! The JIT: a model taken out of its program. [`trace_fn`] and [`trace`] record the operators a
//! run calls into a [`Graph`] (the IR, printed and parsed in PyTorch's text form); [`passes`]
//! rewrite graphs; the [`interpreter`] runs them over the boxed dispatcher; a [`ScriptModule`]
//! is a graph with its parameters, usable like any module. The phases follow TorchScript's
//! (`docs/src/jit.md`).

#![warn(missing_docs)]
// Unsafe code is confined to the fused kernel's vectorised loops.
#![deny(unsafe_code)]

pub mod archive;
mod emit;
pub mod export;
#[allow(unsafe_code)]
pub mod fusion;
pub mod import;
pub mod interpreter;
pub mod ir;
pub mod module;
pub mod passes;
pub mod script;
pub mod text;
mod torchscript;
pub mod tracer;
pub mod types;

pub use archive::load;
pub use import::{script, script_function};
pub use interpreter::Code;
pub use ir::{Attr, BlockId, Constant, Graph, NodeId, Use, ValueDef, ValueId};
pub use module::{trace, trace_module, ScriptModule};
pub use text::{parse, parse_with};
pub use tracer::{trace_fn, trace_with, Trace};
pub use types::{JitType, TensorType};
