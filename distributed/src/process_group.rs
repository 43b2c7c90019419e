//! `ProcessGroup`: a set of ranks and the collectives among them (c10d's `ProcessGroup`).
//!
//! Note [Process group layering]: as in c10d.
//! - [`ProcessGroup`] checks what every rank can check alone (contiguity, dtypes, list lengths,
//!   ranks in range, the reduction's dtype) and turns list arguments into flat buffers, so a
//!   backend sees a few buffer-level operations ([`Collective`]). Errors found here are
//!   returned before anything is sent, and the group stays usable.
//! - A backend runs the operations in the order they were issued. MPI (Note [The MPI thread])
//!   runs them on its own thread and first checks that all ranks issued the same collective
//!   with the same sizes: a mismatch is an error on every rank, never a hang or garbage. NCCL
//!   (Note [The NCCL backend]) enqueues them on the tensors' CUDA stream.
//! - Outputs given as lists are filled from the flat buffer when the transfer is done, before
//!   the [`Work`] completes. For MPI, tensors on a device are staged through host memory; NCCL
//!   takes device buffers ([`Backend::device_buffers`]), and lists are packed on the device.
//! - Ranks passed to a group's methods are ranks *in that group*; the module-level functions
//!   work on the default group, where group ranks and global ranks are the same.

use std::sync::Arc;
use std::time::Duration;

use aten::Tensor;
use c10::{Device, Error, Result, ScalarType};

use crate::work::Work;

/// How a collective combines the ranks' values (`torch.distributed.ReduceOp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum (for bool: logical or).
    Sum,
    /// The mean over the ranks (integers: the sum divided by the rank count, truncated).
    Avg,
    /// The product (for bool: logical and).
    Product,
    /// The minimum.
    Min,
    /// The maximum.
    Max,
    /// Bitwise and (integers and bool).
    BAnd,
    /// Bitwise or (integers and bool).
    BOr,
    /// Bitwise xor (integers and bool).
    BXor,
}

impl ReduceOp {
    /// PyTorch's name (`ReduceOp.SUM`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "SUM",
            ReduceOp::Avg => "AVG",
            ReduceOp::Product => "PRODUCT",
            ReduceOp::Min => "MIN",
            ReduceOp::Max => "MAX",
            ReduceOp::BAnd => "BAND",
            ReduceOp::BOr => "BOR",
            ReduceOp::BXor => "BXOR",
        }
    }

    #[cfg_attr(not(any(feature = "mpi", feature = "cuda", feature = "gloo")), allow(dead_code))]
    pub(crate) fn code(self) -> i64 {
        self as i64
    }

    /// Whether `self` applies to `dtype`.
    fn check(self, op: &str, dtype: ScalarType) -> Result<()> {
        let ok = match self {
            ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor => dtype.is_integral(true),
            ReduceOp::Avg => dtype != ScalarType::Bool,
            // Complex numbers have no order (PyTorch refuses MIN/MAX on them too).
            ReduceOp::Min | ReduceOp::Max => !dtype.is_complex(),
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::Distributed {
                op: op.into(),
                msg: format!("Cannot use ReduceOp.{} with {}", self.name(), dtype.name()),
            })
        }
    }
}

/// A buffer-level operation, as a backend runs it (see Note [Process group layering]). All
/// tensors are contiguous, on the host unless the backend takes device buffers
/// ([`Backend::device_buffers`]).
// Without a backend (neither `mpi` nor `cuda`) nothing reads the fields.
#[cfg_attr(not(any(feature = "mpi", feature = "cuda", feature = "gloo")), allow(dead_code))]
pub(crate) enum Collective {
    AllReduce {
        buf: Tensor,
        op: ReduceOp,
    },
    Broadcast {
        buf: Tensor,
        root: usize,
    },
    /// `buf` is reduced into on `root` and read on the others.
    Reduce {
        buf: Tensor,
        root: usize,
        op: ReduceOp,
    },
    /// `output` holds `size` blocks of `input.numel()` elements.
    AllGather {
        input: Tensor,
        output: Tensor,
    },
    /// `output` (on `root` only) holds `size` blocks.
    Gather {
        input: Tensor,
        output: Option<Tensor>,
        root: usize,
    },
    /// `input` (on `root` only) holds `size` blocks.
    Scatter {
        input: Option<Tensor>,
        output: Tensor,
        root: usize,
    },
    /// `input` holds `size` blocks of `output.numel()` elements.
    ReduceScatter {
        input: Tensor,
        output: Tensor,
        op: ReduceOp,
    },
    /// Block `j` of `input` (`send_counts[j]` elements) goes to rank `j`, and rank `j`'s block
    /// lands in `output` (`recv_counts[j]` elements), blocks in rank order.
    AllToAll {
        input: Tensor,
        send_counts: Vec<usize>,
        output: Tensor,
        recv_counts: Vec<usize>,
    },
    Barrier,
    Send {
        buf: Tensor,
        dst: usize,
        tag: i32,
    },
    /// From `src`, or from any rank when `None`.
    Recv {
        buf: Tensor,
        src: Option<usize>,
        tag: i32,
    },
}

impl Collective {
    /// Whether a buffer of the operation is on a device other than the host.
    fn on_device(&self) -> bool {
        let dev = |t: &Tensor| !t.device().is_cpu();
        let opt = |t: &Option<Tensor>| t.as_ref().is_some_and(dev);
        match self {
            Collective::AllReduce { buf, .. }
            | Collective::Broadcast { buf, .. }
            | Collective::Reduce { buf, .. }
            | Collective::Send { buf, .. }
            | Collective::Recv { buf, .. } => dev(buf),
            Collective::AllGather { input, output }
            | Collective::ReduceScatter { input, output, .. }
            | Collective::AllToAll { input, output, .. } => dev(input) || dev(output),
            Collective::Gather { input, output, .. } => dev(input) || opt(output),
            Collective::Scatter { input, output, .. } => opt(input) || dev(output),
            Collective::Barrier => false,
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Collective::AllReduce { .. } => "all_reduce",
            Collective::Broadcast { .. } => "broadcast",
            Collective::Reduce { .. } => "reduce",
            Collective::AllGather { .. } => "all_gather",
            Collective::Gather { .. } => "gather",
            Collective::Scatter { .. } => "scatter",
            Collective::ReduceScatter { .. } => "reduce_scatter",
            Collective::AllToAll { .. } => "all_to_all",
            Collective::Barrier => "barrier",
            Collective::Send { .. } => "send",
            Collective::Recv { .. } => "recv",
        }
    }
}

/// Copies flat buffers into the caller's list outputs and staged buffers back to the device.
/// MPI runs it on its thread after the transfer succeeded, before the work completes; NCCL
/// enqueues it right after the operation, on the same stream.
pub(crate) type Finish = Box<dyn FnOnce() -> Result<()> + Send>;

/// What a process-group backend provides (see Note [Process group layering]).
pub(crate) trait Backend: Send + Sync {
    /// `mpi`, `nccl`.
    fn name(&self) -> &'static str;
    /// This process's rank in the group.
    fn rank(&self) -> usize;
    /// Queues `c`; `finish` runs after it succeeded. The work's `wait` gives up after `timeout`.
    fn submit(&self, c: Collective, finish: Option<Finish>, timeout: Duration) -> Work;
    /// Whether the backend works on device tensors where they are (NCCL); otherwise the
    /// process group stages them through host memory (MPI).
    fn device_buffers(&self) -> bool {
        false
    }
    /// Whether the backend takes buffers on devices of type `device` where they are; a backend
    /// serving several device types ([`ByDevice`]) answers per type.
    fn takes_device_buffers(&self, device: c10::DeviceType) -> bool {
        let _ = device;
        self.device_buffers()
    }
    /// Where the backend exchanges small host values (object collectives, DDP's flags): the
    /// host for MPI, the group's GPU for NCCL.
    fn device(&self) -> Device {
        Device::CPU
    }
    /// A backend for the group of `ranks` (sorted, distinct, ranks of this group). Every rank of
    /// this group must call it; those outside `ranks` get `None`.
    fn split(&self, ranks: &[usize], timeout: Duration) -> Result<Option<Arc<dyn Backend>>>;
}

/// A backend per device type (a backend string such as `"cpu:gloo,cuda:nccl"`, PyTorch's
/// device-to-backend map): operations on CUDA tensors go to `cuda`, all others (and barriers,
/// object collectives) to `cpu`. The two may be the same backend (`"cpu:gloo,cuda:gloo"`:
/// Gloo stages CUDA tensors through the host).
pub(crate) struct ByDevice {
    /// The backend string, normalised (`cpu:gloo,cuda:nccl`).
    pub(crate) name: &'static str,
    pub(crate) cpu: Arc<dyn Backend>,
    pub(crate) cuda: Arc<dyn Backend>,
}

impl Backend for ByDevice {
    fn name(&self) -> &'static str {
        self.name
    }
    fn rank(&self) -> usize {
        self.cpu.rank()
    }
    fn submit(&self, c: Collective, finish: Option<Finish>, timeout: Duration) -> Work {
        let b = if c.on_device() { &self.cuda } else { &self.cpu };
        b.submit(c, finish, timeout)
    }
    fn takes_device_buffers(&self, device: c10::DeviceType) -> bool {
        match device {
            c10::DeviceType::Cuda => self.cuda.device_buffers(),
            _ => self.cpu.device_buffers(),
        }
    }
    fn device(&self) -> Device {
        self.cpu.device()
    }
    fn split(&self, ranks: &[usize], timeout: Duration) -> Result<Option<Arc<dyn Backend>>> {
        let cpu = self.cpu.split(ranks, timeout)?;
        let cuda = if Arc::ptr_eq(&self.cpu, &self.cuda) { cpu.clone() } else { self.cuda.split(ranks, timeout)? };
        Ok(match (cpu, cuda) {
            (Some(cpu), Some(cuda)) => Some(Arc::new(ByDevice { name: self.name, cpu, cuda })),
            _ => None,
        })
    }
}

/// A group of ranks that run collectives together (c10d's `ProcessGroup`). Cloning shares the
/// group. A process that is not a member of a group created with
/// [`new_group`](crate::new_group) gets a group whose operations return an error.
#[derive(Clone)]
pub struct ProcessGroup {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Option<Arc<dyn Backend>>,
    /// The global rank of each group rank.
    global_ranks: Vec<usize>,
    timeout: Duration,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("backend", &self.inner.backend.as_ref().map(|b| b.name()))
            .field("ranks", &self.inner.global_ranks)
            .finish()
    }
}

fn dist_error(op: &str, msg: impl Into<String>) -> Error {
    Error::Distributed { op: op.into(), msg: msg.into() }
}

/// A host copy of a device tensor, and the copy back when the operation writes it.
struct Staged {
    host: Tensor,
    device: Option<Tensor>,
}

impl Staged {
    /// `t` itself when it is on the host or `stage` is false, else a host copy of it.
    fn new(op: &str, t: &Tensor, stage: bool) -> Result<Staged> {
        check_contiguous(op, t)?;
        if t.device().is_cpu() || !stage {
            return Ok(Staged { host: t.clone(), device: None });
        }
        let host = to_host(t)?;
        Ok(Staged { host, device: Some(t.clone()) })
    }

    /// Copies the host buffer back to the device tensor.
    fn copy_back(self) -> Result<()> {
        if let Some(d) = self.device {
            d.copy_(&self.host).call()?;
        }
        Ok(())
    }
}

fn check_contiguous(op: &str, t: &Tensor) -> Result<()> {
    if !t.is_contiguous() {
        return Err(dist_error(op, "Tensors must be contiguous"));
    }
    Ok(())
}

/// The tensors of a list all have `like`'s dtype and element count.
fn check_list(op: &str, what: &str, list: &[Tensor], like: &Tensor) -> Result<()> {
    for t in list {
        check_contiguous(op, t)?;
        if t.dtype() != like.dtype() {
            return Err(dist_error(
                op,
                format!(
                    "Tensors must have the same type: {what} has {}, expected {}",
                    t.dtype().name(),
                    like.dtype().name()
                ),
            ));
        }
        if t.numel() != like.numel() {
            return Err(dist_error(
                op,
                format!(
                    "Tensors must have the same size: {what} has {} elements, expected {}",
                    t.numel(),
                    like.numel()
                ),
            ));
        }
    }
    Ok(())
}

/// A flat buffer of `n` elements of `dtype` on `device`.
pub(crate) fn flat(dtype: ScalarType, n: i64, device: Device) -> Result<Tensor> {
    aten::ops::empty(&[n], Some(dtype), None, Some(device), None, None)
}

/// Copies `list` (on any device) into consecutive runs of a new flat buffer of `dtype` on
/// `device`.
pub(crate) fn pack(list: &[Tensor], dtype: ScalarType, device: Device) -> Result<Tensor> {
    let buf = flat(dtype, list.iter().map(|t| t.numel()).sum(), device)?;
    let mut start = 0;
    for t in list {
        let n = t.numel();
        buf.narrow(0, start, n)?.view(t.sizes())?.copy_(t).call()?;
        start += n;
    }
    Ok(buf)
}

/// Copies consecutive blocks of `buf` into `list`.
pub(crate) fn unpack(buf: &Tensor, list: &[Tensor]) -> Result<()> {
    let mut start = 0;
    for t in list {
        let n = t.numel();
        t.copy_(&buf.narrow(0, start, n)?.view(t.sizes())?).call()?;
        start += n;
    }
    Ok(())
}

impl ProcessGroup {
    pub(crate) fn new(backend: Arc<dyn Backend>, global_ranks: Vec<usize>, timeout: Duration) -> ProcessGroup {
        ProcessGroup { inner: Arc::new(Inner { backend: Some(backend), global_ranks, timeout }) }
    }

    /// The backend (None outside the group).
    pub(crate) fn backend_arc(&self) -> Option<Arc<dyn Backend>> {
        self.inner.backend.clone()
    }

    /// The group as seen by a process outside it.
    pub(crate) fn non_member(global_ranks: Vec<usize>, timeout: Duration) -> ProcessGroup {
        ProcessGroup { inner: Arc::new(Inner { backend: None, global_ranks, timeout }) }
    }

    fn backend(&self, op: &str) -> Result<&Arc<dyn Backend>> {
        self.inner.backend.as_ref().ok_or_else(|| {
            dist_error(op, format!("this process is not a member of the group of ranks {:?}", self.inner.global_ranks))
        })
    }

    /// Whether this process belongs to the group.
    pub fn is_member(&self) -> bool {
        self.inner.backend.is_some()
    }

    /// The backend's name (`mpi`).
    pub fn backend_name(&self) -> Option<&'static str> {
        self.inner.backend.as_ref().map(|b| b.name())
    }

    /// This process's rank in the group (`None` outside it).
    pub fn rank(&self) -> Option<usize> {
        self.inner.backend.as_ref().map(|b| b.rank())
    }

    /// The number of ranks in the group.
    pub fn size(&self) -> usize {
        self.inner.global_ranks.len()
    }

    /// The global ranks of the group's members, in group-rank order.
    pub fn ranks(&self) -> &[usize] {
        &self.inner.global_ranks
    }

    /// The global rank of group rank `group_rank` (`get_global_rank`).
    pub fn global_rank(&self, group_rank: usize) -> Result<usize> {
        self.inner.global_ranks.get(group_rank).copied().ok_or_else(|| {
            dist_error(
                "get_global_rank",
                format!("group rank {group_rank} is not part of a group of size {}", self.size()),
            )
        })
    }

    /// The group rank of global rank `global_rank` (`get_group_rank`).
    pub fn group_rank(&self, global_rank: usize) -> Result<usize> {
        self.inner.global_ranks.iter().position(|&r| r == global_rank).ok_or_else(|| {
            dist_error(
                "get_group_rank",
                format!("global rank {global_rank} is not part of the group {:?}", self.inner.global_ranks),
            )
        })
    }

    /// The timeout of the group's operations.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    fn check_rank(&self, op: &str, what: &str, r: usize) -> Result<()> {
        if r >= self.size() {
            return Err(dist_error(op, format!("invalid {what} rank {r} for a group of size {}", self.size())));
        }
        Ok(())
    }

    /// Whether tensors on `device` go through host memory (see [`Backend::device_buffers`]).
    fn stages(&self, device: Device) -> bool {
        self.inner.backend.as_ref().is_none_or(|b| !b.takes_device_buffers(device.ty))
    }

    /// `t`, or its host copy when the backend needs one.
    fn stage(&self, op: &str, t: &Tensor) -> Result<Staged> {
        Staged::new(op, t, self.stages(t.device()))
    }

    /// For a backend that takes device buffers: every tensor of `list` is on `like`'s device
    /// (PyTorch's NCCL backend rejects the others too).
    fn check_devices(&self, op: &str, list: &[Tensor], like: &Tensor) -> Result<()> {
        if self.stages(like.device()) {
            return Ok(());
        }
        match list.iter().find(|t| t.device() != like.device()) {
            Some(t) => {
                Err(dist_error(op, format!("Tensors must be on the same device: {} and {}", like.device(), t.device())))
            }
            None => Ok(()),
        }
    }

    /// `t` on the device where the backend exchanges small values ([`Backend::device`]).
    pub(crate) fn to_backend_device(&self, t: Tensor) -> Result<Tensor> {
        let device = self.inner.backend.as_ref().map_or(Device::CPU, |b| b.device());
        if t.device() == device {
            return Ok(t);
        }
        aten::ops::to_device(&t, device, t.dtype(), false, false, None)
    }

    /// Where the backend wants the buffers of an operation on tensors like `like`.
    fn buffer_device(&self, like: &Tensor) -> Device {
        if self.stages(like.device()) {
            Device::CPU
        } else {
            like.device()
        }
    }

    fn submit(&self, c: Collective, finish: Option<Finish>) -> Result<Work> {
        let b = self.backend(c.name())?;
        Ok(b.submit(c, finish, self.inner.timeout))
    }

    /// Reduces `tensor` over the ranks with `op`, leaving the result in every rank's `tensor`.
    pub fn all_reduce(&self, tensor: &Tensor, op: ReduceOp) -> Result<Work> {
        let name = "all_reduce";
        op.check(name, tensor.dtype())?;
        let s = self.stage(name, tensor)?;
        let buf = s.host.clone();
        self.submit(
            Collective::AllReduce { buf, op },
            s.device.is_some().then(|| Box::new(move || s.copy_back()) as Finish),
        )
    }

    /// Copies `tensor` from group rank `src` to every rank.
    pub fn broadcast(&self, tensor: &Tensor, src: usize) -> Result<Work> {
        let name = "broadcast";
        self.check_rank(name, "source", src)?;
        let s = self.stage(name, tensor)?;
        let buf = s.host.clone();
        let writes = self.rank() != Some(src) && s.device.is_some();
        self.submit(Collective::Broadcast { buf, root: src }, writes.then(|| Box::new(move || s.copy_back()) as Finish))
    }

    /// Reduces `tensor` over the ranks into group rank `dst`'s `tensor`; the others' are read.
    pub fn reduce(&self, tensor: &Tensor, dst: usize, op: ReduceOp) -> Result<Work> {
        let name = "reduce";
        self.check_rank(name, "destination", dst)?;
        op.check(name, tensor.dtype())?;
        let s = self.stage(name, tensor)?;
        let buf = s.host.clone();
        let writes = self.rank() == Some(dst) && s.device.is_some();
        self.submit(
            Collective::Reduce { buf, root: dst, op },
            writes.then(|| Box::new(move || s.copy_back()) as Finish),
        )
    }

    /// Gathers every rank's `input` into `outputs` (one tensor per rank, in rank order).
    pub fn all_gather(&self, outputs: &[Tensor], input: &Tensor) -> Result<Work> {
        let name = "all_gather";
        let size = self.size();
        if outputs.len() != size {
            return Err(dist_error(
                name,
                format!("the output list has {} tensors, expected the group size {size}", outputs.len()),
            ));
        }
        check_list(name, "an output tensor", outputs, input)?;
        self.check_devices(name, outputs, input)?;
        let s = self.stage(name, input)?;
        let buf = flat(input.dtype(), input.numel() * size as i64, self.buffer_device(input))?;
        let outs = outputs.to_vec();
        let b2 = buf.clone();
        self.submit(Collective::AllGather { input: s.host, output: buf }, Some(Box::new(move || unpack(&b2, &outs))))
    }

    /// Gathers every rank's `input` into `output`, whose first dimension is the group size
    /// times `input`'s (or which has group size times `input`'s elements).
    pub fn all_gather_into_tensor(&self, output: &Tensor, input: &Tensor) -> Result<Work> {
        let name = "all_gather_into_tensor";
        check_same_dtype(name, output, input)?;
        if output.numel() != input.numel() * self.size() as i64 {
            return Err(dist_error(
                name,
                format!(
                    "output tensor size must be equal to world_size times input tensor size: {} vs {} x {}",
                    output.numel(),
                    self.size(),
                    input.numel()
                ),
            ));
        }
        self.check_devices(name, std::slice::from_ref(output), input)?;
        let si = self.stage(name, input)?;
        let so = self.stage(name, output)?;
        let out = so.host.reshape(&[-1])?;
        let finish = so.device.is_some().then(|| Box::new(move || so.copy_back()) as Finish);
        self.submit(Collective::AllGather { input: si.host, output: out }, finish)
    }

    /// Gathers every rank's `input` into `outputs` on group rank `dst` (`outputs` must be given
    /// there, one tensor per rank, and must be `None` elsewhere).
    pub fn gather(&self, input: &Tensor, outputs: Option<&[Tensor]>, dst: usize) -> Result<Work> {
        let name = "gather";
        self.check_rank(name, "destination", dst)?;
        let s = self.stage(name, input)?;
        let is_root = self.rank() == Some(dst);
        match (is_root, outputs) {
            (true, None) => return Err(dist_error(name, "the destination rank needs a gather list")),
            (false, Some(_)) => {
                return Err(dist_error(
                    name,
                    "Argument ``gather_list`` must NOT be specified on non-destination ranks.",
                ))
            }
            _ => {}
        }
        let Some(outs) = outputs else {
            return self.submit(Collective::Gather { input: s.host, output: None, root: dst }, None);
        };
        if outs.len() != self.size() {
            return Err(dist_error(
                name,
                format!("the gather list has {} tensors, expected the group size {}", outs.len(), self.size()),
            ));
        }
        check_list(name, "a gather list tensor", outs, input)?;
        self.check_devices(name, outs, input)?;
        let buf = flat(input.dtype(), input.numel() * self.size() as i64, self.buffer_device(input))?;
        let outs = outs.to_vec();
        let b2 = buf.clone();
        self.submit(
            Collective::Gather { input: s.host, output: Some(buf), root: dst },
            Some(Box::new(move || unpack(&b2, &outs))),
        )
    }

    /// Scatters `inputs` (given on group rank `src` only, one tensor per rank) into every
    /// rank's `output`.
    pub fn scatter(&self, output: &Tensor, inputs: Option<&[Tensor]>, src: usize) -> Result<Work> {
        let name = "scatter";
        self.check_rank(name, "source", src)?;
        let is_root = self.rank() == Some(src);
        match (is_root, inputs) {
            (true, None) => return Err(dist_error(name, "the source rank needs a scatter list")),
            (false, Some(_)) => {
                return Err(dist_error(name, "Argument ``scatter_list`` must NOT be specified on non-source ranks."))
            }
            _ => {}
        }
        let so = self.stage(name, output)?;
        let input = match inputs {
            Some(ins) => {
                if ins.len() != self.size() {
                    return Err(dist_error(
                        name,
                        format!("the scatter list has {} tensors, expected the group size {}", ins.len(), self.size()),
                    ));
                }
                check_list(name, "a scatter list tensor", ins, output)?;
                self.check_devices(name, ins, output)?;
                Some(pack(ins, output.dtype(), self.buffer_device(output))?)
            }
            None => None,
        };
        let out = so.host.clone();
        let finish = so.device.is_some().then(|| Box::new(move || so.copy_back()) as Finish);
        self.submit(Collective::Scatter { input, output: out, root: src }, finish)
    }

    /// Reduces `inputs` (one tensor per rank) over the ranks and leaves block `rank` of the
    /// result in `output`.
    pub fn reduce_scatter(&self, output: &Tensor, inputs: &[Tensor], op: ReduceOp) -> Result<Work> {
        let name = "reduce_scatter";
        op.check(name, output.dtype())?;
        if inputs.len() != self.size() {
            return Err(dist_error(
                name,
                format!("the input list has {} tensors, expected the group size {}", inputs.len(), self.size()),
            ));
        }
        check_list(name, "an input tensor", inputs, output)?;
        self.check_devices(name, inputs, output)?;
        let so = self.stage(name, output)?;
        let input = pack(inputs, output.dtype(), self.buffer_device(output))?;
        let out = so.host.clone();
        let finish = so.device.is_some().then(|| Box::new(move || so.copy_back()) as Finish);
        self.submit(Collective::ReduceScatter { input, output: out, op }, finish)
    }

    /// Reduces `input` (group size blocks of `output`'s size) over the ranks and leaves block
    /// `rank` of the result in `output`.
    pub fn reduce_scatter_tensor(&self, output: &Tensor, input: &Tensor, op: ReduceOp) -> Result<Work> {
        let name = "reduce_scatter_tensor";
        check_same_dtype(name, output, input)?;
        op.check(name, output.dtype())?;
        if input.numel() != output.numel() * self.size() as i64 {
            return Err(dist_error(
                name,
                format!(
                    "input tensor must be the same size as output size times world size: {} vs {} x {}",
                    input.numel(),
                    self.size(),
                    output.numel()
                ),
            ));
        }
        self.check_devices(name, std::slice::from_ref(output), input)?;
        let si = self.stage(name, input)?;
        let so = self.stage(name, output)?;
        let out = so.host.clone();
        let finish = so.device.is_some().then(|| Box::new(move || so.copy_back()) as Finish);
        self.submit(Collective::ReduceScatter { input: si.host.reshape(&[-1])?, output: out, op }, finish)
    }

    /// Sends `inputs[j]` to rank `j` and receives rank `j`'s tensor for this rank into
    /// `outputs[j]` (sizes may differ between pairs; both sides must agree).
    pub fn all_to_all(&self, outputs: &[Tensor], inputs: &[Tensor]) -> Result<Work> {
        let name = "all_to_all";
        let size = self.size();
        if inputs.len() != size || outputs.len() != size {
            return Err(dist_error(
                name,
                format!(
                    "the input and output lists need one tensor per rank ({size}); got {} and {}",
                    inputs.len(),
                    outputs.len()
                ),
            ));
        }
        let dtype = inputs[0].dtype();
        for t in inputs.iter().chain(outputs) {
            check_contiguous(name, t)?;
            if t.dtype() != dtype {
                return Err(dist_error(name, "Tensors must have the same type"));
            }
        }
        self.check_devices(name, inputs, &inputs[0])?;
        self.check_devices(name, outputs, &inputs[0])?;
        let send_counts: Vec<usize> = inputs.iter().map(|t| t.numel() as usize).collect();
        let recv_counts: Vec<usize> = outputs.iter().map(|t| t.numel() as usize).collect();
        let device = self.buffer_device(&inputs[0]);
        let input = pack(inputs, dtype, device)?;
        let output = flat(dtype, recv_counts.iter().sum::<usize>() as i64, device)?;
        let outs = outputs.to_vec();
        let o2 = output.clone();
        self.submit(
            Collective::AllToAll { input, send_counts, output, recv_counts },
            Some(Box::new(move || unpack(&o2, &outs))),
        )
    }

    /// Waits until every rank of the group has reached the barrier.
    pub fn barrier(&self) -> Result<Work> {
        self.submit(Collective::Barrier, None)
    }

    /// Sends `tensor` to group rank `dst` with `tag`.
    pub fn send(&self, tensor: &Tensor, dst: usize, tag: i32) -> Result<Work> {
        let name = "send";
        self.check_rank(name, "destination", dst)?;
        if self.rank() == Some(dst) {
            return Err(dist_error(
                name,
                "Invalid destination rank: should not be the same as rank of the current process.",
            ));
        }
        let s = self.stage(name, tensor)?;
        self.submit(Collective::Send { buf: s.host, dst, tag }, None)
    }

    /// Receives into `tensor` from group rank `src` (any rank when `None`) with `tag`; the
    /// work's [`Work::source_rank`] says who sent it.
    pub fn recv(&self, tensor: &Tensor, src: Option<usize>, tag: i32) -> Result<Work> {
        let name = "recv";
        if let Some(src) = src {
            self.check_rank(name, "source", src)?;
            if self.rank() == Some(src) {
                return Err(dist_error(
                    name,
                    "Invalid source rank: should not be the same as rank of the current process.",
                ));
            }
        }
        let s = self.stage(name, tensor)?;
        let buf = s.host.clone();
        let finish = s.device.is_some().then(|| Box::new(move || s.copy_back()) as Finish);
        self.submit(Collective::Recv { buf, src, tag }, finish)
    }

    /// A group of the members `ranks` (group ranks of `self`): see [`crate::new_group`].
    pub(crate) fn split(&self, ranks: &[usize]) -> Result<ProcessGroup> {
        let name = "new_group";
        let b = self.backend(name)?;
        let mut sorted = ranks.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != ranks.len() {
            return Err(dist_error(name, format!("the ranks {ranks:?} repeat a rank")));
        }
        if let Some(&r) = sorted.iter().find(|&&r| r >= self.size()) {
            return Err(dist_error(name, format!("rank {r} is not in the group (size {})", self.size())));
        }
        let global: Vec<usize> = sorted.iter().map(|&r| self.inner.global_ranks[r]).collect();
        Ok(match b.split(&sorted, self.inner.timeout)? {
            Some(backend) => ProcessGroup::new(backend, global, self.inner.timeout),
            None => ProcessGroup::non_member(global, self.inner.timeout),
        })
    }
}

fn check_same_dtype(op: &str, output: &Tensor, input: &Tensor) -> Result<()> {
    if output.dtype() != input.dtype() {
        return Err(dist_error(
            op,
            format!(
                "output tensor must have the same type as input tensor: {} vs {}",
                output.dtype().name(),
                input.dtype().name()
            ),
        ));
    }
    Ok(())
}

/// A host copy of a device tensor.
fn to_host(t: &Tensor) -> Result<Tensor> {
    aten::ops::to_device(t, Device::CPU, t.dtype(), false, false, None)
}
