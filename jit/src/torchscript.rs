//! Writing TorchScript archives that PyTorch's `torch.jit.load` runs
//! ([`ScriptModule::save_torchscript`]): the graph printed back as TorchScript source, as
//! PyTorch's `python_print.cpp` prints its own (`docs/src/jit.md`, "Writing for PyTorch").
//!
//! Note [Printing TorchScript]: the archive is what `torch.jit.save` writes for a module
//! (`shared/reference/formats-and-protocols.md` sections 0 and 2):
//! - **Modules.** The parameters' and buffers' dotted names give the module tree; each module is
//!   a class of `code/__torch__.py` (`Model` for the root, `Model_<path>` for the others) with
//!   `__parameters__`, `__buffers__`, one annotation per attribute (`__annotations__["0"] = ...`
//!   for a name that is not an identifier, as `nn.Sequential`'s children are), `training` and
//!   `_is_full_backward_hook`. Only the root has a method: `forward`, the whole graph, reading
//!   parameters and buffers as `self.fc1.weight` (`getattr(self.layers, "0").weight`).
//! - **`data.pkl`** holds the module objects (`__torch__.Model()` with a state dict of every
//!   attribute, `BUILD`), tensors as `torch.save` pickles them, storages under `data/`;
//!   **`constants.pkl`** a tuple of the graph's tensor constants (`CONSTANTS.c<k>` in the code),
//!   storages under `constants/`.
//! - **Code.** One statement per node, every value a fresh name (`_<n>`; the forward's inputs
//!   keep theirs when they are identifiers). Scalar constants are written in place. An `aten::`
//!   node is `torch.<name>(...)` with the arguments of the overload the interpreter resolves,
//!   keyword-only ones by name; PyTorch resolves the overload again from the types, as it does
//!   for its own archives. `prim::` structure has TorchScript's spelling (`[a, b]`, `(a, b)`,
//!   `a, b = t`, `ops.prim.NumToTensor(n)`, `annotate(List[int], [])`).
//! - **Control flow.** `prim::If` is an `if`/`else` assigning the node's outputs in each
//!   branch; `prim::Loop` a `for _i in range(n):` when its condition is constantly true, a
//!   `while _c:` when it has no trip count, and otherwise a `while` on both with its own
//!   counter. Loop-carried values are assigned before the loop and at the end of each trip, all
//!   at once (`a, b = b, a` must swap).
//! - **Dicts and list updates.** Our dicts and lists are values (Note [Dicts]); TorchScript's
//!   are objects that `torch._set_item(d, k, v)`, `torch.Delete`, `torch.update`,
//!   `torch.clear`, `torch.pop` and `torch.setdefault` change in place. A change is printed in
//!   place when no other name or container can see the object: it was made fresh
//!   (`DictConstruct`, `copy`, `ListConstruct`, an earlier change, a loop-carried value whose
//!   initial value is such) and is otherwise only read, before the change, by readers
//!   (`d[k]`, `len`, `in`, `keys`, `values`, `items`, `get`). Otherwise the change applies to
//!   a copy (`d.copy()`, `torch.list(xs)`), which is what the value semantics mean.
//! - **Version.** `.data/version` is 10, PyTorch's newest: the code means what the operators
//!   mean today, so none of PyTorch's upgraders (`div` before version 4, ...) applies.
//!
//! A fused graph (`prim::FusionGroup_<k>` nodes, after `optimize_for_inference`) has no TorchScript
//! spelling and is refused; save before fusing.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use aten::Tensor;
use c10::{Error, Result};
use nn::pickler::Pickler;
use nn::{Module, PtWriter};

use crate::interpreter::{is_number_op, resolve};
use crate::ir::{BlockId, Constant, Graph, NodeId, Use, ValueDef, ValueId};
use crate::module::ScriptModule;
use crate::text::{float_text, quote};
use crate::types::JitType;

/// The archive version written (Note [Printing TorchScript]).
const VERSION: u32 = 10;

fn save_error(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::invalid("jit::save_torchscript", format!("{}: {msg}", path.display()))
}

/// Python's keywords and the names TorchScript's source importer gives a meaning to: never
/// a variable's name.
const RESERVED: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "self",
    "torch",
    "ops",
    "CONSTANTS",
    "annotate",
    "getattr",
    "int",
    "float",
    "bool",
    "str",
    "len",
    "range",
    "print",
    "inf",
    "nan",
    "Tensor",
    "List",
    "Tuple",
    "Optional",
    "Dict",
    "Device",
    "Any",
    "uninitialized",
    "unchecked_cast",
    "isinstance",
    "fork",
    "wait",
    "math",
    "number",
    "NoneType",
    "Module",
    "Final",
];

/// Whether `s` can be written as a Python name (an identifier, not a keyword).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED.contains(&s)
}

/// `base.name`, or `getattr(base, "name")` for a name that is not an identifier.
fn attribute(base: &str, name: &str) -> String {
    if is_identifier(name) {
        format!("{base}.{name}")
    } else {
        format!("getattr({base}, {})", quote(name))
    }
}

/// Whether `v` is a dict or a list.
fn is_container(g: &Graph, v: Option<&ValueId>) -> bool {
    v.is_some_and(|&v| matches!(g.value_type(v), JitType::Dict(..) | JitType::List(_)))
}

/// The kinds that change a dict or list (Note [Dicts]): the container after the change is
/// their last output.
const CHANGES: [&str; 6] =
    ["aten::_set_item", "aten::Delete", "aten::update", "aten::clear", "aten::pop", "aten::setdefault"];

/// Whether the printed object of container `c` is seen by no other name or container: made by
/// a node that makes a new one, by a printed change (in place on such an object, or on a
/// copy), or a loop's carried value whose initial value is such an object used last by the
/// loop (Note [Printing TorchScript], "Dicts and list updates").
fn owned(g: &Graph, c: ValueId) -> bool {
    match g.def(c) {
        ValueDef::Node(p, k) => {
            let kind = g.kind(p);
            matches!(kind, "prim::DictConstruct" | "prim::ListConstruct" | "aten::list")
                || (kind == "aten::copy" && is_container(g, g.inputs_of(p).first()))
                || (CHANGES.contains(&kind) && k + 1 == g.outputs_of(p).len())
        }
        ValueDef::Param(b, k) => {
            let Some(l) = g.block_owner(b) else { return false };
            if g.kind(l) != "prim::Loop" || k == 0 {
                return false;
            }
            let init = g.inputs_of(l)[k + 1];
            g.constant_value(init).is_none() && owned(g, init) && read_only_before(g, init, l)
        }
    }
}

/// Whether every use of `c` other than node `n` only reads it and runs before `n` (in `n`'s
/// block, or inside a node before `n` there).
fn read_only_before(g: &Graph, c: ValueId, n: NodeId) -> bool {
    const READERS: [&str; 10] = [
        "aten::__getitem__",
        "aten::len",
        "aten::__contains__",
        "aten::keys",
        "aten::values",
        "aten::items",
        "aten::get",
        "aten::copy",
        "aten::list",
        "prim::Print",
    ];
    let b = g.node_block(n);
    let Some(pos) = g.position(n) else { return false };
    g.uses(c).iter().all(|u| match *u {
        Use::Node(m, _) if m == n => true,
        Use::Node(m, _) if READERS.contains(&g.kind(m)) => {
            let mut m = m;
            loop {
                let mb = g.node_block(m);
                if mb == b {
                    break g.position(m).is_some_and(|p| p < pos);
                }
                match g.block_owner(mb) {
                    Some(o) => m = o,
                    None => break false,
                }
            }
        }
        _ => false,
    })
}

/// The TorchScript annotation of a type (`List[int]`, `Optional[Tensor]`).
fn annotation(t: &JitType) -> String {
    match t {
        JitType::Tensor(_) => "Tensor".into(),
        JitType::Int => "int".into(),
        JitType::Float => "float".into(),
        JitType::Bool => "bool".into(),
        JitType::Str => "str".into(),
        JitType::None => "NoneType".into(),
        JitType::Device => "Device".into(),
        JitType::Number => "number".into(),
        JitType::Generator => "Generator".into(),
        JitType::List(e) => format!("List[{}]", annotation(e)),
        JitType::Tuple(ts) if ts.is_empty() => "Tuple[()]".into(),
        JitType::Tuple(ts) => format!("Tuple[{}]", ts.iter().map(annotation).collect::<Vec<_>>().join(", ")),
        JitType::Optional(e) => format!("Optional[{}]", annotation(e)),
        JitType::Dict(k, v) => format!("Dict[{}, {}]", annotation(k), annotation(v)),
    }
}

/// A module of the tree the dotted names describe.
struct ModuleNode {
    class: String,
    /// Attributes in order: tensors (with whether each is a parameter) and submodules.
    tensors: Vec<(String, Tensor, bool)>,
    children: Vec<(String, usize)>,
}

/// The module tree of `(name, tensor, is_parameter)` entries (Note [Printing TorchScript]).
fn module_tree(entries: &[(String, Tensor, bool)]) -> std::result::Result<Vec<ModuleNode>, String> {
    let mut mods = vec![ModuleNode { class: "Model".into(), tensors: Vec::new(), children: Vec::new() }];
    for (name, t, is_param) in entries {
        let parts: Vec<&str> = name.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(format!("the name {name:?} has an empty part"));
        }
        let mut m = 0;
        for (depth, part) in parts[..parts.len() - 1].iter().enumerate() {
            if mods[m].tensors.iter().any(|(n, ..)| n == part) {
                return Err(format!("{:?} is both a tensor and a module", parts[..=depth].join(".")));
            }
            m = match mods[m].children.iter().find(|(n, _)| n == part) {
                Some(&(_, c)) => c,
                None => {
                    let class = format!(
                        "Model_{}_{}",
                        mods.len(),
                        parts[..=depth]
                            .join("_")
                            .chars()
                            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect::<String>()
                    );
                    mods.push(ModuleNode { class, tensors: Vec::new(), children: Vec::new() });
                    let c = mods.len() - 1;
                    mods[m].children.push((part.to_string(), c));
                    c
                }
            };
        }
        let last = parts[parts.len() - 1];
        if mods[m].children.iter().any(|(n, _)| n == last) || mods[m].tensors.iter().any(|(n, ..)| n == last) {
            return Err(format!("{name:?} is named twice"));
        }
        mods[m].tensors.push((last.to_string(), t.clone(), *is_param));
    }
    Ok(mods)
}

/// The class definitions of `code/__torch__.py`, with `forward` in the root's.
fn classes(mods: &[ModuleNode], forward: &str) -> String {
    let mut out = String::new();
    for (k, m) in mods.iter().enumerate() {
        let _ = writeln!(out, "class {}(Module):", m.class);
        let names = |param: bool| {
            m.tensors
                .iter()
                .filter(|(_, _, p)| *p == param)
                .map(|(n, ..)| format!("{}, ", quote(n)))
                .collect::<String>()
        };
        let _ = writeln!(out, "  __parameters__ = [{}]", names(true));
        let _ = writeln!(out, "  __buffers__ = [{}]", names(false));
        let mut declare = |name: &str, ty: &str| {
            let _ = if is_identifier(name) {
                writeln!(out, "  {name} : {ty}")
            } else {
                writeln!(out, "  __annotations__[{}] = {ty}", quote(name))
            };
        };
        for (n, ..) in &m.tensors {
            declare(n, "Tensor");
        }
        declare("training", "bool");
        declare("_is_full_backward_hook", "Optional[bool]");
        for (n, c) in &m.children {
            declare(n, &format!("__torch__.{}", mods[*c].class));
        }
        if k == 0 {
            out.push_str(forward);
        }
    }
    out
}

/// `data.pkl`: the module objects, depth first.
fn pickle_modules(mods: &[ModuleNode], training: bool, w: &mut PtWriter) -> Result<Vec<u8>> {
    fn one(mods: &[ModuleNode], k: usize, training: bool, w: &mut PtWriter, p: &mut Pickler) -> Result<()> {
        let m = &mods[k];
        p.global("__torch__", &m.class).empty_tuple().newobj();
        p.empty_dict().mark();
        for (n, t, is_param) in &m.tensors {
            p.str(n);
            w.tensor(p, t, "data", *is_param)?;
        }
        p.str("training").bool(training);
        p.str("_is_full_backward_hook").none();
        for (n, c) in &m.children {
            p.str(n);
            one(mods, *c, training, w, p)?;
        }
        p.setitems().build();
        Ok(())
    }
    let mut p = Pickler::new();
    one(mods, 0, training, w, &mut p)?;
    Ok(p.finish())
}

/// Prints a graph as the body of `forward` (Note [Printing TorchScript]).
struct Printer<'g> {
    g: &'g Graph,
    names: HashMap<ValueId, String>,
    next: usize,
    out: String,
}

impl Printer<'_> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn name(&mut self, v: ValueId) -> String {
        if let Some(n) = self.names.get(&v) {
            return n.clone();
        }
        let n = self.fresh("_");
        self.names.insert(v, n.clone());
        n
    }

    /// How a value is used: its name, or a constant written in place.
    fn use_of(&mut self, v: ValueId) -> Result<String> {
        if let Some(n) = self.names.get(&v) {
            return Ok(n.clone());
        }
        if let Some(c) = self.g.constant_value(v) {
            return self.literal(&c);
        }
        Ok(self.name(v))
    }

    fn literal(&self, c: &Constant) -> Result<String> {
        let ints = |xs: &[i64]| xs.iter().map(i64::to_string).collect::<Vec<_>>();
        let list = |items: Vec<String>, elem: &str| {
            if items.is_empty() {
                format!("annotate(List[{elem}], [])")
            } else {
                format!("[{}]", items.join(", "))
            }
        };
        Ok(match c {
            Constant::None => "None".into(),
            Constant::Int(i) => i.to_string(),
            Constant::Float(x) => float_text(*x),
            Constant::Bool(b) => if *b { "True" } else { "False" }.into(),
            Constant::Str(s) => quote(s),
            Constant::IntList(xs) => list(ints(xs), "int"),
            Constant::FloatList(xs) => list(xs.iter().map(|&x| float_text(x)).collect(), "float"),
            Constant::BoolList(xs) => {
                list(xs.iter().map(|&b| if b { "True" } else { "False" }.to_string()).collect(), "bool")
            }
            Constant::Device(d) => format!("torch.device({})", quote(&d.to_string())),
            Constant::Tensor(k) => {
                if *k >= self.g.tensor_constants.len() {
                    return Err(Error::invalid("jit::save_torchscript", format!("tensor constant {k} is missing")));
                }
                format!("CONSTANTS.c{k}")
            }
        })
    }

    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// `a, b = x, y` (or `a = x`): every right-hand side is read before any name is set.
    fn assign(&mut self, indent: usize, lhs: &[String], rhs: &[String]) {
        if lhs.is_empty() {
            return;
        }
        let s = format!("{} = {}", lhs.join(", "), rhs.join(", "));
        self.line(indent, &s);
    }

    fn block(&mut self, b: BlockId, indent: usize) -> Result<()> {
        for &n in self.g.block_nodes(b) {
            self.node(n, indent)?;
        }
        Ok(())
    }

    fn uses(&mut self, vs: &[ValueId]) -> Result<Vec<String>> {
        vs.iter().map(|&v| self.use_of(v)).collect()
    }

    fn node(&mut self, n: NodeId, indent: usize) -> Result<()> {
        let g = self.g;
        let kind = g.kind(n);
        let ins = g.inputs_of(n);
        let outs = g.outputs_of(n);
        let unsupported = || Error::invalid("jit::save_torchscript", format!("{kind} has no TorchScript spelling"));
        let rhs = match kind {
            "prim::Constant" => return Ok(()),
            "prim::If" => return self.if_node(n, indent),
            "prim::Loop" => return self.loop_node(n, indent),
            "prim::TupleUnpack" | "prim::ListUnpack" => {
                if outs.is_empty() {
                    return Ok(());
                }
                let src = self.use_of(ins[0])?;
                let lhs: Vec<String> = outs.iter().map(|&v| self.name(v)).collect();
                let text =
                    if lhs.len() == 1 { format!("{}, = {src}", lhs[0]) } else { format!("{} = {src}", lhs.join(", ")) };
                self.line(indent, &text);
                return Ok(());
            }
            "prim::ListConstruct" => {
                let items = self.uses(ins)?;
                if items.is_empty() {
                    format!("annotate({}, [])", annotation(g.value_type(outs[0])))
                } else {
                    format!("[{}]", items.join(", "))
                }
            }
            "prim::TupleConstruct" => {
                let items = self.uses(ins)?;
                match items.len() {
                    1 => format!("({},)", items[0]),
                    _ => format!("({})", items.join(", ")),
                }
            }
            "prim::TupleIndex" | "prim::ListIndex" | "aten::__getitem__" => {
                let a = self.uses(ins)?;
                format!("{}[{}]", a[0], a[1])
            }
            "aten::len" => format!("len({})", self.use_of(ins[0])?),
            "aten::Int" => format!("int({})", self.use_of(ins[0])?),
            "aten::Float" => format!("float({})", self.use_of(ins[0])?),
            "aten::Bool" => format!("bool({})", self.use_of(ins[0])?),
            "aten::__not__" => format!("not {}", self.use_of(ins[0])?),
            "aten::__is__" | "aten::__isnot__" => {
                let a = self.uses(ins)?;
                format!("{} {} {}", a[0], if kind == "aten::__is__" { "is" } else { "is not" }, a[1])
            }
            "aten::__contains__" => {
                let a = self.uses(ins)?;
                format!("{} in {}", a[1], a[0])
            }
            "prim::DictConstruct" => {
                let items = self.uses(ins)?;
                let pairs: Vec<String> = items.chunks(2).map(|p| format!("{}: {}", p[0], p[1])).collect();
                format!("annotate({}, {{{}}})", annotation(g.value_type(outs[0])), pairs.join(", "))
            }
            "aten::keys" | "aten::values" | "aten::items" | "aten::get" if is_container(g, ins.first()) => {
                format!("torch.{}({})", &kind[6..], self.uses(ins)?.join(", "))
            }
            "aten::copy" if is_container(g, ins.first()) => format!("{}.copy()", self.use_of(ins[0])?),
            "aten::_set_item" | "aten::Delete" | "aten::update" | "aten::clear" | "aten::pop" | "aten::setdefault"
                if is_container(g, ins.first()) =>
            {
                let target = self.changeable(n, indent)?;
                let mut args = vec![target.clone()];
                args.extend(self.uses(&ins[1..])?);
                let call = format!("torch.{}({})", &kind[6..], args.join(", "));
                // The container after the change is the changed object; `pop` and
                // `setdefault` give the value first.
                if let Some(&after) = outs.last() {
                    self.names.insert(after, target);
                }
                match outs {
                    [value, _] => {
                        let v = self.name(*value);
                        self.line(indent, &format!("{v} = {call}"));
                    }
                    _ => self.line(indent, &call),
                }
                return Ok(());
            }
            "aten::append" => {
                // Our IR's append gives the list after it as a new value (the importer rebinds
                // every name of the old one); in TorchScript the list is changed in place, so
                // the new value is the old name.
                let mut list = self.use_of(ins[0])?;
                if !self.names.contains_key(&ins[0]) {
                    let named = self.name(ins[0]);
                    self.line(indent, &format!("{named} = {list}"));
                    list = named;
                }
                let x = self.use_of(ins[1])?;
                let unused = self.fresh("_");
                self.line(indent, &format!("{unused} = torch.append({list}, {x})"));
                if let Some(&o) = outs.first() {
                    self.names.insert(o, list);
                }
                return Ok(());
            }
            "aten::size"
            | "aten::dim"
            | "aten::numel"
            | "aten::format"
            | "aten::__range_length"
            | "aten::__derive_index" => {
                let a = self.uses(ins)?;
                format!("torch.{}({})", &kind[6..], a.join(", "))
            }
            "prim::NumToTensor"
            | "prim::dtype"
            | "prim::device"
            | "prim::min"
            | "prim::max"
            | "prim::RaiseException"
            | "prim::is_nested"
            | "prim::type"
            | "prim::requires_grad"
            | "prim::is_cuda" => {
                let a = self.uses(ins)?;
                format!("ops.prim.{}({})", &kind[6..], a.join(", "))
            }
            "prim::Print" => format!("print({})", self.uses(ins)?.join(", ")),
            "prim::Uninitialized" => format!("uninitialized({})", annotation(g.value_type(outs[0]))),
            "prim::unchecked_cast" => {
                format!("unchecked_cast({}, {})", annotation(g.value_type(outs[0])), self.use_of(ins[0])?)
            }
            k if k.starts_with("aten::") => {
                let name = &k[6..];
                let numbers =
                    ins.iter().all(|&v| matches!(g.value_type(v), JitType::Int | JitType::Float | JitType::Bool));
                if numbers && (is_number_op(name) || (name == "neg" && ins.len() == 1)) {
                    format!("torch.{name}({})", self.uses(ins)?.join(", "))
                } else if let Ok((_, schema)) = resolve(g, n) {
                    let mut args = Vec::new();
                    for (a, &v) in schema.arguments.iter().zip(ins) {
                        let u = self.use_of(v)?;
                        args.push(if a.kwarg_only { format!("{}={u}", a.name) } else { u });
                    }
                    format!("torch.{name}({})", args.join(", "))
                } else {
                    // A builtin without a schema of ours (`eq` of two strings, a list's `slice`,
                    // `warn`, `is_floating_point`): TorchScript spells it the same way.
                    format!("torch.{name}({})", self.uses(ins)?.join(", "))
                }
            }
            _ => return Err(unsupported()),
        };
        let lhs: Vec<String> = outs.iter().map(|&v| self.name(v)).collect();
        let text = if lhs.is_empty() { rhs } else { format!("{} = {rhs}", lhs.join(", ")) };
        self.line(indent, &text);
        Ok(())
    }

    /// The name of an object that node `n` may change in place for its first input: the
    /// input's own, or a fresh copy (Note [Printing TorchScript], "Dicts and list updates").
    fn changeable(&mut self, n: NodeId, indent: usize) -> Result<String> {
        let c = self.g.inputs_of(n)[0];
        let cur = self.use_of(c)?;
        if self.g.constant_value(c).is_none() && owned(self.g, c) && read_only_before(self.g, c, n) {
            return Ok(cur);
        }
        let copy = if matches!(self.g.value_type(c), JitType::Dict(..)) {
            format!("{cur}.copy()")
        } else {
            format!("torch.list({cur})")
        };
        let fresh = self.fresh("_");
        self.line(indent, &format!("{fresh} = {copy}"));
        Ok(fresh)
    }

    fn if_node(&mut self, n: NodeId, indent: usize) -> Result<()> {
        let g = self.g;
        let cond = self.use_of(g.inputs_of(n)[0])?;
        let outs: Vec<String> = g.outputs_of(n).iter().map(|&v| self.name(v)).collect();
        let blocks = g.blocks_of(n).to_vec();
        for (i, b) in blocks.into_iter().enumerate() {
            let header = if i == 0 { format!("if {cond}:") } else { "else:".to_string() };
            self.line(indent, &header);
            let before = self.out.len();
            self.block(b, indent + 1)?;
            let rets = self.uses(g.block_returns(b))?;
            self.assign(indent + 1, &outs, &rets);
            if self.out.len() == before {
                self.line(indent + 1, "pass");
            }
        }
        Ok(())
    }

    fn loop_node(&mut self, n: NodeId, indent: usize) -> Result<()> {
        let g = self.g;
        let ins = g.inputs_of(n);
        let body = g.blocks_of(n)[0];
        let params = g.block_params(body);
        let rets = g.block_returns(body);
        let trip = g.constant_value(ins[0]);
        let true_const = |v: ValueId| matches!(g.constant_value(v), Some(Constant::Bool(true)));
        let always = true_const(ins[1]) && true_const(rets[0]);
        let counter_used = !g.uses(params[0]).is_empty();
        let unbounded = matches!(trip, Some(Constant::Int(i64::MAX))) && !counter_used;
        // The carried values: the node's outputs, which the body's parameters alias.
        let outs: Vec<String> = g.outputs_of(n).iter().map(|&v| self.name(v)).collect();
        for (&p, o) in params[1..].iter().zip(&outs) {
            self.names.insert(p, o.clone());
        }
        let init = self.uses(&ins[2..])?;
        self.assign(indent, &outs, &init);
        let i = self.name(params[0]);
        let mut carried = outs;
        // Set at the end of each trip, from what the body returns: the condition first unless
        // the loop is a `for`, and the counter last when the loop keeps its own.
        let mut cond = None;
        let mut counter = false;
        if always {
            let t = self.use_of(ins[0])?;
            self.line(indent, &format!("for {i} in range({t}):"));
        } else {
            let c = self.fresh("_c");
            let first = self.use_of(ins[1])?;
            self.assign(indent, std::slice::from_ref(&c), &[first]);
            if unbounded {
                self.line(indent, &format!("while {c}:"));
            } else {
                let t = self.use_of(ins[0])?;
                self.assign(indent, std::slice::from_ref(&i), &["0".into()]);
                self.line(indent, &format!("while {c} and torch.lt({i}, {t}):"));
                counter = true;
            }
            cond = Some(c);
        }
        let before = self.out.len();
        self.block(body, indent + 1)?;
        let mut next = self.uses(&rets[1..])?;
        if counter {
            carried.push(i.clone());
            next.push(format!("torch.add({i}, 1)"));
        }
        if let Some(c) = cond {
            carried.insert(0, c);
            next.insert(0, self.use_of(rets[0])?);
        }
        self.assign(indent + 1, &carried, &next);
        if self.out.len() == before {
            self.line(indent + 1, "pass");
        }
        Ok(())
    }
}

impl ScriptModule {
    /// Writes the module as a TorchScript archive that PyTorch's `torch.jit.load` runs (Note
    /// [Printing TorchScript]); our [`crate::load`] reads it too. The parameters and buffers
    /// keep their names (the loaded module's `state_dict()` has ours), and the file is
    /// written under a temporary name and renamed.
    ///
    /// ```no_run
    /// # use nn::{Linear, Forward};
    /// let fc = Linear::new(4, 2).unwrap();
    /// let x = aten::ops::randn(&[3, 4], None, None, None, None).unwrap();
    /// let traced = jit::trace(&fc, &x).unwrap();
    /// traced.save_torchscript("fc.pt").unwrap(); // torch.jit.load("fc.pt") in Python
    /// ```
    pub fn save_torchscript(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let g = self.graph();
        if g.all_nodes().iter().any(|&n| g.kind(n).starts_with("prim::FusionGroup")) {
            return Err(save_error(
                path,
                "the graph has fusion groups (prim::FusionGroup), which TorchScript cannot spell; \
                 save the module before optimize_for_inference",
            ));
        }
        let mut entries: Vec<(String, Tensor, bool)> = Vec::new();
        entries.extend(self.named_parameters().into_iter().map(|(n, p)| (n, p.tensor().clone(), true)));
        entries.extend(self.named_buffers().into_iter().map(|(n, b)| (n, b, false)));
        let detached: Vec<(String, Tensor, bool)> =
            entries.into_iter().map(|(n, t, p)| (n, autograd::TensorAutograd::detach(&t), p)).collect();
        let mods = module_tree(&detached).map_err(|m| save_error(path, m))?;

        // The forward: inputs, then parameters and buffers read from the modules.
        let mut pr = Printer { g, names: HashMap::new(), next: 0, out: String::new() };
        let inputs = g.inputs();
        let n_user = self.num_inputs();
        let mut signature = vec!["self: __torch__.Model".to_string()];
        for (i, &v) in inputs[..n_user].iter().enumerate() {
            let name = match g.value_name(v) {
                Some(n) if is_identifier(n) && !n.starts_with('_') && !pr.names.values().any(|m| m == n) => {
                    n.to_string()
                }
                _ => format!("argument_{}", i + 1),
            };
            pr.names.insert(v, name.clone());
            let default = match &self.input_defaults()[i] {
                Some(c) => format!("={}", pr.literal(c).map_err(|e| save_error(path, e))?),
                None => String::new(),
            };
            signature.push(format!("{name}: {}{default}", annotation(g.value_type(v))));
        }
        for (&v, (name, ..)) in inputs[n_user..].iter().zip(&detached) {
            if g.uses(v).is_empty() {
                continue;
            }
            let mut expr = "self".to_string();
            for part in name.split('.') {
                expr = attribute(&expr, part);
            }
            let local = pr.name(v);
            pr.line(2, &format!("{local} = {expr}"));
        }
        pr.block(g.root(), 2).map_err(|e| save_error(path, e))?;
        let outputs = g.outputs().to_vec();
        let rets = pr.uses(&outputs).map_err(|e| save_error(path, e))?;
        let ret_ty = match outputs.len() {
            1 => annotation(g.value_type(outputs[0])),
            _ => annotation(&JitType::Tuple(outputs.iter().map(|&v| g.value_type(v).clone()).collect())),
        };
        match rets.len() {
            1 => pr.line(2, &format!("return {}", rets[0])),
            0 => pr.line(2, "return ()"),
            _ => pr.line(2, &format!("return ({})", rets.join(", "))),
        }
        let forward = format!("  def forward({}) -> {ret_ty}:\n{}", signature.join(",\n    "), pr.out);

        let mut w = PtWriter::new();
        let data = pickle_modules(&mods, self.is_training(), &mut w)?;
        w.record("data.pkl", data)?;
        let mut p = Pickler::new();
        p.mark();
        for t in &g.tensor_constants {
            w.tensor(&mut p, &autograd::TensorAutograd::detach(t), "constants", false)?;
        }
        p.tuple();
        w.record("constants.pkl", p.finish())?;
        w.record("code/__torch__.py", classes(&mods, &forward).into_bytes())?;
        w.record(".data/version", format!("{VERSION}\n").into_bytes())?;
        w.write(path)
    }
}
