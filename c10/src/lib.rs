//! Core abstractions shared by every other crate: dtypes and type promotion, devices, allocators,
//! storage, `TensorImpl`, dispatch keys and key sets, scalars and the one error type.
//!
//! `c10` depends on no other crate of this workspace. Everything above it (`aten`, `autograd`,
//! `nn`, backends) builds on these types.
#![warn(missing_docs)]

pub mod allocator;
pub mod caching_allocator;
pub mod cuda_caching_allocator;
pub mod device;
pub mod dispatch_key;
pub mod dispatch_key_set;
pub mod error;
pub mod grad_mode;
pub mod layout;
pub mod local_dispatch_key_set;
pub mod record_function;
pub mod scalar;
pub mod scalar_type;
pub mod set_once;
pub mod size;
pub mod sparse;
pub mod storage;
pub mod stream;
pub mod sync;
pub mod tensor_impl;

pub use allocator::{Allocator, CpuAllocator, DataPtr};
pub use device::{Device, DeviceType};
pub use dispatch_key::{BackendComponent, DispatchKey};
pub use dispatch_key_set::DispatchKeySet;
pub use error::{Error, Result};
pub use layout::{Layout, MemoryFormat};
pub use local_dispatch_key_set::{ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard, LocalDispatchKeySet};
pub use scalar::Scalar;
pub use scalar_type::{promote_types, Element, ResultTypeState, ScalarType};
pub use set_once::SetOnce;
pub use storage::Storage;
pub use stream::{DeviceGuard, Event, Stream, StreamGuard};
pub use tensor_impl::{AutogradMetaInterface, TensorImpl, VersionCounter};

/// The element types re-exported for users: IEEE half and bfloat16 from the `half` crate.
pub use half::{bf16, f16};
/// The complex element type: `Complex<f32>` is complex64's, `Complex<f64>` complex128's.
pub use num_complex::Complex;
