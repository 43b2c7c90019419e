//! `torch`: the crate users depend on. It re-exports the tensor type, the operators, dtypes and
//! devices, and (as later layers land) `autograd`, `nn`, `optim` and `data`, so a program reads
//! like its PyTorch counterpart:
//!
//! ```
//! use torch::prelude::*;
//! let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
//! let b = (&a * 2.0).unwrap();
//! assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
//! ```
//!
//! Every operator is a call with PyTorch's name that takes the arguments without defaults and
//! returns a builder for the rest, finished by `.call()` (a call with nothing to set returns
//! its result directly); `nn::functional` has `torch.nn.functional`'s names. The CPU generator
//! reproduces PyTorch's random numbers:
//!
//! ```
//! use torch::nn::functional as F;
//! torch::manual_seed(0);
//! let r = torch::rand(3).call().unwrap();
//! assert_eq!(r.to_string(), "tensor([0.4963, 0.7682, 0.0885])");
//! let z = torch::zeros(2).dtype(torch::int64).call().unwrap();
//! assert_eq!(z.to_string(), "tensor([0, 0])");
//! let y = F::relu(&r.sub(0.5).call().unwrap()).unwrap();
//! assert_eq!(y.sum().dim(0).keepdim(true).call().unwrap().sizes(), &[1]);
//! ```
//!
//! [`ops`] has the explicit form of every overload, taking every schema argument
//! (`ops::sum_dim_intlist(&x, Some(&[1]), true, None)`), for generated and generic code.
//!
//! The small things PyTorch programs reach for: literals (`torch.tensor`), numbers on either side
//! of an operator, Python's indexing through [`IndexOp::i`](prelude::IndexOp::i), device moves:
//!
//! ```
//! use torch::prelude::*;
//! # fn main() -> torch::Result<()> {
//! let x = tensor![[1., 2., 3.], [4., 5., 6.]]?; // float32, shape [2, 3]
//! let y = (1.0 - &x)?;
//! assert_eq!(y.i((.., 1))?.to_vec::<f32>()?, vec![-1., -4.]); // y[:, 1]
//! assert_eq!(x.i((-1, step(.., 2)))?.to_vec::<f32>()?, vec![4., 6.]); // x[-1, ::2]
//! assert_eq!(x.i((NewAxis, Ellipsis, 0))?.sizes(), &[1, 2]); // x[None, ..., 0]
//! let mask = tensor![true, false, true]?;
//! assert_eq!(x.i((0, &mask))?.to_vec::<f32>()?, vec![1., 3.]);
//! assert_eq!((1.0 / &tensor![2, 4]?)?.to_vec::<f32>()?, vec![0.5, 0.25]); // int / -> float
//! assert_eq!(Tensor::from(2.0f32).dim(), 0); // torch.tensor(2.0)
//! if !torch::cuda::is_available() {
//!     assert!(x.cuda().is_err()); // an error value, as every move to a missing device
//! }
//! # Ok(())
//! # }
//! ```
//!
//! `cargo run --release -p torch --example tour` walks through tensors, views, promotion,
//! errors and the dispatcher; the book in `docs/` explains the layers underneath.
#![warn(missing_docs)]

pub use aten::front::*;
pub use aten::{builders, get_num_threads, manual_seed, ops, set_num_threads, tensor, Generator, Tensor};
pub use autograd::{no_grad, TensorAutograd};
pub use kind::*;

/// Python's `x[...]` as `x.i(...)` (PyTorch C++'s `torch::indexing`): [`indexing::IndexOp`],
/// slices, `NewAxis` (`None`), `Ellipsis` (`...`), masks and index tensors; see the table in
/// [`aten::indexing`].
///
/// ```
/// use torch::indexing::{step, IndexOp, Slice};
/// let x = torch::tensor![0, 1, 2, 3, 4, 5].unwrap();
/// assert_eq!(x.i(step(1.., 2)).unwrap().to_vec::<i64>().unwrap(), vec![1, 3, 5]); // x[1::2]
/// assert_eq!(x.i(Slice::new(None, Some(-4), 1)).unwrap().to_vec::<i64>().unwrap(), vec![0, 1]);
/// assert_eq!(x.i([5, 0]).unwrap().to_vec::<i64>().unwrap(), vec![5, 0]); // x[[5, 0]]
/// ```
pub mod indexing {
    pub use aten::indexing::{index, step, Ellipsis, IndexOp, Indices, NewAxis, Slice, TensorIndex};
}

/// `torch.nn`: modules, layers, losses, `init` and `functional` (see the `nn` crate).
pub mod nn {
    pub use ::nn::*;
}

/// Mixed precision (`torch.amp`): autocast regions and the gradient scaler.
///
/// ```
/// use torch::amp::{autocast, GradScaler};
/// use torch::{DeviceType, ScalarType};
/// let a = torch::ops::ones(&[2, 3], None, None, None, None).unwrap();
/// let _region = autocast(DeviceType::Cpu, ScalarType::BF16).unwrap();
/// assert_eq!(a.mm(&a.t().unwrap()).unwrap().dtype(), ScalarType::BF16);
/// let _scaler = GradScaler::new(DeviceType::Cpu);
/// ```
pub mod amp {
    pub use ::nn::amp::*;
    pub use aten::autocast::{
        clear_cache as clear_autocast_cache, get_dtype as get_autocast_dtype, is_enabled as is_autocast_enabled,
        set_dtype as set_autocast_dtype, set_enabled as set_autocast_enabled, AutocastGuard, CastPolicy,
    };

    /// `torch.autocast(device_type, dtype)`: a region that lasts until the guard is dropped
    /// ([`AutocastGuard::with_options`] for `enabled` and `cache_enabled`).
    pub fn autocast(device: c10::DeviceType, dtype: c10::ScalarType) -> c10::Result<AutocastGuard> {
        AutocastGuard::new(device, Some(dtype))
    }
}

/// `torch.optim`: optimizers, LR schedulers, gradient clipping.
pub mod optim {
    pub use ::nn::optim::*;
}

/// `torch.utils.data`: datasets, samplers, the DataLoader and dataset readers.
pub mod data {
    pub use ::nn::data::*;
}

/// `torch.jit`: tracing, the graph IR, passes, the interpreter and archives (see the `jit`
/// crate).
pub mod jit {
    pub use ::jit::*;
}

/// Saving and loading tensors and checkpoints as safetensors.
pub mod serialize {
    pub use ::nn::serialize::*;
}

/// `torch.autograd`: the engine, grad modes, custom functions, gradcheck.
pub mod autograd {
    pub use ::autograd::*;
}

/// `torch.profiler`: operator, backward, optimizer, DataLoader and user ranges with shapes,
/// memory and CUDA kernels; `key_averages().table()`; Chrome traces. `record_function` opens a
/// range of your own.
///
/// ```
/// use torch::profiler::{profile, record_function};
/// let x = torch::randn(&[8, 8]).call()?;
/// let mut prof = profile().record_shapes(true).start();
/// {
///     let _r = record_function("my block");
///     let _y = x.matmul(&x)?;
/// }
/// let p = prof.stop();
/// println!("{}", p.key_averages().table("cpu_time_total", 10));
/// assert_eq!(p.key_averages().get("my block").map(|r| r.count), Some(1));
/// # Ok::<(), torch::Error>(())
/// ```
pub mod profiler {
    pub use ::autograd::profiler::*;
    pub use c10::record_function::{
        add_global_observer, add_thread_local_observer, current_range_id, current_thread_id, record_function,
        remove_observer, CallbackHandle, DisableRecordGuard, InputMeta, KernelEvent, MemoryEvent, Observer, RecordData,
        RecordFunction, RecordScope, ScopeSet,
    };
}

/// The CPU caching allocator's statistics, as `torch::cuda` has the device's: `memory_stats()`
/// and PyTorch's `memory_summary()` table (Note [CPU memory summary] in
/// `c10/src/caching_allocator.rs` says what each column counts), and `empty_cache()`.
///
/// ```
/// let x = torch::zeros(&[256, 256]).call()?;
/// assert!(torch::cpu::memory_stats().allocated_bytes >= 256 * 256 * 4);
/// assert!(torch::cpu::memory_summary().contains("PyTorch CPU memory summary"));
/// # drop(x);
/// # Ok::<(), torch::Error>(())
/// ```
pub mod cpu {
    pub use c10::caching_allocator::{empty_cache, memory_stats, memory_summary, CpuMemoryStats};
}

/// `torch.distributed`: process groups, collectives, stores, `DistributedDataParallel` (the
/// MPI backend needs the `mpi` feature).
pub mod distributed {
    pub use ::distributed::*;
}

pub use c10::{bf16, f16, Device, DeviceType, Error, Result, Scalar, ScalarType};

/// The dispatcher and the boxed calling convention: call any operator by schema name, inspect
/// the registered operators, register kernels for a backend of your own (see the book chapter
/// "Adding a backend" in `docs/`).
///
/// ```
/// use torch::dispatch::{dispatcher, IValue, Stack};
/// let a = torch::Tensor::from_slice(&[1.0f32, 2.0]);
/// let mut stack: Stack = vec![IValue::from(&a), IValue::from(&a), IValue::from(torch::Scalar::Int(1))];
/// dispatcher().call_boxed("add.Tensor", &mut stack).unwrap();
/// match stack.as_slice() {
///     [IValue::Tensor(t)] => assert_eq!(t.to_vec::<f32>().unwrap(), vec![2.0, 4.0]),
///     other => panic!("unexpected returns {other:?}"),
/// }
/// ```
pub mod dispatch {
    pub use aten::dispatcher::Registrar;
    pub use aten::{dispatcher, handles, Dispatcher, IValue, KernelFunction, OperatorEntry, Stack};
    pub use c10::{DispatchKey, DispatchKeySet};
}

/// `torch.cuda`: devices, streams, events and the caching allocator's statistics. Built without
/// the `cuda` feature (the default, which needs no CUDA toolchain), `is_available()` is false
/// and `device_count()` is 0, as in a CPU-only PyTorch build.
///
/// ```
/// if !torch::cuda::is_available() {
///     assert_eq!(torch::cuda::device_count(), 0);
/// }
/// ```
pub mod cuda {
    pub use c10::{DeviceGuard, Event, Stream, StreamGuard};
    #[cfg(feature = "cuda")]
    pub use kernels_cuda::runtime::{
        current_device, current_stream, empty_cache, max_memory_allocated, memory_allocated, memory_reserved,
        memory_stats, memory_summary, record_stream, set_device, synchronize,
    };
    #[cfg(feature = "cuda")]
    pub use kernels_cuda::{driver::select as select_driver, driver::DriverKind};

    /// Whether a CUDA device can be used (a driver, real or emulated, with at least one device).
    pub fn is_available() -> bool {
        #[cfg(feature = "cuda")]
        return kernels_cuda::runtime::is_available();
        #[cfg(not(feature = "cuda"))]
        return false;
    }

    /// Number of CUDA devices.
    pub fn device_count() -> usize {
        #[cfg(feature = "cuda")]
        return kernels_cuda::runtime::device_count();
        #[cfg(not(feature = "cuda"))]
        return 0;
    }

    /// Seeds the current CUDA device's default generator (`torch.cuda.manual_seed`); works
    /// before CUDA is used. `torch::manual_seed` seeds every device.
    pub fn manual_seed(seed: u64) {
        aten::cuda_manual_seed(seed)
    }

    /// Seeds every CUDA device's default generator (`torch.cuda.manual_seed_all`).
    pub fn manual_seed_all(seed: u64) {
        aten::cuda_manual_seed_all(seed)
    }

    /// The seed of the current CUDA device's default generator (`torch.cuda.initial_seed`).
    pub fn initial_seed() -> u64 {
        aten::default_generator(c10::Device::cuda(-1)).map_or(aten::generator::DEFAULT_SEED, |g| g.initial_seed())
    }
}

pub mod from_pytorch;

/// Dtype constants under PyTorch's names, also at the crate root: `torch::float32`.
pub mod kind {
    #![allow(non_upper_case_globals)]
    use c10::ScalarType;
    /// `torch.float32`
    pub const float32: ScalarType = ScalarType::F32;
    /// `torch.float64`
    pub const float64: ScalarType = ScalarType::F64;
    /// `torch.float16`
    pub const float16: ScalarType = ScalarType::F16;
    /// `torch.bfloat16`
    pub const bfloat16: ScalarType = ScalarType::BF16;
    /// `torch.int64`
    pub const int64: ScalarType = ScalarType::I64;
    /// `torch.int32`
    pub const int32: ScalarType = ScalarType::I32;
    /// `torch.int16`
    pub const int16: ScalarType = ScalarType::I16;
    /// `torch.int8`
    pub const int8: ScalarType = ScalarType::I8;
    /// `torch.uint8`
    pub const uint8: ScalarType = ScalarType::U8;
    /// `torch.bool`
    pub const bool: ScalarType = ScalarType::Bool;
}

/// Everything a typical program needs: the tensor type and [`tensor!`](crate::tensor!),
/// indexing ([`IndexOp`](crate::indexing::IndexOp), `NewAxis`, `Ellipsis`, `step`), autograd's
/// methods, dtypes and devices, and the module traits.
pub mod prelude {
    pub use aten::indexing::{step, Ellipsis, IndexOp, NewAxis};
    pub use aten::{tensor, Tensor};
    pub use autograd::TensorAutograd;
    pub use c10::{Device, Scalar, ScalarType};
    pub use nn::{Forward, Module};
}
