//! Building the boxed argument stack of a call: the ARGs of a case and the schema's defaults
//! become `IValue`s of the schema argument types, in schema order.
//!
//! Note [ARG kinds follow the schema type]: an ARG says what the value is (`{"int": 2}`), the
//! schema says what the operator takes. The same `{"int": 2}` is an `IValue::Int` for `int`,
//! an `IValue::Double` for `float`, a `Scalar::Int` for `Scalar` (which keeps its kind for type
//! promotion) and `IValue::IntList([2, 2])` for `int[2]` (PyTorch's `stride=2`). Schema defaults
//! are converted by the same rules, since `DefaultValue` records the literal, not the type.

use aten::{IValue, Stack, Tensor};
use c10::{Device, Layout, MemoryFormat, Scalar, ScalarType};
use schema::{DefaultValue, FunctionSchema, Type};

use super::cases::ArgSpec;

/// Loads a tensor by safetensors key; the flag asks for a non-contiguous copy.
pub type LoadTensor<'a> = dyn Fn(&str, bool) -> Result<Tensor, String> + 'a;

/// The arguments of a call as the case gives them, converted to the schema's types but not yet
/// completed with defaults. Kept for the gradient check, which needs the inputs in case order.
#[derive(Clone, Debug, Default)]
pub struct ResolvedArgs {
    /// Positional arguments, in order.
    pub positional: Vec<IValue>,
    /// Keyword arguments, in the case's order.
    pub kwargs: Vec<(String, IValue)>,
}

fn is_int_like(t: &Type) -> bool {
    matches!(t, Type::Int | Type::SymInt)
}

fn is_tensor(t: &Type) -> bool {
    *t == Type::Tensor
}

fn is_optional_tensor(t: &Type) -> bool {
    matches!(t, Type::Optional(inner) if **inner == Type::Tensor)
}

/// `n` copies of `v` for `T[n]`, one for `T[]`: PyTorch's `int[2] stride=1` means `[1, 1]`.
fn repeat<T: Clone>(v: T, n: Option<usize>) -> Vec<T> {
    vec![v; n.unwrap_or(1)]
}

/// A bare identifier of a schema default (`contiguous_format`, `long`, `Mean`) as a value of `ty`.
fn ident_value(ty: &Type, name: &str) -> Result<IValue, String> {
    match ty {
        Type::MemoryFormat => Ok(IValue::MemoryFormat(match name {
            "contiguous_format" => MemoryFormat::Contiguous,
            "preserve_format" => MemoryFormat::Preserve,
            "channels_last" => MemoryFormat::ChannelsLast,
            "channels_last_3d" => MemoryFormat::ChannelsLast3d,
            _ => return Err(format!("unknown memory format '{name}'")),
        })),
        Type::Layout => match name {
            "strided" => Ok(IValue::Layout(Layout::Strided)),
            _ => Err(format!("unknown layout '{name}'")),
        },
        Type::ScalarType => ScalarType::from_name(name).map(IValue::ScalarType).map_err(|e| e.to_string()),
        Type::Device => name.parse::<Device>().map(IValue::Device).map_err(|e| e.to_string()),
        // `int reduction=Mean`: at::Reduction's values.
        Type::Int => match name {
            "None" => Ok(IValue::Int(0)),
            "Mean" => Ok(IValue::Int(1)),
            "Sum" => Ok(IValue::Int(2)),
            _ => Err(format!("unknown int constant '{name}'")),
        },
        _ => Err(format!("identifier '{name}' is not a value of type {ty}")),
    }
}

/// Converts one ARG of a case to a value of the schema type `ty`.
/// See Note [ARG kinds follow the schema type].
pub fn arg_to_ivalue(arg: &ArgSpec, ty: &Type, load: &LoadTensor<'_>) -> Result<IValue, String> {
    let load_all = |keys: &[String]| keys.iter().map(|k| load(k, false)).collect::<Result<Vec<_>, _>>();
    match (ty, arg) {
        (Type::Optional(_), ArgSpec::None) => return Ok(IValue::None),
        (_, ArgSpec::None) => return Err(format!("null given for the non-optional type {ty}")),
        (Type::Optional(inner), _) => return arg_to_ivalue(arg, inner, load),
        _ => {}
    }
    let value = match (ty, arg) {
        (Type::Tensor, ArgSpec::Tensor { key, noncontig, .. }) => IValue::Tensor(load(key, *noncontig)?),
        // A Python number where the schema takes a Tensor: a wrapped number, as PyTorch's
        // argument parser makes it (lowest priority in type promotion, never differentiated).
        (Type::Tensor, ArgSpec::Int(i)) => IValue::Tensor(Tensor::wrapped_scalar(Scalar::Int(*i))),
        (Type::Tensor, ArgSpec::Float(x)) => IValue::Tensor(Tensor::wrapped_scalar(Scalar::Float(*x))),
        (Type::Tensor, ArgSpec::Bool(b)) => IValue::Tensor(Tensor::wrapped_scalar(Scalar::Bool(*b))),
        (Type::List(elem, _), ArgSpec::Tensors(keys)) if is_tensor(elem) => IValue::TensorList(load_all(keys)?),
        (Type::List(elem, _), ArgSpec::Tensors(keys)) if is_optional_tensor(elem) => {
            IValue::OptionalTensorList(load_all(keys)?.into_iter().map(Some).collect())
        }
        (Type::List(elem, _), ArgSpec::OptionalTensors(keys)) if is_optional_tensor(elem) => {
            let tensors = keys.iter().map(|k| k.as_deref().map(|k| load(k, false)).transpose());
            IValue::OptionalTensorList(tensors.collect::<Result<_, _>>()?)
        }
        (Type::List(elem, _), ArgSpec::OptionalTensors(keys)) if is_tensor(elem) => {
            let keys: Option<Vec<String>> = keys.iter().cloned().collect();
            let keys = keys.ok_or_else(|| format!("{arg} has a null element but {ty} cannot hold None"))?;
            IValue::TensorList(load_all(&keys)?)
        }
        (Type::Int | Type::SymInt, ArgSpec::Int(i)) => IValue::Int(*i),
        (Type::Float, ArgSpec::Int(i)) => IValue::Double(*i as f64),
        (Type::Float, ArgSpec::Float(x)) => IValue::Double(*x),
        (Type::Bool, ArgSpec::Bool(b)) => IValue::Bool(*b),
        (Type::Scalar, ArgSpec::Int(i)) => IValue::Scalar(Scalar::Int(*i)),
        (Type::Scalar, ArgSpec::Float(x)) => IValue::Scalar(Scalar::Float(*x)),
        (Type::Scalar, ArgSpec::Bool(b)) => IValue::Scalar(Scalar::Bool(*b)),
        (Type::Str, ArgSpec::Str(s)) => IValue::Str(s.clone()),
        (Type::ScalarType, ArgSpec::Dtype(name)) => ident_value(ty, name)?,
        (Type::Device | Type::MemoryFormat | Type::Layout, ArgSpec::Str(s)) => ident_value(ty, s)?,
        (Type::List(elem, _), ArgSpec::Ints(v)) if is_int_like(elem) => IValue::IntList(v.clone()),
        (Type::List(elem, n), ArgSpec::Int(i)) if is_int_like(elem) => IValue::IntList(repeat(*i, *n)),
        (Type::List(elem, _), ArgSpec::Floats(v)) if **elem == Type::Float => IValue::DoubleList(v.clone()),
        (Type::List(elem, _), ArgSpec::Ints(v)) if **elem == Type::Float => {
            IValue::DoubleList(v.iter().map(|&i| i as f64).collect())
        }
        (Type::List(elem, n), ArgSpec::Float(x)) if **elem == Type::Float => IValue::DoubleList(repeat(*x, *n)),
        (Type::List(elem, _), ArgSpec::Bools(v)) if **elem == Type::Bool => IValue::BoolList(v.clone()),
        (Type::List(elem, n), ArgSpec::Bool(b)) if **elem == Type::Bool => IValue::BoolList(repeat(*b, *n)),
        _ => return Err(format!("cannot pass {arg} as {ty}")),
    };
    Ok(value)
}

/// Converts a schema default to a value of the argument type `ty`.
/// See Note [ARG kinds follow the schema type].
pub fn default_to_ivalue(default: &DefaultValue, ty: &Type) -> Result<IValue, String> {
    use DefaultValue as D;
    let value = match (ty, default) {
        (_, D::None) => IValue::None,
        (Type::Optional(inner), _) => return default_to_ivalue(default, inner),
        (Type::Int | Type::SymInt, D::Int(i)) => IValue::Int(*i),
        (Type::Float, D::Int(i)) => IValue::Double(*i as f64),
        (Type::Float, D::Float(x)) => IValue::Double(*x),
        (Type::Bool, D::Bool(b)) => IValue::Bool(*b),
        (Type::Scalar, D::Int(i)) => IValue::Scalar(Scalar::Int(*i)),
        (Type::Scalar, D::Float(x)) => IValue::Scalar(Scalar::Float(*x)),
        (Type::Scalar, D::Bool(b)) => IValue::Scalar(Scalar::Bool(*b)),
        (Type::Str, D::Str(s)) => IValue::Str(s.clone()),
        (Type::Device, D::Str(s)) => ident_value(ty, s)?,
        (_, D::Ident(name)) => ident_value(ty, name)?,
        (Type::List(elem, n), D::Int(i)) if is_int_like(elem) => IValue::IntList(repeat(*i, *n)),
        (Type::List(elem, _), D::IntList(v)) if is_int_like(elem) => IValue::IntList(v.clone()),
        (Type::List(elem, n), D::Int(i)) if **elem == Type::Float => IValue::DoubleList(repeat(*i as f64, *n)),
        (Type::List(elem, n), D::Float(x)) if **elem == Type::Float => IValue::DoubleList(repeat(*x, *n)),
        (Type::List(elem, _), D::IntList(v)) if **elem == Type::Float => {
            IValue::DoubleList(v.iter().map(|&i| i as f64).collect())
        }
        (Type::List(elem, _), D::FloatList(v)) if **elem == Type::Float => IValue::DoubleList(v.clone()),
        (Type::List(elem, n), D::Bool(b)) if **elem == Type::Bool => IValue::BoolList(repeat(*b, *n)),
        (Type::List(elem, _), D::BoolList(v)) if **elem == Type::Bool => IValue::BoolList(v.clone()),
        // `[]` is parsed as an empty int list whatever the element type.
        (Type::List(elem, _), D::IntList(v)) if v.is_empty() => match &**elem {
            Type::Bool => IValue::BoolList(Vec::new()),
            Type::Tensor => IValue::TensorList(Vec::new()),
            t if is_optional_tensor(t) => IValue::OptionalTensorList(Vec::new()),
            _ => return Err(format!("unsupported default [] for type {ty}")),
        },
        _ => return Err(format!("unsupported default {default} for type {ty}")),
    };
    Ok(value)
}

/// Converts the ARGs of a case to the schema's types, checking that positional arguments do
/// not overflow the schema or reach keyword-only ones and that every keyword names an argument
/// not already given positionally.
pub fn resolve_args(
    schema: &FunctionSchema,
    args: &[ArgSpec],
    kwargs: &[(String, ArgSpec)],
    load: &LoadTensor<'_>,
) -> Result<ResolvedArgs, String> {
    let n_positional = schema.arguments.iter().take_while(|a| !a.kwarg_only).count();
    if args.len() > n_positional {
        return Err(format!("{} positional arguments given, but {schema} takes {n_positional}", args.len()));
    }
    let mut out = ResolvedArgs::default();
    for (i, (arg, sarg)) in args.iter().zip(&schema.arguments).enumerate() {
        let v = arg_to_ivalue(arg, &sarg.ty, load).map_err(|e| format!("argument {i} '{}': {e}", sarg.name))?;
        out.positional.push(v);
    }
    for (name, arg) in kwargs {
        let Some(pos) = schema.arguments.iter().position(|a| a.name == *name) else {
            return Err(format!("unknown keyword argument '{name}' for {schema}"));
        };
        if pos < args.len() {
            return Err(format!("argument '{name}' given both positionally and by keyword"));
        }
        let v = arg_to_ivalue(arg, &schema.arguments[pos].ty, load).map_err(|e| format!("argument '{name}': {e}"))?;
        out.kwargs.push((name.clone(), v));
    }
    Ok(out)
}

/// Lays out the stack in schema order: the positional values, then for each remaining argument
/// its keyword value, else its schema default; an argument with neither is an error.
pub fn fill_stack(schema: &FunctionSchema, args: ResolvedArgs) -> Result<Stack, String> {
    let ResolvedArgs { positional, mut kwargs } = args;
    if positional.len() > schema.arguments.len() {
        return Err(format!(
            "{} positional arguments given, but {schema} takes {}",
            positional.len(),
            schema.arguments.len()
        ));
    }
    let mut stack: Stack = Vec::with_capacity(schema.arguments.len());
    let n = positional.len();
    stack.extend(positional);
    for sarg in &schema.arguments[n..] {
        if let Some(i) = kwargs.iter().position(|(k, _)| *k == sarg.name) {
            stack.push(kwargs.swap_remove(i).1);
        } else if let Some(d) = &sarg.default {
            let v =
                default_to_ivalue(d, &sarg.ty).map_err(|e| format!("argument '{}': schema default: {e}", sarg.name))?;
            stack.push(v);
        } else {
            return Err(format!(
                "missing argument '{}' of type {} (the schema has no default for it)",
                sarg.name, sarg.ty
            ));
        }
    }
    if let Some((k, _)) = kwargs.first() {
        return Err(format!("unknown or repeated keyword argument '{k}' for {schema}"));
    }
    Ok(stack)
}

/// Calls an operator by schema name with the given positional and keyword values (defaults
/// filled in) and returns the stack of returns.
pub fn call_op(name: &str, positional: Vec<IValue>, kwargs: Vec<(&str, IValue)>) -> Result<Stack, String> {
    let (op, schema) = aten::dispatcher().find_schema(name).map_err(|e| e.to_string())?;
    let kwargs = kwargs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let mut stack = fill_stack(&schema, ResolvedArgs { positional, kwargs })?;
    op.call_boxed(&mut stack).map_err(|e| e.to_string())?;
    Ok(stack)
}

/// Calls an operator that returns one tensor.
pub fn call_op_tensor(name: &str, positional: Vec<IValue>, kwargs: Vec<(&str, IValue)>) -> Result<Tensor, String> {
    let mut stack = call_op(name, positional, kwargs)?;
    match (stack.pop(), stack.is_empty()) {
        (Some(IValue::Tensor(t)), true) => Ok(t),
        (last, _) => Err(format!(
            "{name} returned {} values ending in {}, expected one tensor",
            stack.len() + usize::from(last.is_some()),
            last.map_or("nothing", |v| v.kind())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::parse_schema;

    fn ty(s: &str) -> Type {
        // The type of the single argument of a throwaway schema.
        parse_schema(&format!("f({s} x) -> ()")).unwrap().arguments[0].ty.clone()
    }

    fn no_tensors(key: &str, _: bool) -> Result<Tensor, String> {
        Err(format!("no tensor {key}"))
    }

    fn arg(a: ArgSpec, t: &str) -> Result<IValue, String> {
        arg_to_ivalue(&a, &ty(t), &no_tensors)
    }

    fn dflt(d: DefaultValue, t: &str) -> Result<IValue, String> {
        default_to_ivalue(&d, &ty(t))
    }

    macro_rules! assert_iv {
        ($e:expr, $p:pat $(if $guard:expr)?) => {{
            let v = $e;
            assert!(matches!(v, Ok($p) $(if $guard)?), "{} gave {v:?}", stringify!($e));
        }};
    }

    #[test]
    fn defaults_follow_the_argument_type() {
        use DefaultValue as D;
        assert_iv!(dflt(D::Int(1), "int"), IValue::Int(1));
        assert_iv!(dflt(D::Int(-1), "SymInt"), IValue::Int(-1));
        assert_iv!(dflt(D::Int(1), "float"), IValue::Double(x) if x == 1.0);
        assert_iv!(dflt(D::Float(1e-5), "float"), IValue::Double(x) if x == 1e-5);
        assert_iv!(dflt(D::Int(1), "Scalar"), IValue::Scalar(Scalar::Int(1)));
        assert_iv!(dflt(D::Float(0.5), "Scalar"), IValue::Scalar(Scalar::Float(x)) if x == 0.5);
        assert_iv!(dflt(D::Bool(false), "bool"), IValue::Bool(false));
        assert_iv!(dflt(D::None, "Tensor?"), IValue::None);
        assert_iv!(dflt(D::None, "MemoryFormat?"), IValue::None);
        assert_iv!(dflt(D::Int(1), "int?"), IValue::Int(1));
        assert_iv!(dflt(D::Str("none".into()), "str"), IValue::Str(ref s) if s == "none");
        assert_iv!(dflt(D::Int(1), "int[2]"), IValue::IntList(ref v) if *v == [1, 1]);
        assert_iv!(dflt(D::Int(0), "SymInt[3]"), IValue::IntList(ref v) if *v == [0, 0, 0]);
        assert_iv!(dflt(D::IntList(vec![0, 1]), "int[2]"), IValue::IntList(ref v) if *v == [0, 1]);
        assert_iv!(dflt(D::IntList(vec![]), "int[]"), IValue::IntList(ref v) if v.is_empty());
        assert_iv!(dflt(D::IntList(vec![]), "Tensor[]"), IValue::TensorList(ref v) if v.is_empty());
        assert_iv!(dflt(D::IntList(vec![]), "bool[]"), IValue::BoolList(ref v) if v.is_empty());
        assert_iv!(dflt(D::FloatList(vec![0.5]), "float[]?"), IValue::DoubleList(ref v) if *v == [0.5]);
        assert_iv!(dflt(D::BoolList(vec![true, false]), "bool[2]"), IValue::BoolList(ref v) if *v == [true, false]);
        assert_iv!(
            dflt(D::Ident("contiguous_format".into()), "MemoryFormat"),
            IValue::MemoryFormat(MemoryFormat::Contiguous)
        );
        assert_iv!(dflt(D::Ident("long".into()), "ScalarType"), IValue::ScalarType(ScalarType::I64));
        assert_iv!(dflt(D::Ident("float".into()), "ScalarType?"), IValue::ScalarType(ScalarType::F32));
        assert_iv!(dflt(D::Ident("strided".into()), "Layout"), IValue::Layout(Layout::Strided));
        assert_iv!(dflt(D::Ident("Mean".into()), "int"), IValue::Int(1));
        assert_iv!(dflt(D::Ident("Sum".into()), "int"), IValue::Int(2));
        assert!(dflt(D::Float(0.5), "int").is_err());
        assert!(dflt(D::Ident("bogus".into()), "MemoryFormat").is_err());
    }

    #[test]
    fn args_follow_the_argument_type() {
        assert_iv!(arg(ArgSpec::Int(3), "int"), IValue::Int(3));
        assert_iv!(arg(ArgSpec::Int(3), "float"), IValue::Double(x) if x == 3.0);
        assert_iv!(arg(ArgSpec::Int(3), "Scalar"), IValue::Scalar(Scalar::Int(3)));
        assert_iv!(arg(ArgSpec::Float(2.5), "Scalar"), IValue::Scalar(Scalar::Float(x)) if x == 2.5);
        assert_iv!(arg(ArgSpec::Bool(true), "Scalar"), IValue::Scalar(Scalar::Bool(true)));
        assert_iv!(arg(ArgSpec::Int(2), "int[2]"), IValue::IntList(ref v) if *v == [2, 2]);
        assert_iv!(arg(ArgSpec::Int(1), "int[1]?"), IValue::IntList(ref v) if *v == [1]);
        assert_iv!(arg(ArgSpec::Ints(vec![2, 3]), "SymInt[]"), IValue::IntList(ref v) if *v == [2, 3]);
        assert_iv!(arg(ArgSpec::Ints(vec![2]), "float[]?"), IValue::DoubleList(ref v) if *v == [2.0]);
        assert_iv!(arg(ArgSpec::Floats(vec![0.5]), "float[]"), IValue::DoubleList(ref v) if *v == [0.5]);
        assert_iv!(arg(ArgSpec::Bools(vec![true]), "bool[]"), IValue::BoolList(ref v) if *v == [true]);
        assert_iv!(arg(ArgSpec::Str("tanh".into()), "str"), IValue::Str(ref s) if s == "tanh");
        assert_iv!(arg(ArgSpec::Dtype("bfloat16".into()), "ScalarType?"), IValue::ScalarType(ScalarType::BF16));
        for name in ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"] {
            assert!(arg(ArgSpec::Dtype(name.into()), "ScalarType").is_ok(), "{name}");
        }
        assert_iv!(arg(ArgSpec::None, "Tensor?"), IValue::None);
        let e = arg(ArgSpec::None, "Tensor").unwrap_err();
        assert!(e.contains("non-optional"), "{e}");
        let e = arg(ArgSpec::Float(1.5), "int").unwrap_err();
        assert_eq!(e, "cannot pass {\"float\": 1.5} as int");
        let e = arg(ArgSpec::tensor("k"), "Tensor").unwrap_err();
        assert_eq!(e, "no tensor k");
    }

    #[test]
    fn tensor_lists_match_optional_element_types() {
        let load = |_: &str, _: bool| Tensor::from_vec(vec![1.0f32], &[1]).map_err(|e| e.to_string());
        let keys = vec!["a".to_string(), "b".to_string()];
        let v = arg_to_ivalue(&ArgSpec::Tensors(keys.clone()), &ty("Tensor[]"), &load);
        assert_iv!(v, IValue::TensorList(ref v) if v.len() == 2);
        let v = arg_to_ivalue(&ArgSpec::Tensors(keys), &ty("Tensor?[]"), &load);
        assert_iv!(v, IValue::OptionalTensorList(ref v) if v.len() == 2 && v.iter().all(Option::is_some));
        let opt = ArgSpec::OptionalTensors(vec![None, Some("a".into())]);
        let v = arg_to_ivalue(&opt, &ty("Tensor?[]"), &load);
        assert_iv!(v, IValue::OptionalTensorList(ref v) if v[0].is_none() && v[1].is_some());
        assert!(arg_to_ivalue(&opt, &ty("Tensor[]"), &load).is_err());
    }

    #[test]
    fn stacks_are_filled_in_schema_order() {
        let schema = parse_schema(
            "f.x(Tensor? self, int dim, float eps=1e-05, *, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
        )
        .unwrap();
        let args = [ArgSpec::None, ArgSpec::Int(1)];
        let kwargs = [("keepdim".to_string(), ArgSpec::Bool(true))];
        let r = resolve_args(&schema, &args, &kwargs, &no_tensors).unwrap();
        let stack = fill_stack(&schema, r).unwrap();
        assert_eq!(stack.len(), 5);
        assert!(matches!(stack[0], IValue::None));
        assert!(matches!(stack[1], IValue::Int(1)));
        assert!(matches!(stack[2], IValue::Double(x) if x == 1e-5));
        assert!(matches!(stack[3], IValue::Bool(true)));
        assert!(matches!(stack[4], IValue::None));

        let e = fill_stack(&schema, resolve_args(&schema, &args[..1], &[], &no_tensors).unwrap()).unwrap_err();
        assert_eq!(e, "missing argument 'dim' of type int (the schema has no default for it)");
        let three = [ArgSpec::None, ArgSpec::Int(1), ArgSpec::Float(0.1), ArgSpec::Bool(true)];
        let e = resolve_args(&schema, &three, &[], &no_tensors).unwrap_err();
        assert!(e.starts_with("4 positional arguments given"), "{e}");
        let e = resolve_args(&schema, &args, &[("nope".into(), ArgSpec::Int(1))], &no_tensors).unwrap_err();
        assert!(e.starts_with("unknown keyword argument 'nope'"), "{e}");
        let e = resolve_args(&schema, &args, &[("dim".into(), ArgSpec::Int(1))], &no_tensors).unwrap_err();
        assert!(e.contains("both positionally and by keyword"), "{e}");
        let e = resolve_args(&schema, &[ArgSpec::None, ArgSpec::Float(0.5)], &[], &no_tensors).unwrap_err();
        assert_eq!(e, "argument 1 'dim': cannot pass {\"float\": 0.5} as int");
    }
}
