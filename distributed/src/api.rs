//! The module-level API of `torch.distributed`: the default process group
//! (`init_process_group`, `get_rank`, `new_group`, ...) and the collectives on it.
//!
//! The collectives here are synchronous and work on the default group, whose ranks are the
//! global ranks. For `async_op=True` or another group, call the [`ProcessGroup`] methods: they
//! return a [`Work`] to wait on.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use aten::Tensor;
use c10::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::process_group::{ProcessGroup, ReduceOp};
use crate::store::Store;
use crate::work::Work;

/// The default timeout of a process group's operations (PyTorch's 30 minutes).
pub const DEFAULT_PG_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The arguments of [`init_process_group_with`] (`torch.distributed.init_process_group`).
#[derive(Clone)]
pub struct InitOptions {
    /// `gloo` (CPU tensors; the `gloo` feature), `mpi` (the `mpi` feature) or `nccl` (CUDA
    /// tensors on real GPUs; the `cuda` feature). Gloo and MPI stage CUDA tensors through host
    /// memory. [`default_backend`] is PyTorch's choice for a device.
    pub backend: String,
    /// `env://` (the default), `tcp://host:port` or `file:///path`; not used by MPI, whose
    /// ranks come from `mpirun`.
    pub init_method: Option<String>,
    /// A store to rendezvous through instead of `init_method`.
    pub store: Option<Arc<dyn Store>>,
    /// This process's rank (MPI: checked against MPI's).
    pub rank: Option<usize>,
    /// The number of processes (MPI: checked against MPI's).
    pub world_size: Option<usize>,
    /// The timeout of the group's operations (default 30 minutes).
    pub timeout: Duration,
}

impl InitOptions {
    /// The defaults for `backend`.
    pub fn new(backend: &str) -> InitOptions {
        InitOptions {
            backend: backend.into(),
            init_method: None,
            store: None,
            rank: None,
            world_size: None,
            timeout: DEFAULT_PG_TIMEOUT,
        }
    }
    /// Sets the init method.
    pub fn init_method(mut self, m: &str) -> Self {
        self.init_method = Some(m.into());
        self
    }
    /// Sets the store.
    pub fn store(mut self, s: Arc<dyn Store>) -> Self {
        self.store = Some(s);
        self
    }
    /// Sets the rank.
    pub fn rank(mut self, r: usize) -> Self {
        self.rank = Some(r);
        self
    }
    /// Sets the world size.
    pub fn world_size(mut self, n: usize) -> Self {
        self.world_size = Some(n);
        self
    }
    /// Sets the timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
}

static DEFAULT: RwLock<Option<ProcessGroup>> = RwLock::new(None);

fn dist_error(op: &str, msg: impl Into<String>) -> Error {
    Error::Distributed { op: op.into(), msg: msg.into() }
}

/// Whether the crate was built with the MPI backend (the `mpi` feature).
pub fn is_mpi_available() -> bool {
    cfg!(feature = "mpi")
}

/// PyTorch's default backend for tensors on `device`: `nccl` for CUDA, `gloo` otherwise (what
/// `init_process_group()` without a backend picks).
pub fn default_backend(device: c10::DeviceType) -> &'static str {
    match device {
        c10::DeviceType::Cuda => "nccl",
        _ => "gloo",
    }
}

/// Whether the crate was built with the Gloo backend (the `gloo` feature).
pub fn is_gloo_available() -> bool {
    cfg!(feature = "gloo")
}

/// Whether the crate was built with the NCCL backend (the `cuda` feature). NCCL itself
/// (`libnccl.so.2`) and a GPU are looked for at `init_process_group`.
pub fn is_nccl_available() -> bool {
    cfg!(feature = "cuda")
}

/// Initialises the default process group with `backend` and the default options.
pub fn init_process_group(backend: &str) -> Result<()> {
    init_process_group_with(InitOptions::new(backend))
}

/// Initialises the default process group (see [`InitOptions`]).
pub fn init_process_group_with(options: InitOptions) -> Result<()> {
    let name = "init_process_group";
    let mut slot = DEFAULT.write().unwrap_or_else(|e| e.into_inner());
    if slot.is_some() {
        return Err(dist_error(name, "trying to initialize the default process group twice!"));
    }
    let backend = match options.backend.trim().to_ascii_lowercase() {
        b if b.is_empty() => default_backend_string(),
        b => b,
    };
    let group = if backend.contains(':') { init_by_device(&backend, &options)? } else { init_one(&backend, &options)? };
    *slot = Some(group);
    Ok(())
}

/// What `init_process_group()` without a backend uses, as PyTorch: `cpu:gloo,cuda:nccl` when
/// NCCL is built in and a GPU is present, otherwise `gloo`.
fn default_backend_string() -> String {
    #[cfg(feature = "cuda")]
    if kernels_cuda::runtime::device_count() > 0 {
        return "cpu:gloo,cuda:nccl".into();
    }
    "gloo".into()
}

/// The world of one backend (`gloo`, `mpi`, `nccl`).
fn init_one(backend: &str, options: &InitOptions) -> Result<ProcessGroup> {
    match backend {
        "mpi" => init_mpi(options),
        "nccl" => init_nccl(options),
        "gloo" => init_gloo(options),
        "ucc" => Err(dist_error(
            "init_process_group",
            "the ucc backend is not available; use \"gloo\" (the `gloo` feature), \"mpi\" (the `mpi` feature) or \
             \"nccl\" (the `cuda` feature)",
        )),
        other => Err(dist_error("init_process_group", format!("Invalid backend: '{other}'"))),
    }
}

/// A backend string naming a backend per device (`"cpu:gloo,cuda:nccl"`): each distinct
/// backend is created once, those that rendezvous through a store sharing one rendezvous (each
/// under its own key prefix), and the group sends each operation to its tensors' device's
/// backend ([`ByDevice`](crate::process_group::ByDevice)).
fn init_by_device(spec: &str, options: &InitOptions) -> Result<ProcessGroup> {
    let name = "init_process_group";
    let invalid = || {
        dist_error(
            name,
            format!(
                "The custom backend string argument is invalid: {spec}. Custom backend string is an experimental \
                 feature where the backend string must be in the format: \
                 \"<device_type1>:<backend1>,<device_type2>:<backend2>...\". e.g. 'cpu:gloo,cuda:nccl'"
            ),
        )
    };
    let (mut cpu, mut cuda) = (None, None);
    for pair in spec.split(',') {
        let (device, backend) = pair.split_once(':').ok_or_else(invalid)?;
        let (device, backend) = (device.trim(), backend.trim());
        if !["gloo", "mpi", "nccl"].contains(&backend) {
            return Err(dist_error(name, format!("Invalid backend: '{backend}' in '{spec}'")));
        }
        let slot = match device {
            "cpu" => &mut cpu,
            "cuda" => &mut cuda,
            other => return Err(dist_error(name, format!("Invalid device type '{other}' in backend string '{spec}'"))),
        };
        if slot.replace(backend.to_string()).is_some() {
            return Err(invalid());
        }
    }
    // A device without a backend gets PyTorch's default for it.
    let cpu = cpu.unwrap_or_else(|| default_backend(c10::DeviceType::Cpu).into());
    let cuda = cuda.unwrap_or_else(|| default_backend(c10::DeviceType::Cuda).into());
    if cpu == "nccl" {
        return Err(dist_error(name, format!("the nccl backend does not take CPU tensors ('{spec}')")));
    }
    let mut distinct = vec![cpu.clone()];
    if cuda != cpu {
        distinct.push(cuda.clone());
    }
    // One rendezvous for the backends that need a store.
    let shared = if distinct.len() > 1 && distinct.iter().any(|b| b != "mpi") {
        #[cfg(any(feature = "cuda", feature = "gloo"))]
        {
            Some(rendezvous_of(options)?)
        }
        #[cfg(not(any(feature = "cuda", feature = "gloo")))]
        {
            None::<(Arc<dyn Store>, usize, usize)>
        }
    } else {
        None
    };
    let mut made: Vec<(String, ProcessGroup)> = Vec::new();
    for b in &distinct {
        let mut o = options.clone();
        if let (Some((store, rank, size)), true) = (&shared, b != "mpi") {
            let prefixed: Arc<dyn Store> = Arc::new(crate::store::PrefixStore::new(&format!("{b}/"), store.clone()));
            o = o.store(prefixed).rank(*rank).world_size(*size);
        }
        made.push((b.clone(), init_one(b, &o)?));
    }
    let backend_of = |b: &str| made.iter().find(|(n, _)| n == b).and_then(|(_, g)| g.backend_arc());
    let (Some(cpu_b), Some(cuda_b)) = (backend_of(&cpu), backend_of(&cuda)) else {
        return Err(invalid());
    };
    if cpu_b.rank() != cuda_b.rank() {
        return Err(dist_error(name, "the backends disagree on this process's rank"));
    }
    let ranks = made[0].1.ranks().to_vec();
    let normalised: &'static str = Box::leak(format!("cpu:{cpu},cuda:{cuda}").into_boxed_str());
    let by_device = crate::process_group::ByDevice { name: normalised, cpu: cpu_b, cuda: cuda_b };
    Ok(ProcessGroup::new(Arc::new(by_device), ranks, options.timeout))
}

#[cfg(feature = "mpi")]
fn init_mpi(options: &InitOptions) -> Result<ProcessGroup> {
    let name = "init_process_group";
    let (backend, rank, size) = crate::mpi::world(options.timeout)?;
    // A launcher that is not mpirun starts singletons: each sees a world of one.
    let env_size = std::env::var("WORLD_SIZE").ok().and_then(|v| v.trim().parse::<usize>().ok());
    for (what, given, actual) in [("world_size", options.world_size.or(env_size), size), ("rank", options.rank, rank)] {
        if let Some(given) = given {
            if given != actual {
                return Err(dist_error(
                    name,
                    format!(
                        "the MPI backend takes the rank and world size from MPI: {what} is {given} here but MPI says \
                         {actual} (start the processes with `mpirun -np N`)"
                    ),
                ));
            }
        }
    }
    Ok(ProcessGroup::new(backend, (0..size).collect(), options.timeout))
}

#[cfg(not(feature = "mpi"))]
fn init_mpi(_options: &InitOptions) -> Result<ProcessGroup> {
    Err(dist_error(
        "init_process_group",
        "Distributed package doesn't have MPI built in: build the `distributed` crate with its `mpi` feature \
         (it needs an MPI implementation, e.g. Debian's openmpi-bin and libopenmpi-dev)",
    ))
}

/// The store, rank and world size of a backend that rendezvouses through a store (Gloo,
/// NCCL): `options.store`, or a rendezvous at `options.init_method` (default `env://`).
#[cfg(any(feature = "cuda", feature = "gloo"))]
fn rendezvous_of(options: &InitOptions) -> Result<(Arc<dyn Store>, usize, usize)> {
    let name = "init_process_group";
    match &options.store {
        Some(store) => {
            let need = |v: Option<usize>, what: &str| {
                v.ok_or_else(|| dist_error(name, format!("{what} must be given with an explicit store")))
            };
            let (rank, size) = (need(options.rank, "rank")?, need(options.world_size, "world_size")?);
            if size == 0 || rank >= size {
                return Err(dist_error(name, format!("rank {rank} is not in a world of size {size}")));
            }
            Ok((store.clone(), rank, size))
        }
        None => {
            let method = options.init_method.as_deref().unwrap_or("env://");
            let r = crate::rendezvous::rendezvous(method, options.rank, options.world_size, options.timeout)?;
            Ok((r.store, r.rank, r.world_size))
        }
    }
}

/// The NCCL world: a rendezvous (see [`rendezvous_of`]), then one communicator per rank (Note
/// [The NCCL backend]).
#[cfg(feature = "cuda")]
fn init_nccl(options: &InitOptions) -> Result<ProcessGroup> {
    let (store, rank, size) = rendezvous_of(options)?;
    let backend = crate::nccl::world(&*store, rank, size)?;
    Ok(ProcessGroup::new(backend, (0..size).collect(), options.timeout))
}

/// The Gloo world: a rendezvous (see [`rendezvous_of`]), then a Gloo context connecting every
/// rank (Note [The Gloo backend]).
#[cfg(feature = "gloo")]
fn init_gloo(options: &InitOptions) -> Result<ProcessGroup> {
    let (store, rank, size) = rendezvous_of(options)?;
    let backend = crate::gloo::world(store, rank, size, options.timeout)?;
    Ok(ProcessGroup::new(backend, (0..size).collect(), options.timeout))
}

#[cfg(not(feature = "gloo"))]
fn init_gloo(_options: &InitOptions) -> Result<ProcessGroup> {
    Err(dist_error(
        "init_process_group",
        "Distributed package doesn't have Gloo built in: build the `distributed` crate with its `gloo` feature \
         (it needs Gloo, e.g. Debian's libgloo-dev, and libclang for the bindings)",
    ))
}

#[cfg(not(feature = "cuda"))]
fn init_nccl(_options: &InitOptions) -> Result<ProcessGroup> {
    Err(dist_error(
        "init_process_group",
        "Distributed package doesn't have NCCL built in: build the `distributed` crate with its `cuda` feature \
         (NCCL is loaded at run time and needs GPUs)",
    ))
}

/// Whether the default process group is initialised.
pub fn is_initialized() -> bool {
    DEFAULT.read().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// The default process group (PyTorch's `group.WORLD`).
pub fn default_group() -> Result<ProcessGroup> {
    DEFAULT.read().unwrap_or_else(|e| e.into_inner()).clone().ok_or_else(|| {
        dist_error(
            "default_group",
            "Default process group has not been initialized, please make sure to call init_process_group.",
        )
    })
}

/// Destroys the default process group; groups made by [`new_group`] stay usable until dropped.
/// A later [`init_process_group`] starts a new one.
pub fn destroy_process_group() -> Result<()> {
    DEFAULT.write().unwrap_or_else(|e| e.into_inner()).take().map(|_| ()).ok_or_else(|| {
        dist_error(
            "destroy_process_group",
            "Default process group has not been initialized, please make sure to call init_process_group.",
        )
    })
}

/// This process's rank in the default group.
pub fn get_rank() -> Result<usize> {
    Ok(default_group()?.rank().unwrap_or(0))
}

/// The number of processes in the default group.
pub fn get_world_size() -> Result<usize> {
    Ok(default_group()?.size())
}

/// The backend of the default group (`mpi`).
pub fn get_backend() -> Result<&'static str> {
    default_group()?.backend_name().ok_or_else(|| dist_error("get_backend", "not a member"))
}

/// A group of the global `ranks` (in any order; group ranks follow the sorted global ranks).
/// Every process of the default group must call it, members or not, as in PyTorch; a process
/// outside `ranks` gets a group whose operations are errors.
pub fn new_group(ranks: &[usize]) -> Result<ProcessGroup> {
    default_group()?.split(ranks)
}

/// `all_reduce` on the default group (see [`ProcessGroup::all_reduce`]).
pub fn all_reduce(tensor: &Tensor, op: ReduceOp) -> Result<()> {
    default_group()?.all_reduce(tensor, op)?.wait()
}

/// `broadcast` from global rank `src` on the default group.
pub fn broadcast(tensor: &Tensor, src: usize) -> Result<()> {
    default_group()?.broadcast(tensor, src)?.wait()
}

/// `reduce` into global rank `dst` on the default group.
pub fn reduce(tensor: &Tensor, dst: usize, op: ReduceOp) -> Result<()> {
    default_group()?.reduce(tensor, dst, op)?.wait()
}

/// `all_gather` on the default group.
pub fn all_gather(outputs: &[Tensor], input: &Tensor) -> Result<()> {
    default_group()?.all_gather(outputs, input)?.wait()
}

/// `all_gather_into_tensor` on the default group.
pub fn all_gather_into_tensor(output: &Tensor, input: &Tensor) -> Result<()> {
    default_group()?.all_gather_into_tensor(output, input)?.wait()
}

/// `gather` into global rank `dst` on the default group.
pub fn gather(input: &Tensor, outputs: Option<&[Tensor]>, dst: usize) -> Result<()> {
    default_group()?.gather(input, outputs, dst)?.wait()
}

/// `scatter` from global rank `src` on the default group.
pub fn scatter(output: &Tensor, inputs: Option<&[Tensor]>, src: usize) -> Result<()> {
    default_group()?.scatter(output, inputs, src)?.wait()
}

/// `reduce_scatter` on the default group.
pub fn reduce_scatter(output: &Tensor, inputs: &[Tensor], op: ReduceOp) -> Result<()> {
    default_group()?.reduce_scatter(output, inputs, op)?.wait()
}

/// `reduce_scatter_tensor` on the default group.
pub fn reduce_scatter_tensor(output: &Tensor, input: &Tensor, op: ReduceOp) -> Result<()> {
    default_group()?.reduce_scatter_tensor(output, input, op)?.wait()
}

/// `all_to_all` on the default group.
pub fn all_to_all(outputs: &[Tensor], inputs: &[Tensor]) -> Result<()> {
    default_group()?.all_to_all(outputs, inputs)?.wait()
}

/// `barrier` on the default group.
pub fn barrier() -> Result<()> {
    default_group()?.barrier()?.wait()
}

/// Sends `tensor` to global rank `dst` (tag 0); returns when the send completed.
pub fn send(tensor: &Tensor, dst: usize) -> Result<()> {
    default_group()?.send(tensor, dst, 0)?.wait()
}

/// Receives into `tensor` from global rank `src` (any when `None`, tag 0); returns the sender.
pub fn recv(tensor: &Tensor, src: Option<usize>) -> Result<usize> {
    let w = default_group()?.recv(tensor, src, 0)?;
    w.source_rank()
}

/// Starts sending `tensor` to `dst` (tag 0).
pub fn isend(tensor: &Tensor, dst: usize) -> Result<Work> {
    default_group()?.send(tensor, dst, 0)
}

/// Starts receiving into `tensor` from `src` (any when `None`, tag 0).
pub fn irecv(tensor: &Tensor, src: Option<usize>) -> Result<Work> {
    default_group()?.recv(tensor, src, 0)
}

fn serde_error(op: &str, e: serde_json::Error) -> Error {
    dist_error(op, format!("cannot (de)serialize the object: {e}"))
}

/// Every rank's `obj`, in rank order (PyTorch pickles; we use serde's JSON).
pub fn all_gather_object<T: Serialize + DeserializeOwned>(obj: &T) -> Result<Vec<T>> {
    all_gather_object_in(&default_group()?, obj)
}

/// [`all_gather_object`] on `group`.
pub fn all_gather_object_in<T: Serialize + DeserializeOwned>(group: &ProcessGroup, obj: &T) -> Result<Vec<T>> {
    let name = "all_gather_object";
    let bytes = serde_json::to_vec(obj).map_err(|e| serde_error(name, e))?;
    let size = group.size();
    // On the backend's device (the GPU for NCCL), as PyTorch does.
    let on = |t: Tensor| group.to_backend_device(t);
    let len = on(Tensor::from_vec(vec![bytes.len() as i64], &[1])?)?;
    let lens = on(Tensor::from_vec(vec![0i64; size], &[size as i64])?)?;
    group.all_gather_into_tensor(&lens, &len)?.wait()?;
    let lens = lens.cpu()?.to_vec::<i64>()?;
    let max = lens.iter().copied().max().unwrap_or(0) as usize;
    let mut padded = bytes;
    padded.resize(max, 0);
    let input = on(Tensor::from_vec(padded, &[max as i64])?)?;
    let output = on(Tensor::from_vec(vec![0u8; max * size], &[(max * size) as i64])?)?;
    group.all_gather_into_tensor(&output, &input)?.wait()?;
    let all = output.cpu()?.to_vec::<u8>()?;
    lens.iter()
        .enumerate()
        .map(|(r, &n)| serde_json::from_slice(&all[r * max..r * max + n as usize]).map_err(|e| serde_error(name, e)))
        .collect()
}

/// Replaces `objs` on every rank with the objects of global rank `src`; the lists must have the
/// same length everywhere (the other ranks' entries are placeholders).
pub fn broadcast_object_list<T: Serialize + DeserializeOwned>(objs: &mut [T], src: usize) -> Result<()> {
    let name = "broadcast_object_list";
    let group = default_group()?;
    let is_src = group.rank() == Some(src);
    let bytes = if is_src { serde_json::to_vec(&*objs).map_err(|e| serde_error(name, e))? } else { Vec::new() };
    let on = |t: Tensor| group.to_backend_device(t);
    let len = on(Tensor::from_vec(vec![bytes.len() as i64], &[1])?)?;
    group.broadcast(&len, src)?.wait()?;
    let n = len.cpu()?.item::<i64>()? as usize;
    let buf = on(Tensor::from_vec(if is_src { bytes } else { vec![0u8; n] }, &[n as i64])?)?;
    group.broadcast(&buf, src)?.wait()?;
    if !is_src {
        let got: Vec<T> = serde_json::from_slice(&buf.cpu()?.to_vec::<u8>()?).map_err(|e| serde_error(name, e))?;
        if got.len() != objs.len() {
            return Err(dist_error(
                name,
                format!("rank {src} broadcast {} objects, but this rank's list has {}", got.len(), objs.len()),
            ));
        }
        for (o, g) in objs.iter_mut().zip(got) {
            *o = g;
        }
    }
    Ok(())
}
