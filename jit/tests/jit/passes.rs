//! Each pass on graphs in the text form: the input graph and the graph expected after it.

use jit::passes::{
    constant_propagation, eliminate_common_subexpressions, eliminate_dead_code, optimize, peephole, unroll_loops,
};
use jit::{parse, Graph};

fn check(pass: fn(&mut Graph) -> bool, input: &str, expected: &str, changes: bool) {
    let mut g = parse(input).unwrap();
    assert_eq!(pass(&mut g), changes, "whether the pass changed\n{input}");
    g.lint().unwrap();
    assert_eq!(g.to_string(), parse(expected).unwrap().to_string());
}

#[test]
fn dead_code_goes_but_mutation_and_randomness_stay() {
    check(
        eliminate_dead_code,
        "graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::neg(%a)
  %c : Tensor = aten::add_(%x, %x, %one)
  %p : float = prim::Constant[value=0.5]()
  %t : bool = prim::Constant[value=1]()
  %d : Tensor = aten::dropout(%x, %p, %t)
  %e : Tensor = aten::sigmoid(%x)
  return (%e)
",
        "graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %c : Tensor = aten::add_(%x, %x, %one)
  %p : float = prim::Constant[value=0.5]()
  %t : bool = prim::Constant[value=1]()
  %d : Tensor = aten::dropout(%x, %p, %t)
  %e : Tensor = aten::sigmoid(%x)
  return (%e)
",
        true,
    );
}

#[test]
fn dead_outputs_of_an_if_go_with_what_the_branches_return_for_them() {
    check(
        eliminate_dead_code,
        "graph(%x : Tensor, %c : bool):
  %a : Tensor, %b : Tensor = prim::If(%c)
    block0():
      %r : Tensor = aten::relu(%x)
      -> (%x, %r)
    block1():
      %n : Tensor = aten::neg(%x)
      -> (%n, %x)
  return (%a)
",
        "graph(%x : Tensor, %c : bool):
  %a : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      %n : Tensor = aten::neg(%x)
      -> (%n)
  return (%a)
",
        true,
    );
}

#[test]
fn common_subexpressions_merge_within_scope() {
    check(
        eliminate_common_subexpressions,
        "graph(%x : Tensor, %c : bool):
  %one : int = prim::Constant[value=1]()
  %one2 : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %x, %one)
  %b : Tensor = aten::add(%x, %x, %one2)
  %y : Tensor = prim::If(%c)
    block0():
      %s : Tensor = aten::sigmoid(%a)
      -> (%s)
    block1():
      %s2 : Tensor = aten::sigmoid(%b)
      -> (%s2)
  %z : Tensor = aten::mul(%a, %b)
  %w : Tensor = aten::sigmoid(%a)
  return (%y, %z, %w)
",
        "graph(%x : Tensor, %c : bool):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %x, %one)
  %y : Tensor = prim::If(%c)
    block0():
      %s : Tensor = aten::sigmoid(%a)
      -> (%s)
    block1():
      %s2 : Tensor = aten::sigmoid(%a)
      -> (%s2)
  %z : Tensor = aten::mul(%a, %a)
  %w : Tensor = aten::sigmoid(%a)
  return (%y, %z, %w)
",
        true,
    );
}

#[test]
fn cse_leaves_tensors_alone_in_a_graph_that_writes_to_tensors() {
    let input = "graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::clone(%x, %none)
  %b : Tensor = aten::clone(%x, %none)
  %c : Tensor = aten::add_(%a, %x, %one)
  return (%b, %c)
";
    check(eliminate_common_subexpressions, input, input, false);
}

#[test]
fn constants_fold_and_constant_branches_are_taken() {
    check(
        constant_propagation,
        "graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %s : int = aten::mul(%two, %three)
  %lt : bool = aten::lt(%two, %three)
  %y : Tensor = prim::If(%lt)
    block0():
      %r : Tensor = aten::mul(%x, %s)
      -> (%r)
    block1():
      -> (%x)
  return (%y)
",
        "graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %s : int = prim::Constant[value=6]()
  %lt : bool = prim::Constant[value=1]()
  %r : Tensor = aten::mul(%x, %s)
  return (%r)
",
        true,
    );
}

#[test]
fn tensor_operations_on_constants_fold_into_the_constant_table() {
    let mut g = parse(
        "graph(%x : Float(2, strides=[1], requires_grad=0, device=cpu)):
  %dims : int[] = prim::Constant[value=[2]]()
  %none : NoneType = prim::Constant()
  %z : Tensor = aten::ones(%dims, %none, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %z, %one)
  return (%y)
",
    )
    .unwrap();
    assert!(constant_propagation(&mut g));
    eliminate_dead_code(&mut g);
    let text = g.to_string();
    assert!(
        text.contains("%z : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor 0>]()"),
        "{text}"
    );
    assert_eq!(g.tensor_constants[0].to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
}

#[test]
fn peephole_rules() {
    check(
        peephole,
        "graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu), %i : Long(3, strides=[1], requires_grad=0, device=cpu)):
  %a : Tensor = aten::t(%x)
  %b : Tensor = aten::t(%a)
  %one : int = prim::Constant[value=1]()
  %onef : float = prim::Constant[value=1.0]()
  %zero : int = prim::Constant[value=0]()
  %c : Tensor = aten::mul(%b, %one)
  %d : Tensor = aten::add(%x, %zero, %one)
  %e : Tensor = aten::mul(%i, %onef)
  %f : Tensor = aten::div(%i, %one)
  %g : Tensor = aten::contiguous(%x, %zero)
  %six : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %h : Tensor = aten::to(%x, %six, %false, %false, %none)
  %s1 : int[] = prim::Constant[value=[6]]()
  %s2 : int[] = prim::Constant[value=[3, 2]]()
  %v1 : Tensor = aten::view(%x, %s1)
  %v2 : Tensor = aten::view(%v1, %s2)
  return (%c, %d, %e, %f, %g, %h, %v2)
",
        "graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu), %i : Long(3, strides=[1], requires_grad=0, device=cpu)):
  %a : Tensor = aten::t(%x)
  %b : Tensor = aten::t(%a)
  %one : int = prim::Constant[value=1]()
  %onef : float = prim::Constant[value=1.0]()
  %zero : int = prim::Constant[value=0]()
  %c : Tensor = aten::mul(%x, %one)
  %d : Tensor = aten::add(%x, %zero, %one)
  %e : Tensor = aten::mul(%i, %onef)
  %f : Tensor = aten::div(%i, %one)
  %g : Tensor = aten::contiguous(%x, %zero)
  %six : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %h : Tensor = aten::to(%x, %six, %false, %false, %none)
  %s1 : int[] = prim::Constant[value=[6]]()
  %s2 : int[] = prim::Constant[value=[3, 2]]()
  %v1 : Tensor = aten::view(%x, %s1)
  %v2 : Tensor = aten::view(%x, %s2)
  return (%x, %x, %e, %f, %x, %x, %v2)
",
        true,
    );
}

#[test]
fn optimize_runs_the_passes_to_a_fixed_point() {
    let mut g = parse(
        "graph(%x : Float(4, strides=[1], requires_grad=0, device=cpu)):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %k : int = aten::sub(%one, %zero)
  %a : Tensor = aten::mul(%x, %k)
  %b : Tensor = aten::sigmoid(%a)
  %c : Tensor = aten::sigmoid(%x)
  %d : Tensor = aten::add(%b, %c, %one)
  return (%d)
",
    )
    .unwrap();
    assert!(optimize(&mut g));
    assert_eq!(
        g.to_string(),
        "graph(%x : Float(4, strides=[1], requires_grad=0, device=cpu)):
  %one : int = prim::Constant[value=1]()
  %b : Tensor = aten::sigmoid(%x)
  %d : Tensor = aten::add(%b, %b, %one)
  return (%d)
"
    );
}

#[test]
fn cse_and_peepholes_work_around_the_tensors_a_graph_writes() {
    // `%c` is a fresh clone and the only tensor written: the two reads of `%x` merge, and so
    // do the two `t().t()` chains' rewrites.
    check(
        eliminate_common_subexpressions,
        "graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::relu(%x)
  %c : Tensor = aten::clone(%x, %none)
  %d : Tensor = aten::add_(%c, %a, %one)
  return (%a, %b, %d)
",
        "graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %c : Tensor = aten::clone(%x, %none)
  %d : Tensor = aten::add_(%c, %a, %one)
  return (%a, %a, %d)
",
        true,
    );
    // Written through a view: `%x` itself changes between the two reads.
    let through_a_view = "graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %shape : int[] = prim::Constant[value=[-1]]()
  %a : Tensor = aten::relu(%x)
  %v : Tensor = aten::view(%x, %shape)
  %w : Tensor = aten::add_(%v, %v, %one)
  %b : Tensor = aten::relu(%x)
  return (%a, %b, %w)
";
    check(eliminate_common_subexpressions, through_a_view, through_a_view, false);
    // Through a list, and through the other input (the caller may pass one tensor twice).
    let through_a_list = "graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %a : Tensor = aten::relu(%x)
  %l : Tensor[] = prim::ListConstruct(%x)
  %y : Tensor = aten::__getitem__(%l, %zero)
  %w : Tensor = aten::add_(%y, %y, %one)
  %b : Tensor = aten::relu(%x)
  return (%a, %b, %w)
";
    check(eliminate_common_subexpressions, through_a_list, through_a_list, false);
    let other_input = "graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %w : Tensor = aten::add_(%y, %y, %one)
  %b : Tensor = aten::relu(%x)
  return (%a, %b, %w)
";
    check(eliminate_common_subexpressions, other_input, other_input, false);
    // Through a loop's carried value.
    let through_a_loop = "graph(%x : Tensor, %n : int):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %r : Tensor = prim::Loop(%n, %t, %x)
    block0(%i : int, %c : Tensor):
      %w : Tensor = aten::add_(%c, %c, %one)
      -> (%t, %w)
  %b : Tensor = aten::relu(%x)
  return (%a, %b, %r)
";
    check(eliminate_common_subexpressions, through_a_loop, through_a_loop, false);
    // A peephole rule applies to the untouched part of a graph that writes.
    check(
        peephole,
        "graph(%x : Tensor, %z : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::t(%x)
  %b : Tensor = aten::t(%a)
  %c : Tensor = aten::clone(%b, %none)
  %d : Tensor = aten::add_(%c, %c, %one)
  return (%b, %d)
",
        "graph(%x : Tensor, %z : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::t(%x)
  %b : Tensor = aten::t(%a)
  %c : Tensor = aten::clone(%x, %none)
  %d : Tensor = aten::add_(%c, %c, %one)
  return (%x, %d)
",
        true,
    );
}

#[test]
fn constant_loops_unroll_into_copies_of_their_body() {
    // for i in range(3): acc = acc * x + i; with a nested constant loop of 2 trips.
    let input = "graph(%x : Tensor, %acc0 : Tensor):
  %three : int = prim::Constant[value=3]()
  %two : int = prim::Constant[value=2]()
  %t : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %r : Tensor = prim::Loop(%three, %t, %acc0)
    block0(%i : int, %acc : Tensor):
      %m : Tensor = aten::mul(%acc, %x)
      %s : Tensor = aten::add(%m, %i, %one)
      %q : Tensor = prim::Loop(%two, %t, %s)
        block0(%j : int, %u : Tensor):
          %v : Tensor = aten::sub(%u, %j, %one)
          -> (%t, %v)
      -> (%t, %q)
  return (%r)
";
    let mut g = parse(input).unwrap();
    let x = aten::Tensor::from_slice(&[0.5f32, 2.0]);
    let acc = aten::Tensor::from_slice(&[1.0f32, -1.0]);
    let run = |g: &Graph| {
        let out = jit::Code::new(g)
            .unwrap()
            .run(vec![aten::IValue::Tensor(x.clone()), aten::IValue::Tensor(acc.clone())])
            .unwrap();
        match &out[0] {
            aten::IValue::Tensor(t) => t.to_vec::<f32>().unwrap(),
            other => panic!("{other:?}"),
        }
    };
    let before = run(&g);
    // By hand: acc = ((acc * x + i) - 0) - 1 for i in 0, 1, 2.
    let mut expect = [1.0f32, -1.0];
    for i in 0..3 {
        for (a, xv) in expect.iter_mut().zip([0.5f32, 2.0]) {
            *a = *a * xv + i as f32 - 1.0;
        }
    }
    assert_eq!(before, expect);
    assert!(unroll_loops(&mut g));
    g.lint().unwrap();
    let text = g.to_string();
    assert!(!text.contains("prim::Loop"), "{text}");
    assert_eq!(text.matches("aten::mul").count(), 3, "{text}");
    assert_eq!(text.matches("aten::sub").count(), 6, "{text}");
    assert_eq!(run(&g), expect);
    // Zero trips: the initial values.
    let mut zero =
        parse(&input.replace("%three : int = prim::Constant[value=3]()", "%three : int = prim::Constant[value=0]()"))
            .unwrap();
    assert!(unroll_loops(&mut zero));
    zero.lint().unwrap();
    assert_eq!(zero.to_string().matches("aten::").count(), 0, "{zero}");
    // Not unrolled: a trip count that is not a constant, a condition that is not constantly
    // true, and a loop over the limit.
    let dynamic = input
        .replace("prim::Loop(%three, %t, %acc0)", "prim::Loop(%n, %t, %acc0)")
        .replace("%acc0 : Tensor)", "%acc0 : Tensor, %n : int)");
    let mut g = parse(&dynamic).unwrap();
    assert!(unroll_loops(&mut g)); // the inner one only
    assert_eq!(g.to_string().matches("prim::Loop").count(), 1);
    let cond = "graph(%x : Tensor, %c : bool):
  %three : int = prim::Constant[value=3]()
  %r : Tensor = prim::Loop(%three, %c, %x)
    block0(%i : int, %a : Tensor):
      %n : Tensor = aten::neg(%a)
      -> (%c, %n)
  return (%r)
";
    check(unroll_loops, cond, cond, false);
    let big = cond.replace("%c, %x)", "%t, %x)").replace("-> (%c, %n)", "-> (%t, %n)").replace(
        "%three : int = prim::Constant[value=3]()",
        "%three : int = prim::Constant[value=65]()\n  %t : bool = prim::Constant[value=1]()",
    );
    check(unroll_loops, &big, &big, false);
}
