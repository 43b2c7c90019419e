//! The driver seam: everything the CUDA backend asks of a device, behind one trait with two
//! implementations, the real driver (`cudarc`) and the emulated device ([`crate::emu`]).
//!
//! Note [Choosing the driver]: the driver is chosen once per process, at first use:
//! `TORCH_CUDA_DRIVER=emulator` (or [`select`] with [`DriverKind::Emulator`] before any CUDA
//! call) picks the emulated device; `TORCH_CUDA_DRIVER=cuda` or nothing picks the real driver,
//! which reports "no CUDA driver" as an error on a machine without one. The emulator is never
//! chosen silently: a program that asked for a GPU and has none must not run on the CPU while
//! believing it uses a GPU. Tests select it explicitly, so the same tests run on the real
//! device on a machine with a GPU (`TORCH_CUDA_DRIVER=cuda`).

use std::ffi::c_void;
use std::sync::OnceLock;

use c10::{Error, Result};

/// A device address (`CUdeviceptr`).
pub type DevicePtr = u64;

/// A stream of one device. `0` is the device's default stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The default stream.
    pub const DEFAULT: StreamId = StreamId(0);
}

/// A kernel of `kernels-cuda`: its index in the sorted kernel table, the same on both drivers
/// ([`KernelId::find`] once, then launch by it: Note [Kernel handles] in `aten::native::stub`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId(pub(crate) u32);

impl KernelId {
    /// The kernel named `name`, if a `.cu` file defines it.
    pub fn find(name: &str) -> Option<KernelId> {
        crate::emu::find_kernel(name)
    }

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        crate::emu::kernel_name(self)
    }

    /// The index, below [`crate::emu::kernel_count`].
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The kernel of an index [`KernelId::index`] gave.
    pub(crate) fn from_index(index: u32) -> KernelId {
        KernelId(index)
    }
}

/// An event handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventId(pub u64);

/// A failed device allocation: out of memory (the caching allocator frees its cache and retries)
/// or any other driver error. The caching allocator's type, so drivers plug into it directly.
pub use c10::cuda_caching_allocator::DriverError as MallocError;

/// A kernel launch: grid and block dimensions, dynamic shared memory and stream.
#[derive(Clone, Copy, Debug)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
    /// The stream to launch on.
    pub stream: StreamId,
}

impl LaunchConfig {
    /// A 1-D launch of `blocks` blocks of `threads` threads on `stream`.
    pub fn linear(blocks: u32, threads: u32, stream: StreamId) -> LaunchConfig {
        LaunchConfig { grid: [blocks, 1, 1], block: [threads, 1, 1], shared_bytes: 0, stream }
    }
}

/// A strided batched matrix product with cuBLAS's contract (`cublasGemmStridedBatchedEx`):
/// column-major matrices; for each of `batch` batches, `C = alpha * op(A) op(B) + beta * C`
/// where `op(X)` is `X` or its transpose (`trans_*`), `op(A)` is `m x k`, `op(B)` is `k x n`
/// and `C` is `m x n`. Leading dimensions and batch strides are in elements. A, B and C share
/// `dtype` (f32, f64, f16, bf16); 16-bit types compute in f32, as cuBLAS's `COMPUTE_32F`.
/// When `beta` is 0, C is not read (NaN in it does not propagate), as in cuBLAS.
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    /// The element type of A, B and C.
    pub dtype: c10::ScalarType,
    /// Whether A is transposed.
    pub trans_a: bool,
    /// Whether B is transposed.
    pub trans_b: bool,
    /// Rows of op(A) and C.
    pub m: i64,
    /// Columns of op(B) and C.
    pub n: i64,
    /// Columns of op(A), rows of op(B).
    pub k: i64,
    /// The factor of the product.
    pub alpha: f64,
    /// A's address, leading dimension and batch stride.
    pub a: (DevicePtr, i64, i64),
    /// B's address, leading dimension and batch stride.
    pub b: (DevicePtr, i64, i64),
    /// The factor of C's old value.
    pub beta: f64,
    /// C's address, leading dimension and batch stride.
    pub c: (DevicePtr, i64, i64),
    /// Number of products.
    pub batch: i64,
}

/// What the CUDA backend needs from a device. Addresses are [`DevicePtr`]s on both drivers (the
/// emulated device hands out host addresses), copies name the stream they are ordered on, and
/// kernels are launched by [`KernelId`] with `cuLaunchKernel`'s argument contract: `params[i]` points
/// at the value of the kernel's i-th parameter.
pub trait Driver: Send + Sync {
    /// "cuda" or "emulator", for messages.
    fn name(&self) -> &'static str;
    /// Number of devices.
    fn device_count(&self) -> usize;
    /// The device's name (`cuDeviceGetName`).
    fn device_name(&self, device: usize) -> Result<String>;
    /// `(free, total)` bytes of device memory.
    fn mem_info(&self, device: usize) -> Result<(usize, usize)>;
    /// Allocates `nbytes` (> 0) on `device`.
    fn malloc(&self, device: usize, nbytes: usize) -> std::result::Result<DevicePtr, MallocError>;
    /// Frees an allocation of [`Driver::malloc`].
    fn free(&self, device: usize, ptr: DevicePtr);
    /// Copies host bytes to the device, ordered on `stream`; returns when `src` may be reused.
    fn copy_htod(&self, device: usize, dst: DevicePtr, src: &[u8], stream: StreamId) -> Result<()>;
    /// Copies device bytes to the host, ordered on `stream`; returns when `dst` is written.
    fn copy_dtoh(&self, device: usize, dst: &mut [u8], src: DevicePtr, stream: StreamId) -> Result<()>;
    /// Copies `nbytes` between two allocations of the same device, ordered on `stream`.
    fn copy_dtod(&self, device: usize, dst: DevicePtr, src: DevicePtr, nbytes: usize, stream: StreamId) -> Result<()>;
    /// Copies `nbytes` from one device to another (`cuMemcpyPeerAsync`).
    fn copy_peer(
        &self,
        dst_device: usize,
        dst: DevicePtr,
        src_device: usize,
        src: DevicePtr,
        nbytes: usize,
    ) -> Result<()>;
    /// Sets `nbytes` bytes to `value`, ordered on `stream`.
    fn memset(&self, device: usize, dst: DevicePtr, value: u8, nbytes: usize, stream: StreamId) -> Result<()>;
    /// Launches `kernel` with `cfg` on `device`.
    ///
    /// # Safety
    /// `params` must hold one pointer per kernel parameter, each pointing at a value of that
    /// parameter's type, and every device pointer among them must be valid for the accesses the
    /// kernel makes.
    unsafe fn launch(
        &self,
        device: usize,
        kernel: KernelId,
        cfg: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()>;
    /// Runs a [`Gemm`] on `device`, ordered on `stream` (cuBLAS on the real device, a host
    /// implementation of the same contract on the emulated one).
    ///
    /// # Safety
    /// The addresses must be device memory of `device` holding every element the leading
    /// dimensions, batch strides and sizes address.
    unsafe fn gemm(&self, device: usize, g: &Gemm, stream: StreamId) -> Result<()>;
    /// Allocates `nbytes` (> 0) of page-locked host memory (`cuMemHostAlloc`).
    fn host_alloc(&self, nbytes: usize) -> Result<*mut u8>;
    /// Frees memory of [`Driver::host_alloc`].
    ///
    /// # Safety
    /// `ptr` must come from `host_alloc` of this driver and not be used afterwards.
    unsafe fn host_free(&self, ptr: *mut u8);
    /// Creates a stream on `device`.
    fn stream_create(&self, device: usize) -> Result<StreamId>;
    /// Destroys a stream of [`Driver::stream_create`].
    fn stream_destroy(&self, device: usize, stream: StreamId);
    /// Blocks until all work on `stream` finished.
    fn stream_synchronize(&self, device: usize, stream: StreamId) -> Result<()>;
    /// Makes later work on `stream` wait for `event`.
    fn stream_wait_event(&self, device: usize, stream: StreamId, event: EventId) -> Result<()>;
    /// Creates an event; `timing` enables [`Driver::event_elapsed_ms`].
    fn event_create(&self, device: usize, timing: bool) -> Result<EventId>;
    /// Destroys an event.
    fn event_destroy(&self, event: EventId);
    /// Records `event` on `stream`.
    fn event_record(&self, event: EventId, device: usize, stream: StreamId) -> Result<()>;
    /// Whether all work before the event's last record finished.
    fn event_query(&self, event: EventId) -> Result<bool>;
    /// Blocks until the event's work finished.
    fn event_synchronize(&self, event: EventId) -> Result<()>;
    /// Milliseconds between two recorded events.
    fn event_elapsed_ms(&self, start: EventId, end: EventId) -> Result<f32>;
    /// Blocks until all work on `device` finished.
    fn device_synchronize(&self, device: usize) -> Result<()>;
    /// Makes `device`'s context current on the calling thread, for libraries that find their
    /// device through the CUDA runtime (NCCL). Nothing to do on the emulated device.
    fn make_current(&self, device: usize) -> Result<()> {
        let _ = device;
        Ok(())
    }
}

/// The driver's error for a device index past the last device (`CUDA_ERROR_INVALID_DEVICE`).
pub fn invalid_device(device: usize, count: usize) -> Error {
    Error::Cuda(format!("CUDA error: invalid device ordinal (device {device} requested, {count} available)"))
}

/// Which driver to use (Note [Choosing the driver]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverKind {
    /// The real CUDA driver (libcuda, loaded at run time).
    Cuda,
    /// The emulated device: the same kernels, compiled for and run on the CPU.
    Emulator,
}

static SELECTED: OnceLock<DriverKind> = OnceLock::new();
static DRIVER: OnceLock<std::result::Result<Box<dyn Driver>, Error>> = OnceLock::new();

/// Chooses the driver for this process. Must come before the first CUDA call; choosing again
/// the same kind is a no-op, another kind is an error.
pub fn select(kind: DriverKind) -> Result<()> {
    let chosen = *SELECTED.get_or_init(|| kind);
    if chosen != kind {
        return Err(Error::Cuda(format!(
            "the CUDA driver was already chosen ({chosen:?}); it cannot change to {kind:?}"
        )));
    }
    Ok(())
}

/// The kind chosen by [`select`], else by `TORCH_CUDA_DRIVER` (`cuda` or `emulator`), else the
/// real driver.
pub fn selected() -> Result<DriverKind> {
    if let Some(k) = SELECTED.get() {
        return Ok(*k);
    }
    let kind = match std::env::var("TORCH_CUDA_DRIVER").as_deref() {
        Err(_) | Ok("") | Ok("cuda") => DriverKind::Cuda,
        Ok("emulator") => DriverKind::Emulator,
        Ok(other) => {
            return Err(Error::Cuda(format!("TORCH_CUDA_DRIVER={other}: expected \"cuda\" or \"emulator\"")));
        }
    };
    Ok(*SELECTED.get_or_init(|| kind))
}

/// The process's driver, created at first use.
pub fn driver() -> Result<&'static dyn Driver> {
    let d = DRIVER.get_or_init(|| {
        Ok(match selected()? {
            DriverKind::Emulator => Box::new(crate::emu::EmulatedDriver::new()) as Box<dyn Driver>,
            DriverKind::Cuda => crate::real::open()?,
        })
    });
    match d {
        Ok(d) => Ok(d.as_ref()),
        Err(e) => Err(e.clone()),
    }
}

/// Launches `kernel` through the process's driver. While the profiler records device
/// kernels (`c10::record_function::kernels_active`), the launch is bracketed by timing events
/// on its stream and waited for, and reported with its device time: on a GPU the events'
/// elapsed time, on the emulated device the launch's (Note [Kernel timing]).
///
/// Note [Kernel timing]: waiting for each kernel serializes host and device while profiling —
/// the kernels' own durations are right, the gaps between them are not what an unprofiled run
/// has. PyTorch reads kernel times from CUPTI's activity buffers instead; cudarc has no CUPTI
/// bindings and the driver's events need no extra library. The end is placed at the host time
/// the wait returned and the start `elapsed` before it, on c10's profiling clock.
///
/// # Safety
/// As [`Driver::launch`].
pub unsafe fn launch(device: usize, kernel: KernelId, cfg: &LaunchConfig, params: &mut [*mut c_void]) -> Result<()> {
    let d = driver()?;
    if !c10::record_function::kernels_active() {
        // SAFETY: the caller's contract is Driver::launch's.
        return unsafe { d.launch(device, kernel, cfg, params) };
    }
    timed(d, device, kernel.name(), cfg.stream, || {
        // SAFETY: as above.
        unsafe { d.launch(device, kernel, cfg, params) }
    })
}

/// Runs a [`Gemm`] through the process's driver, timed like [`launch`] while the profiler
/// records kernels (reported as `gemm` with its dtype and sizes).
///
/// # Safety
/// As [`Driver::gemm`].
pub unsafe fn gemm(device: usize, g: &Gemm, stream: StreamId) -> Result<()> {
    let d = driver()?;
    if !c10::record_function::kernels_active() {
        // SAFETY: the caller's contract is Driver::gemm's.
        return unsafe { d.gemm(device, g, stream) };
    }
    let name = format!("gemm_{}_{}x{}x{}", g.dtype.name(), g.m, g.n, g.k);
    timed(d, device, &name, stream, || {
        // SAFETY: as above.
        unsafe { d.gemm(device, g, stream) }
    })
}

fn timed(d: &dyn Driver, device: usize, name: &str, stream: StreamId, run: impl FnOnce() -> Result<()>) -> Result<()> {
    use c10::record_function as rf;
    let (correlation_id, thread_id) = (rf::current_range_id(), rf::current_thread_id());
    let start = d.event_create(device, true)?;
    let end = match d.event_create(device, true) {
        Ok(e) => e,
        Err(e) => {
            d.event_destroy(start);
            return Err(e);
        }
    };
    let result = (|| {
        d.event_record(start, device, stream)?;
        run()?;
        d.event_record(end, device, stream)?;
        d.event_synchronize(end)?;
        let end_ns = rf::clock_ns();
        let elapsed_ns = (f64::from(d.event_elapsed_ms(start, end)?) * 1e6) as u64;
        rf::report_kernel(rf::KernelEvent {
            name: name.to_string(),
            device: c10::Device::cuda(device as i8),
            stream: stream.0,
            start_ns: end_ns.saturating_sub(elapsed_ns),
            end_ns,
            thread_id,
            correlation_id,
        });
        Ok(())
    })();
    d.event_destroy(start);
    d.event_destroy(end);
    result
}

/// Parameters of one launch at most (the kernels take a geometry struct, a few pointers and a
/// few scalars).
pub const MAX_KERNEL_PARAMS: usize = 24;
/// Bytes of argument values of one launch at most (the largest struct, `KcGeometry`, has 496).
const ARG_WORDS: usize = 256;

/// The argument array of a launch, held inline so that a launch allocates nothing: each value
/// sits at an 8-byte aligned offset of the array, and [`KernelArgs::params`] hands out the
/// pointers `cuLaunchKernel` expects (borrowing the arguments, which therefore cannot move
/// while the pointers are in use).
pub struct KernelArgs {
    words: [u64; ARG_WORDS],
    offsets: [u16; MAX_KERNEL_PARAMS],
    len: usize,
    used: usize,
}

impl Default for KernelArgs {
    fn default() -> Self {
        KernelArgs { words: [0; ARG_WORDS], offsets: [0; MAX_KERNEL_PARAMS], len: 0, used: 0 }
    }
}

impl KernelArgs {
    /// An empty argument list.
    pub fn new() -> KernelArgs {
        KernelArgs::default()
    }

    /// Appends one argument by value (a device pointer, a scalar or a `#[repr(C)]` struct
    /// mirrored from the kernels' header). The storage is 8-byte aligned, which covers every
    /// kernel parameter type we use. More than [`MAX_KERNEL_PARAMS`] arguments or 2 KiB of them
    /// is a bug of the launching code (the argument lists are fixed there) and panics.
    pub fn push<T: Copy + 'static>(&mut self, value: T) -> &mut Self {
        assert!(std::mem::align_of::<T>() <= 8, "kernel arguments are at most 8-byte aligned");
        let words = std::mem::size_of::<T>().div_ceil(8).max(1);
        assert!(
            self.len < MAX_KERNEL_PARAMS && self.used + words <= ARG_WORDS,
            "a launch takes at most {MAX_KERNEL_PARAMS} arguments in {} bytes",
            ARG_WORDS * 8
        );
        // SAFETY: the slot `words[used..used + words]` is in bounds (checked above), 8-byte
        // aligned and at least size_of::<T>() bytes; T is Copy, so a bitwise copy is a valid
        // value.
        unsafe { std::ptr::write(self.words.as_mut_ptr().add(self.used).cast::<T>(), value) };
        self.offsets[self.len] = self.used as u16;
        self.len += 1;
        self.used += words;
        self
    }

    /// The parameter pointers, valid while they borrow `self`.
    pub fn params(&mut self) -> KernelParams<'_> {
        let mut ptrs = [std::ptr::null_mut(); MAX_KERNEL_PARAMS];
        let base = self.words.as_mut_ptr();
        for (p, &o) in ptrs.iter_mut().zip(&self.offsets[..self.len]) {
            // SAFETY: every offset was a slot inside `words` when it was pushed.
            *p = unsafe { base.add(o as usize) }.cast::<c_void>();
        }
        KernelParams { ptrs, len: self.len, _args: std::marker::PhantomData }
    }
}

/// The parameter pointers of a [`KernelArgs`], as a slice (`&mut params` where a launch takes
/// `&mut [*mut c_void]`).
pub struct KernelParams<'a> {
    ptrs: [*mut c_void; MAX_KERNEL_PARAMS],
    len: usize,
    _args: std::marker::PhantomData<&'a mut KernelArgs>,
}

impl std::ops::Deref for KernelParams<'_> {
    type Target = [*mut c_void];
    fn deref(&self) -> &[*mut c_void] {
        &self.ptrs[..self.len]
    }
}

impl std::ops::DerefMut for KernelParams<'_> {
    fn deref_mut(&mut self) -> &mut [*mut c_void] {
        &mut self.ptrs[..self.len]
    }
}
