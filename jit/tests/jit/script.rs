//! TorchScript with control flow: models PyTorch scripted (`gen_script.py`) load and match
//! PyTorch's outputs on two input sets each, and `jit::script` compiles source text.

use std::path::{Path, PathBuf};

use aten::{IValue, Tensor};
use jit::{JitType, ScriptModule};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jit/models")
}

fn t(v: &[f32]) -> Tensor {
    Tensor::from_slice(v)
}

/// The inputs of `module` from input set `tag` of `name`'s io file: 0-dim tensors for `int`,
/// `float` and `bool` arguments, `None` for a missing Optional one.
pub(crate) fn inputs(module: &ScriptModule, io: &nn::serialize::Loaded, tag: &str) -> Vec<IValue> {
    let g = module.graph();
    (0..module.num_inputs())
        .map(|i| {
            let ty = g.value_type(g.inputs()[i]).clone();
            match io.tensors.get(&format!("{tag}.input{i}")) {
                None => {
                    assert!(matches!(ty, JitType::Optional(_)), "input {i} ({ty}) has no value");
                    IValue::None
                }
                Some(v) => match ty {
                    JitType::Int => IValue::Int(v.item_scalar().unwrap().to_f64() as i64),
                    JitType::Float => IValue::Double(v.item_scalar().unwrap().to_f64()),
                    JitType::Bool => IValue::Bool(v.item_scalar().unwrap().to_f64() != 0.0),
                    _ => IValue::Tensor(v.clone()),
                },
            }
        })
        .collect()
}

pub(crate) fn flatten(v: IValue, out: &mut Vec<IValue>) {
    match v {
        IValue::Tuple(items) => items.into_iter().for_each(|i| flatten(i, out)),
        other => out.push(other),
    }
}

pub(crate) fn assert_matches(ours: &IValue, theirs: &Tensor, what: &str) {
    match ours {
        IValue::Tensor(x) => {
            assert_eq!(x.sizes(), theirs.sizes(), "{what}: sizes");
            assert_eq!(x.dtype(), theirs.dtype(), "{what}: dtype");
            let x = x.to_vec::<f64>().unwrap();
            let y = theirs.to_vec::<f64>().unwrap();
            for (i, (a, b)) in x.iter().zip(&y).enumerate() {
                assert!((a - b).abs() <= 1e-5 * b.abs() + 1e-6, "{what}[{i}]: {a} vs PyTorch's {b}");
            }
        }
        IValue::Int(i) => assert_eq!(*i as f64, theirs.item_scalar().unwrap().to_f64(), "{what}"),
        other => panic!("{what}: a {} where PyTorch gave a tensor", other.kind()),
    }
}

/// Data-dependent `if`, `for` over time steps, `while` with `break`, loops over a ModuleList and
/// a Sequential, an Optional argument, a tuple return, a list built with append and stacked,
/// greedy decoding with an early exit, dicts, and the GRU-cell loop of the `W7.script_loop` bench
/// row.
pub(crate) const SCRIPTED: [&str; 10] = [
    "s_branch",
    "s_rnn_loop",
    "s_while_break",
    "s_layers",
    "s_optional",
    "s_tuple",
    "s_list_stack",
    "s_greedy",
    "s_dict",
    "w7_script_loop",
];

#[test]
fn pytorch_scripted_models_load_and_match_pytorch_on_both_input_sets() {
    for name in SCRIPTED {
        let module = jit::load(models().join(format!("{name}.pt"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        let io = nn::serialize::load_file(models().join(format!("{name}.io.safetensors"))).unwrap();
        let mut sizes = Vec::new();
        for tag in ["a", "b"] {
            let out =
                module.forward_values(&inputs(&module, &io, tag)).unwrap_or_else(|e| panic!("{name} ({tag}): {e}"));
            let mut flat = Vec::new();
            out.into_iter().for_each(|v| flatten(v, &mut flat));
            let expected: Vec<Tensor> =
                (0..).map_while(|i| io.tensors.get(&format!("{tag}.output{i}")).cloned()).collect();
            assert_eq!(flat.len(), expected.len(), "{name} ({tag}): outputs");
            for (i, (o, e)) in flat.iter().zip(&expected).enumerate() {
                assert_matches(o, e, &format!("{name} ({tag}) output {i}"));
            }
            sizes.push(expected.iter().map(|e| e.sizes().to_vec()).collect::<Vec<_>>());
        }
        // The same results after the graph passes (constant propagation, CSE, DCE through the
        // blocks) and the inference fusion.
        let mut optimized = jit::load(models().join(format!("{name}.pt"))).unwrap();
        optimized.optimize();
        optimized.optimize_for_inference();
        for tag in ["a", "b"] {
            let out = optimized
                .forward_values(&inputs(&optimized, &io, tag))
                .unwrap_or_else(|e| panic!("{name} ({tag}), optimized: {e}"));
            let mut flat = Vec::new();
            out.into_iter().for_each(|v| flatten(v, &mut flat));
            for (i, o) in flat.iter().enumerate() {
                let e = io.tensors.get(&format!("{tag}.output{i}")).unwrap();
                assert_matches(o, e, &format!("{name} ({tag}) output {i}, optimized"));
            }
        }
        let g = module.graph().to_string();
        if !["s_layers", "s_tuple"].contains(&name) {
            assert!(g.contains("prim::If") || g.contains("prim::Loop"), "{name}: no control flow:\n{g}");
        }
    }
}

#[test]
fn control_flow_takes_the_branch_the_data_decides() {
    // The two input sets of these models take different paths: different output sizes or
    // counts, from one archive.
    let io = nn::serialize::load_file(models().join("s_greedy.io.safetensors")).unwrap();
    assert_ne!(io.tensors.get("a.output0").unwrap().sizes(), io.tensors.get("b.output0").unwrap().sizes());
    let io = nn::serialize::load_file(models().join("s_while_break.io.safetensors")).unwrap();
    assert_ne!(
        io.tensors.get("a.output1").unwrap().item_scalar().unwrap().to_f64(),
        io.tensors.get("b.output1").unwrap().item_scalar().unwrap().to_f64()
    );
}

fn run(src: &str, inputs: Vec<IValue>) -> c10::Result<Vec<IValue>> {
    jit::script(src)?.forward_values(&inputs)
}

fn floats(v: &IValue) -> Vec<f32> {
    match v {
        IValue::Tensor(t) => t.contiguous().call().unwrap().to_vec::<f32>().unwrap(),
        other => panic!("expected a tensor, got {other:?}"),
    }
}

/// Sum of the odd i below n, stopping before i reaches 9 (`for` with `continue` and `break`).
pub(crate) const LOOP_BREAK_CONTINUE: &str = "
def f(x: Tensor, n: int) -> Tuple[Tensor, int]:
    total = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        if i >= 9:
            break
        total += i
        x = x + i
    return x, total
";

/// Halvings until below 1 (`while True` with a data-dependent `break`).
pub(crate) const WHILE_TRUE: &str = "
def g(x: Tensor):
    k = 0
    while True:
        if bool(x < 1.0):
            break
        x = x / 2
        k += 1
    return x, k
";

/// `len(range(...))` and its last value.
pub(crate) const RANGES: &str = "
def f(lo: int, hi: int, step: int):
    n = 0
    last = lo
    for i in range(lo, hi, step):
        n += 1
        last = i
    return n, last
";

/// Dicts changed in loops and branches, a copy taken before later changes, `del` on a path
/// the data decides, a list element set: the cases of Note [Printing TorchScript]'s "Dicts and
/// list updates" (a change in place, on a copy, and on a loop-carried dict).
pub(crate) const DICTS: &str = "
def f(x: Tensor, n: int):
    d: Dict[int, Tensor] = {}
    seen = {0: 0, 1: 0}
    for i in range(n):
        d[i % 3] = x * float(i)
        seen[i % 2] = seen[i % 2] + 1
    snapshot = d.copy()
    before = d
    if 0 in d:
        del d[0]
    total = torch.zeros([1])
    for k, v in d.items():
        total = total + v * float(k)
    ks = list(d.keys())
    marks = [0, 0, 0]
    for k in ks:
        marks[k] = 1
    return total, len(ks), len(snapshot), len(before), seen[0], seen[1], snapshot.get(0, x), marks[1] + 2 * marks[2]
";

/// An Optional argument, a list built with `append` in an `enumerate` loop, a helper
/// called with a keyword, early returns and a raise.
pub(crate) const OPTIONAL_LIST: &str = "
def scale(x: Tensor, k: float = 2.0) -> Tensor:
    return x * k

def f(x: Tensor, h: Optional[Tensor] = None, steps: int = 3):
    if h is not None:
        x = x + h
    outs: List[Tensor] = []
    for i, s in enumerate([1.0, 10.0, 100.0]):
        if i >= steps:
            break
        outs.append(scale(x, k=s))
    if len(outs) == 0:
        return x
    if steps > 5:
        raise ValueError(\"too many steps\")
    return torch.stack(outs)
";

#[test]
fn script_compiles_loops_with_break_and_continue() {
    // Sum of the odd i below n, stopping before i reaches 9: for n = 20, 1 + 3 + 5 + 7 = 16.
    let src = LOOP_BREAK_CONTINUE;
    for (n, expect) in [(20, 16), (6, 9), (0, 0)] {
        let out = run(src, vec![IValue::Tensor(t(&[0.5])), IValue::Int(n)]).unwrap();
        let IValue::Tuple(items) = &out[0] else { panic!("{out:?}") };
        assert_eq!(floats(&items[0]), vec![0.5 + expect as f32]);
        assert!(matches!(items[1], IValue::Int(k) if k == expect), "{items:?}");
    }
    // `while` with a data-dependent exit: halvings of 100 until below 1 (7 of them).
    let src = WHILE_TRUE;
    let out = run(src, vec![IValue::Tensor(t(&[100.0]))]).unwrap();
    let IValue::Tuple(items) = &out[0] else { panic!() };
    assert_eq!(floats(&items[0]), vec![100.0 / 128.0]);
    assert!(matches!(items[1], IValue::Int(7)));
}

#[test]
fn ranges_count_as_python_counts_them() {
    // len(range(...)) and its last value, extremes included (Python's values).
    let src = RANGES;
    let m = jit::script(src).unwrap();
    let cases: [(i64, i64, i64, i64, i64); 5] = [
        (0, 10, 3, 4, 9),
        (10, 0, -4, 3, 2),
        (5, 5, 1, 0, 5),
        (i64::MIN, i64::MAX, i64::MAX, 3, i64::MAX - 1),
        (0, -1, 1, 0, 0),
    ];
    for (lo, hi, step, n, last) in cases {
        let out = m.forward_values(&[IValue::Int(lo), IValue::Int(hi), IValue::Int(step)]).unwrap();
        let IValue::Tuple(items) = &out[0] else { panic!() };
        let ok = matches!((&items[0], &items[1]), (IValue::Int(a), IValue::Int(b)) if *a == n && *b == last);
        assert!(ok, "range({lo}, {hi}, {step}): {items:?}");
    }
    let err = m.forward_values(&[IValue::Int(0), IValue::Int(3), IValue::Int(0)]).unwrap_err().to_string();
    assert!(err.contains("must not be zero"), "{err}");
}

#[test]
fn script_compiles_early_returns_optionals_lists_and_calls() {
    let src = OPTIONAL_LIST;
    let x = IValue::Tensor(t(&[1.0, 2.0]));
    let out = run(src, vec![x.clone(), IValue::Tensor(t(&[1.0, 1.0])), IValue::Int(2)]).unwrap();
    assert_eq!(floats(&out[0]), vec![2.0, 3.0, 20.0, 30.0]);
    let out = run(src, vec![x.clone(), IValue::None, IValue::Int(3)]).unwrap();
    assert_eq!(floats(&out[0]), vec![1.0, 2.0, 10.0, 20.0, 100.0, 200.0]);
    let out = run(src, vec![x, IValue::None, IValue::Int(0)]).unwrap();
    assert_eq!(floats(&out[0]), vec![1.0, 2.0]);
}

#[test]
fn script_raises_and_asserts_with_their_messages() {
    let src = "
def f(x: Tensor) -> Tensor:
    assert x.dim() == 1, 'expected a vector'
    if x.size(0) > 3:
        raise ValueError('too long: {}'.format(x.size(0)))
    return x[1:] - x[:-1]
";
    let out = run(src, vec![IValue::Tensor(t(&[1.0, 4.0, 9.0]))]).unwrap();
    assert_eq!(floats(&out[0]), vec![3.0, 5.0]);
    let err = run(src, vec![IValue::Tensor(t(&[1.0, 2.0, 3.0, 4.0]))]).unwrap_err().to_string();
    assert!(err.contains("ValueError: too long: 4"), "{err}");
    let m = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]).reshape(&[2, 2]).unwrap();
    let err = run(src, vec![IValue::Tensor(m)]).unwrap_err().to_string();
    assert!(err.contains("AssertionError: expected a vector"), "{err}");
}

#[test]
fn script_errors_name_the_line_and_the_cause() {
    let cases = [
        (
            "def f(x: Tensor):\n    if bool(x > 0):\n        y = x\n    return y\n",
            "'y' is not defined in every branch",
            ":4",
        ),
        ("def f(x: Tensor):\n    for i in range(3):\n        return x\n    return x\n", "'return' inside a loop", ":2"),
        (
            "def f(x: Tensor):\n    k = 0\n    for i in range(3):\n        k = x\n    return k\n",
            "'k' is a int before the loop",
            ":3",
        ),
        ("def f(x: Tensor):\n    break\n", "'break' outside a loop", ":2"),
        ("def f(x: Tensor):\n    return x.frobnicate()\n", "unknown operator aten::frobnicate", ":2"),
        ("def f(x: Tensor):\n    if x\n        return x\n", "expected ':'", ":2"),
    ];
    for (src, cause, line) in cases {
        let err = jit::script(src).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(cause) && err.contains(line), "{src}\n=> {err}");
    }
}

#[test]
fn hostile_source_is_an_error_not_a_stack_overflow() {
    // Each early return takes the statements after it into its else branch: 5,000 of them
    // would nest 5,000 blocks deep.
    let returns = (0..5000).map(|i| format!("    if bool(x > {i}):\n        return x\n")).collect::<String>();
    let deep_blocks = (0..150).map(|d| format!("{}while True:\n", " ".repeat(4 * (d + 1)))).collect::<String>();
    let long_sum = format!("    return x{}\n", " + x".repeat(30_000));
    let cases = [
        (format!("def f(x: Tensor):\n{returns}    return x\n"), "nest more than"),
        (format!("def f(x: Tensor):\n{deep_blocks}"), "nest more than"),
        (format!("def f(x: Tensor):\n{long_sum}"), "nests more than"),
        ("def f(x: Tensor):\n    return x[1:2:3:4]\n".to_string(), "expected"),
        ("def f(x: Tensor):\n    y = \"unterminated\n    return x\n".to_string(), "string"),
        (
            "class M(nn.Module):\n    def forward(self, x):\n        return x\n".to_string(),
            "classes are compiled from archives",
        ),
    ];
    for (src, cause) in cases {
        let err = jit::script(&src).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(cause), "{}...\n=> {err}", &src[..src.len().min(80)]);
    }
}

#[test]
fn the_chapter_example_decodes_as_eager_code_does() {
    // docs/src/jit.md's example, against the same steps run eagerly.
    let src = "
def greedy(h: Tensor, steps: int, eos: int) -> Tensor:
    tokens: List[Tensor] = []
    for i in range(steps):
        h = torch.tanh(h * 2.0)
        tok = h.argmax(dim=1)
        tokens.append(tok)
        if int(tok[0]) == eos:
            break
    return torch.stack(tokens, 1)
";
    let h0 = super::randn(&[2, 5], 7);
    let m = jit::script(src).unwrap();
    for eos in [-1, 0, 1, 2, 3, 4] {
        let out = m.forward_values(&[IValue::Tensor(h0.clone()), IValue::Int(6), IValue::Int(eos)]).unwrap();
        let IValue::Tensor(got) = &out[0] else { panic!() };
        let mut h = h0.clone();
        let mut tokens = Vec::new();
        for _ in 0..6 {
            h = h.mul(c10::Scalar::Float(2.0)).unwrap().tanh().unwrap();
            let tok = aten::ops::argmax(&h, Some(1), false).unwrap();
            let first = tok.to_vec::<i64>().unwrap()[0];
            tokens.push(tok);
            if first == eos {
                break;
            }
        }
        let want = aten::ops::stack(&tokens, 1).unwrap();
        assert_eq!(got.sizes(), want.sizes(), "eos {eos}");
        assert_eq!(got.to_vec::<i64>().unwrap(), want.to_vec::<i64>().unwrap(), "eos {eos}");
    }
}

#[test]
fn strings_compare_by_value() {
    let src = "
def f(x: Tensor, mode: str) -> Tensor:
    if mode == 'double':
        return x * 2.0
    if mode != 'same':
        raise ValueError('unknown mode {}'.format(mode))
    return x
";
    let m = jit::script(src).unwrap();
    let x = IValue::Tensor(t(&[1.5]));
    // Built at run time, so not the source's constant object.
    let double = IValue::Str(["dou", "ble"].concat());
    assert_eq!(floats(&m.forward_values(&[x.clone(), double]).unwrap()[0]), vec![3.0]);
    assert_eq!(floats(&m.forward_values(&[x.clone(), IValue::Str("same".into())]).unwrap()[0]), vec![1.5]);
    let err = m.forward_values(&[x, IValue::Str("odd".into())]).unwrap_err().to_string();
    assert!(err.contains("ValueError: unknown mode odd"), "{err}");
}

/// `==` of lists compares their elements as Python does: numbers by value whatever their kind,
/// `nan` unequal to itself and `-0.0` equal to `0.0` (as TorchScript's `aten::eq.float_list`
/// gives them: `[nan] == [nan]` is false there), lengths first; `!=` is its negation. (PyTorch's
/// compiler refuses `==` of an `int` list and a `float` list; ours gives Python's answer.)
#[test]
fn lists_compare_by_their_values() {
    let src = "
def f(a: List[int], b: List[float], c: List[bool], d: List[float]):
    return a == b, a != b, b == d, a == c, b != c
";
    let m = jit::script(src).unwrap();
    let run = |a: Vec<i64>, b: Vec<f64>, c: Vec<bool>, d: Vec<f64>| -> Vec<bool> {
        let args = [IValue::IntList(a), IValue::DoubleList(b), IValue::BoolList(c), IValue::DoubleList(d)];
        let out = m.forward_values(&args).unwrap();
        let IValue::Tuple(items) = &out[0] else { panic!("{out:?}") };
        items.iter().map(|v| matches!(v, IValue::Bool(true))).collect()
    };
    let nan = f64::NAN;
    assert_eq!(run(vec![1, 0], vec![1.0, 0.0], vec![true, false], vec![1.0, 0.0]), [true, false, true, true, false]);
    assert_eq!(run(vec![1, 0], vec![1.0, -0.0], vec![true, true], vec![1.0, 0.0]), [true, false, true, false, true]);
    assert_eq!(run(vec![1], vec![nan], vec![true], vec![nan]), [false, true, false, true, true]);
    assert_eq!(run(vec![1, 2], vec![1.0], vec![true, false], vec![1.0]), [false, true, true, false, true]);
    assert_eq!(run(vec![], vec![], vec![], vec![]), [true, false, true, true, false]);
}

/// `is` / `is not` as Python answers them for the values a graph holds: a tensor is itself and
/// not its copy, never a value of another kind; `None` only is `None`; lists of the same
/// tensors are taken as the same (a graph does not keep lists' identity).
#[test]
fn is_compares_identity() {
    let src = "
def f(x: Tensor, y: Tensor, n: Optional[Tensor]):
    z = x
    a = [x, y]
    b = [x, y]
    c = [y, x]
    return x is z, x is y, x is not y, n is None, x is None, a is b, a is c, (1, 2) is (1, 2)
";
    let m = jit::script(src).unwrap();
    let x = t(&[1.0, 2.0]);
    let copy = aten::ops::clone(&x, None).unwrap();
    let run = |y: &Tensor, n: IValue| -> Vec<bool> {
        let out = m.forward_values(&[IValue::Tensor(x.clone()), IValue::Tensor(y.clone()), n]).unwrap();
        let IValue::Tuple(items) = &out[0] else { panic!("{out:?}") };
        items
            .iter()
            .map(|v| match v {
                IValue::Bool(b) => *b,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(run(&copy, IValue::None), [true, false, true, true, false, true, false, true]);
    assert_eq!(run(&x, IValue::Tensor(x.clone())), [true, true, false, false, false, true, true, true]);
}

/// A block that returns one value in several places (`-> (%y, %y, %y)`, as scripted
/// `MultiheadAttention` does for `query, key, value = q, q, q`) hands the value to every one of
/// them: the interpreter moved it out at the first and gave `None` to the others.
#[test]
fn a_value_returned_twice_from_a_block_reaches_both() {
    let src = "
def f(x: Tensor, flag: bool):
    if flag:
        y = x + 1
        a, b, c = y, y, y
    else:
        a, b, c = x, x, x
    return a.dim(), b.dim(), c + b
";
    let m = jit::script(src).unwrap();
    let x = t(&[1.0, 2.0]);
    for flag in [true, false] {
        let out = m.forward_values(&[IValue::Tensor(x.clone()), IValue::Bool(flag)]).unwrap();
        let IValue::Tuple(items) = &out[0] else { panic!("{out:?}") };
        assert!(matches!(items[..2], [IValue::Int(1), IValue::Int(1)]), "{items:?}");
        let IValue::Tensor(sum) = &items[2] else { panic!("{items:?}") };
        let want = if flag { [4.0, 6.0] } else { [2.0, 4.0] };
        assert_eq!(sum.to_vec::<f32>().unwrap(), want);
    }
}

#[test]
fn strings_lists_and_numbers_have_their_python_operations() {
    // What PyTorch's scripted nn modules use: `mode == "area"`, `str + str`, list slices and
    // concatenation, `list(l)`, `math.floor`, `is_floating_point`, `warnings.warn`, and lists
    // of strings.
    let src = r#"
def f(x: Tensor, mode: str, n: float, step: int):
    l = [1, 2, 3, 4, 5]
    a = torch.slice(l, 1, -1, step)
    b = l + [6]
    c = list(l)
    s = mode + "_x"
    names = ["nearest", "area"]
    same = mode == "area"
    other = mode != "area"
    k = math.floor(n)
    j = math.ceil(n)
    if not x.is_floating_point():
        torch.warn("an integer input", 2)
    return a, b, c, s, same, other, k, j, names[1], l == c
"#;
    let m = jit::script(src).unwrap();
    let out = m
        .forward_values(&[IValue::Tensor(t(&[1.0])), IValue::Str("area".into()), IValue::Double(2.5), IValue::Int(2)])
        .unwrap();
    let IValue::Tuple(items) = &out[0] else { panic!("{out:?}") };
    let shown: Vec<String> = items.iter().map(|v| format!("{v:?}")).collect();
    assert_eq!(
        shown,
        [
            "IntList([2, 4])",
            "IntList([1, 2, 3, 4, 5, 6])",
            "IntList([1, 2, 3, 4, 5])",
            "Str(\"area_x\")",
            "Bool(true)",
            "Bool(false)",
            "Int(2)",
            "Int(3)",
            "Str(\"area\")",
            "Bool(true)",
        ]
    );
    // Python's slices: negative steps and bounds past either end.
    let src = "
def g(l: List[int], lo: int, hi: int, step: int):
    return torch.slice(l, lo, hi, step)
";
    let m = jit::script(src).unwrap();
    let l = IValue::IntList(vec![0, 1, 2, 3, 4, 5]);
    for (lo, hi, step, want) in
        [(4, 0, -1, vec![4, 3, 2, 1]), (-2, 100, 1, vec![4, 5]), (-100, 3, 2, vec![0, 2]), (5, -100, -2, vec![5, 3, 1])]
    {
        let out = m.forward_values(&[l.clone(), IValue::Int(lo), IValue::Int(hi), IValue::Int(step)]).unwrap();
        assert_eq!(format!("{:?}", out[0]), format!("{:?}", IValue::IntList(want)), "[{lo}:{hi}:{step}]");
    }
    let err = m.forward_values(&[l, IValue::Int(0), IValue::Int(1), IValue::Int(0)]).unwrap_err().to_string();
    assert!(err.contains("step cannot be zero"), "{err}");
}

#[test]
fn left_out_arguments_take_the_forwards_defaults_and_survive_a_save() {
    let src = r#"
def f(x: Tensor, k: float = 2.5, flag: bool = False, why: str = "abc", m: Optional[Tensor] = None):
    n = len(why) + int(math.sqrt(16.0))
    if all([flag, n > 0]):
        return x * k + n
    return x * k
"#;
    let m = jit::script(src).unwrap();
    let x = IValue::Tensor(t(&[1.0, 2.0]));
    assert_eq!(floats(&m.forward_values(std::slice::from_ref(&x)).unwrap()[0]), vec![2.5, 5.0]);
    let out = m.forward_values(&[x.clone(), IValue::Double(1.0), IValue::Bool(true)]).unwrap();
    assert_eq!(floats(&out[0]), vec![8.0, 9.0]); // 3 characters + sqrt(16)
                                                 // A left-out argument without a default is an error.
    assert!(m.forward_values(&[]).is_err());
    let dir = std::env::temp_dir().join(format!("jit-defaults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.pt");
    m.save_torchscript(&path).unwrap();
    let back = jit::load(&path).unwrap();
    assert_eq!(floats(&back.forward_values(std::slice::from_ref(&x)).unwrap()[0]), vec![2.5, 5.0]);
    assert_eq!(back.input_defaults().len(), 5);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dicts_keep_pythons_order_lookups_and_errors() {
    // Insertion order (a key set again keeps its place), lookups, `in`, `get`, `pop` with and
    // without a default, `setdefault`, `update`, `del`, `clear`, iteration over keys and
    // items, int keys, and a copy that later changes do not reach.
    let src = r#"
def f(x: Tensor, n: int):
    d = {"b": 1, "a": 2}
    d["c"] = 3
    d["b"] = 10
    snap = d.copy()
    d.update({"a": 20, "e": 5})
    had = "a" in d
    missing = "zz" not in d
    got = d.get("zz")
    dflt = d.get("zz", -1)
    p = d.pop("c")
    q = d.pop("zz", 7)
    s = d.setdefault("f", 6)
    s2 = d.setdefault("b", 99)
    del d["e"]
    keys = list(d.keys())
    vals = list(d.values())
    total = 0
    for k, v in d.items():
        total += v
    order = ""
    for k in d:
        order = order + k
    squares: Dict[int, int] = {}
    for i in range(n):
        squares[i] = i * i
    t: Dict[int, Tensor] = {}
    t[0] = x
    t[1] = x * 2.0
    snap.clear()
    return order, keys, vals, total, had, missing, got is None, dflt, p, q, s, s2, len(snap), len(squares), squares[n - 1], t[1]
"#;
    let m = jit::script(src).unwrap();
    assert!(m.graph().to_string().contains("Dict(str, int)"), "{}", m.graph());
    let out = m.forward_values(&[IValue::Tensor(t(&[1.5])), IValue::Int(4)]).unwrap();
    let IValue::Tuple(items) = &out[0] else { panic!("{out:?}") };
    let expected = [
        "Str(\"baf\")",
        "Tuple([Str(\"b\"), Str(\"a\"), Str(\"f\")])",
        "IntList([10, 20, 6])",
        "Int(36)",
        "Bool(true)",
        "Bool(true)",
        "Bool(true)",
        "Int(-1)",
        "Int(3)",
        "Int(7)",
        "Int(6)",
        "Int(10)",
        "Int(0)",
        "Int(4)",
        "Int(9)",
    ];
    let shown: Vec<String> = items[..15].iter().map(|v| format!("{v:?}")).collect();
    assert_eq!(shown, expected);
    assert_eq!(floats(&items[15]), [3.0]);
    // The same after the graph passes (CSE may merge equal dict literals: values, not objects).
    let mut optimized = jit::script(src).unwrap();
    optimized.optimize();
    let again = optimized.forward_values(&[IValue::Tensor(t(&[1.5])), IValue::Int(4)]).unwrap();
    let IValue::Tuple(items) = &again[0] else { panic!("{again:?}") };
    let shown: Vec<String> = items[..15].iter().map(|v| format!("{v:?}")).collect();
    assert_eq!(shown, expected, "optimized");
    assert_eq!(floats(&items[15]), [3.0]);

    // Tensor keys are by identity, as in Python.
    let src = "
def g(x: Tensor, y: Tensor):
    d: Dict[Tensor, int] = {}
    d[x] = 1
    d[y] = 2
    d[x] = 3
    return len(d), d[x]
";
    let m = jit::script(src).unwrap();
    let a = Tensor::from_slice(&[1.0f32]);
    let same = m.forward_values(&[IValue::Tensor(a.clone()), IValue::Tensor(a.clone())]).unwrap();
    assert_eq!(format!("{:?}", same[0]), "Tuple([Int(1), Int(3)])");
    let equal_values = m.forward_values(&[IValue::Tensor(a), IValue::Tensor(t(&[1.0]))]).unwrap();
    assert_eq!(format!("{:?}", equal_values[0]), "Tuple([Int(2), Int(3)])");
}

#[test]
fn dict_errors_are_pythons() {
    let src = r#"
def f(k: str):
    d = {"a": 1}
    return d[k]
"#;
    let m = jit::script(src).unwrap();
    let err = m.forward_values(&[IValue::Str("b".into())]).unwrap_err().to_string();
    assert!(err.contains("KeyError: 'b'"), "{err}");
    let src = "
def f(k: str):
    d = {\"a\": 1}
    del d[k]
    return len(d)
";
    let err = jit::script(src).unwrap().forward_values(&[IValue::Str("q".into())]).unwrap_err().to_string();
    assert!(err.contains("KeyError: 'q'"), "{err}");
    // Types are checked when the source compiles.
    for (src, want) in [
        ("def f(x: int):\n    d = {\"a\": 1, 2: 3}\n    return d\n", "dict keys of types str and int"),
        ("def f(x: int):\n    d = {\"a\": 1}\n    return d[x]\n", "a dict key of type int where str is expected"),
        ("def f(x: int):\n    d = {\"a\": 1}\n    d[\"b\"] = 2.5\n    return d\n", "a dict value of type float"),
        ("def f(x: int):\n    d: Dict[str, int] = {\"a\": 1.5}\n    return d\n", "a dict value of type float"),
        ("def f(x: int):\n    d = {[1]: 1}\n    return d\n", "keys are str, int, float, bool or Tensor"),
        ("def f(x: int):\n    d = {\"a\": 1}\n    d.frobnicate()\n    return d\n", "dict method 'frobnicate'"),
    ] {
        let err = jit::script(src).err().unwrap_or_else(|| panic!("compiled: {src}")).to_string();
        assert!(err.contains(want), "{src}: {err}");
    }
}

#[test]
fn all_and_any_take_lists_of_numbers_and_strings() {
    // What scripted transformer layers call on the lengths of their `__torch_function__` dicts.
    let src = r#"
def f(n: int, x: float):
    ints = [0, n]
    floats = [x, 1.0]
    strs = ["", "a"]
    return all(ints), any(ints), all(floats), any([0.0]), all(strs), any(strs), torch.any(annotate(List[int], []))
"#;
    let m = jit::script(src).unwrap();
    let out = m.forward_values(&[IValue::Int(3), IValue::Double(0.0)]).unwrap();
    assert_eq!(
        format!("{:?}", out[0]),
        "Tuple([Bool(false), Bool(true), Bool(false), Bool(false), Bool(false), Bool(true), Bool(false)])"
    );
}
