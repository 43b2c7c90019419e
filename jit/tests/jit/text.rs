//! The text form: print → parse → print is the identity, and bad text is a clear error.

use jit::{parse, parse_with, JitType};

const CONTROL_FLOW: &str = "\
graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %n : int):
  %c : bool = prim::Constant[value=1]()
  %one : float = prim::Constant[value=1.0]()
  %dims : int[] = prim::Constant[value=[0, -1]]()
  %name : str = prim::Constant[value=\"a \\\"b\\\"\"]()
  %none : NoneType = prim::Constant()
  %dev : Device = prim::Constant[value=\"cpu\"]()
  %y : Tensor = prim::Loop(%n, %c, %x)
    block0(%i : int, %acc : Tensor):
      %z : Tensor = aten::mul(%acc, %one)
      %w : Tensor = prim::If(%c)
        block0():
          -> (%z)
        block1():
          %v : Tensor = aten::neg(%z)
          -> (%v)
      -> (%c, %w)
  %t : (Tensor, int) = prim::TupleConstruct(%y, %n)
  %a : Tensor, %b : int = prim::TupleUnpack(%t)
  return (%a, %b)
";

#[test]
fn print_parse_print_is_the_identity() {
    let g = parse(CONTROL_FLOW).unwrap();
    assert_eq!(g.to_string(), CONTROL_FLOW);
    let again = parse(&g.to_string()).unwrap();
    assert_eq!(again.to_string(), CONTROL_FLOW);
}

#[test]
fn pytorch_printed_graphs_parse() {
    // As `print(torch.jit.trace(f, inputs).graph)` shows it, with source comments and `1.`.
    let text = "\
graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %y : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %2 : Long(requires_grad=0, device=cpu) = prim::Constant[value={2}]() # <string>:3:0
  %3 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::mul(%x, %2) # <string>:3:0
  %4 : float = prim::Constant[value=1.]() # <string>:3:0
  %5 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::add(%3, %y, %4) # <string>:3:0
  return (%5)
";
    let g = parse(text).unwrap();
    assert_eq!(g.tensor_constants.len(), 1);
    assert_eq!(g.tensor_constants[0].dtype(), c10::ScalarType::I64);
    assert_eq!(g.tensor_constants[0].dim(), 0);
    let two = g.value_type(g.outputs_of(g.all_nodes()[0])[0]).clone();
    let JitType::Tensor(t) = two else { panic!("a tensor type") };
    assert_eq!((t.sizes, t.strides), (Some(vec![]), Some(vec![])));
    let printed = g.to_string();
    assert!(
        printed.contains("%2 : Long(requires_grad=0, device=cpu) = prim::Constant[value=<Tensor 0>]()"),
        "{printed}"
    );
    assert!(printed.contains("prim::Constant[value=1.0]()"), "{printed}");
    assert_eq!(parse_with(&printed, g.tensor_constants.clone()).unwrap().to_string(), printed);
}

#[test]
fn unnamed_values_are_numbered_around_names_in_use() {
    let mut g = jit::Graph::new();
    let x = g.add_input(JitType::tensor(), Some("1"));
    let b = g.root();
    let n = g.append_node(b, "aten::relu", &[x], vec![JitType::tensor()]);
    let y = g.outputs_of(n)[0];
    g.add_output(y);
    assert_eq!(g.to_string(), "graph(%1 : Tensor):\n  %0 : Tensor = aten::relu(%1)\n  return (%0)\n");
}

#[test]
fn bad_text_is_an_error_with_the_line() {
    let cases = [
        ("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n", "%z is used before it is defined"),
        ("graph(%x : Tensor):\n  %x : Tensor = aten::relu(%x)\n  return (%x)\n", "%x is defined twice"),
        ("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n", "line 3: expected a node or 'return'"),
        ("graph(%x : Tensr):\n  return (%x)\n", "unknown type 'Tensr'"),
        (
            "graph(%x : Tensor):\n  %c : Tensor = prim::Constant[value=<Tensor 3>]()\n  return (%c)\n",
            "tensor constant 3 is not in the table",
        ),
        ("graph(%x : Tensor):\n  %y : Tensor = relu(%x)\n  return (%y)\n", "'::' in a node kind"),
        ("graph(%x : Tensor):\n  return (%x)\nextra", "text after the graph"),
    ];
    for (text, want) in cases {
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains(want), "{text:?}: {err}");
    }
}
