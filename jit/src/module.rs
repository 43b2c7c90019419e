//! [`ScriptModule`]: a graph with the parameters and buffers it reads, runnable without the
//! code that made it (PyTorch's `torch.jit.ScriptModule`). The graph's inputs are the forward's
//! inputs, then every parameter and buffer in order; the module feeds the latter itself.
//! Parameters stay parameters: a traced or loaded module can be trained (an optimizer gets them
//! from [`Module::parameters`], gradients flow through the interpreter).

use std::sync::OnceLock;

use aten::{IValue, Tensor};
use c10::{Error, Result, Scalar};
use nn::{Buffer, Forward, Member, MemberMut, Module, Parameter};

use crate::interpreter::{list_elements, Code};
use crate::ir::Graph;
use crate::tracer::{trace_with, Trace};
use crate::types::JitType;

/// A graph and its parameters and buffers.
pub struct ScriptModule {
    graph: Graph,
    num_inputs: usize,
    parameters: Vec<(String, Parameter)>,
    buffers: Vec<(String, Buffer)>,
    code: OnceLock<Code>,
    /// The forward's default arguments (a scripted `def forward(self, x, causal: bool=False)`),
    /// one per input; a call may leave out trailing inputs that have one.
    defaults: Vec<Option<crate::ir::Constant>>,
    /// Warnings from tracing (Note [Value-dependent traces]).
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for ScriptModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScriptModule({} inputs):\n{}", self.num_inputs, self.graph)
    }
}

impl ScriptModule {
    /// A module running `graph`, whose last inputs are `parameters` then `buffers`.
    pub fn new(graph: Graph, parameters: Vec<(String, Parameter)>, buffers: Vec<(String, Buffer)>) -> Result<Self> {
        let extra = parameters.len() + buffers.len();
        let n = graph.inputs().len();
        if n < extra {
            return Err(Error::invalid(
                "jit::ScriptModule",
                format!("the graph has {n} inputs, fewer than its {extra} parameters and buffers"),
            ));
        }
        Ok(ScriptModule {
            graph,
            num_inputs: n - extra,
            parameters,
            buffers,
            code: OnceLock::new(),
            defaults: vec![None; n - extra],
            warnings: Vec::new(),
        })
    }

    /// Sets the forward's default arguments, one per input (`None`: no default).
    pub fn set_input_defaults(&mut self, defaults: Vec<Option<crate::ir::Constant>>) -> Result<()> {
        if defaults.len() != self.num_inputs {
            return Err(Error::invalid(
                "jit::ScriptModule",
                format!("forward takes {} inputs, got {} defaults", self.num_inputs, defaults.len()),
            ));
        }
        self.defaults = defaults;
        Ok(())
    }

    /// The forward's default arguments, one per input.
    pub fn input_defaults(&self) -> &[Option<crate::ir::Constant>] {
        &self.defaults
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// How many inputs `forward` takes.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Replaces the graph (after a pass); the inputs must stay the same.
    pub fn set_graph(&mut self, graph: Graph) -> Result<()> {
        if graph.inputs().len() != self.graph.inputs().len() {
            return Err(Error::invalid("jit::ScriptModule", "a new graph must keep the inputs"));
        }
        self.graph = graph;
        self.code = OnceLock::new();
        Ok(())
    }

    /// Runs the derivative-preserving passes on the graph ([`crate::passes::optimize`]).
    pub fn optimize(&mut self) -> bool {
        let changed = crate::passes::optimize(&mut self.graph);
        self.code = OnceLock::new();
        changed
    }

    /// Prepares the graph for inference: the derivative-preserving passes, then elementwise
    /// fusion ([`crate::passes::fuse::fuse_elementwise`]; fused groups fall back to op-by-op
    /// execution when an input requires grad). Returns whether anything changed.
    pub fn optimize_for_inference(&mut self) -> bool {
        let mut changed = crate::passes::optimize(&mut self.graph);
        changed |= crate::passes::fuse::fuse_elementwise(&mut self.graph);
        self.code = OnceLock::new();
        changed
    }

    /// Specialises the graph's types to forward inputs of the given types (a dtype and sizes
    /// each, as [`crate::types::TensorType::of`] an example tensor gives), with the parameters
    /// and buffers as they are, then propagates dtypes, sizes and strides through the graph on
    /// the meta device ([`crate::passes::propagate_shapes`]). The report lists the nodes whose
    /// outputs stayed unknown.
    pub fn propagate_shapes(&mut self, inputs: &[crate::types::TensorType]) -> Result<crate::passes::ShapeReport> {
        use crate::types::{JitType, TensorType};
        if inputs.len() != self.num_inputs {
            return Err(Error::invalid(
                "jit::ScriptModule::propagate_shapes",
                format!("forward takes {} inputs, got {} types", self.num_inputs, inputs.len()),
            ));
        }
        let mut types: Vec<JitType> = inputs.iter().cloned().map(JitType::Tensor).collect();
        types.extend(self.parameters.iter().map(|(_, p)| JitType::Tensor(TensorType::of(p.tensor()))));
        types.extend(self.buffers.iter().map(|(_, b)| JitType::Tensor(TensorType::of(b.tensor()))));
        crate::passes::set_input_types(&mut self.graph, &types)?;
        self.code = OnceLock::new();
        Ok(crate::passes::propagate_shapes(&mut self.graph))
    }

    /// Compiles the graph now (it is otherwise compiled on the first forward): resolves every
    /// operator, so one we lack is an error here.
    pub fn compile(&self) -> Result<()> {
        self.code().map(|_| ())
    }

    fn code(&self) -> Result<&Code> {
        if let Some(c) = self.code.get() {
            return Ok(c);
        }
        let c = Code::new(&self.graph)?;
        Ok(self.code.get_or_init(|| c))
    }

    /// Runs the graph: the returned values as the graph returns them.
    pub fn forward_values(&self, inputs: &[IValue]) -> Result<Vec<IValue>> {
        let mut all = inputs.to_vec();
        // Inputs left out at the end take their defaults.
        for k in inputs.len()..self.num_inputs {
            match &self.defaults[k] {
                Some(c) => all.push(crate::interpreter::constant_ivalue(&self.graph, c)?),
                None => break,
            }
        }
        if all.len() != self.num_inputs {
            return Err(Error::invalid(
                "jit::ScriptModule::forward",
                format!("forward takes {} inputs, got {}", self.num_inputs, inputs.len()),
            ));
        }
        all.extend(self.parameters.iter().map(|(_, p)| IValue::Tensor(p.tensor().clone())));
        all.extend(self.buffers.iter().map(|(_, b)| IValue::Tensor(b.tensor().clone())));
        self.code()?.run(all)
    }

    /// The forward's inputs from tensors by position (`input0`, `input1`, ... of a file, as
    /// `jit-run` reads them): a 0-dim tensor's value for an `int`, `float` or `bool` argument,
    /// the tensor for a tensor argument, and for an argument that has no tensor its default,
    /// or `None` for an `Optional` one.
    pub fn inputs_from(&self, mut get: impl FnMut(usize) -> Option<Tensor>) -> Result<Vec<IValue>> {
        let bad = |msg: String| Error::invalid("jit::ScriptModule::forward", msg);
        (0..self.num_inputs)
            .map(|i| {
                let v = self.graph.inputs()[i];
                let ty = self.graph.value_type(v);
                let name = self.graph.value_name(v).unwrap_or("?");
                let Some(t) = get(i) else {
                    if let Some(c) = &self.defaults[i] {
                        return crate::interpreter::constant_ivalue(&self.graph, c);
                    }
                    return match ty {
                        JitType::Optional(_) => Ok(IValue::None),
                        _ => Err(bad(format!("input {i} ({name}: {ty}) has no value"))),
                    };
                };
                let number = |t: &Tensor| -> Result<Scalar> {
                    if t.numel() != 1 {
                        return Err(bad(format!(
                            "input {i} ({name}: {ty}) needs one value, got a tensor of shape {:?}",
                            t.sizes()
                        )));
                    }
                    t.item_scalar()
                };
                Ok(match ty {
                    JitType::Int => IValue::Int(match number(&t)? {
                        Scalar::Int(k) => k,
                        other => other.to_f64() as i64,
                    }),
                    JitType::Float => IValue::Double(number(&t)?.to_f64()),
                    JitType::Bool => IValue::Bool(number(&t)?.to_f64() != 0.0),
                    _ => IValue::Tensor(t),
                })
            })
            .collect()
    }

    /// Runs the graph on tensors; a tuple or list output contributes its tensors in order.
    pub fn forward_tensors(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let ins: Vec<IValue> = inputs.iter().cloned().map(IValue::Tensor).collect();
        let mut out = Vec::new();
        for v in self.forward_values(&ins)? {
            flatten(v, &mut out)?;
        }
        Ok(out)
    }
}

/// The tensors of a value, in order; a number is a 0-dim tensor (`int` as int64, `float` as
/// float64, `bool` as bool), as `jit-run` writes it.
pub fn flatten(v: IValue, out: &mut Vec<Tensor>) -> Result<()> {
    match v {
        IValue::Tensor(t) => out.push(t),
        IValue::Int(k) => out.push(Tensor::scalar_tensor(k)),
        IValue::Double(x) => out.push(Tensor::scalar_tensor(x)),
        IValue::Bool(b) => out.push(Tensor::scalar_tensor(b)),
        IValue::TensorList(_) | IValue::OptionalTensorList(_) | IValue::Tuple(_) => {
            for x in list_elements(v)? {
                flatten(x, out)?;
            }
        }
        other => return Err(Error::invalid("jit", format!("a {} output is not a tensor", other.kind()))),
    }
    Ok(())
}

impl Module for ScriptModule {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        for (n, p) in &self.parameters {
            f(n, Member::Parameter(p));
        }
        for (n, b) in &self.buffers {
            f(n, Member::Buffer(b));
        }
    }
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        for (n, p) in &mut self.parameters {
            f(n, MemberMut::Parameter(p));
        }
        for (n, b) in &mut self.buffers {
            f(n, MemberMut::Buffer(b));
        }
    }
    fn type_name(&self) -> &'static str {
        "ScriptModule"
    }
}

impl Forward for ScriptModule {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut out = self.forward_tensors(std::slice::from_ref(x))?;
        if out.len() != 1 {
            return Err(Error::invalid(
                "jit::ScriptModule::forward",
                format!("the graph returns {} tensors, not one", out.len()),
            ));
        }
        Ok(out.remove(0))
    }
}

/// Traces `f` (a function of the inputs that uses `module`) into a module whose parameters and
/// buffers are `module`'s, shared with it.
pub fn trace_module(
    module: &dyn Module,
    inputs: &[Tensor],
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<ScriptModule> {
    let params = module.named_parameters();
    let buffers: Vec<(String, Tensor)> = module.named_buffers();
    let mut extra: Vec<(String, Tensor)> = params.iter().map(|(n, p)| (n.clone(), p.tensor().clone())).collect();
    extra.extend(buffers.iter().cloned());
    let Trace { graph, warnings } = trace_with(inputs, &extra, f)?;
    // A parameter that is also an input was bound to the input; the module feeds the rest.
    let bound = graph.inputs().len() - inputs.len();
    if bound != extra.len() {
        return Err(Error::invalid("jit::trace", "a parameter or buffer is also an input of the traced function"));
    }
    let buffers = buffers.into_iter().map(|(n, t)| (n, Buffer::new(t))).collect();
    let mut m = ScriptModule::new(graph, params, buffers)?;
    m.warnings = warnings;
    Ok(m)
}

/// Traces a module's forward on one input (`torch.jit.trace(module, x)`).
pub fn trace(module: &dyn Forward, input: &Tensor) -> Result<ScriptModule> {
    trace_module(module, std::slice::from_ref(input), |xs| Ok(vec![module.call(&xs[0])?]))
}
