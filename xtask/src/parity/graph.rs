//! Graph cases: a sample whose Python function is several ATen calls (`torch.jit.trace`
//! records them in order) is a case with a `graph` instead of one operator. Its `args` are the
//! graph's inputs (the sample's tensors, in order); each node is an operator (a schema name
//! found through the dispatcher, or one of the few builtins below) whose ARGs are constants (as
//! in any case), graph inputs `{"input": i}`, outputs of earlier nodes `{"node": [n, k]}`, or
//! lists of those `{"list": [...]}`; `graph.outputs` names the returned values. The executor
//! runs the nodes in order through the boxed dispatcher, so autograd records every call and the
//! gradient check works on graphs as on single calls.
//!
//! Builtins (what the tracer records around sizes and numbers): `prim::NumToTensor`,
//! `aten::Int`, `aten::Float`, `aten::ScalarImplicit`, `aten::size`, `aten::numel`,
//! `aten::dim`, `aten::detach`, `prim::ListUnpack` and `prim::TupleUnpack`.

use aten::{IValue, Tensor};
use autograd::TensorAutograd;
use c10::{Scalar, ScalarType};
use schema::Type;
use serde::Deserialize;

use super::args::{arg_to_ivalue, LoadTensor};
use super::cases::ArgSpec;
use super::compare::flatten_returns;
use super::grad::GradError;

/// A case's `graph`.
#[derive(Debug, Deserialize)]
pub struct GraphSpec {
    /// The nodes, in execution order.
    pub nodes: Vec<NodeSpec>,
    /// The returned values, in order (a tensor list contributes each tensor).
    pub outputs: Vec<GraphArg>,
}

/// One node of a graph.
#[derive(Debug, Deserialize)]
pub struct NodeSpec {
    /// A schema name (`add.Tensor`) or a builtin (`prim::NumToTensor`).
    pub op: String,
    /// One ARG per schema argument, in schema order (the tracer fills every argument).
    pub args: Vec<GraphArg>,
    /// How many values the node produces.
    pub outputs: usize,
}

/// An argument of a graph node.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum GraphArg {
    /// `{"input": i}`: the graph's `i`-th input.
    Input {
        /// Index into the case's `args`.
        input: usize,
    },
    /// `{"node": [n, k]}`: output `k` of node `n`.
    Node {
        /// `[node, output]`.
        node: (usize, usize),
    },
    /// `{"list": [...]}`: a list built from values.
    List {
        /// The elements.
        list: Vec<GraphArg>,
    },
    /// Any constant ARG of the case format (`{"int": 2}`, `null`, ...).
    Const(ArgSpec),
}

fn check(msg: impl Into<String>) -> GradError {
    GradError::Check(msg.into())
}

/// The value of a graph input or node output, converted to the schema type `ty` where the
/// traced value is another kind of the same thing (an `int` where a `Scalar` or `float` goes):
/// the JIT interpreter's conversion.
fn coerce(v: IValue, ty: &Type) -> Result<IValue, GradError> {
    jit::interpreter::coerce(v, ty).map_err(|e| check(e.to_string()))
}

/// A list value of element type `elem` from separate values.
fn list_of(values: Vec<IValue>, elem: &Type) -> Result<IValue, GradError> {
    jit::interpreter::list_of(values, elem).map_err(|e| check(e.to_string()))
}

struct Env<'a> {
    inputs: &'a [IValue],
    values: Vec<Vec<IValue>>,
    load: &'a LoadTensor<'a>,
}

impl Env<'_> {
    /// A graph input or node output as it is.
    fn value(&self, arg: &GraphArg) -> Result<IValue, GradError> {
        match arg {
            GraphArg::Input { input } => {
                self.inputs.get(*input).cloned().ok_or_else(|| check(format!("graph input {input} does not exist")))
            }
            GraphArg::Node { node: (n, k) } => self
                .values
                .get(*n)
                .and_then(|vs| vs.get(*k))
                .cloned()
                .ok_or_else(|| check(format!("node {n} output {k} is not computed before its use"))),
            GraphArg::List { list } => Ok(IValue::Tuple(list.iter().map(|a| self.value(a)).collect::<Result<_, _>>()?)),
            GraphArg::Const(spec) => const_value(spec, self.load),
        }
    }

    /// An argument converted to the schema type `ty`.
    fn typed(&self, arg: &GraphArg, ty: &Type) -> Result<IValue, GradError> {
        match arg {
            GraphArg::Const(spec) => arg_to_ivalue(spec, ty, self.load).map_err(check),
            GraphArg::List { list } => {
                let elem = match ty {
                    Type::List(inner, _) => inner.as_ref(),
                    Type::Optional(o) => match o.as_ref() {
                        Type::List(inner, _) => inner.as_ref(),
                        _ => return Err(check(format!("a list where {ty} goes"))),
                    },
                    _ => return Err(check(format!("a list where {ty} goes"))),
                };
                let values = list.iter().map(|a| self.typed(a, elem)).collect::<Result<Vec<_>, _>>()?;
                list_of(values, elem)
            }
            other => coerce(self.value(other)?, ty),
        }
    }
}

/// A constant ARG without a schema type (an argument of a builtin).
fn const_value(spec: &ArgSpec, load: &LoadTensor<'_>) -> Result<IValue, GradError> {
    Ok(match spec {
        ArgSpec::None => IValue::None,
        ArgSpec::Int(i) => IValue::Int(*i),
        ArgSpec::Float(x) => IValue::Double(*x),
        ArgSpec::Bool(b) => IValue::Bool(*b),
        ArgSpec::Ints(v) => IValue::IntList(v.clone()),
        ArgSpec::Tensor { key, noncontig, .. } => IValue::Tensor(load(key, *noncontig).map_err(check)?),
        other => return Err(check(format!("constant {other:?} as a builtin's argument"))),
    })
}

fn tensor_arg(v: IValue, op: &str) -> Result<Tensor, GradError> {
    match v {
        IValue::Tensor(t) => Ok(t),
        other => Err(check(format!("{op}: expected a tensor, got {}", other.kind()))),
    }
}

/// Runs one builtin node, or `None` when `op` is not one.
fn builtin(env: &Env<'_>, node: &NodeSpec) -> Option<Result<Vec<IValue>, GradError>> {
    let op = node.op.as_str();
    let arg = |i: usize| -> Result<IValue, GradError> {
        env.value(node.args.get(i).ok_or_else(|| check(format!("{op}: missing argument {i}")))?)
    };
    let call = || -> Result<Vec<IValue>, GradError> {
        Ok(match op {
            "prim::NumToTensor" => vec![IValue::Tensor(match arg(0)? {
                IValue::Int(i) => Tensor::scalar_tensor(i),
                IValue::Double(x) => Tensor::scalar_tensor(x),
                IValue::Bool(b) => Tensor::scalar_tensor(b),
                IValue::Scalar(Scalar::Int(i)) => Tensor::scalar_tensor(i),
                IValue::Scalar(Scalar::Float(x)) => Tensor::scalar_tensor(x),
                IValue::Scalar(Scalar::Bool(b)) => Tensor::scalar_tensor(b),
                other => return Err(check(format!("{op} of a {}", other.kind()))),
            })],
            "aten::Int" => vec![IValue::Int(tensor_arg(arg(0)?, op)?.item::<i64>().map_err(GradError::Call)?)],
            "aten::Float" => vec![IValue::Double(tensor_arg(arg(0)?, op)?.item::<f64>().map_err(GradError::Call)?)],
            "aten::ScalarImplicit" => {
                let t = tensor_arg(arg(0)?, op)?;
                let s = if t.is_floating_point() {
                    Scalar::Float(t.item::<f64>().map_err(GradError::Call)?)
                } else if t.dtype() == ScalarType::Bool {
                    Scalar::Bool(t.item::<bool>().map_err(GradError::Call)?)
                } else {
                    Scalar::Int(t.item::<i64>().map_err(GradError::Call)?)
                };
                vec![IValue::Scalar(s)]
            }
            "aten::size" => {
                let t = tensor_arg(arg(0)?, op)?;
                if node.args.len() == 1 {
                    vec![IValue::IntList(t.sizes().to_vec())]
                } else {
                    let IValue::Int(d) = arg(1)? else { return Err(check("aten::size: the dimension is not an int")) };
                    let n = t.dim() as i64;
                    let w = if d < 0 { d + n } else { d };
                    if w < 0 || w >= n.max(1) || t.dim() == 0 {
                        return Err(check(format!("aten::size: dimension {d} of a {n}-d tensor")));
                    }
                    vec![IValue::Int(t.sizes()[w as usize])]
                }
            }
            "aten::numel" => vec![IValue::Int(tensor_arg(arg(0)?, op)?.numel())],
            "aten::dim" => vec![IValue::Int(tensor_arg(arg(0)?, op)?.dim() as i64)],
            "aten::detach" => vec![IValue::Tensor(tensor_arg(arg(0)?, op)?.detach())],
            "prim::ListUnpack" | "prim::TupleUnpack" => {
                let items = match arg(0)? {
                    IValue::TensorList(ts) => ts.into_iter().map(IValue::Tensor).collect(),
                    IValue::IntList(v) => v.into_iter().map(IValue::Int).collect(),
                    IValue::Tuple(vs) => vs,
                    other => return Err(check(format!("{op} of a {}", other.kind()))),
                };
                if items.len() != node.outputs {
                    return Err(check(format!("{op}: {} values for {} outputs", items.len(), node.outputs)));
                }
                items
            }
            _ => unreachable!("checked by the caller"),
        })
    };
    let known = matches!(
        op,
        "prim::NumToTensor"
            | "aten::Int"
            | "aten::Float"
            | "aten::ScalarImplicit"
            | "aten::size"
            | "aten::numel"
            | "aten::dim"
            | "aten::detach"
            | "prim::ListUnpack"
            | "prim::TupleUnpack"
    );
    known.then(call)
}

/// Runs the graph on `inputs` and returns its outputs (tensor lists flattened).
pub fn run(graph: &GraphSpec, inputs: &[IValue], load: &LoadTensor<'_>) -> Result<Vec<IValue>, GradError> {
    let mut env = Env { inputs, values: Vec::with_capacity(graph.nodes.len()), load };
    // A graph traced on the CPU names the CPU in its factories (`ones(..., device="cpu")`) and
    // holds CPU constants; run on a device, those follow the inputs there, as the same program
    // traced on that device would have them (Note [Outputs on the device] in parity.rs).
    let device = inputs.iter().find_map(|v| match v {
        IValue::Tensor(t) if !t.device().is_cpu() => Some(t.device()),
        _ => None,
    });
    for (n, node) in graph.nodes.iter().enumerate() {
        let outs = match builtin(&env, node) {
            Some(r) => r?,
            None => {
                let (op, schema) = aten::dispatcher().find_schema(&node.op).map_err(GradError::Call)?;
                if node.args.len() != schema.arguments.len() {
                    return Err(check(format!(
                        "node {n} ({}): {} arguments for {} in the schema",
                        node.op,
                        node.args.len(),
                        schema.arguments.len()
                    )));
                }
                let mut stack = Vec::with_capacity(node.args.len());
                for (a, s) in node.args.iter().zip(&schema.arguments) {
                    let value = match (env.typed(a, &s.ty)?, device) {
                        (IValue::Device(d), Some(to)) if d.is_cpu() => IValue::Device(to),
                        (IValue::Tensor(t), Some(to))
                            if matches!(a, GraphArg::Const(ArgSpec::Tensor { .. })) && t.device().is_cpu() =>
                        {
                            IValue::Tensor(t.to_device(to).map_err(GradError::Call)?)
                        }
                        (v, _) => v,
                    };
                    stack.push(value);
                }
                op.call_boxed(&mut stack).map_err(GradError::Call)?;
                stack
            }
        };
        if outs.len() != node.outputs {
            return Err(check(format!(
                "node {n} ({}) produced {} values, the graph expects {}",
                node.op,
                outs.len(),
                node.outputs
            )));
        }
        env.values.push(outs);
    }
    let outs = graph.outputs.iter().map(|a| env.value(a)).collect::<Result<Vec<_>, _>>()?;
    Ok(flatten_returns(outs))
}

/// The graph inputs of a case: its `args`, every one a tensor (or a constant).
pub fn inputs(args: &[ArgSpec], load: &LoadTensor<'_>) -> Result<Vec<IValue>, String> {
    args.iter().map(|a| const_value(a, load).map_err(|e| e.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_tensors(key: &str, _: bool) -> Result<Tensor, String> {
        Err(format!("no tensor {key}"))
    }

    fn graph(json: &str) -> GraphSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn runs_operators_and_builtins_in_order() {
        // x * x * x.size(0), with the size turned into a tensor as the tracer records it.
        let g = graph(
            r#"{"nodes": [
                {"op": "mul.Tensor", "args": [{"input": 0}, {"input": 0}], "outputs": 1},
                {"op": "aten::size", "args": [{"node": [0, 0]}, {"int": 0}], "outputs": 1},
                {"op": "prim::NumToTensor", "args": [{"node": [1, 0]}], "outputs": 1},
                {"op": "mul.Tensor", "args": [{"node": [0, 0]}, {"node": [2, 0]}], "outputs": 1},
                {"op": "sum.dim_IntList", "args": [{"node": [3, 0]}, {"list": [{"int": 0}]}, {"bool": true}, null], "outputs": 1}
            ], "outputs": [{"node": [3, 0]}, {"node": [4, 0]}]}"#,
        );
        let x = Tensor::from_vec(vec![1f32, 2.0, 3.0], &[3]).unwrap();
        let out = run(&g, &[IValue::Tensor(x)], &no_tensors).unwrap();
        let [IValue::Tensor(a), IValue::Tensor(b)] = out.as_slice() else { panic!("{out:?}") };
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![3.0, 12.0, 27.0]);
        assert_eq!((b.sizes(), b.to_vec::<f32>().unwrap()), (&[1i64][..], vec![42.0]));
    }

    #[test]
    fn bad_graphs_are_errors() {
        let later = graph(r#"{"nodes": [{"op": "neg", "args": [{"node": [1, 0]}], "outputs": 1}], "outputs": []}"#);
        let e = run(&later, &[], &no_tensors).unwrap_err();
        assert!(e.to_string().contains("node 1 output 0 is not computed before its use"), "{e}");
        let unknown = graph(r#"{"nodes": [{"op": "no_such_op", "args": [], "outputs": 1}], "outputs": []}"#);
        assert!(matches!(run(&unknown, &[], &no_tensors), Err(GradError::Call(c10::Error::UnknownOperator(_)))));
        let arity = graph(r#"{"nodes": [{"op": "neg", "args": [], "outputs": 1}], "outputs": []}"#);
        assert!(run(&arity, &[], &no_tensors).unwrap_err().to_string().contains("0 arguments for 1 in the schema"));
    }
}
