//! Tracing: what the graph records, and that running it reproduces eager results and gradients.

use aten::{IValue, Tensor};
use autograd::TensorAutograd;
use c10::Scalar;
use jit::{trace, trace_fn, Code, JitType};
use nn::optim::{Optimizer, SGDOptions};
use nn::{Forward, Linear, Module, ReLU, Sequential};

use super::{assert_bit_identical, randn};

#[test]
fn a_traced_function_records_each_call_with_constants_for_numbers() {
    let x = randn(&[2, 3], 1);
    let y = randn(&[2, 3], 2);
    let t = trace_fn(&[x.clone(), y.clone()], |v| {
        let z = v[0].mul(Scalar::Int(2))?.add(&v[1]).call()?.relu()?;
        Ok(vec![z.sum_dim_intlist_with(Some(&[0]), true, None)?])
    })
    .unwrap();
    let text = t.graph.to_string();
    let expected = "\
graph(%input0 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %input1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %0 : int = prim::Constant[value=2]()
  %1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::mul(%input0, %0)
  %2 : int = prim::Constant[value=1]()
  %3 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::add(%1, %input1, %2)
  %4 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::relu(%3)
  %5 : int[] = prim::Constant[value=[0]]()
  %6 : bool = prim::Constant[value=1]()
  %7 : NoneType = prim::Constant()
  %8 : Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::sum(%4, %5, %6, %7)
  return (%8)
";
    assert_eq!(text, expected);
    assert!(t.warnings.is_empty());
    let out = Code::new(&t.graph).unwrap().run(vec![IValue::Tensor(x.clone()), IValue::Tensor(y.clone())]).unwrap();
    let IValue::Tensor(out) = &out[0] else { panic!("a tensor output") };
    let eager = x
        .mul(Scalar::Int(2))
        .unwrap()
        .add(&y)
        .call()
        .unwrap()
        .relu()
        .unwrap()
        .sum_dim_intlist_with(Some(&[0]), true, None)
        .unwrap();
    assert_bit_identical(out, &eager);
}

#[test]
fn tracing_records_composites_once_and_not_their_decomposition() {
    let lin = Linear::new(3, 4).unwrap();
    let m = trace(&lin, &randn(&[5, 3], 3)).unwrap();
    let kinds: Vec<&str> = m.graph().all_nodes().into_iter().map(|n| m.graph().kind(n)).collect();
    assert_eq!(kinds, ["aten::linear"]);
    let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    assert_eq!(m.graph().value_name(m.graph().inputs()[1]), Some("weight"));
}

fn mlp() -> Sequential {
    aten::manual_seed(7);
    Sequential::new().add(Linear::new(4, 8).unwrap()).add(ReLU::new()).add(Linear::new(8, 3).unwrap())
}

#[test]
fn a_traced_module_matches_eager_bit_for_bit_and_so_do_its_gradients() {
    let model = mlp();
    let x = randn(&[6, 4], 11);
    let script = trace(&model, &x).unwrap();

    let x2 = randn(&[6, 4], 12);
    let eager = model.forward(&x2).unwrap();
    let traced = script.forward(&x2).unwrap();
    assert_bit_identical(&traced, &eager);

    // Gradients through the interpreter land on the shared parameters, as in eager mode.
    let grads = |run: &dyn Fn() -> Tensor| {
        for p in model.parameters() {
            p.set_grad(None).unwrap();
        }
        run().sum().call().unwrap().backward().unwrap();
        model.parameters().iter().map(|p| p.grad().unwrap()).collect::<Vec<_>>()
    };
    let g_eager = grads(&|| model.forward(&x2).unwrap());
    let g_traced = grads(&|| script.forward(&x2).unwrap());
    for (a, b) in g_eager.iter().zip(&g_traced) {
        assert_bit_identical(a, b);
    }
}

#[test]
fn in_place_operations_rebind_the_tensor_to_the_node_output() {
    let x = randn(&[3], 4);
    let t = trace_fn(std::slice::from_ref(&x), |v| {
        let y = v[0].mul(Scalar::Int(3))?;
        y.add_(Scalar::Int(1)).call()?;
        Ok(vec![y.relu()?])
    })
    .unwrap();
    let g = &t.graph;
    let nodes = g.all_nodes();
    let relu = *nodes.last().unwrap();
    let add_ = g.producer(g.inputs_of(relu)[0]).unwrap();
    assert_eq!(g.kind(add_), "aten::add_");
    let out = Code::new(g).unwrap().run(vec![IValue::Tensor(x.clone())]).unwrap();
    let IValue::Tensor(out) = &out[0] else { panic!() };
    let eager = x.mul(Scalar::Int(3)).unwrap().add(Scalar::Int(1)).call().unwrap().relu().unwrap();
    assert_bit_identical(out, &eager);
}

#[test]
fn tensors_from_outside_the_trace_become_constants_and_lists_are_constructed() {
    let x = randn(&[2, 2], 5);
    let c = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let c2 = c.clone();
    let t =
        trace_fn(std::slice::from_ref(&x), move |v| Ok(vec![aten::ops::cat(&[v[0].clone(), c2.clone()], 0)?])).unwrap();
    let text = t.graph.to_string();
    assert!(text.contains("prim::Constant[value=<Tensor 0>]()"), "{text}");
    assert!(text.contains(": Tensor[] = prim::ListConstruct(%input0, %"), "{text}");
    assert_eq!(t.graph.tensor_constants.len(), 1);
    assert!(t.graph.tensor_constants[0].is_same(&c));
    let out = Code::new(&t.graph).unwrap().run(vec![IValue::Tensor(x.clone())]).unwrap();
    let IValue::Tensor(out) = &out[0] else { panic!() };
    assert_eq!(out.sizes(), &[4, 2]);
}

#[test]
fn reading_a_value_into_a_number_warns_that_the_trace_may_not_generalize() {
    let x = randn(&[3], 6);
    let t = trace_fn(&[x], |v| {
        let s: f32 = v[0].sum().call()?.item()?;
        Ok(vec![if s > 0.0 { v[0].relu()? } else { v[0].neg()? }])
    })
    .unwrap();
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].contains("might not generalize"), "{}", t.warnings[0]);
}

#[test]
fn a_failing_traced_function_ends_the_trace_and_a_new_one_can_start() {
    let x = randn(&[2, 3], 8);
    let err = trace_fn(std::slice::from_ref(&x), |v| Ok(vec![v[0].matmul(&v[0])?])).unwrap_err();
    assert!(
        err.to_string().contains("mat1 and mat2 shapes cannot be multiplied") || err.to_string().contains("shape"),
        "{err}"
    );
    // Not tracing any more: calls outside a trace are not recorded anywhere, and a new trace works.
    let t = trace_fn(std::slice::from_ref(&x), |v| Ok(vec![v[0].t()?])).unwrap();
    assert_eq!(t.graph.all_nodes().len(), 1);
    assert_eq!(
        t.graph.value_type(t.graph.outputs()[0]).to_string(),
        "Float(3, 2, strides=[1, 3], requires_grad=0, device=cpu)"
    );
    assert!(matches!(t.graph.value_type(t.graph.inputs()[0]), JitType::Tensor(_)));
}

#[test]
fn a_loaded_graph_of_a_module_trains() {
    let model = mlp();
    let x = randn(&[8, 4], 9);
    let script = trace(&model, &x).unwrap();
    let target = randn(&[8, 3], 10);
    let mut opt = nn::optim::SGD::new(script.parameters(), SGDOptions { lr: 0.1, ..Default::default() }).unwrap();
    let loss = |m: &dyn Forward| {
        m.forward(&x).unwrap().sub(&target).call().unwrap().pow(Scalar::Int(2)).unwrap().mean().call().unwrap()
    };
    let before: f32 = loss(&script).item().unwrap();
    for _ in 0..20 {
        opt.zero_grad(true).unwrap();
        loss(&script).backward().unwrap();
        opt.step().unwrap();
    }
    let after: f32 = loss(&script).item().unwrap();
    assert!(after < 0.8 * before, "{before} -> {after}");
}

#[test]
fn a_traced_gru_records_one_recurrent_operator_as_pytorch_does() {
    use nn::layers::rnn::RNNOptions;
    aten::manual_seed(3);
    let gru = nn::GRU::with_options(4, 5, &RNNOptions::default().num_layers(2).batch_first(true)).unwrap();
    let x = randn(&[2, 3, 4], 4);
    let eager = gru.forward(&x, None).unwrap();
    let script = jit::trace_module(&gru, std::slice::from_ref(&x), |xs| {
        let (out, h) = gru.forward(&xs[0], None)?;
        Ok(vec![out, h])
    })
    .unwrap();
    let kinds: Vec<&str> = script.graph().all_nodes().into_iter().map(|n| script.graph().kind(n)).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "aten::gru").count(), 1, "{kinds:?}");
    let out = script.forward_tensors(&[x]).unwrap();
    assert_bit_identical(&out[0], &eager.0);
    assert_bit_identical(&out[1], &eager.1);
}
