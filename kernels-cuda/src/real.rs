//! The real CUDA driver through `cudarc`'s driver API, loaded at run time: a binary built with
//! the `cuda` feature starts on any machine, and [`open`] reports a missing driver as an error.
//!
//! Each device's primary context is retained once and made current before every call (a thread
//! may use several devices). Kernels come from the fatbins nvcc built into the crate
//! (`crate::device_code`); a device's modules are loaded at its first launch and functions are
//! looked up by name and cached.

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

use c10::sync::Mutex;

use c10::{Error, Result};
use cudarc::cublas;
use cudarc::driver::{result, sys, DriverError};

use crate::device_code::{FATBINS, HAS_DEVICE_CODE};
use crate::driver::{DevicePtr, Driver, EventId, Gemm, KernelId, LaunchConfig, MallocError, StreamId};

/// PyTorch's message when no driver can be loaded.
const NO_DRIVER: &str = "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx";

fn cuda_error(what: &str, e: DriverError) -> Error {
    let msg = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{e:?}"));
    Error::Cuda(format!("CUDA error: {msg} ({what})"))
}

/// One device: its primary context and loaded functions.
struct Device {
    ordinal: sys::CUdevice,
    ctx: sys::CUcontext,
    /// The device's modules, loaded at its first launch (a failure is kept: it would recur).
    modules: OnceLock<std::result::Result<Vec<sys::CUmodule>, Error>>,
    /// The functions by [`KernelId`], each looked up at its first launch (Note [Kernel handles]
    /// in `aten::native::stub`: a launch takes no lock).
    functions: Box<[OnceLock<sys::CUfunction>]>,
    /// The device's cuBLAS handle, created at its first product (cuBLAS is loaded then).
    cublas: Mutex<Option<cublas::sys::cublasHandle_t>>,
}

/// [`Driver`] over libcuda.
pub struct CudaDriver {
    devices: Vec<Device>,
}

// SAFETY: CUcontext, CUmodule and CUfunction are driver handles usable from any thread (the
// driver API is thread-safe; the context is made current per call), and the mutable state is
// behind mutexes.
unsafe impl Send for CudaDriver {}
// SAFETY: see the Send impl.
unsafe impl Sync for CudaDriver {}

/// Loads libcuda and initialises it: an error value, never a panic, on a machine without it.
pub fn open() -> Result<Box<dyn Driver>> {
    // SAFETY: only probes whether the library can be loaded; it is the check cudarc requires
    // before any driver call (its loader panics on a missing library).
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::Cuda(NO_DRIVER.into()));
    }
    result::init().map_err(|e| cuda_error("cuInit", e))?;
    let count = result::device::get_count().map_err(|e| cuda_error("cuDeviceGetCount", e))?;
    let mut devices = Vec::new();
    for i in 0..count {
        let ordinal = result::device::get(i).map_err(|e| cuda_error("cuDeviceGet", e))?;
        // SAFETY: `ordinal` came from cuDeviceGet.
        let ctx =
            unsafe { result::primary_ctx::retain(ordinal) }.map_err(|e| cuda_error("cuDevicePrimaryCtxRetain", e))?;
        devices.push(Device {
            ordinal,
            ctx,
            modules: OnceLock::new(),
            functions: (0..crate::emu::kernel_count()).map(|_| OnceLock::new()).collect(),
            cublas: Mutex::new(None),
        });
    }
    Ok(Box::new(CudaDriver { devices }))
}

impl CudaDriver {
    /// Makes `device`'s context current on this thread.
    fn enter(&self, device: usize) -> Result<&Device> {
        let d = self.devices.get(device).ok_or_else(|| crate::driver::invalid_device(device, self.devices.len()))?;
        // SAFETY: the context was retained in `open` and is released only on drop.
        unsafe { result::ctx::set_current(d.ctx) }.map_err(|e| cuda_error("cuCtxSetCurrent", e))?;
        Ok(d)
    }

    /// `kernel`'s function on `device`, loading the device's modules at its first launch.
    fn function(&self, device: usize, kernel: KernelId) -> Result<sys::CUfunction> {
        let d = self.enter(device)?;
        if let Some(f) = d.functions[kernel.index()].get() {
            return Ok(*f);
        }
        let modules = d.modules.get_or_init(|| {
            if !HAS_DEVICE_CODE {
                return Err(Error::Cuda(
                    "kernels-cuda was built without nvcc, so it has no device code: rebuild with NVCC set (kernels-cuda/setup-cuda.sh)".into(),
                ));
            }
            let mut modules = Vec::new();
            for (_, image) in FATBINS {
                // SAFETY: the image is a fatbin nvcc wrote (embedded with include_bytes!), alive
                // for the whole program; the device's context is current.
                let m = unsafe { result::module::load_data(image.as_ptr().cast()) }
                    .map_err(|e| cuda_error("cuModuleLoadData", e))?;
                modules.push(m);
            }
            Ok(modules)
        });
        let modules = modules.as_ref().map_err(Clone::clone)?;
        let name = kernel.name();
        let cname = CString::new(name).map_err(|_| Error::Cuda(format!("bad kernel name {name:?}")))?;
        for m in modules {
            // SAFETY: `m` is a module loaded in this device's context.
            if let Ok(f) = unsafe { result::module::get_function(*m, cname.clone()) } {
                return Ok(*d.functions[kernel.index()].get_or_init(|| f));
            }
        }
        Err(Error::Cuda(format!("CUDA error: named symbol not found (no kernel '{name}' in kernels-cuda)")))
    }
}

fn stream(s: StreamId) -> sys::CUstream {
    s.0 as sys::CUstream
}

fn event(e: EventId) -> sys::CUevent {
    e.0 as sys::CUevent
}

impl Driver for CudaDriver {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn device_name(&self, device: usize) -> Result<String> {
        let d = self.enter(device)?;
        result::device::get_name(d.ordinal).map_err(|e| cuda_error("cuDeviceGetName", e))
    }

    fn mem_info(&self, device: usize) -> Result<(usize, usize)> {
        self.enter(device)?;
        result::mem_get_info().map_err(|e| cuda_error("cuMemGetInfo", e))
    }

    fn malloc(&self, device: usize, nbytes: usize) -> std::result::Result<DevicePtr, MallocError> {
        self.enter(device).map_err(|e| MallocError::Other(e.to_string()))?;
        // SAFETY: the context is current; the memory is uninitialised bytes, which callers treat
        // as such.
        match unsafe { result::malloc_sync(nbytes) } {
            Ok(p) => Ok(p),
            Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => Err(MallocError::OutOfMemory),
            Err(e) => Err(MallocError::Other(cuda_error("cuMemAlloc", e).to_string())),
        }
    }

    fn free(&self, device: usize, ptr: DevicePtr) {
        if self.enter(device).is_ok() {
            // SAFETY: `ptr` came from `malloc` on this device; errors at free time (a context
            // already torn down at exit) leave nothing to recover.
            let _ = unsafe { result::free_sync(ptr) };
        }
    }

    fn copy_htod(&self, device: usize, dst: DevicePtr, src: &[u8], s: StreamId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: the caller's allocation holds `src.len()` bytes at `dst`; the copy is
        // synchronised before returning, so `src` may be reused (pageable memory).
        unsafe {
            result::memcpy_htod_async(dst, src, stream(s)).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))?;
            result::stream::synchronize(stream(s)).map_err(|e| cuda_error("cuStreamSynchronize", e))
        }
    }

    fn copy_dtoh(&self, device: usize, dst: &mut [u8], src: DevicePtr, s: StreamId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: as in copy_htod; `dst` is written before this returns.
        unsafe {
            result::memcpy_dtoh_async(dst, src, stream(s)).map_err(|e| cuda_error("cuMemcpyDtoHAsync", e))?;
            result::stream::synchronize(stream(s)).map_err(|e| cuda_error("cuStreamSynchronize", e))
        }
    }

    fn copy_dtod(&self, device: usize, dst: DevicePtr, src: DevicePtr, nbytes: usize, s: StreamId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: both ranges lie in live allocations of this device (the caller's contract).
        unsafe { result::memcpy_dtod_async(dst, src, nbytes, stream(s)) }
            .map_err(|e| cuda_error("cuMemcpyDtoDAsync", e))
    }

    fn copy_peer(
        &self,
        dst_device: usize,
        dst: DevicePtr,
        src_device: usize,
        src: DevicePtr,
        nbytes: usize,
    ) -> Result<()> {
        let dst_ctx = self.enter(dst_device)?.ctx;
        let src_ctx = self.enter(src_device)?.ctx;
        // SAFETY: as in copy_dtod, across two contexts; synchronised before returning.
        unsafe {
            result::memcpy_peer_async(dst_ctx, dst, src_ctx, src, nbytes, std::ptr::null_mut())
                .map_err(|e| cuda_error("cuMemcpyPeerAsync", e))?;
            result::stream::synchronize(std::ptr::null_mut()).map_err(|e| cuda_error("cuStreamSynchronize", e))
        }
    }

    fn memset(&self, device: usize, dst: DevicePtr, value: u8, nbytes: usize, s: StreamId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: the range lies in a live allocation of this device (the caller's contract).
        unsafe { result::memset_d8_async(dst, value, nbytes, stream(s)) }.map_err(|e| cuda_error("cuMemsetD8Async", e))
    }

    unsafe fn gemm(&self, device: usize, g: &Gemm, s: StreamId) -> Result<()> {
        use cublas::sys::{cublasComputeType_t as Compute, cublasOperation_t as Op, cudaDataType as Ty};
        crate::emu::check_gemm(g)?;
        if g.m == 0 || g.n == 0 || g.batch == 0 {
            return Ok(());
        }
        let int = |v: i64, what: &str| {
            i32::try_from(v).map_err(|_| Error::Cuda(format!("gemm: {what} = {v} does not fit cuBLAS's int")))
        };
        let (m, n, k, batch) = (int(g.m, "m")?, int(g.n, "n")?, int(g.k, "k")?, int(g.batch, "batch")?);
        let (lda, ldb, ldc) = (int(g.a.1, "lda")?, int(g.b.1, "ldb")?, int(g.c.1, "ldc")?);
        let (ty, compute) = match g.dtype {
            c10::ScalarType::F32 => (Ty::CUDA_R_32F, Compute::CUBLAS_COMPUTE_32F),
            c10::ScalarType::F64 => (Ty::CUDA_R_64F, Compute::CUBLAS_COMPUTE_64F),
            c10::ScalarType::F16 => (Ty::CUDA_R_16F, Compute::CUBLAS_COMPUTE_32F),
            c10::ScalarType::BF16 => (Ty::CUDA_R_16BF, Compute::CUBLAS_COMPUTE_32F),
            d => return Err(Error::UnsupportedDtype { op: "gemm".into(), dtype: d }),
        };
        let d = self.enter(device)?;
        let mut handle = d.cublas.lock().expect("cublas handle");
        if handle.is_none() {
            // SAFETY: only probes whether libcublas can be loaded (cudarc's loader panics
            // without it).
            if !unsafe { cublas::sys::is_culib_present() } {
                return Err(Error::Cuda("CUDA error: libcublas could not be loaded".into()));
            }
            *handle = Some(cublas::result::create_handle().map_err(|e| Error::Cuda(format!("cublasCreate: {e:?}")))?);
        }
        let h = handle.expect("created above");
        let op = |t: bool| if t { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N };
        // alpha and beta in the compute type.
        let (a32, b32) = (g.alpha as f32, g.beta as f32);
        let (alpha, beta): (*const c_void, *const c_void) = if compute == Compute::CUBLAS_COMPUTE_64F {
            ((&g.alpha as *const f64).cast(), (&g.beta as *const f64).cast())
        } else {
            ((&a32 as *const f32).cast(), (&b32 as *const f32).cast())
        };
        // SAFETY: the handle belongs to this device's (current) context; the caller guarantees
        // the matrices; alpha and beta live across the call, which only enqueues the work.
        unsafe {
            cublas::result::set_stream(h, stream(s) as cublas::sys::cudaStream_t)
                .map_err(|e| Error::Cuda(format!("cublasSetStream: {e:?}")))?;
            cublas::result::gemm_strided_batched_ex(
                h,
                op(g.trans_a),
                op(g.trans_b),
                m,
                n,
                k,
                alpha,
                g.a.0 as *const c_void,
                ty,
                lda,
                g.a.2,
                g.b.0 as *const c_void,
                ty,
                ldb,
                g.b.2,
                beta,
                g.c.0 as *mut c_void,
                ty,
                ldc,
                g.c.2,
                batch,
                compute,
                cublas::sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| Error::Cuda(format!("cublasGemmStridedBatchedEx: {e:?}")))
    }

    fn host_alloc(&self, nbytes: usize) -> Result<*mut u8> {
        // Portable pinned memory in device 0's primary context (CU_MEMHOSTALLOC_PORTABLE = 1:
        // every context may use it for fast copies).
        self.enter(0)?;
        // SAFETY: a plain allocation call with a context current.
        let p = unsafe { result::malloc_host(nbytes, 1) }.map_err(|e| cuda_error("cuMemHostAlloc", e))?;
        Ok(p.cast())
    }

    unsafe fn host_free(&self, ptr: *mut u8) {
        if self.enter(0).is_ok() {
            // SAFETY: the caller passes memory of host_alloc.
            let _ = unsafe { result::free_host(ptr.cast()) };
        }
    }

    unsafe fn launch(
        &self,
        device: usize,
        kernel: KernelId,
        cfg: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let f = self.function(device, kernel)?;
        let [gx, gy, gz] = cfg.grid;
        let [bx, by, bz] = cfg.block;
        // SAFETY: the caller guarantees `params` match the kernel's parameters and that the
        // device pointers are valid.
        unsafe { result::launch_kernel(f, (gx, gy, gz), (bx, by, bz), cfg.shared_bytes, stream(cfg.stream), params) }
            .map_err(|e| cuda_error(kernel.name(), e))
    }

    fn stream_create(&self, device: usize) -> Result<StreamId> {
        self.enter(device)?;
        let s = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| cuda_error("cuStreamCreate", e))?;
        Ok(StreamId(s as u64))
    }

    fn stream_destroy(&self, device: usize, s: StreamId) {
        if s != StreamId::DEFAULT && self.enter(device).is_ok() {
            // SAFETY: a stream of stream_create; pending work completes before release.
            let _ = unsafe { result::stream::destroy(stream(s)) };
        }
    }

    fn stream_synchronize(&self, device: usize, s: StreamId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: a stream of this device (or the null stream).
        unsafe { result::stream::synchronize(stream(s)) }.map_err(|e| cuda_error("cuStreamSynchronize", e))
    }

    fn stream_wait_event(&self, device: usize, s: StreamId, e: EventId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: a stream and an event created by this driver.
        unsafe { result::stream::wait_event(stream(s), event(e), sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .map_err(|e| cuda_error("cuStreamWaitEvent", e))
    }

    fn make_current(&self, device: usize) -> Result<()> {
        self.enter(device).map(|_| ())
    }

    fn event_create(&self, device: usize, timing: bool) -> Result<EventId> {
        self.enter(device)?;
        let flags =
            if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
        let e = result::event::create(flags).map_err(|e| cuda_error("cuEventCreate", e))?;
        Ok(EventId(e as u64))
    }

    fn event_destroy(&self, e: EventId) {
        // SAFETY: an event of event_create; destroying an incomplete event is allowed.
        let _ = unsafe { result::event::destroy(event(e)) };
    }

    fn event_record(&self, e: EventId, device: usize, s: StreamId) -> Result<()> {
        self.enter(device)?;
        // SAFETY: an event and a stream of this device.
        unsafe { result::event::record(event(e), stream(s)) }.map_err(|e| cuda_error("cuEventRecord", e))
    }

    fn event_query(&self, e: EventId) -> Result<bool> {
        // SAFETY: an event of event_create.
        match unsafe { result::event::query(event(e)) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(err) => Err(cuda_error("cuEventQuery", err)),
        }
    }

    fn event_synchronize(&self, e: EventId) -> Result<()> {
        // SAFETY: an event of event_create.
        unsafe { result::event::synchronize(event(e)) }.map_err(|e| cuda_error("cuEventSynchronize", e))
    }

    fn event_elapsed_ms(&self, start: EventId, end: EventId) -> Result<f32> {
        // SAFETY: two events of event_create.
        unsafe { result::event::elapsed(event(start), event(end)) }.map_err(|e| cuda_error("cuEventElapsedTime", e))
    }

    fn device_synchronize(&self, device: usize) -> Result<()> {
        self.enter(device)?;
        result::ctx::synchronize().map_err(|e| cuda_error("cuCtxSynchronize", e))
    }
}
