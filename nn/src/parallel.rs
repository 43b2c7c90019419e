//! Data parallelism in one process over several devices (`torch.nn.DataParallel`, and
//! `replicate`, `parallel_apply` and the `torch.nn.parallel.comm` functions).
//!
//! Note [DataParallel replicas]: PyTorch's `DataParallel.forward` scatters the input's batch
//! over the devices, replicates the module once per device (each replica holds its device's
//! copies of the parameters, made by `Broadcast`, a differentiable copy whose backward,
//! `ReduceAddCoalesced`, sums the copies' gradients back onto the originals), runs the replicas
//! on their chunks in threads (`parallel_apply`) and gathers the outputs onto the output device.
//! Here:
//! - **Replicas.** Our modules own boxed children and are not clonable in general. A replica is
//!   therefore the module itself, with its parameters and buffers swapped for that device's
//!   copies while that device's forward runs, and swapped back after it, also when the forward
//!   fails. The first device keeps the module's own tensors, as PyTorch's first replica shares
//!   them.
//! - **One thread.** The devices' forwards are issued one after another from the calling thread.
//!   On a GPU the launches are asynchronous, so the devices compute at the same time. On the
//!   emulated device they run in turn.
//! - **Gradients.** The copies are `to_device` copies, whose backward copies the gradient back to
//!   the source device. The autograd engine sums a parameter's gradients from every device,
//!   which is what `ReduceAddCoalesced` computes ([`reduce_add`] is that sum as a function).
//! - **Buffers.** Buffers are copied without history, so a replica's updates of them (BatchNorm's
//!   running statistics) are lost, except on the first device, as in PyTorch.

use aten::Tensor;
use c10::{Device, DeviceType, Error, Result};

use crate::module::{Member, MemberMut, Module, Parameter};
use crate::Forward;

/// `torch.nn.parallel.comm.broadcast` of several tensors (`Broadcast.apply`): `result[k][i]` is
/// `tensors[i]` on `devices[k]`, the tensor itself where it already is. The copies are
/// differentiable: their gradients flow back to the originals and add up there.
pub fn broadcast(tensors: &[Tensor], devices: &[Device]) -> Result<Vec<Vec<Tensor>>> {
    devices.iter().map(|&d| tensors.iter().map(|t| t.to_device(d)).collect()).collect()
}

/// `torch.nn.parallel.comm.reduce_add`: the sum of tensors of one shape from several devices,
/// on `destination` (the operation `ReduceAddCoalesced` applies to the copies' gradients).
pub fn reduce_add(inputs: &[Tensor], destination: Device) -> Result<Tensor> {
    let Some(first) = inputs.first() else {
        return Err(Error::invalid("reduce_add", "expected at least one tensor to reduce"));
    };
    let mut sum = first.to_device(destination)?;
    for t in &inputs[1..] {
        if t.sizes() != first.sizes() {
            return Err(Error::invalid(
                "reduce_add",
                format!("input {:?} has a different shape than the first input {:?}", t.sizes(), first.sizes()),
            ));
        }
        sum = aten::ops::add(&sum, &t.to_device(destination)?, c10::Scalar::Int(1))?;
    }
    Ok(sum)
}

/// `torch.nn.parallel.scatter` of one tensor (`Scatter.apply`): `input` cut along `dim` into at
/// most `devices.len()` chunks (`torch.chunk`'s sizes) and chunk `k` moved to `devices[k]`;
/// fewer chunks than devices when `dim` is shorter. Differentiable.
pub fn scatter(input: &Tensor, devices: &[Device], dim: i64) -> Result<Vec<Tensor>> {
    if devices.is_empty() {
        return Err(Error::invalid("scatter", "expected at least one device to scatter to"));
    }
    let chunks = aten::ops::chunk(input, devices.len() as i64, dim)?;
    chunks.iter().zip(devices).map(|(c, &d)| c.to_device(d)).collect()
}

/// `torch.nn.parallel.gather` of tensors (`Gather.apply`): the outputs moved to `destination` and
/// concatenated along `dim`; 0-dim outputs are gathered as a vector, as PyTorch does.
/// Differentiable.
pub fn gather(outputs: &[Tensor], destination: Device, dim: i64) -> Result<Tensor> {
    if outputs.is_empty() {
        return Err(Error::invalid("gather", "expected at least one tensor to gather"));
    }
    let scalars = outputs.iter().all(|t| t.dim() == 0);
    let moved = outputs
        .iter()
        .map(|t| {
            let t = t.to_device(destination)?;
            if scalars {
                t.reshape(&[1])
            } else {
                Ok(t)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    aten::ops::cat(&moved, if scalars { 0 } else { dim })
}

/// A tensor of a module that [`to_device_copies`] replaced.
enum Replaced {
    Parameter(Parameter),
    Buffer(Tensor),
}

/// Replaces every parameter of `module` with a copy on `device` that keeps its history (its
/// gradient flows back to the replaced parameter) and every buffer with a copy without history;
/// returns the replaced tensors in visiting order and the first error, after which nothing more
/// is replaced. Shared by [`replicate`] and [`DataParallel`]'s swap.
fn to_device_copies<M: Module + ?Sized>(module: &mut M, device: Device) -> (Vec<Replaced>, Option<Error>) {
    let (mut replaced, mut failed) = (Vec::new(), None);
    module.visit_tensors_mut("", &mut |_, m| {
        if failed.is_some() {
            return;
        }
        match m {
            MemberMut::Parameter(p) => match p.tensor().to_device(device) {
                Ok(copy) => replaced.push(Replaced::Parameter(std::mem::replace(p, Parameter::replica(copy)))),
                Err(e) => failed = Some(e),
            },
            MemberMut::Buffer(b) => {
                let copy = {
                    let _g = autograd::no_grad();
                    b.tensor().to_device(device)
                };
                match copy {
                    Ok(copy) => {
                        replaced.push(Replaced::Buffer(b.tensor().clone()));
                        b.set(copy);
                    }
                    Err(e) => failed = Some(e),
                }
            }
            MemberMut::Module(_) => {}
        }
    });
    (replaced, failed)
}

/// `torch.nn.parallel.replicate` of a clonable module: one copy per device, each holding that
/// device's copies of the parameters (differentiable: their gradients flow back to `module`'s
/// own parameters and add up there) and of the buffers (without history). A copy for the
/// device the module is on shares its tensors. [`DataParallel`] needs no clone (Note
/// [DataParallel replicas]); this is for modules that are `Clone` (every layer is; a
/// `Sequential` of boxed children is not).
pub fn replicate<M: Module + Clone>(module: &M, devices: &[Device]) -> Result<Vec<M>> {
    devices
        .iter()
        .map(|&d| {
            let mut replica = module.clone();
            let (_, failed) = to_device_copies(&mut replica, d);
            failed.map_or(Ok(replica), Err)
        })
        .collect()
}

/// `torch.nn.parallel.parallel_apply`: `modules[k]` on `inputs[k]`, each on a thread of its own
/// with the input's CUDA device current, the caller's grad mode and its CUDA autocast state
/// (as PyTorch's threads take them); the outputs in order, or the first error.
pub fn parallel_apply<M: Forward>(modules: &[M], inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    if modules.len() != inputs.len() {
        return Err(Error::invalid(
            "parallel_apply",
            format!("The number of modules {} is not equal to the number of inputs {}", modules.len(), inputs.len()),
        ));
    }
    let grad_enabled = autograd::is_grad_enabled();
    let cuda = DeviceType::Cuda;
    let autocast = aten::autocast::is_enabled(cuda).then(|| aten::autocast::get_dtype(cuda));
    std::thread::scope(|scope| {
        let threads: Vec<_> = modules
            .iter()
            .zip(inputs)
            .map(|(m, x)| {
                scope.spawn(move || {
                    let _grad = autograd::set_grad_enabled(grad_enabled);
                    if x.device().ty == cuda {
                        c10::stream::device_guard_impl(cuda)?.set_device(x.device())?;
                    }
                    let _autocast = match autocast {
                        Some(dtype) => Some(aten::autocast::AutocastGuard::new(cuda, Some(dtype))?),
                        None => None,
                    };
                    m.call(x)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err(Error::invalid("parallel_apply", "a replica's forward panicked"))))
            .collect()
    })
}

/// `torch.nn.DataParallel`: runs a module on several devices of one process, each on a slice of
/// the batch (Note [DataParallel replicas]). The module's parameters and buffers must be on the
/// first device; the outputs are gathered on the output device (the first by default), and
/// gradients reach the module's own parameters.
///
/// ```no_run
/// # use nn::{DataParallel, Linear, Module};
/// # fn main() -> c10::Result<()> {
/// let mut net = Linear::new(784, 10)?;
/// net.cuda()?;
/// let mut dp = DataParallel::new(net, None)?; // every CUDA device
/// # let x = aten::ops::randn(&[64, 784], None, None, None, None)?;
/// let y = dp.forward(&x.cuda()?)?;
/// # Ok(()) }
/// ```
pub struct DataParallel<M> {
    module: M,
    device_ids: Vec<Device>,
    output_device: Device,
    dim: i64,
}

impl<M: Module + Forward> DataParallel<M> {
    /// `DataParallel(module, device_ids)`: over `device_ids`, or every CUDA device when `None`.
    /// Without CUDA devices the module runs as it is, as in PyTorch.
    pub fn new(module: M, device_ids: Option<&[Device]>) -> Result<DataParallel<M>> {
        let devices = match device_ids {
            Some(d) => d.to_vec(),
            None => match c10::stream::device_guard_impl(DeviceType::Cuda).and_then(|g| g.device_count()) {
                Ok(n) => (0..n).map(|i| Device::cuda(i as i8)).collect(),
                Err(_) => Vec::new(),
            },
        };
        let output = devices.first().copied().unwrap_or(Device::CPU);
        DataParallel::with_options(module, devices, output, 0)
    }

    /// `DataParallel(module, device_ids, output_device, dim)`.
    pub fn with_options(module: M, device_ids: Vec<Device>, output_device: Device, dim: i64) -> Result<Self> {
        if let Some(d) = device_ids.iter().find(|d| d.ty != DeviceType::Cuda || d.index < 0) {
            return Err(Error::invalid(
                "DataParallel",
                format!("device_ids must be CUDA devices with an index, got {d}"),
            ));
        }
        if let Some(&first) = device_ids.first() {
            let mut misplaced = None;
            module.visit_tensors("", &mut |_, m| {
                let t = match m {
                    Member::Parameter(p) => p.tensor(),
                    Member::Buffer(b) => b.tensor(),
                    Member::Module(_) => return,
                };
                if misplaced.is_none() && t.device() != first {
                    misplaced = Some(t.device());
                }
            });
            if let Some(d) = misplaced {
                return Err(Error::invalid(
                    "DataParallel",
                    format!(
                        "module must have its parameters and buffers on device {first} (device_ids[0]) but found one of them on device: {d}"
                    ),
                ));
            }
        }
        Ok(DataParallel { module, device_ids, output_device, dim })
    }

    /// The wrapped module (`dp.module`).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The wrapped module, mutably.
    pub fn module_mut(&mut self) -> &mut M {
        &mut self.module
    }

    /// The wrapped module, unwrapped.
    pub fn into_inner(self) -> M {
        self.module
    }

    /// The devices the batch is spread over.
    pub fn device_ids(&self) -> &[Device] {
        &self.device_ids
    }

    /// `dp(x)`: `x` scattered along the batch dim over the devices, the module run on every
    /// chunk with that device's copies of its parameters and buffers, the outputs gathered on
    /// the output device (Note [DataParallel replicas]).
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let Some(&first) = self.device_ids.first() else { return self.module.call(x) };
        if self.device_ids.len() == 1 {
            return self.module.call(&x.to_device(first)?);
        }
        let chunks = scatter(x, &self.device_ids, self.dim)?;
        let mut outputs = Vec::with_capacity(chunks.len());
        for (k, chunk) in chunks.iter().enumerate() {
            let out = if k == 0 { self.module.call(chunk) } else { self.replica_forward(self.device_ids[k], chunk) };
            outputs.push(out?);
        }
        gather(&outputs, self.output_device, self.dim)
    }

    /// The module's forward on `chunk` with its parameters and buffers swapped for copies on
    /// `device` (parameters with their history, buffers without), swapped back afterwards.
    fn replica_forward(&mut self, device: Device, chunk: &Tensor) -> Result<Tensor> {
        let (saved, failed) = to_device_copies(&mut self.module, device);
        let out = match failed {
            Some(e) => Err(e),
            None => self.module.call(chunk),
        };
        // The module's own tensors back, in the same visiting order (only those swapped).
        let mut back = saved.into_iter();
        self.module.visit_tensors_mut("", &mut |_, m| match (m, back.next()) {
            (MemberMut::Parameter(p), Some(Replaced::Parameter(orig))) => *p = orig,
            (MemberMut::Buffer(b), Some(Replaced::Buffer(orig))) => b.set(orig),
            _ => {}
        });
        out
    }
}

impl<M: Module> Module for DataParallel<M> {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        f("module", Member::Module(&self.module));
    }

    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f("module", MemberMut::Module(&mut self.module));
    }

    fn type_name(&self) -> &'static str {
        "DataParallel"
    }
}
