//! The interpreter: control flow, overload resolution, register moves and errors.

use aten::{IValue, Tensor};
use jit::{parse, Code};

fn t(v: &[f32]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len() as i64]).unwrap()
}

fn run(text: &str, inputs: Vec<IValue>) -> c10::Result<Vec<IValue>> {
    Code::new(&parse(text).unwrap())?.run(inputs)
}

#[test]
fn loops_and_branches_run() {
    // x doubled n times, negated when n is odd.
    let text = "graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %next : Tensor = aten::mul(%acc, %two)
      -> (%true, %next)
  %r : int = aten::remainder(%n, %two)
  %zero : int = prim::Constant[value=0]()
  %even : bool = aten::eq(%r, %zero)
  %out : Tensor = prim::If(%even)
    block0():
      -> (%y)
    block1():
      %neg : Tensor = aten::neg(%y)
      -> (%neg)
  return (%out, %r)
";
    let out = run(text, vec![IValue::Tensor(t(&[1.0, -0.5])), IValue::Int(3)]).unwrap();
    let IValue::Tensor(y) = &out[0] else { panic!() };
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![-8.0, 4.0]);
    assert!(matches!(out[1], IValue::Int(1)));
}

#[test]
fn overloads_resolve_from_the_input_types() {
    let text = "graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %a : Tensor = aten::add(%x, %y, %one)
  %b : Tensor = aten::add(%x, %half, %one)
  %c : Tensor = aten::sum(%a, %none)
  %none : NoneType = prim::Constant()
  return (%b)
";
    // `%none` is used before it is defined: a parse error, not a run-time one.
    assert!(parse(text).is_err());
    let text = "graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %none : NoneType = prim::Constant()
  %dtype : int = prim::Constant[value=7]()
  %a : Tensor = aten::add(%x, %y, %one)
  %b : Tensor = aten::add(%a, %half, %one)
  %c : Tensor = aten::sum(%b, %dtype)
  return (%c)
";
    let out = run(text, vec![IValue::Tensor(t(&[1.0, 2.0])), IValue::Tensor(t(&[10.0, 20.0]))]).unwrap();
    let IValue::Tensor(c) = &out[0] else { panic!() };
    assert_eq!(c.dtype(), c10::ScalarType::F64);
    assert_eq!(c.to_vec::<f64>().unwrap(), vec![34.0]);
}

#[test]
fn errors_name_the_operator() {
    let unknown = "graph(%x : Tensor):\n  %y : Tensor = aten::no_such_op(%x)\n  return (%y)\n";
    let err = Code::new(&parse(unknown).unwrap()).err().unwrap().to_string();
    assert!(err.contains("aten::no_such_op"), "{err}");
    let wrong = "graph(%x : Tensor):\n  %s : str = prim::Constant[value=\"a\"]()\n  %y : Tensor = aten::relu(%x, %s)\n  return (%y)\n";
    let err = Code::new(&parse(wrong).unwrap()).err().unwrap().to_string();
    assert!(err.contains("no overload of aten::relu takes (Tensor, str)"), "{err}");
    let prim = "graph(%x : Tensor):\n  %y : Tensor = prim::Nope(%x)\n  return (%y)\n";
    let err = Code::new(&parse(prim).unwrap()).err().unwrap().to_string();
    assert!(err.contains("no interpreter support for prim::Nope"), "{err}");
    let shapes = "graph(%x : Tensor, %y : Tensor):\n  %z : Tensor = aten::mm(%x, %y)\n  return (%z)\n";
    let err = run(shapes, vec![IValue::Tensor(t(&[1.0, 2.0])), IValue::Tensor(t(&[1.0]))]).unwrap_err().to_string();
    assert!(err.contains("mm"), "{err}");
    let count = run(shapes, vec![IValue::Tensor(t(&[1.0]))]).unwrap_err().to_string();
    assert!(count.contains("the graph takes 2 inputs, got 1"), "{count}");
}

#[test]
fn a_last_use_moves_the_value_so_the_tensor_is_freed_early() {
    // relu's input is used once: the register gives it up, so only the caller's handle remains.
    let text = "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n";
    let x = t(&[1.0, -1.0]);
    let code = Code::new(&parse(text).unwrap()).unwrap();
    let out = code.run(vec![IValue::Tensor(x.clone())]).unwrap();
    assert_eq!(x.use_count(), 1);
    let IValue::Tensor(y) = &out[0] else { panic!() };
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 0.0]);
}

/// The interpreter reports through the profiler: one range per executed node — operators as
/// the dispatcher records them, control flow and builtins as TorchScript ranges — nested as
/// the program runs.
#[test]
fn executed_nodes_are_profiler_ranges() {
    use autograd::profiler::profile;
    use c10::record_function::{current_thread_id, RecordScope};
    let text = "graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %next : Tensor = aten::mul(%acc, %two)
      -> (%true, %next)
  %l : Tensor[] = prim::ListConstruct(%y, %x)
  %i0 : int = prim::Constant[value=0]()
  %out : Tensor = aten::cat(%l, %i0)
  return (%out)
";
    let code = Code::new(&parse(text).unwrap()).unwrap();
    let prof = profile().start();
    let out = code.run(vec![IValue::Tensor(t(&[1.0, -0.5])), IValue::Int(3)]).unwrap();
    let p = prof.stop();
    let IValue::Tensor(y) = &out[0] else { panic!() };
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![8.0, -4.0, 1.0, -0.5]);
    // Other tests run on other threads: this thread's events.
    let me = current_thread_id();
    let mine: Vec<_> = p.events.iter().filter(|e| e.thread == me).collect();
    let count = |n: &str| mine.iter().filter(|e| e.name == n).count();
    assert_eq!(count("prim::Loop"), 1);
    // Three trips, each one `aten::mul` node (whose kernel may call operators of its own).
    let in_loop =
        |e: &&&autograd::profiler::FunctionEvent| e.parent.map(|i| p.events[i].name.as_str()) == Some("prim::Loop");
    assert_eq!(mine.iter().filter(|e| e.name == "aten::mul").filter(in_loop).count(), 3, "three trips");
    assert_eq!(count("prim::ListConstruct"), 1);
    assert_eq!(count("aten::cat"), 1);
    let lp = mine.iter().find(|e| e.name == "prim::Loop").unwrap();
    assert_eq!(lp.scope, RecordScope::TorchscriptFunction);
    for m in mine.iter().filter(|e| e.name == "aten::mul") {
        assert_eq!(m.scope, RecordScope::Function);
        assert!(m.start_ns >= lp.start_ns && m.end_ns <= lp.end_ns, "the body runs inside the loop");
    }
}
