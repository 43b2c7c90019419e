//! Shape and dtype propagation on the meta device (Note [Shape propagation on meta tensors]):
//! on the text form, on PyTorch's traced models (against the output shapes PyTorch computed),
//! and, in `state_dict.rs`, on our own traces (against the types tracing recorded from real
//! tensors).

use std::path::{Path, PathBuf};

use aten::Tensor;
use c10::ScalarType;
use jit::{passes, JitType, TensorType};
use nn::Module;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/models")
}

/// Parses `text`, propagates, and returns the graph's text and the kinds of the nodes left
/// unknown.
fn propagate(text: &str) -> (String, Vec<String>) {
    let mut g = jit::parse(text).unwrap();
    let report = passes::propagate_shapes(&mut g);
    g.lint().unwrap();
    (g.to_string(), report.unknown.into_iter().map(|(_, kind, _)| kind).collect())
}

/// The graph `text` as the printer prints it (so the expected graphs need not match its
/// whitespace).
fn normalised(text: &str) -> String {
    jit::parse(text).unwrap().to_string()
}

#[test]
fn broadcasting_promotion_views_and_matmul() {
    // Float(2, 3) + Long(3) broadcasts to Float(2, 3); the size read from it makes the view's
    // shape; the transpose has swapped strides; the product is [2, 2]. `nonzero` has no meta
    // kernel (its shape depends on the values), so it and what uses it stay unknown.
    let input = r#"graph(%x : Float(2, 3, strides=[3, 1], device=cpu),
      %y : Long(3, strides=[1], device=cpu)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%a, %zero)
  %minus : int = prim::Constant[value=-1]()
  %shape : int[] = prim::ListConstruct(%n, %minus)
  %v : Tensor = aten::view(%a, %shape)
  %t : Tensor = aten::t(%v)
  %mm : Tensor = aten::matmul(%v, %t)
  %last : int[] = prim::ListConstruct(%minus)
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%mm, %last, %false, %none)
  %nz : Tensor = aten::nonzero(%mm)
  %r : Tensor = aten::relu(%nz)
  return (%s, %r)
"#;
    let expected = r#"graph(%x : Float(2, 3, strides=[3, 1], device=cpu),
      %y : Long(3, strides=[1], device=cpu)):
  %one : int = prim::Constant[value=1]()
  %a : Float(2, 3, strides=[3, 1], device=cpu) = aten::add(%x, %y, %one)
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%a, %zero)
  %minus : int = prim::Constant[value=-1]()
  %shape : int[] = prim::ListConstruct(%n, %minus)
  %v : Float(2, 3, strides=[3, 1], device=cpu) = aten::view(%a, %shape)
  %t : Float(3, 2, strides=[1, 3], device=cpu) = aten::t(%v)
  %mm : Float(2, 2, strides=[2, 1], device=cpu) = aten::matmul(%v, %t)
  %last : int[] = prim::ListConstruct(%minus)
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : Float(2, strides=[1], device=cpu) = aten::sum(%mm, %last, %false, %none)
  %nz : Tensor = aten::nonzero(%mm)
  %r : Tensor = aten::relu(%nz)
  return (%s, %r)
"#;
    let (out, unknown) = propagate(input);
    assert_eq!(out, normalised(expected));
    assert_eq!(unknown, ["aten::nonzero", "aten::relu"]);
}

#[test]
fn integer_division_reductions_and_factories() {
    // true division of integers gives the default float dtype; `mean` keeps it; `argmax`
    // gives Long; `zeros` with a dtype code (6 = Float) and a device makes a tensor there;
    // `cat` joins along dim 1; a comparison gives Bool.
    let input = r#"graph(%x : Int(4, 5, strides=[5, 1], device=cpu)):
  %two : int = prim::Constant[value=2]()
  %d : Tensor = aten::div(%x, %two)
  %one : int = prim::Constant[value=1]()
  %dims : int[] = prim::ListConstruct(%one)
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %m : Tensor = aten::mean(%d, %dims, %true, %none)
  %i : Tensor = aten::argmax(%x, %one, %true)
  %size : int[] = prim::Constant[value=[4, 3]]()
  %f : int = prim::Constant[value=6]()
  %cpu : Device = prim::Constant[value="cpu"]()
  %false : bool = prim::Constant[value=0]()
  %z : Tensor = aten::zeros(%size, %f, %none, %cpu, %false)
  %list : Tensor[] = prim::ListConstruct(%d, %z, %m)
  %c : Tensor = aten::cat(%list, %one)
  %g : Tensor = aten::gt(%c, %two)
  return (%i, %g)
"#;
    let expected = r#"graph(%x : Int(4, 5, strides=[5, 1], device=cpu)):
  %two : int = prim::Constant[value=2]()
  %d : Float(4, 5, strides=[5, 1], device=cpu) = aten::div(%x, %two)
  %one : int = prim::Constant[value=1]()
  %dims : int[] = prim::ListConstruct(%one)
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %m : Float(4, 1, strides=[1, 1], device=cpu) = aten::mean(%d, %dims, %true, %none)
  %i : Long(4, 1, strides=[1, 1], device=cpu) = aten::argmax(%x, %one, %true)
  %size : int[] = prim::Constant[value=[4, 3]]()
  %f : int = prim::Constant[value=6]()
  %cpu : Device = prim::Constant[value="cpu"]()
  %false : bool = prim::Constant[value=0]()
  %z : Float(4, 3, strides=[3, 1], device=cpu) = aten::zeros(%size, %f, %none, %cpu, %false)
  %list : Tensor[] = prim::ListConstruct(%d, %z, %m)
  %c : Float(4, 9, strides=[9, 1], device=cpu) = aten::cat(%list, %one)
  %g : Bool(4, 9, strides=[9, 1], device=cpu) = aten::gt(%c, %two)
  return (%i, %g)
"#;
    let (out, unknown) = propagate(input);
    assert_eq!(out, normalised(expected));
    assert!(unknown.is_empty(), "{unknown:?}");
}

#[test]
fn a_shape_error_leaves_the_node_unknown_with_the_kernels_message() {
    let text = r#"graph(%x : Float(2, 3, strides=[3, 1], device=cpu),
      %y : Float(4, strides=[1], device=cpu)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  return (%a)
"#;
    let mut g = jit::parse(text).unwrap();
    let report = passes::propagate_shapes(&mut g);
    assert_eq!(report.propagated, 0);
    let [(_, kind, reason)] = &report.unknown[..] else { panic!("{report:?}") };
    assert_eq!(kind, "aten::add");
    assert!(reason.contains("must match the size of tensor b (4)"), "{reason}");
    // Inputs of unknown shape: nothing to propagate, no error either.
    let mut g = jit::parse(&text.replace("Float(2, 3, strides=[3, 1], device=cpu)", "Tensor")).unwrap();
    let report = passes::propagate_shapes(&mut g);
    assert!(report.unknown[0].2.contains("is not known"), "{report:?}");
}

/// The inputs and PyTorch's outputs of a model of `gen.py`.
fn io(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let loaded = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
    let get =
        |prefix: &str| (0..).map_while(|i| loaded.tensors.get(&format!("{prefix}{i}")).cloned()).collect::<Vec<_>>();
    (get("input"), get("output"))
}

/// The tensor types (dtype and sizes) of a type, flattening tuples.
fn tensor_types(t: &JitType, out: &mut Vec<(Option<ScalarType>, Option<Vec<i64>>)>) {
    match t {
        JitType::Tensor(t) => out.push((t.dtype, t.sizes.clone())),
        JitType::Tuple(ts) => ts.iter().for_each(|t| tensor_types(t, out)),
        _ => {}
    }
}

#[test]
fn pytorch_traced_models_propagate_to_pytorchs_output_shapes() {
    // A model loaded from PyTorch's TorchScript code has no shapes in its graph; given the
    // input's, every node gets its output types on the meta device, and the graph's outputs
    // have the shapes and dtypes of the outputs PyTorch computed.
    for name in ["mlp", "lenet", "resblock", "gru", "encoder"] {
        let mut m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let (inputs, expected) = io(name);
        let types: Vec<TensorType> = inputs
            .iter()
            .map(|t| TensorType { dtype: Some(t.dtype()), sizes: Some(t.sizes().to_vec()), ..Default::default() })
            .collect();
        let report = m.propagate_shapes(&types).unwrap();
        assert!(report.unknown.is_empty(), "{name}: {:?}", report.unknown);
        assert!(report.propagated > 0, "{name}");
        let mut got = Vec::new();
        for &v in m.graph().outputs() {
            tensor_types(m.graph().value_type(v), &mut got);
        }
        let want: Vec<_> = expected.iter().map(|t| (Some(t.dtype()), Some(t.sizes().to_vec()))).collect();
        assert_eq!(got, want, "{name}");
        // The specialised graph still runs and gives PyTorch's values.
        let _g = autograd::no_grad();
        let out = m.forward_tensors(&inputs).unwrap();
        assert_eq!(out[0].sizes(), expected[0].sizes(), "{name}");
    }
}

#[test]
fn factories_without_a_device_run_on_meta_and_stale_types_are_reset() {
    // `zeros(size)` with `device=None` (what TorchScript passes by default) is the CPU's
    // default: it runs on the meta device like the rest, never allocating for real; a CPU
    // scalar constant multiplied in does not decide the result's device.
    let text = r#"graph(%x : Float(4, 3, strides=[3, 1], device=cpu)):
  %size : int[] = prim::Constant[value=[4, 3]]()
  %none : NoneType = prim::Constant()
  %z : Tensor = aten::zeros(%size, %none, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %z, %one)
  return (%a)
"#;
    let (out, unknown) = propagate(text);
    assert!(unknown.is_empty(), "{unknown:?}");
    assert!(out.contains("%z : Float(4, 3, strides=[3, 1], device=cpu) = aten::zeros"), "{out}");
    assert!(out.contains("%a : Float(4, 3, strides=[3, 1], device=cpu) = aten::add"), "{out}");
    // Propagated once, then again for inputs the graph cannot take: the failing node's output
    // forgets the shape of the first run instead of keeping it.
    let mut g = jit::parse(text).unwrap();
    passes::propagate_shapes(&mut g);
    let x = JitType::Tensor(TensorType {
        dtype: Some(ScalarType::F32),
        sizes: Some(vec![5, 3]),
        strides: Some(vec![3, 1]),
        device: Some(c10::Device::CPU),
        requires_grad: None,
    });
    passes::set_input_types(&mut g, &[x]).unwrap();
    let report = passes::propagate_shapes(&mut g);
    assert_eq!(report.unknown.len(), 1, "{report:?}");
    let a = g.outputs()[0];
    assert_eq!(g.value_type(a), &JitType::tensor());
}

#[test]
fn shapes_flow_through_branches_and_loops_to_a_fixed_point() {
    // h = x[:, 0]; for t in range(n): h = tanh(h @ w + x[:, t]) — the carried h keeps its
    // dtype and sizes, so the loop settles and they are known (not its strides: the first h is
    // a strided view, the others are contiguous); a list that grows each trip is not known.
    let text = "graph(%x : Float(2, 5, 3, strides=[15, 3, 1], device=cpu), %w : Float(3, 3, strides=[3, 1], device=cpu), %c : bool):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %one)
  %h0 : Tensor = aten::select(%x, %one, %zero)
  %l0 : Tensor[] = prim::ListConstruct()
  %h : Tensor, %l : Tensor[] = prim::Loop(%n, %t, %h0, %l0)
    block0(%i : int, %hc : Tensor, %lc : Tensor[]):
      %xt : Tensor = aten::select(%x, %one, %i)
      %m : Tensor = aten::mm(%hc, %w)
      %s : Tensor = aten::add(%m, %xt, %one)
      %hn : Tensor = aten::tanh(%s)
      %ln : Tensor[] = aten::append(%lc, %hn)
      -> (%t, %hn, %ln)
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%h)
      -> (%a)
    block1():
      %b : Tensor = aten::neg(%h)
      -> (%b)
  %z : Tensor = prim::If(%c)
    block0():
      -> (%h)
    block1():
      %pair : Tensor[] = prim::ListConstruct(%h, %h)
      %wide : Tensor = aten::cat(%pair, %one)
      -> (%wide)
  %st : Tensor = aten::stack(%l, %one)
  return (%y, %z, %st)
";
    let mut g = jit::parse(text).unwrap();
    let report = passes::propagate_shapes(&mut g);
    let out = g.to_string();
    assert!(out.contains("%h : Float(2, 3, device=cpu), %l : Tensor[] = prim::Loop"), "{out}");
    assert!(out.contains("%hc : Float(2, 3, device=cpu)"), "{out}");
    assert!(out.contains("%xt : Float(2, 3, strides=[15, 1], device=cpu) = aten::select"), "{out}");
    assert!(out.contains("%hn : Float(2, 3, device=cpu) = aten::tanh"), "{out}");
    assert!(out.contains("%y : Float(2, 3, device=cpu) = prim::If"), "{out}");
    assert!(out.contains("%wide : Float(2, 6, device=cpu) = aten::cat"), "{out}");
    // The branches disagree on `%z`'s sizes; they agree on its dtype and device.
    let z = g.value_type(g.outputs()[1]).clone();
    let JitType::Tensor(zt) = &z else { panic!("{z}") };
    assert_eq!((zt.dtype, zt.sizes.clone(), zt.device), (Some(ScalarType::F32), None, Some(c10::Device::CPU)), "{out}");
    let kinds: Vec<&str> = report.unknown.iter().map(|(_, k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["aten::append", "prim::Loop", "prim::If", "aten::stack"], "{report:?}");
    // The graph still runs, and its values have the propagated shapes.
    let x = aten::ops::randn(&[2, 5, 3], None, None, None, None).unwrap();
    let w = aten::ops::randn(&[3, 3], None, None, None, None).unwrap();
    let outs = jit::Code::new(&g)
        .unwrap()
        .run(vec![aten::IValue::Tensor(x), aten::IValue::Tensor(w), aten::IValue::Bool(true)])
        .unwrap();
    let aten::IValue::Tensor(y) = &outs[0] else { panic!() };
    assert_eq!(y.sizes(), &[2, 3]);
}

#[test]
fn pytorch_scripted_models_propagate_through_their_control_flow() {
    // Every output the pass gives a full type has the shape and dtype of PyTorch's output for
    // the same inputs.
    let mut full = 0;
    for name in ["s_branch", "s_rnn_loop", "s_while_break", "s_layers", "s_optional", "s_tuple", "s_list_stack"] {
        let mut m = jit::load(models().join(format!("{name}.pt"))).unwrap();
        let io = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
        let g = m.graph().clone();
        let mut types = Vec::new();
        for (i, &v) in g.inputs().iter().enumerate() {
            let ty = match (io.tensors.get(&format!("a.input{i}")), g.value_type(v)) {
                (Some(t), JitType::Tensor(_)) if i < m.num_inputs() => JitType::Tensor(TensorType::of(t)),
                (_, ty) => ty.clone(),
            };
            types.push(ty);
        }
        let params: Vec<aten::Tensor> = m.parameters().into_iter().map(|p| p.tensor().clone()).collect();
        let buffers: Vec<aten::Tensor> = m.named_buffers().into_iter().map(|(_, b)| b).collect();
        for (ty, t) in types[m.num_inputs()..].iter_mut().zip(params.iter().chain(&buffers)) {
            *ty = JitType::Tensor(TensorType::of(t));
        }
        let mut g = g;
        passes::set_input_types(&mut g, &types).unwrap();
        passes::propagate_shapes(&mut g);
        let mut got = Vec::new();
        for &v in g.outputs() {
            tensor_types(g.value_type(v), &mut got);
        }
        let expected: Vec<aten::Tensor> =
            (0..).map_while(|i| io.tensors.get(&format!("a.output{i}")).cloned()).collect();
        for (k, ((dtype, sizes), e)) in got.iter().zip(&expected).enumerate() {
            if let (Some(d), Some(s)) = (dtype, sizes) {
                assert_eq!((*d, s.as_slice()), (e.dtype(), e.sizes()), "{name} output {k}");
                full += 1;
            }
        }
        m.set_graph(g).unwrap();
    }
    assert!(full >= 4, "only {full} outputs got a full type");
}
