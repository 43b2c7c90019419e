//! `ZeroRedundancyOptimizer`: the optimizer state sharded over the ranks (ZeRO stage 1,
//! `torch.distributed.optim.ZeroRedundancyOptimizer`).
//!
//! Note [ZeRO partition]: as PyTorch. Parameters are assigned to ranks greedily, largest first
//! (a stable sort by element count), each to the rank with the fewest elements so far (the
//! lowest such rank on ties). Each rank builds the wrapped optimizer over its own parameters
//! only, so it keeps state (Adam's moments) for those alone. `step` runs the local optimizer,
//! then every rank broadcasts the parameters it owns (one flat buffer per rank and dtype), so all
//! replicas are equal again. The gradients must already be averaged over the ranks (a
//! [`crate::DistributedDataParallel`] model), as in PyTorch.

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{Error, Result};
use nn::optim::{Optimizer, OptimizerStateDict};
use nn::Parameter;

use crate::process_group::ProcessGroup;

fn zero_error(msg: impl Into<String>) -> Error {
    Error::Distributed { op: "ZeroRedundancyOptimizer".into(), msg: msg.into() }
}

/// The optimizer that makes a rank's local optimizer from its parameters.
pub type OptimizerFactory<'a> = dyn FnOnce(Vec<Parameter>) -> Result<Box<dyn Optimizer>> + 'a;

/// `ZeroRedundancyOptimizer(params, optimizer_class, **defaults)` (Note [ZeRO partition]).
pub struct ZeroRedundancyOptimizer {
    params: Vec<Parameter>,
    /// The rank that owns each parameter.
    owner: Vec<usize>,
    local: Box<dyn Optimizer>,
    /// Whether this rank owns any parameter (a rank that owns none builds its local optimizer
    /// over all of them, for its options, and never steps it).
    owns_any: bool,
    group: ProcessGroup,
    rank: usize,
}

/// The owner of each parameter, given their element counts (Note [ZeRO partition]).
pub fn partition_parameters(numels: &[i64], world: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..numels.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(numels[i]));
    let mut sizes = vec![0i64; world];
    let mut owner = vec![0; numels.len()];
    for i in order {
        let r = (0..world).min_by_key(|&r| (sizes[r], r)).unwrap_or(0);
        owner[i] = r;
        sizes[r] += numels[i];
    }
    owner
}

impl ZeroRedundancyOptimizer {
    /// Shards the state of the optimizer `make` builds over the ranks of `group` (the default
    /// group when `None`); `make` receives this rank's parameters.
    ///
    /// ```no_run
    /// # fn model() -> nn::Linear { nn::Linear::new(4, 2).unwrap() }
    /// use distributed::ZeroRedundancyOptimizer;
    /// use nn::optim::{Adam, AdamOptions, Optimizer};
    /// use nn::Module;
    /// let m = model();
    /// let opt = ZeroRedundancyOptimizer::new(
    ///     m.parameters(),
    ///     Box::new(|p| Ok(Box::new(Adam::new(p, AdamOptions::default().lr(1e-3))?) as Box<dyn Optimizer>)),
    ///     None,
    /// )
    /// .unwrap();
    /// ```
    pub fn new(params: Vec<Parameter>, make: Box<OptimizerFactory<'_>>, group: Option<ProcessGroup>) -> Result<Self> {
        let group = match group {
            Some(g) => g,
            None => crate::api::default_group()?,
        };
        let rank = group.rank().ok_or_else(|| zero_error("this rank is not a member of the process group"))?;
        if params.is_empty() {
            return Err(zero_error("ZeroRedundancyOptimizer requires at least one parameter"));
        }
        let numels: Vec<i64> = params.iter().map(|p| p.numel()).collect();
        let owner = partition_parameters(&numels, group.size());
        let mine: Vec<Parameter> =
            params.iter().zip(&owner).filter(|(_, &o)| o == rank).map(|(p, _)| p.clone()).collect();
        let owns_any = !mine.is_empty();
        let local = make(if owns_any { mine } else { params.clone() })?;
        Ok(ZeroRedundancyOptimizer { params, owner, local, owns_any, group, rank })
    }

    /// The rank that owns each parameter, in the order they were given.
    pub fn owners(&self) -> &[usize] {
        &self.owner
    }

    /// The optimizer over this rank's parameters.
    pub fn local_optimizer(&self) -> &dyn Optimizer {
        self.local.as_ref()
    }

    /// The optimizer over this rank's parameters, mutably (to load its state).
    pub fn local_optimizer_mut(&mut self) -> &mut dyn Optimizer {
        self.local.as_mut()
    }

    /// Broadcasts every rank's parameters from their owner.
    fn sync_params(&self) -> Result<()> {
        let _g = autograd::no_grad();
        for r in 0..self.group.size() {
            let owned: Vec<Tensor> = self
                .params
                .iter()
                .zip(&self.owner)
                .filter(|(_, &o)| o == r)
                .map(|(p, _)| p.tensor().detach())
                .collect();
            // One buffer per dtype and device.
            let mut kinds: Vec<(c10::ScalarType, c10::Device)> = Vec::new();
            for t in &owned {
                if !kinds.contains(&(t.dtype(), t.device())) {
                    kinds.push((t.dtype(), t.device()));
                }
            }
            for (dtype, device) in kinds {
                let list: Vec<Tensor> =
                    owned.iter().filter(|t| t.dtype() == dtype && t.device() == device).cloned().collect();
                let buf = if r == self.rank {
                    crate::process_group::pack(&list, dtype, device)?
                } else {
                    crate::process_group::flat(dtype, list.iter().map(Tensor::numel).sum(), device)?
                };
                self.group.broadcast(&buf, r)?.wait()?;
                if r != self.rank {
                    crate::process_group::unpack(&buf, &list)?;
                }
            }
        }
        Ok(())
    }
}

impl Optimizer for ZeroRedundancyOptimizer {
    fn name(&self) -> &'static str {
        "ZeroRedundancyOptimizer"
    }

    fn step(&mut self) -> Result<()> {
        if self.owns_any {
            self.local.step()?;
        }
        self.sync_params()
    }

    fn zero_grad(&self, set_to_none: bool) -> Result<()> {
        nn::optim::zero_grad_params(&self.params, set_to_none)
    }

    fn num_param_groups(&self) -> usize {
        1
    }

    fn group_params(&self, _group: usize) -> &[Parameter] {
        &self.params
    }

    fn lr(&self, group: usize) -> f64 {
        self.local.lr(group)
    }

    fn set_lr(&mut self, group: usize, lr: f64) {
        self.local.set_lr(group, lr)
    }

    fn initial_lr(&self, group: usize) -> Option<f64> {
        self.local.initial_lr(group)
    }

    fn set_initial_lr(&mut self, group: usize, lr: Option<f64>) {
        self.local.set_initial_lr(group, lr)
    }

    fn momentum(&self, group: usize) -> Option<f64> {
        self.local.momentum(group)
    }

    fn set_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        self.local.set_momentum(group, momentum)
    }

    /// The global state exists only once consolidated onto one rank, which this implementation
    /// does not do: PyTorch's error when it was not consolidated.
    fn state_dict(&self) -> Result<OptimizerStateDict> {
        Err(zero_error(
            "Optimizer state has not been consolidated on this rank. Please call `consolidate_state_dict(to=...)` \
             on all ranks beforehand if you meant to save the global state. (This implementation keeps each rank's \
             state local: save `local_optimizer().state_dict()` per rank.)",
        ))
    }

    fn load_state_dict(&mut self, _state: &OptimizerStateDict) -> Result<()> {
        Err(zero_error(
            "loading a global optimizer state is not supported; load each rank's local state into \
             its local optimizer",
        ))
    }
}
