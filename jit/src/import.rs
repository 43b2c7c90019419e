//! Loading archives written by PyTorch's `torch.jit.save` for traced modules: `constants.pkl`
//! (the tensors the code calls `CONSTANTS.c<i>`), `data.pkl` (the module tree: one object per
//! module, its attributes, parameters and buffers) and the TorchScript code of every class
//! (`code/__torch__/....py`, parsed by [`crate::script`]). The root's `forward` is compiled into
//! one graph, with every submodule's `forward` inlined where it is called; the parameters and
//! buffers of the whole tree become the graph's trailing inputs, named as in the state_dict
//! (`fc1.weight`), so the result is a [`ScriptModule`] like a traced one.
//!
//! Note [Calls in TorchScript code]: a call `torch.name(args, kw=value)` names an operator
//! without its overload and leaves out arguments that have their default. It is matched as
//! TorchScript matches it: each overload of `name` binds the positional arguments in order and
//! the keyword ones by name, fills the rest from the schema's defaults, and must accept every
//! given value's type (`interpreter::fit`); the best fit wins. The defaults become constants, so
//! the node has every argument, as traced nodes do.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use c10::{Error, Result};
use nn::pickle::{Dict, Object, Value};
use nn::{Buffer, Parameter, PtArchive};
use schema::{DefaultValue, FunctionSchema, Type};

use crate::interpreter::{fit, memory_format_code, overloads_of};
use crate::ir::{BlockId, Constant, Graph, ValueId};
use crate::module::ScriptModule;
use crate::script::{parse_source, BinOp, Class, Expr, Method};
use crate::types::JitType;

fn load_error(archive: &PtArchive, msg: impl std::fmt::Display) -> Error {
    Error::invalid("jit::load", format!("{}: {msg}", archive.path().display()))
}

/// A module of the tree.
pub(crate) struct ModInfo {
    /// The dotted path from the root (`""` for the root).
    pub(crate) path: String,
    /// Its class's code.
    pub(crate) class: Rc<Class>,
    /// Its attributes.
    pub(crate) state: Dict,
}

/// What a name or expression stands for while compiling.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sym {
    Value(ValueId),
    Module(usize),
    Tuple(Vec<Sym>),
    /// `torch`, `ops.prim`, `torch.linear`, a function's name, ... (resolved when called).
    Global(String),
    /// A name that may not be read, and why (assigned in one branch of an `if` only, or with
    /// different types in the two).
    Undefined(String),
}

/// A call's compiled positional and keyword arguments.
type CallArgs = (Vec<Sym>, Vec<(String, Sym)>);

/// The names in scope while compiling a function body.
pub(crate) type Env = HashMap<String, Sym>;

/// The compiler from TorchScript source to a graph (Note [Calls in TorchScript code], Note
/// [Control flow in the emitter] in `emit.rs`).
pub(crate) struct Importer<'a> {
    /// The archive the code comes from (`None` for `jit::script`).
    pub(crate) archive: Option<&'a mut PtArchive>,
    /// What errors name: the archive's path or the source's name.
    pub(crate) origin: String,
    /// The operation errors are reported for (`jit::load`, `jit::script`).
    pub(crate) op: &'static str,
    pub(crate) graph: Graph,
    pub(crate) mods: Vec<ModInfo>,
    pub(crate) classes: HashMap<String, Rc<Class>>,
    /// Functions by name (`jit::script`'s own, or `__torch__.mod.f` from an archive's code).
    pub(crate) functions: HashMap<String, Rc<Method>>,
    /// The archive's code files read so far (`__torch__.a.b` for `code/__torch__/a/b.py`).
    code_read: HashSet<String>,
    /// `fc1.weight` → its graph input.
    pub(crate) tensors: HashMap<String, ValueId>,
    pub(crate) constants: Vec<usize>,
    /// How many submodule `forward`s are being inlined, one inside the other.
    pub(crate) inlined: usize,
    /// The recursion of the compiler: expressions being compiled plus inlined methods (see
    /// Note [Nesting limits]).
    pub(crate) nesting: usize,
    /// The block nodes are appended to.
    pub(crate) cur: BlockId,
    /// Where the statement being compiled is (`code/__torch__.py:12`), for errors.
    pub(crate) at: String,
    /// The source of the function being compiled (what `at` names).
    pub(crate) src: String,
    /// Whether the statements being compiled are in a loop's body (of this function).
    pub(crate) in_loop: bool,
}

/// How many submodules may be inlined one inside the other (the module tree's depth).
pub(crate) const MAX_MODULE_DEPTH: usize = 64;
/// How deep the compiler may recurse over expressions, blocks and inlined methods together
/// (see Note [Nesting limits]): an expression nests at most `script::MAX_EXPR_DEPTH` levels,
/// and each inlined call adds the depth of its call site.
pub(crate) const MAX_COMPILE_DEPTH: usize = 400;
/// How many modules a tree may have; a shared submodule counts once per path to it, so a
/// crafted `data.pkl` sharing one object under two names at every level would otherwise
/// describe 2^64 modules.
const MAX_MODULES: usize = 1 << 16;

fn qualified_name(o: &Object) -> String {
    let c = o.class();
    format!("{}.{}", c.module(), c.name())
}

pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Names that stand for themselves when nothing in scope has them.
const GLOBALS: [&str; 27] = [
    "torch",
    "ops",
    "CONSTANTS",
    "int",
    "float",
    "bool",
    "len",
    "range",
    "enumerate",
    "zip",
    "min",
    "max",
    "isinstance",
    "getattr",
    "annotate",
    "unchecked_cast",
    "uninitialized",
    "print",
    "math",
    "F",
    "__torch__",
    "abs",
    "str",
    "Tensor",
    "list",
    "all",
    "any",
];

/// The aten operator a binary operator on tensors calls.
pub(crate) fn tensor_op(op: BinOp) -> Option<&'static str> {
    use BinOp::*;
    Some(match op {
        Add => "add",
        Sub => "sub",
        Mul => "mul",
        Div => "div",
        FloorDiv => "floor_divide",
        Mod => "remainder",
        Pow => "pow",
        MatMul => "matmul",
        BitAnd => "bitwise_and",
        BitOr => "bitwise_or",
        BitXor => "bitwise_xor",
        LShift => "bitwise_left_shift",
        RShift => "bitwise_right_shift",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
        Eq => "eq",
        Ne => "ne",
        Is | IsNot | In | NotIn => return None,
    })
}

/// The interpreter's builtin for a binary operator on numbers (`aten::add` of two ints).
fn number_op(op: BinOp) -> Option<&'static str> {
    use BinOp::*;
    Some(match op {
        Add => "add",
        Sub => "sub",
        Mul => "mul",
        Div => "div",
        FloorDiv => "floordiv",
        Mod => "remainder",
        Pow => "pow",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
        Eq => "eq",
        Ne => "ne",
        BitAnd => "__and__",
        BitOr => "__or__",
        _ => return None,
    })
}

fn is_number(t: &JitType) -> bool {
    matches!(t, JitType::Int | JitType::Float | JitType::Bool | JitType::Number)
}

/// The type of a builtin number operation's result.
fn number_result(name: &str, a: &JitType, b: &JitType) -> JitType {
    let int = |t: &JitType| matches!(t, JitType::Int | JitType::Bool);
    match name {
        "lt" | "le" | "gt" | "ge" | "eq" | "ne" => JitType::Bool,
        "__and__" | "__or__" if *a == JitType::Bool && *b == JitType::Bool => JitType::Bool,
        "div" => JitType::Float,
        _ if *a == JitType::Number || *b == JitType::Number => JitType::Number,
        _ if int(a) && int(b) => JitType::Int,
        _ => JitType::Float,
    }
}

/// The type two values of types `a` and `b` merge into (the outputs of an `If` whose branches
/// give them), or `None` when they do not (an `int` and a `Tensor`).
pub(crate) fn unify(a: &JitType, b: &JitType) -> Option<JitType> {
    match (a, b) {
        (a, b) if a == b => Some(a.clone()),
        (JitType::Tensor(_), JitType::Tensor(_)) => Some(JitType::tensor()),
        (JitType::None, JitType::Optional(t)) | (JitType::Optional(t), JitType::None) => {
            Some(JitType::Optional(t.clone()))
        }
        (JitType::None, t) | (t, JitType::None) => Some(JitType::Optional(Box::new(t.clone()))),
        (JitType::Optional(x), y) | (y, JitType::Optional(x)) => unify(x, y).map(|t| JitType::Optional(Box::new(t))),
        (JitType::List(x), JitType::List(y)) => unify(x, y).map(|t| JitType::List(Box::new(t))),
        // Dicts are invariant in their types: only tensor details may differ.
        (JitType::Dict(k, v), JitType::Dict(k2, v2)) if k.erased() == k2.erased() && v.erased() == v2.erased() => {
            Some(JitType::Dict(Box::new(k.erased()), Box::new(v.erased())))
        }
        (JitType::Tuple(xs), JitType::Tuple(ys)) if xs.len() == ys.len() => {
            xs.iter().zip(ys).map(|(x, y)| unify(x, y)).collect::<Option<Vec<_>>>().map(JitType::Tuple)
        }
        _ => None,
    }
}

/// The IR type a TorchScript annotation names (`Optional[Tensor]`, `List[int]`, `Tuple[int,
/// Tensor]`), or `None` for one the compiler does not model.
pub(crate) fn annotation_type(e: &Expr) -> Option<JitType> {
    Some(match e {
        Expr::Name(n) => match n.as_str() {
            "Tensor" => JitType::tensor(),
            "int" => JitType::Int,
            "float" => JitType::Float,
            "bool" => JitType::Bool,
            "str" => JitType::Str,
            "number" => JitType::Number,
            "Device" => JitType::Device,
            "NoneType" => JitType::None,
            _ => return None,
        },
        Expr::None => JitType::None,
        Expr::Attr(base, n) if n == "Tensor" && **base == Expr::Name("torch".into()) => JitType::tensor(),
        Expr::Subscript(outer, inner) => {
            let Expr::Name(o) = outer.as_ref() else { return None };
            let items: Vec<&Expr> = match inner.as_ref() {
                Expr::Tuple(items) => items.iter().collect(),
                one => vec![one],
            };
            match (o.as_str(), items.as_slice()) {
                ("Optional", [t]) => JitType::Optional(Box::new(annotation_type(t)?)),
                ("List", [t]) => JitType::List(Box::new(annotation_type(t)?)),
                ("Dict", [k, v]) => JitType::Dict(Box::new(annotation_type(k)?), Box::new(annotation_type(v)?)),
                ("Final", [t]) => annotation_type(t)?,
                ("Tuple", ts) => JitType::Tuple(ts.iter().map(|t| annotation_type(t)).collect::<Option<_>>()?),
                // `Union[float, int]` (what `LPPool`'s `norm_type` is): a number.
                ("Union", ts)
                    if ts.len() > 1
                        && ts.iter().all(|t| matches!(annotation_type(t), Some(JitType::Int | JitType::Float))) =>
                {
                    JitType::Number
                }
                _ => return None,
            }
        }
        _ => return None,
    })
}

impl Importer<'_> {
    /// A compiler with an empty graph.
    pub(crate) fn new<'a>(archive: Option<&'a mut PtArchive>, origin: String, op: &'static str) -> Importer<'a> {
        let graph = Graph::new();
        let cur = graph.root();
        Importer {
            archive,
            origin,
            op,
            graph,
            mods: Vec::new(),
            classes: HashMap::new(),
            functions: HashMap::new(),
            code_read: HashSet::new(),
            tensors: HashMap::new(),
            constants: Vec::new(),
            inlined: 0,
            nesting: 0,
            cur,
            at: String::new(),
            src: String::new(),
            in_loop: false,
        }
    }

    pub(crate) fn err(&self, msg: impl std::fmt::Display) -> Error {
        if self.at.is_empty() {
            Error::invalid(self.op, format!("{}: {msg}", self.origin))
        } else {
            Error::invalid(self.op, format!("{}: {msg} (at {})", self.origin, self.at))
        }
    }

    fn archive(&mut self) -> Result<&mut PtArchive> {
        let e = self.err("no archive to read code from");
        self.archive.as_deref_mut().ok_or(e)
    }

    /// Reads `code/<module path>.py` of the archive, registering its classes and functions.
    fn read_code(&mut self, module: &str) -> Result<()> {
        let record = format!("code/{}.py", module.replace('.', "/"));
        let archive = self.archive()?;
        if !archive.has_record(&record) {
            return Err(self.err(format!("no code for {module} (expected {record})")));
        }
        let archive = self.archive()?;
        let bytes = archive.read_record(&record)?;
        let source = archive.source(&record);
        let text = String::from_utf8(bytes).map_err(|_| self.err(format!("{record} is not UTF-8")))?;
        let file = parse_source(&text, &source)?;
        for c in file.classes {
            self.classes.insert(format!("{module}.{}", c.name), Rc::new(c));
        }
        for f in file.functions {
            self.functions.insert(format!("{module}.{}", f.name), Rc::new(f));
        }
        // A missing name is not looked for in this file again.
        self.code_read.insert(module.to_string());
        Ok(())
    }

    /// The code of a class (`__torch__.a.b.Cls` is class `Cls` of `code/__torch__/a/b.py`).
    fn class(&mut self, qualified: &str) -> Result<Rc<Class>> {
        if let Some(c) = self.classes.get(qualified) {
            return Ok(c.clone());
        }
        let (module, name) = qualified.rsplit_once('.').ok_or_else(|| self.err(format!("class name '{qualified}'")))?;
        let (module, name) = (module.to_string(), name.to_string());
        if !self.code_read.contains(&module) {
            self.read_code(&module)?;
        }
        self.classes.get(qualified).cloned().ok_or_else(|| self.err(format!("code/{module}.py has no class {name}")))
    }

    /// A function of the source (`jit::script`) or of an archive's code (`__torch__.m.f`).
    fn function(&mut self, name: &str) -> Result<Option<Rc<Method>>> {
        if let Some(f) = self.functions.get(name) {
            return Ok(Some(f.clone()));
        }
        let Some((module, _)) = name.rsplit_once('.') else { return Ok(None) };
        if !module.starts_with("__torch__") || self.archive.is_none() {
            return Ok(None);
        }
        if !self.code_read.contains(module) {
            self.read_code(module)?;
        }
        Ok(self.functions.get(name).cloned())
    }

    /// Registers the module tree under `root`, depth first (parents before children, children
    /// in attribute order), without recursion: `data.pkl` may nest objects without limit, or
    /// make a module its own descendant (see Note [Nesting limits]).
    fn add_modules(&mut self, root: &Object) -> Result<()> {
        // (path, object, its ancestors' objects).
        let mut pending: Vec<(String, Object, Rc<Vec<Object>>)> =
            vec![(String::new(), root.clone(), Rc::new(Vec::new()))];
        while let Some((path, obj, ancestors)) = pending.pop() {
            if ancestors.iter().any(|a| a.ptr_eq(&obj)) {
                return Err(self.err(format!("module {path:?} contains itself")));
            }
            if ancestors.len() >= MAX_MODULE_DEPTH {
                return Err(self.err(format!("modules nested more than {MAX_MODULE_DEPTH} deep (at {path:?})")));
            }
            if self.mods.len() >= MAX_MODULES {
                return Err(self.err(format!("more than {MAX_MODULES} modules")));
            }
            let class = self.class(&qualified_name(&obj))?;
            let state = match obj.state() {
                Some(Value::Dict(d)) => d,
                Some(other) => {
                    return Err(self.err(format!("module {path:?}: its state is a {}, not a dict", other.kind())))
                }
                None => Dict::new(Vec::new()),
            };
            self.mods.push(ModInfo { path: path.clone(), class, state: state.clone() });
            let mut inner = (*ancestors).clone();
            inner.push(obj);
            let inner = Rc::new(inner);
            let children: Vec<(String, Object)> = state
                .borrow()
                .iter()
                .filter_map(|(k, v)| match (k.as_str(), v) {
                    (Some(name), Value::Object(child)) if child.class().module().starts_with("__torch__") => {
                        Some((join(&path, name), child.clone()))
                    }
                    _ => None,
                })
                .collect();
            // Popped in attribute order.
            pending.extend(children.into_iter().rev().map(|(p, c)| (p, c, inner.clone())));
        }
        Ok(())
    }

    /// The direct submodules of module `m`, in attribute order (a `ModuleList`'s items).
    pub(crate) fn children(&self, m: usize) -> Vec<usize> {
        let path = &self.mods[m].path;
        (0..self.mods.len())
            .filter(|&c| {
                let p = &self.mods[c].path;
                c != m
                    && match p.strip_prefix(path.as_str()) {
                        Some(rest) if path.is_empty() => !rest.is_empty() && !rest.contains('.'),
                        Some(rest) => rest.starts_with('.') && !rest[1..].contains('.'),
                        None => false,
                    }
            })
            .collect()
    }

    fn tensor_attr(&self, m: usize, name: &str) -> Result<aten::Tensor> {
        match self.mods[m].state.get(name) {
            Some(Value::Tensor(t)) => Ok(t),
            Some(Value::None) => Err(self.err(format!("{} is None", join(&self.mods[m].path, name)))),
            _ => Err(self.err(format!("{} is not a tensor in data.pkl", join(&self.mods[m].path, name)))),
        }
    }

    /// A constant, at the start of the graph's body (so it is in scope in every block).
    pub(crate) fn constant(&mut self, c: Constant) -> ValueId {
        let b = self.graph.root();
        self.graph.insert_constant(b, Some(0), c)
    }

    /// A node at the end of the current block; its outputs.
    pub(crate) fn node(&mut self, kind: &str, inputs: &[ValueId], types: Vec<JitType>) -> Vec<ValueId> {
        let n = self.graph.append_node(self.cur, kind, inputs, types);
        self.graph.outputs_of(n).to_vec()
    }

    pub(crate) fn ty(&self, v: ValueId) -> JitType {
        self.graph.value_type(v).clone()
    }

    /// A symbol as one graph value (tuples are constructed).
    pub(crate) fn value(&mut self, s: Sym) -> Result<ValueId> {
        match s {
            Sym::Value(v) => Ok(v),
            Sym::Tuple(items) => {
                let vs = items.into_iter().map(|i| self.value(i)).collect::<Result<Vec<_>>>()?;
                let ty = JitType::Tuple(vs.iter().map(|&v| self.graph.value_type(v).clone()).collect());
                Ok(self.node("prim::TupleConstruct", &vs, vec![ty])[0])
            }
            Sym::Module(m) => Err(self.err(format!("module {:?} used as a value", self.mods[m].path))),
            Sym::Global(g) => Err(self.err(format!("'{g}' used as a value"))),
            Sym::Undefined(why) => Err(self.err(why)),
        }
    }

    /// A value as a `bool` for a condition: tensors and numbers through `aten::Bool`.
    pub(crate) fn truth(&mut self, s: Sym) -> Result<ValueId> {
        let v = self.value(s)?;
        match self.ty(v) {
            JitType::Bool => Ok(v),
            JitType::None => Ok(self.constant(Constant::Bool(false))),
            JitType::Int | JitType::Float | JitType::Number | JitType::Tensor(_) => {
                Ok(self.node("aten::Bool", &[v], vec![JitType::Bool])[0])
            }
            other => Err(self.err(format!("a {other} used as a condition"))),
        }
    }

    /// A `bool` value's constant, if it is one.
    pub(crate) fn const_bool(&self, v: ValueId) -> Option<bool> {
        match self.graph.constant_value(v) {
            Some(Constant::Bool(b)) => Some(b),
            _ => None,
        }
    }

    /// Compiles an expression; counts towards [`MAX_COMPILE_DEPTH`].
    pub(crate) fn expr(&mut self, e: &Expr, env: &mut Env) -> Result<Sym> {
        self.nesting += 1;
        let out = if self.nesting > MAX_COMPILE_DEPTH {
            Err(self.err(format!("expressions and module calls nest more than {MAX_COMPILE_DEPTH} deep")))
        } else {
            self.expr_inner(e, env)
        };
        self.nesting -= 1;
        out
    }

    /// Compiles an expression into one value.
    pub(crate) fn expr_value(&mut self, e: &Expr, env: &mut Env) -> Result<ValueId> {
        let s = self.expr(e, env)?;
        self.value(s)
    }

    fn expr_inner(&mut self, e: &Expr, env: &mut Env) -> Result<Sym> {
        Ok(match e {
            Expr::Name(n) => match env.get(n) {
                Some(Sym::Undefined(why)) => return Err(self.err(why.clone())),
                Some(s) => s.clone(),
                None if GLOBALS.contains(&n.as_str()) || self.functions.contains_key(n) => Sym::Global(n.clone()),
                None => return Err(self.err(format!("name '{n}' is not defined"))),
            },
            Expr::Int(i) => Sym::Value(self.constant(Constant::Int(*i))),
            Expr::Float(x) => Sym::Value(self.constant(Constant::Float(*x))),
            Expr::Str(s) => Sym::Value(self.constant(Constant::Str(s.clone()))),
            Expr::Bool(b) => Sym::Value(self.constant(Constant::Bool(*b))),
            Expr::None => Sym::Value(self.constant(Constant::None)),
            Expr::Attr(base, attr) => {
                let b = self.expr(base, env)?;
                self.attr(b, attr)?
            }
            Expr::Call(f, args, kw) => self.call(f, args, kw, env)?,
            Expr::List(items) => self.list(items, env)?,
            Expr::Dict(items) => self.dict(items, None, env)?,
            Expr::Tuple(items) => Sym::Tuple(items.iter().map(|i| self.expr(i, env)).collect::<Result<_>>()?),
            Expr::Subscript(base, idx) => {
                let b = self.expr(base, env)?;
                self.subscript(b, idx, env)?
            }
            Expr::Slice(..) => return Err(self.err("a slice outside a subscript")),
            Expr::Neg(inner) => {
                let v = self.expr_value(inner, env)?;
                if is_number(&self.ty(v)) {
                    let ty = self.ty(v);
                    Sym::Value(self.node("aten::neg", &[v], vec![ty])[0])
                } else {
                    self.schema_call("neg", vec![Sym::Value(v)], Vec::new())?
                }
            }
            Expr::Not(inner) => {
                let s = self.expr(inner, env)?;
                let v = self.truth(s)?;
                match self.const_bool(v) {
                    Some(b) => Sym::Value(self.constant(Constant::Bool(!b))),
                    None => Sym::Value(self.node("aten::__not__", &[v], vec![JitType::Bool])[0]),
                }
            }
            Expr::Binary(op, a, b) => {
                let a = self.expr(a, env)?;
                let b = self.expr(b, env)?;
                self.binary(*op, a, b)?
            }
            Expr::BoolOp(and, a, b) => {
                let a = self.expr(a, env)?;
                let c = self.truth(a)?;
                // Short-circuits: `a and b` is `b if a else False`.
                let (then, otherwise) = if *and { (Some(b.as_ref()), None) } else { (None, Some(b.as_ref())) };
                let fixed = Expr::Bool(!*and);
                let then = then.unwrap_or(&fixed);
                let otherwise = otherwise.unwrap_or(&fixed);
                self.if_expr(c, then, otherwise, env, true)?
            }
            Expr::IfExp(c, a, b) => {
                let c = self.expr(c, env)?;
                let c = self.truth(c)?;
                self.if_expr(c, a, b, env, false)?
            }
        })
    }

    /// `then if c else otherwise` as a `prim::If` with one output (only the branch taken when
    /// `c` is a constant); `bools`: both branches are conditions.
    fn if_expr(&mut self, c: ValueId, then: &Expr, otherwise: &Expr, env: &mut Env, bools: bool) -> Result<Sym> {
        if let Some(k) = self.const_bool(c) {
            let e = if k { then } else { otherwise };
            let s = self.expr(e, env)?;
            return if bools { Ok(Sym::Value(self.truth(s)?)) } else { Ok(s) };
        }
        let n = self.graph.append_node(self.cur, "prim::If", &[c], vec![JitType::None]);
        let outer = self.cur;
        let mut vals = Vec::new();
        for e in [then, otherwise] {
            let b = self.graph.add_block(n);
            self.cur = b;
            let r = self.expr(e, env).and_then(|s| if bools { self.truth(s) } else { self.value(s) });
            self.cur = outer;
            let v = r?;
            self.graph.add_return(b, v);
            vals.push(v);
        }
        let (ta, tb) = (self.ty(vals[0]), self.ty(vals[1]));
        let ty = unify(&ta, &tb)
            .ok_or_else(|| self.err(format!("the two values of a conditional expression are a {ta} and a {tb}")))?;
        let out = self.graph.outputs_of(n)[0];
        self.graph.set_type(out, ty);
        Ok(Sym::Value(out))
    }

    /// `a op b`.
    pub(crate) fn binary(&mut self, op: BinOp, a: Sym, b: Sym) -> Result<Sym> {
        let (a, b) = (self.value(a)?, self.value(b)?);
        let (ta, tb) = (self.ty(a), self.ty(b));
        match op {
            BinOp::Is | BinOp::IsNot => {
                let negate = op == BinOp::IsNot;
                // Decided by the types where they can: a value that cannot be None is not.
                let none = |t: &JitType| *t == JitType::None;
                let maybe = |t: &JitType| matches!(t, JitType::None | JitType::Optional(_));
                if none(&ta) && none(&tb) {
                    return Ok(Sym::Value(self.constant(Constant::Bool(!negate))));
                }
                if (none(&ta) && !maybe(&tb)) || (none(&tb) && !maybe(&ta)) {
                    return Ok(Sym::Value(self.constant(Constant::Bool(negate))));
                }
                let kind = if negate { "aten::__isnot__" } else { "aten::__is__" };
                return Ok(Sym::Value(self.node(kind, &[a, b], vec![JitType::Bool])[0]));
            }
            BinOp::In | BinOp::NotIn => {
                // `"area" in ["nearest", "area"]` of constants: decided now, so that branches
                // on a module's constant mode fold away.
                if let (Some(Constant::Str(x)), Some(items)) = (self.graph.constant_value(a), self.const_strs(b)) {
                    let found = items.contains(&x);
                    return Ok(Sym::Value(self.constant(Constant::Bool(found == (op == BinOp::In)))));
                }
                if let JitType::Dict(kt, _) = &tb {
                    self.check_key(kt, a)?;
                } else if !matches!(tb, JitType::List(_)) {
                    return Err(self.err(format!("'{}' of a {tb} (only lists and dicts are supported)", op.symbol())));
                }
                let found = self.node("aten::__contains__", &[b, a], vec![JitType::Bool])[0];
                if op == BinOp::In {
                    return Ok(Sym::Value(found));
                }
                return Ok(Sym::Value(self.node("aten::__not__", &[found], vec![JitType::Bool])[0]));
            }
            _ => {}
        }
        if ta == JitType::Str && tb == JitType::Str && op == BinOp::Add {
            return Ok(Sym::Value(self.node("aten::add", &[a, b], vec![JitType::Str])[0]));
        }
        // `list + list`: a new list of both (TorchScript's `aten::add.t`).
        if let (JitType::List(x), JitType::List(y)) = (&ta, &tb) {
            if op == BinOp::Add {
                let ty = if x == y {
                    ta.clone()
                } else {
                    unify(&ta, &tb).ok_or_else(|| self.err(format!("{ta} + {tb}")))?
                };
                return Ok(Sym::Value(self.node("aten::add", &[a, b], vec![ty])[0]));
            }
        }
        if is_number(&ta) && is_number(&tb) {
            let name = number_op(op).ok_or_else(|| self.err(format!("'{}' of two numbers", op.symbol())))?;
            let ty = number_result(name, &ta, &tb);
            return Ok(Sym::Value(self.node(&format!("aten::{name}"), &[a, b], vec![ty])[0]));
        }
        // Strings and lists of numbers compare by value (`aten::eq.str`, `aten::ne.int_list`).
        let by_value = |t: &JitType| {
            matches!(t, JitType::Str)
                || matches!(t, JitType::List(e) if matches!(**e, JitType::Int | JitType::Float | JitType::Bool))
        };
        if by_value(&ta) && by_value(&tb) && matches!(op, BinOp::Eq | BinOp::Ne) {
            // Two constant strings: decided now (`mode == "area"` of a module's constant mode).
            if let (Some(Constant::Str(x)), Some(Constant::Str(y))) =
                (self.graph.constant_value(a), self.graph.constant_value(b))
            {
                return Ok(Sym::Value(self.constant(Constant::Bool((x == y) == (op == BinOp::Eq)))));
            }
            let kind = if op == BinOp::Eq { "aten::eq" } else { "aten::ne" };
            return Ok(Sym::Value(self.node(kind, &[a, b], vec![JitType::Bool])[0]));
        }
        let name = tensor_op(op).ok_or_else(|| self.err(format!("'{}' of a {ta} and a {tb}", op.symbol())))?;
        // A number on the left of a tensor: Python's reflected operators.
        if !ta.is_tensor() && tb.is_tensor() {
            use BinOp::*;
            let swapped = match op {
                Add | Mul | Eq | Ne | BitAnd | BitOr | BitXor => Some(name),
                Lt => Some("gt"),
                Le => Some("ge"),
                Gt => Some("lt"),
                Ge => Some("le"),
                _ => None,
            };
            if let Some(n) = swapped {
                return self.schema_call(n, vec![Sym::Value(b), Sym::Value(a)], Vec::new());
            }
            match op {
                Sub => return self.schema_call("rsub", vec![Sym::Value(b), Sym::Value(a)], Vec::new()),
                Div => {
                    let r = self.schema_call("reciprocal", vec![Sym::Value(b)], Vec::new())?;
                    return self.schema_call("mul", vec![r, Sym::Value(a)], Vec::new());
                }
                _ => {}
            }
        }
        self.schema_call(name, vec![Sym::Value(a), Sym::Value(b)], Vec::new())
    }

    /// `base[idx]`: a tuple by a constant, a list by an int, a tensor by ints, slices and `None`s.
    pub(crate) fn subscript(&mut self, base: Sym, idx: &Expr, env: &mut Env) -> Result<Sym> {
        if let Sym::Tuple(items) = &base {
            let i = self.expr_value(idx, env)?;
            return match self.graph.constant_value(i) {
                Some(Constant::Int(k)) => {
                    let n = items.len() as i64;
                    let k = if k < 0 { k + n } else { k };
                    items.get(k as usize).cloned().ok_or_else(|| self.err(format!("tuple index {k} out of range")))
                }
                _ => Err(self.err("a tuple indexed by a non-constant")),
            };
        }
        let v = self.value(base)?;
        match self.ty(v) {
            JitType::List(e) => {
                let i = self.expr_value(idx, env)?;
                Ok(Sym::Value(self.node("aten::__getitem__", &[v, i], vec![(*e).clone()])[0]))
            }
            JitType::Dict(kt, vt) => {
                let k = self.expr_value(idx, env)?;
                self.check_key(&kt, k)?;
                Ok(Sym::Value(self.node("aten::__getitem__", &[v, k], vec![*vt])[0]))
            }
            JitType::Tuple(ts) => {
                let i = self.expr_value(idx, env)?;
                match self.graph.constant_value(i) {
                    Some(Constant::Int(k)) => {
                        let n = ts.len() as i64;
                        let k = if k < 0 { k + n } else { k };
                        let t = ts
                            .get(k as usize)
                            .cloned()
                            .ok_or_else(|| self.err(format!("tuple index {k} out of range")))?;
                        let kv = self.constant(Constant::Int(k));
                        Ok(Sym::Value(self.node("prim::TupleIndex", &[v, kv], vec![t])[0]))
                    }
                    _ => Err(self.err("a tuple indexed by a non-constant")),
                }
            }
            JitType::Tensor(_) => {
                let items: Vec<&Expr> = match idx {
                    Expr::Tuple(items) => items.iter().collect(),
                    one => vec![one],
                };
                let mut t = Sym::Value(v);
                let mut dim = 0i64;
                for item in items {
                    let d = Sym::Value(self.constant(Constant::Int(dim)));
                    match item {
                        Expr::None => {
                            t = self.schema_call("unsqueeze", vec![t, d], Vec::new())?;
                            dim += 1;
                        }
                        Expr::Slice(lo, hi, step) => {
                            let mut part = |p: &Option<Box<Expr>>, s: &mut Self| -> Result<Sym> {
                                Ok(match p {
                                    Some(e) => s.expr(e, env)?,
                                    None => Sym::Value(s.constant(Constant::None)),
                                })
                            };
                            let lo = part(lo, self)?;
                            let hi = part(hi, self)?;
                            let step = match step {
                                Some(e) => self.expr(e, env)?,
                                None => Sym::Value(self.constant(Constant::Int(1))),
                            };
                            t = self.schema_call("slice", vec![t, d, lo, hi, step], Vec::new())?;
                            dim += 1;
                        }
                        e => {
                            let i = self.expr_value(e, env)?;
                            if self.ty(i) != JitType::Int {
                                return Err(self.err(format!("indexing a tensor by a {}", self.ty(i))));
                            }
                            t = self.schema_call("select", vec![t, d, Sym::Value(i)], Vec::new())?;
                        }
                    }
                }
                Ok(t)
            }
            other => Err(self.err(format!("indexing a {other}"))),
        }
    }

    fn attr(&mut self, base: Sym, attr: &str) -> Result<Sym> {
        match base {
            Sym::Global(g) if g == "CONSTANTS" => {
                let k: usize = attr
                    .strip_prefix('c')
                    .and_then(|k| k.parse().ok())
                    .ok_or_else(|| self.err(format!("unknown constant CONSTANTS.{attr}")))?;
                let idx = *self
                    .constants
                    .get(k)
                    .ok_or_else(|| self.err(format!("CONSTANTS.{attr} is not in constants.pkl")))?;
                Ok(Sym::Value(self.constant(Constant::Tensor(idx))))
            }
            Sym::Global(g) => Ok(Sym::Global(format!("{g}.{attr}"))),
            Sym::Module(m) => {
                let path = join(&self.mods[m].path, attr);
                if let Some(&v) = self.tensors.get(&path) {
                    return Ok(Sym::Value(v));
                }
                if let Some(child) = self.mods.iter().position(|x| x.path == path) {
                    return Ok(Sym::Module(child));
                }
                match self.mods[m].state.get(attr) {
                    Some(Value::Bool(b)) => Ok(Sym::Value(self.constant(Constant::Bool(b)))),
                    Some(Value::Int(i)) => Ok(Sym::Value(self.constant(Constant::Int(i)))),
                    Some(Value::Float(x)) => Ok(Sym::Value(self.constant(Constant::Float(x)))),
                    Some(Value::Str(s)) => Ok(Sym::Value(self.constant(Constant::Str(s.to_string())))),
                    Some(Value::None) => Ok(Sym::Value(self.constant(Constant::None))),
                    Some(Value::Tensor(t)) => {
                        let k = self.graph.add_tensor_constant(t);
                        Ok(Sym::Value(self.constant(Constant::Tensor(k))))
                    }
                    Some(other) => Err(self.err(format!("attribute {path} is a {}", other.kind()))),
                    None => {
                        // A `Final` class constant.
                        let class = self.mods[m].class.clone();
                        if let Some((_, _, Some(value))) = class.attributes.iter().find(|(n, _, _)| n == attr) {
                            return self.expr(value, &mut Env::new());
                        }
                        Err(self.err(format!("module {:?} has no attribute '{attr}'", self.mods[m].path)))
                    }
                }
            }
            Sym::Value(v) => match (self.ty(v), attr) {
                (JitType::Tensor(_), "shape") => {
                    Ok(Sym::Value(self.node("aten::size", &[v], vec![JitType::List(Box::new(JitType::Int))])[0]))
                }
                (t, _) => Err(self.err(format!("attribute '{attr}' of a {t}"))),
            },
            Sym::Tuple(_) | Sym::Undefined(_) => Err(self.err(format!("attribute '{attr}' of a tuple"))),
        }
    }

    fn list(&mut self, items: &[Expr], env: &mut Env) -> Result<Sym> {
        let mut vs = Vec::new();
        for i in items {
            vs.push(self.expr_value(i, env)?);
        }
        let consts: Option<Vec<Constant>> = vs.iter().map(|&v| self.graph.constant_value(v)).collect();
        if let Some(cs) = &consts {
            let ints: Option<Vec<i64>> =
                cs.iter().map(|c| if let Constant::Int(i) = c { Some(*i) } else { None }).collect();
            if let Some(ints) = ints {
                return Ok(Sym::Value(self.constant(Constant::IntList(ints))));
            }
            let floats: Option<Vec<f64>> = cs
                .iter()
                .map(|c| match c {
                    Constant::Float(x) => Some(*x),
                    Constant::Int(i) => Some(*i as f64),
                    _ => None,
                })
                .collect();
            if let Some(floats) = floats {
                return Ok(Sym::Value(self.constant(Constant::FloatList(floats))));
            }
        }
        let elem = match vs.first() {
            Some(&v) => self.graph.value_type(v).erased(),
            None => JitType::tensor(),
        };
        Ok(Sym::Value(self.node("prim::ListConstruct", &vs, vec![JitType::List(Box::new(elem))])[0]))
    }

    /// A list value built from an empty literal of the annotated element type.
    fn empty_list(&mut self, elem: &JitType) -> Result<ValueId> {
        Ok(match elem {
            JitType::Int => self.constant(Constant::IntList(Vec::new())),
            JitType::Float => self.constant(Constant::FloatList(Vec::new())),
            JitType::Bool => self.constant(Constant::BoolList(Vec::new())),
            JitType::Tensor(_) | JitType::Optional(_) => {
                self.node("prim::ListConstruct", &[], vec![JitType::List(Box::new(elem.erased()))])[0]
            }
            other => return Err(self.err(format!("a list of {other}"))),
        })
    }

    /// `annotate(T, value)`, `x: T = value`: the value with its declared type (an empty list's
    /// element type, `None` as an `Optional[T]`).
    pub(crate) fn annotated(&mut self, ty: &Expr, value: &Expr, env: &mut Env) -> Result<Sym> {
        let t = annotation_type(ty);
        match (t, value) {
            (Some(JitType::List(elem)), Expr::List(items)) if items.is_empty() => {
                Ok(Sym::Value(self.empty_list(&elem)?))
            }
            (Some(JitType::Dict(k, v)), Expr::Dict(items)) => self.dict(items, Some((*k, *v)), env),
            (Some(t @ JitType::Optional(_)), _) => {
                let v = self.expr_value(value, env)?;
                if self.ty(v) == t {
                    return Ok(Sym::Value(v));
                }
                Ok(Sym::Value(self.node("prim::unchecked_cast", &[v], vec![t])[0]))
            }
            _ => self.expr(value, env),
        }
    }

    /// `{k: v, ...}` (Note [Dicts]): a `prim::DictConstruct` of the entries, of the `declared`
    /// key and value types (an annotation) or of the entries' types; `{}` without an annotation
    /// is `Dict[str, Tensor]`, as in TorchScript.
    fn dict(&mut self, items: &[(Expr, Expr)], declared: Option<(JitType, JitType)>, env: &mut Env) -> Result<Sym> {
        let mut ins = Vec::new();
        let (mut kt, mut vt): (Option<JitType>, Option<JitType>) = (None, None);
        for (k, v) in items {
            let (kv, vv) = (self.expr_value(k, env)?, self.expr_value(v, env)?);
            let (a, b) = (self.ty(kv), self.ty(vv));
            kt = Some(match kt {
                None => a.erased(),
                Some(t) => unify(&t, &a).ok_or_else(|| self.err(format!("dict keys of types {t} and {a}")))?,
            });
            vt = Some(match vt {
                None => b.erased(),
                Some(t) => unify(&t, &b).ok_or_else(|| self.err(format!("dict values of types {t} and {b}")))?,
            });
            ins.push(kv);
            ins.push(vv);
        }
        let (k, v) = match declared {
            Some((k, v)) => {
                for pair in ins.chunks(2) {
                    self.check_key(&k, pair[0])?;
                    self.check_fits(&v, pair[1], "a dict value")?;
                }
                (k, v)
            }
            None => (kt.unwrap_or(JitType::Str), vt.unwrap_or_else(JitType::tensor)),
        };
        if !matches!(k, JitType::Str | JitType::Int | JitType::Float | JitType::Bool | JitType::Tensor(_)) {
            return Err(self.err(format!("a dict keyed by {k}: keys are str, int, float, bool or Tensor")));
        }
        let ty = JitType::Dict(Box::new(k.erased()), Box::new(v.erased()));
        Ok(Sym::Value(self.node("prim::DictConstruct", &ins, vec![ty])[0]))
    }

    /// An error unless `key` can index a dict keyed by `kt`.
    fn check_key(&self, kt: &JitType, key: ValueId) -> Result<()> {
        self.check_fits(kt, key, "a dict key")
    }

    /// An error unless value `v` is of type `want` (or narrower: `None` for an `Optional`).
    fn check_fits(&self, want: &JitType, v: ValueId, what: &str) -> Result<()> {
        let have = self.ty(v);
        if unify(want, &have).is_some_and(|u| u.erased() == want.erased()) {
            return Ok(());
        }
        Err(self.err(format!("{what} of type {have} where {want} is expected")))
    }

    /// `xs' = kind(xs, args...)` for a list mutation (`aten::_set_item`, `aten::Delete`), with
    /// the names bound to `xs` rebound to `xs'` (Note [Functional lists]).
    pub(crate) fn list_mutation(&mut self, l: ValueId, kind: &str, args: &[ValueId], env: &mut Env) -> Result<()> {
        if let Some(&i) = args.first() {
            if self.ty(i) != JitType::Int {
                return Err(self.err(format!("list indices must be integers, not {}", self.ty(i))));
            }
        }
        self.bound(l, env, "list")?;
        let mut ins = vec![l];
        ins.extend_from_slice(args);
        let new = self.node(kind, &ins, vec![self.ty(l)])[0];
        Self::rebind(env, l, new);
        Ok(())
    }

    /// An error unless a local name holds `v`: a container changed where no name holds it (a
    /// module attribute) would lose the change (Note [Dicts]).
    fn bound(&self, v: ValueId, env: &Env, what: &str) -> Result<()> {
        if env.values().any(|s| *s == Sym::Value(v)) {
            return Ok(());
        }
        Err(self.err(format!("changing a {what} that no local name holds (a module attribute) is not supported")))
    }

    /// A dict method (Note [Dicts]): `d.keys()`, `d.values()`, `d.items()`, `d.get(k[,
    /// default])`, `d.copy()`, and the mutations `_set_item`, `Delete`, `pop`, `setdefault`,
    /// `update` and `clear` (methods, or `torch.<name>(d, ...)` as PyTorch prints them).
    pub(crate) fn dict_method(&mut self, d: ValueId, method: &str, args: Vec<ValueId>, env: &mut Env) -> Result<Sym> {
        let dt = self.ty(d);
        let JitType::Dict(kt, vt) = &dt else { return Err(self.err(format!("dict method '{method}' of a {dt}"))) };
        let (kt, vt) = ((**kt).clone(), (**vt).clone());
        let list = |t: JitType| JitType::List(Box::new(t));
        let mut ins = vec![d];
        ins.extend_from_slice(&args);
        let mutation = matches!(method, "_set_item" | "Delete" | "pop" | "setdefault" | "update" | "clear");
        if mutation {
            self.bound(d, env, "dict")?;
        }
        if let Some(&k) = args.first() {
            if !matches!(method, "update") {
                self.check_key(&kt, k)?;
            }
        }
        let none = |s: &mut Self| Ok(Sym::Value(s.constant(Constant::None)));
        match (method, args.len()) {
            ("keys", 0) => Ok(Sym::Value(self.node("aten::keys", &ins, vec![list(kt)])[0])),
            ("values", 0) => Ok(Sym::Value(self.node("aten::values", &ins, vec![list(vt)])[0])),
            ("items", 0) => Ok(Sym::Value(self.node("aten::items", &ins, vec![list(JitType::Tuple(vec![kt, vt]))])[0])),
            ("copy", 0) => Ok(Sym::Value(self.node("aten::copy", &ins, vec![dt.clone()])[0])),
            ("get", 1) => {
                let ty = match vt {
                    JitType::Optional(_) => vt,
                    t => JitType::Optional(Box::new(t)),
                };
                Ok(Sym::Value(self.node("aten::get", &ins, vec![ty])[0]))
            }
            ("get", 2) => {
                let ty = unify(&vt, &self.ty(args[1]))
                    .ok_or_else(|| self.err(format!("get() of a {dt} with a default of type {}", self.ty(args[1]))))?;
                Ok(Sym::Value(self.node("aten::get", &ins, vec![ty])[0]))
            }
            ("_set_item", 2) => {
                self.check_fits(&vt, args[1], "a dict value")?;
                let new = self.node("aten::_set_item", &ins, vec![dt.clone()])[0];
                Self::rebind(env, d, new);
                none(self)
            }
            ("Delete", 1) | ("clear", 0) => {
                let kind = if method == "clear" { "aten::clear" } else { "aten::Delete" };
                let new = self.node(kind, &ins, vec![dt.clone()])[0];
                Self::rebind(env, d, new);
                none(self)
            }
            ("update", 1) => {
                self.check_fits(&dt, args[0], "update() of a dict")?;
                let new = self.node("aten::update", &ins, vec![dt.clone()])[0];
                Self::rebind(env, d, new);
                none(self)
            }
            ("pop", 1 | 2) | ("setdefault", 2) => {
                if method == "setdefault" {
                    self.check_fits(&vt, args[1], "a dict value")?;
                }
                let ty = match args.get(1) {
                    Some(&x) if method == "pop" => unify(&vt, &self.ty(x))
                        .ok_or_else(|| self.err(format!("pop() of a {dt} with a default of type {}", self.ty(x))))?,
                    _ => vt,
                };
                let outs = self.node(&format!("aten::{method}"), &ins, vec![ty, dt.clone()]);
                Self::rebind(env, d, outs[1]);
                Ok(Sym::Value(outs[0]))
            }
            (m, n) => Err(self.err(format!("dict method '{m}' with {n} arguments is not supported"))),
        }
    }

    /// Rebinds every name bound to `old` (aliases of a list) to `new`.
    fn rebind(env: &mut Env, old: ValueId, new: ValueId) {
        for s in env.values_mut() {
            if *s == Sym::Value(old) {
                *s = Sym::Value(new);
            }
        }
    }

    fn call(&mut self, f: &Expr, args: &[Expr], kw: &[(String, Expr)], env: &mut Env) -> Result<Sym> {
        // `(module).forward(x, )`, `self.fc(x)`, `self.helper(x)`: a submodule's forward or a
        // module's method, inlined.
        if let Expr::Attr(base, method) = f {
            let b = self.expr(base, env)?;
            if let Sym::Module(m) = b {
                let mut argv = Vec::new();
                for a in args {
                    argv.push(self.expr(a, env)?);
                }
                if !self.mods[m].class.methods.iter().any(|d| d.name == *method) {
                    if let Sym::Module(child) = self.attr(Sym::Module(m), method)? {
                        return self.inline(child, "forward", argv);
                    }
                }
                return self.inline(m, method, argv);
            }
            if let Sym::Value(v) = b {
                return self.method_call(v, method, args, kw, env);
            }
        }
        if let Expr::Name(n) = f {
            if !env.contains_key(n) {
                match (n.as_str(), args) {
                    // `getattr(self, "0")`: a submodule or attribute whose name is not an
                    // identifier (`nn.Sequential`'s and `nn.ModuleList`'s children).
                    ("getattr", [base, Expr::Str(attr)]) if kw.is_empty() => {
                        let b = self.expr(base, env)?;
                        return self.attr(b, attr);
                    }
                    ("annotate", [ty, value]) => return self.annotated(ty, value, env),
                    ("unchecked_cast", [ty, value]) => {
                        let v = self.expr_value(value, env)?;
                        let t = annotation_type(ty).ok_or_else(|| self.err(format!("unchecked_cast to {ty:?}")))?;
                        return Ok(Sym::Value(self.node("prim::unchecked_cast", &[v], vec![t])[0]));
                    }
                    ("uninitialized", [ty]) => {
                        let t = annotation_type(ty).ok_or_else(|| self.err(format!("uninitialized({ty:?})")))?;
                        return Ok(Sym::Value(self.node("prim::Uninitialized", &[], vec![t])[0]));
                    }
                    ("isinstance", [value, ty]) => {
                        let v = self.expr_value(value, env)?;
                        let want = annotation_type(ty).ok_or_else(|| self.err(format!("isinstance of {ty:?}")))?;
                        let have = self.ty(v);
                        let yes = have.erased() == want.erased();
                        if !yes && matches!(have, JitType::Optional(_)) {
                            return Err(self.err(format!("isinstance of an {have} is not decided by its type")));
                        }
                        return Ok(Sym::Value(self.constant(Constant::Bool(yes))));
                    }
                    _ => {}
                }
            }
        }
        let callee = match self.expr(f, env)? {
            Sym::Global(g) => g,
            _ => return Err(self.err(format!("calling {f:?}"))),
        };
        let (argv, kwv) = self.arguments(args, kw, env)?;
        // A function of the source or of the archive's code.
        if let Some(def) = self.function(&callee)? {
            return self.inline_function(&def, argv, kwv);
        }
        let one = |s: &mut Self, kind: &str, argv: Vec<Sym>, ty: JitType| -> Result<Sym> {
            let vs = argv.into_iter().map(|a| s.value(a)).collect::<Result<Vec<_>>>()?;
            Ok(Sym::Value(s.node(kind, &vs, vec![ty])[0]))
        };
        let name = callee.as_str();
        // `torch.keys(d)`, `torch._set_item(d, k, v)`: dict methods as PyTorch prints them
        // (Note [Dicts]); `torch._set_item(xs, i, x)` and `torch.Delete(xs, i)` of lists.
        if let (Some(m), Some(Sym::Value(c))) = (name.strip_prefix("torch."), argv.first()) {
            let c = *c;
            let dict_methods = ["keys", "values", "items", "get", "copy", "_set_item", "Delete", "pop", "setdefault"];
            let is_dict = matches!(self.ty(c), JitType::Dict(..));
            if kwv.is_empty() && is_dict && (dict_methods.contains(&m) || matches!(m, "update" | "clear")) {
                let vs = argv.into_iter().skip(1).map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                return self.dict_method(c, m, vs, env);
            }
            if kwv.is_empty() && matches!(self.ty(c), JitType::List(_)) && matches!(m, "_set_item" | "Delete") {
                let vs = argv.into_iter().skip(1).map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                if m == "_set_item" {
                    let JitType::List(elem) = self.ty(c) else { unreachable!("a list") };
                    if let Some(&x) = vs.get(1) {
                        self.check_fits(&elem, x, "a list element")?;
                    }
                }
                let want = if m == "_set_item" { 2 } else { 1 };
                if vs.len() != want {
                    return Err(self.err(format!("{name} of a list takes {} arguments", want + 1)));
                }
                self.list_mutation(c, &format!("aten::{m}"), &vs, env)?;
                return Ok(Sym::Value(self.constant(Constant::None)));
            }
            if matches!(m, "list") && is_dict && argv.len() == 1 {
                return self.dict_method(c, "keys", Vec::new(), env);
            }
        }
        if name == "list"
            && argv.len() == 1
            && matches!(&argv[0], Sym::Value(c) if matches!(self.ty(*c), JitType::Dict(..)))
        {
            let Sym::Value(c) = argv[0] else { unreachable!("a value") };
            return self.dict_method(c, "keys", Vec::new(), env);
        }
        // `torch.add(k, 1)` of numbers, as TorchScript prints int arithmetic.
        if let Some(op) = name.strip_prefix("torch.") {
            if argv.len() == 1 && kwv.is_empty() && op == "neg" {
                let a = self.value(argv[0].clone())?;
                let ta = self.ty(a);
                if is_number(&ta) {
                    let ty = if ta == JitType::Bool { JitType::Int } else { ta };
                    return Ok(Sym::Value(self.node("aten::neg", &[a], vec![ty])[0]));
                }
            }
            if argv.len() == 2 && kwv.is_empty() && crate::interpreter::is_number_op(op) {
                let a = self.value(argv[0].clone())?;
                let b = self.value(argv[1].clone())?;
                let (ta, tb) = (self.ty(a), self.ty(b));
                if is_number(&ta) && is_number(&tb) {
                    let ty = number_result(op, &ta, &tb);
                    return Ok(Sym::Value(self.node(&format!("aten::{op}"), &[a, b], vec![ty])[0]));
                }
            }
        }
        match name {
            "int" => one(self, "aten::Int", argv, JitType::Int),
            "float" => one(self, "aten::Float", argv, JitType::Float),
            "bool" => one(self, "aten::Bool", argv, JitType::Bool),
            "len" | "torch.len" => {
                let v = self.value(argv.into_iter().next().ok_or_else(|| self.err("len()"))?)?;
                if self.ty(v).is_tensor() {
                    let zero = self.constant(Constant::Int(0));
                    return Ok(Sym::Value(self.node("aten::size", &[v, zero], vec![JitType::Int])[0]));
                }
                Ok(Sym::Value(self.node("aten::len", &[v], vec![JitType::Int])[0]))
            }
            "min" | "max" if argv.len() == 2 => {
                let kind = if name == "min" { "prim::min" } else { "prim::max" };
                let a = self.value(argv[0].clone())?;
                let b = self.value(argv[1].clone())?;
                let (ta, tb) = (self.ty(a), self.ty(b));
                if !(is_number(&ta) && is_number(&tb)) {
                    return Err(self.err(format!("{name}() of a {ta} and a {tb}")));
                }
                let ty = number_result("add", &ta, &tb);
                Ok(Sym::Value(self.node(kind, &[a, b], vec![ty])[0]))
            }
            "print" => {
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                self.node("prim::Print", &vs, Vec::new());
                Ok(Sym::Value(self.constant(Constant::None)))
            }
            "torch.format" => {
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                Ok(Sym::Value(self.node("aten::format", &vs, vec![JitType::Str])[0]))
            }
            "torch.append" => {
                let [list, x] = <[Sym; 2]>::try_from(argv).map_err(|_| self.err("append takes a list and a value"))?;
                let l = self.value(list)?;
                let x = self.value(x)?;
                self.append(l, x, env)
            }
            "torch.__is__" | "torch.__isnot__" => {
                let [a, b] = <[Sym; 2]>::try_from(argv).map_err(|_| self.err(format!("{name} takes two values")))?;
                self.binary(if name == "torch.__is__" { BinOp::Is } else { BinOp::IsNot }, a, b)
            }
            "torch.__contains__" => {
                let [l, x] = <[Sym; 2]>::try_from(argv).map_err(|_| self.err("__contains__ takes two values"))?;
                self.binary(BinOp::In, x, l)
            }
            "ops.prim.dtype" => one(self, "prim::dtype", argv, JitType::Int),
            "ops.prim.device" => one(self, "prim::device", argv, JitType::Device),
            "torch.__not__" => {
                let a = argv.into_iter().next().ok_or_else(|| self.err("__not__()"))?;
                let v = self.truth(a)?;
                Ok(Sym::Value(self.node("aten::__not__", &[v], vec![JitType::Bool])[0]))
            }
            "ops.prim.NumToTensor" => one(self, "prim::NumToTensor", argv, JitType::tensor()),
            // We have no nested tensors.
            "ops.prim.is_nested" => one(self, "prim::is_nested", argv, JitType::Bool),
            "torch.is_grad_enabled" if argv.is_empty() => one(self, "aten::is_grad_enabled", argv, JitType::Bool),
            // `all(list)` / `any(list)` of bools, ints, floats or strings (by their truth).
            "torch.all" | "torch.any" | "all" | "any"
                if argv.len() == 1
                    && kwv.is_empty()
                    && matches!(&argv[0], Sym::Value(v) if matches!(self.ty(*v), JitType::List(e)
                        if matches!(*e, JitType::Bool | JitType::Int | JitType::Float | JitType::Str))) =>
            {
                let kind = if name.ends_with("all") { "aten::all" } else { "aten::any" };
                one(self, kind, argv, JitType::Bool)
            }
            "ops.prim.requires_grad" => one(self, "prim::requires_grad", argv, JitType::Bool),
            "ops.prim.is_cuda" => one(self, "prim::is_cuda", argv, JitType::Bool),
            // A device's type as a string (`"cpu"`), what the fast-path checks compare.
            "ops.prim.type" => one(self, "prim::type", argv, JitType::Str),
            "torch.is_autocast_enabled" if argv.is_empty() => {
                one(self, "aten::is_autocast_enabled", argv, JitType::Bool)
            }
            "torch.is_autocast_cpu_enabled" if argv.is_empty() => {
                one(self, "aten::is_autocast_cpu_enabled", argv, JitType::Bool)
            }
            // `list(l)`: a copy, which a functional list already is (Note [Functional lists]).
            "list" | "torch.list" if argv.len() == 1 && self.is_list(argv.first()) => {
                let v = self.value(argv.into_iter().next().unwrap_or(Sym::Undefined(String::new())))?;
                let ty = self.ty(v);
                Ok(Sym::Value(self.node("aten::list", &[v], vec![ty])[0]))
            }
            // `math.floor`/`math.ceil` of a float: an int.
            "torch.floor" | "torch.ceil" | "math.floor" | "math.ceil"
                if argv.len() == 1 && matches!(&argv[0], Sym::Value(v) if is_number(&self.ty(*v))) =>
            {
                let kind = if name.ends_with("floor") { "aten::floor" } else { "aten::ceil" };
                one(self, kind, argv, JitType::Int)
            }
            // `math.sqrt` and the like of a number: a float.
            "torch.sqrt" | "torch.exp" | "torch.log" | "math.sqrt" | "math.exp" | "math.log"
                if argv.len() == 1 && matches!(&argv[0], Sym::Value(v) if is_number(&self.ty(*v))) =>
            {
                let kind = format!("aten::{}", name.rsplit('.').next().unwrap_or(name));
                one(self, &kind, argv, JitType::Float)
            }
            "ops.prim.RaiseException" => {
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                self.node("prim::RaiseException", &vs, Vec::new());
                Ok(Sym::Value(self.constant(Constant::None)))
            }
            "ops.prim.min" | "ops.prim.max" => {
                let kind = if name == "ops.prim.min" { "prim::min" } else { "prim::max" };
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                let [a, b] = vs[..] else { return Err(self.err(format!("{name} takes two numbers"))) };
                let ty = number_result("add", &self.ty(a), &self.ty(b));
                Ok(Sym::Value(self.node(kind, &[a, b], vec![ty])[0]))
            }
            // How a `for` over `range(lo, hi, step)` is written out (TorchScript prints them so).
            "torch.__range_length" | "torch.__derive_index" if argv.len() == 3 => {
                one(self, &format!("aten::{}", &name[6..]), argv, JitType::Int)
            }
            "torch.size" if argv.len() == 2 => one(self, "aten::size", argv, JitType::Int),
            "torch.size" => one(self, "aten::size", argv, JitType::List(Box::new(JitType::Int))),
            "torch.dim" => one(self, "aten::dim", argv, JitType::Int),
            "torch.is_floating_point" => one(self, "aten::is_floating_point", argv, JitType::Bool),
            "torch.is_complex" => one(self, "aten::is_complex", argv, JitType::Bool),
            "torch.warn" => {
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                self.node("aten::warn", &vs, Vec::new());
                Ok(Sym::Value(self.constant(Constant::None)))
            }
            "torch.slice" if self.is_list(argv.first()) => self.list_slice(argv, kwv),
            "torch.add"
                if argv.len() == 2
                    && kwv.is_empty()
                    && argv.iter().all(
                        |a| matches!(a, Sym::Value(v) if matches!(self.ty(*v), JitType::Str | JitType::List(_))),
                    ) =>
            {
                self.binary(BinOp::Add, argv[0].clone(), argv[1].clone())
            }
            "torch.eq" | "torch.ne" if argv.len() == 2 && kwv.is_empty() => {
                let op = if name == "torch.eq" { BinOp::Eq } else { BinOp::Ne };
                self.binary(op, argv[0].clone(), argv[1].clone())
            }
            // The tensor operators `&`, `|` and `^` as TorchScript prints them.
            "torch.__and__" | "torch.__or__" | "torch.__xor__" if argv.len() == 2 && kwv.is_empty() => {
                let op = match name {
                    "torch.__and__" => BinOp::BitAnd,
                    "torch.__or__" => BinOp::BitOr,
                    _ => BinOp::BitXor,
                };
                self.binary(op, argv[0].clone(), argv[1].clone())
            }
            "torch.numel" => one(self, "aten::numel", argv, JitType::Int),
            "torch.device" => {
                let v = self.value(argv.into_iter().next().ok_or_else(|| self.err("torch.device()"))?)?;
                match self.graph.constant_value(v) {
                    Some(Constant::Str(s)) => {
                        let d = s.parse().map_err(|_| self.err(format!("device \"{s}\"")))?;
                        Ok(Sym::Value(self.constant(Constant::Device(d))))
                    }
                    _ => Err(self.err("torch.device of a non-constant")),
                }
            }
            name => {
                let op = name
                    .strip_prefix("torch.nn.functional.")
                    .or_else(|| name.strip_prefix("F."))
                    .or_else(|| name.strip_prefix("torch."))
                    .or_else(|| name.strip_prefix("ops.aten."))
                    .ok_or_else(|| self.err(format!("unsupported call of {name}")))?;
                self.schema_call(op, argv, kwv)
            }
        }
    }

    /// The strings of a list built from constant strings (`["nearest", "area"]`).
    fn const_strs(&self, v: ValueId) -> Option<Vec<String>> {
        let n = self.graph.producer(v)?;
        if self.graph.kind(n) != "prim::ListConstruct" {
            return None;
        }
        self.graph
            .inputs_of(n)
            .iter()
            .map(|&i| match self.graph.constant_value(i) {
                Some(Constant::Str(s)) => Some(s),
                _ => None,
            })
            .collect()
    }

    fn is_list(&self, s: Option<&Sym>) -> bool {
        matches!(s, Some(Sym::Value(v)) if matches!(self.ty(*v), JitType::List(_)))
    }

    /// `torch.slice(list, start=None, end=None, step=1)`: Python's `list[start:end:step]`.
    fn list_slice(&mut self, argv: Vec<Sym>, kwv: Vec<(String, Sym)>) -> Result<Sym> {
        let mut vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
        if vs.len() > 4 {
            return Err(self.err("slice of a list takes at most start, end and step"));
        }
        let none = self.constant(Constant::None);
        let one = self.constant(Constant::Int(1));
        vs.resize(4, none);
        if vs[3] == none {
            vs[3] = one;
        }
        for (k, a) in kwv {
            let slot = match k.as_str() {
                "start" => 1,
                "end" => 2,
                "step" => 3,
                _ => return Err(self.err(format!("slice of a list has no argument '{k}'"))),
            };
            vs[slot] = self.value(a)?;
        }
        let ty = self.ty(vs[0]);
        Ok(Sym::Value(self.node("aten::slice", &vs, vec![ty])[0]))
    }

    /// A call's positional and keyword arguments, compiled in order.
    fn arguments(&mut self, args: &[Expr], kw: &[(String, Expr)], env: &mut Env) -> Result<CallArgs> {
        let mut argv = Vec::new();
        for a in args {
            argv.push(self.expr(a, env)?);
        }
        let mut kwv = Vec::new();
        for (k, a) in kw {
            kwv.push((k.clone(), self.expr(a, env)?));
        }
        Ok((argv, kwv))
    }

    /// `list.append(x)` (Note [Functional lists] in `emit.rs`): a new list value, bound to every
    /// name the old one had.
    fn append(&mut self, l: ValueId, x: ValueId, env: &mut Env) -> Result<Sym> {
        let lt = self.ty(l);
        let JitType::List(elem) = &lt else { return Err(self.err(format!("append to a {lt}"))) };
        let xt = self.ty(x);
        if unify(elem, &xt).is_none() && !(**elem == JitType::Float && xt == JitType::Int) {
            return Err(self.err(format!("appending a {xt} to a {lt}")));
        }
        let new = self.node("aten::append", &[l, x], vec![lt.clone()])[0];
        Self::rebind(env, l, new);
        Ok(Sym::Value(self.constant(Constant::None)))
    }

    /// `value.method(args)`: list methods, `str.format`, tensor methods as operators.
    fn method_call(
        &mut self,
        v: ValueId,
        method: &str,
        args: &[Expr],
        kw: &[(String, Expr)],
        env: &mut Env,
    ) -> Result<Sym> {
        let (rest, kwv) = self.arguments(args, kw, env)?;
        let mut argv = vec![Sym::Value(v)];
        argv.extend(rest);
        match (self.ty(v), method) {
            (JitType::List(_), "append") if argv.len() == 2 => {
                let x = self.value(argv[1].clone())?;
                self.append(v, x, env)
            }
            (JitType::List(_), m) => Err(self.err(format!("list method '{m}' is not supported yet"))),
            (JitType::Dict(..), m) if kwv.is_empty() => {
                let vs = argv.into_iter().skip(1).map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                self.dict_method(v, m, vs, env)
            }
            (JitType::Str, "format") => {
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                Ok(Sym::Value(self.node("aten::format", &vs, vec![JitType::Str])[0]))
            }
            (JitType::Tensor(_), "size") if kwv.is_empty() => {
                let ty = if argv.len() == 2 { JitType::Int } else { JitType::List(Box::new(JitType::Int)) };
                let vs = argv.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
                Ok(Sym::Value(self.node("aten::size", &vs, vec![ty])[0]))
            }
            (JitType::Tensor(_), "dim") => Ok(Sym::Value(self.node("aten::dim", &[v], vec![JitType::Int])[0])),
            (JitType::Tensor(_), "is_floating_point") => {
                Ok(Sym::Value(self.node("aten::is_floating_point", &[v], vec![JitType::Bool])[0]))
            }
            (JitType::Tensor(_), "is_complex") => {
                Ok(Sym::Value(self.node("aten::is_complex", &[v], vec![JitType::Bool])[0]))
            }
            (JitType::Tensor(_), "numel") => Ok(Sym::Value(self.node("aten::numel", &[v], vec![JitType::Int])[0])),
            (JitType::Tensor(_), m) => self.schema_call(m, argv, kwv),
            (t, m) => Err(self.err(format!("method '{m}' of a {t}"))),
        }
    }

    /// Note [Calls in TorchScript code].
    pub(crate) fn schema_call(&mut self, name: &str, args: Vec<Sym>, kw: Vec<(String, Sym)>) -> Result<Sym> {
        let args = args.into_iter().map(|a| self.value(a)).collect::<Result<Vec<_>>>()?;
        let mut kwv = Vec::new();
        for (k, a) in kw {
            kwv.push((k, self.value(a)?));
        }
        let names = overloads_of(name);
        let mut best: Option<(u32, Arc<FunctionSchema>)> = None;
        for overload in &names {
            let Ok((_, schema)) = aten::dispatcher().find_schema(overload) else { continue };
            if let Some(score) = self.bind_score(&schema, &args, &kwv) {
                if best.as_ref().is_none_or(|(b, _)| score > *b) {
                    best = Some((score, schema));
                }
            }
        }
        let Some((_, schema)) = best else {
            if names.is_empty() {
                return Err(self.err(format!("unknown operator aten::{name}")));
            }
            let types: Vec<String> = args.iter().map(|&v| self.graph.value_type(v).to_string()).collect();
            let kws: Vec<String> = kwv.iter().map(|(k, v)| format!("{k}={}", self.graph.value_type(*v))).collect();
            return Err(self.err(format!(
                "no overload of aten::{name} takes ({}); overloads: {}",
                types.into_iter().chain(kws).collect::<Vec<_>>().join(", "),
                names.join(", ")
            )));
        };
        let mut inputs = Vec::new();
        for (i, a) in schema.arguments.iter().enumerate() {
            let v = if !a.kwarg_only && i < args.len() {
                args[i]
            } else if let Some((_, v)) = kwv.iter().find(|(k, _)| *k == a.name) {
                *v
            } else {
                let d =
                    a.default.as_ref().ok_or_else(|| self.err(format!("aten::{name}: '{}' has no value", a.name)))?;
                let c = default_constant(d, &a.ty).map_err(|m| self.err(format!("aten::{name}: {m}")))?;
                self.constant(c)
            };
            inputs.push(v);
        }
        let types: Vec<JitType> = schema.returns.iter().map(|r| jit_type(&r.ty)).collect();
        let outs = self.node(&format!("aten::{}", schema.name), &inputs, types);
        Ok(match outs.len() {
            0 => Sym::Value(self.constant(Constant::None)),
            1 => Sym::Value(outs[0]),
            _ => Sym::Tuple(outs.into_iter().map(Sym::Value).collect()),
        })
    }

    /// How well the arguments bind to `schema` (`None`: they do not).
    fn bind_score(&self, schema: &FunctionSchema, args: &[ValueId], kw: &[(String, ValueId)]) -> Option<u32> {
        let positional = schema.arguments.iter().filter(|a| !a.kwarg_only).count();
        if args.len() > positional || kw.iter().any(|(k, _)| !schema.arguments.iter().any(|a| a.name == *k)) {
            return None;
        }
        let mut score = 0u32;
        for (i, a) in schema.arguments.iter().enumerate() {
            let given = if !a.kwarg_only && i < args.len() {
                Some(args[i])
            } else {
                kw.iter().find(|(k, _)| *k == a.name).map(|(_, v)| *v)
            };
            match given {
                Some(v) => match fit(self.graph.value_type(v), &a.ty) {
                    0 => return None,
                    s => score += s as u32 * 2,
                },
                None if a.default.is_some() => {}
                None => return None,
            }
        }
        Some(score)
    }

    /// Inlines method `method` of module `m` called with `args`.
    pub(crate) fn inline(&mut self, m: usize, method: &str, args: Vec<Sym>) -> Result<Sym> {
        let class = self.mods[m].class.clone();
        let def = class
            .methods
            .iter()
            .find(|d| d.name == method)
            .ok_or_else(|| self.err(format!("class {} has no method {method}", class.name)))?
            .clone();
        if self.inlined >= MAX_MODULE_DEPTH {
            return Err(
                self.err(format!("module calls nest more than {MAX_MODULE_DEPTH} deep (a module calling itself?)"))
            );
        }
        let mut argv = vec![Sym::Module(m)];
        argv.extend(args);
        self.inline_function(&def, argv, Vec::new())
    }

    /// Inlines a function (a method with its module first among `args`): binds the parameters
    /// (keyword arguments by name, defaults for the rest) and compiles the body.
    pub(crate) fn inline_function(&mut self, def: &Method, args: Vec<Sym>, kw: Vec<(String, Sym)>) -> Result<Sym> {
        if args.len() > def.params.len() {
            return Err(self.err(format!("{} takes {} arguments, got {}", def.name, def.params.len(), args.len())));
        }
        let mut env = Env::new();
        let mut args = args.into_iter();
        for p in &def.params {
            let s = match args.next() {
                Some(s) => s,
                None => match kw.iter().find(|(k, _)| *k == p.name) {
                    Some((_, s)) => s.clone(),
                    None => match &p.default {
                        Some(d) => self.expr(d, &mut Env::new())?,
                        None => return Err(self.err(format!("{}() is missing argument '{}'", def.name, p.name))),
                    },
                },
            };
            env.insert(p.name.clone(), s);
        }
        if let Some((k, _)) = kw.iter().find(|(k, _)| !def.params.iter().any(|p| p.name == *k)) {
            return Err(self.err(format!("{}() got an unexpected keyword argument '{k}'", def.name)));
        }
        self.inlined += 1;
        self.nesting += 1;
        let saved = std::mem::take(&mut self.at);
        let out = if self.nesting > MAX_COMPILE_DEPTH {
            Err(self.err(format!("expressions and module calls nest more than {MAX_COMPILE_DEPTH} deep")))
        } else {
            self.function_body(def, env)
        };
        self.at = saved;
        self.inlined -= 1;
        self.nesting -= 1;
        out
    }

    /// Gives an unnamed value the Python name it is assigned to.
    pub(crate) fn named(&mut self, s: Sym, name: &str) -> Sym {
        if let Sym::Value(v) = s {
            if self.graph.value_name(v).is_none() && self.graph.producer(v).is_some() && !name.starts_with('$') {
                self.graph.set_value_name(v, Some(name));
            }
        }
        s
    }
}

/// The IR type of a schema type.
pub fn jit_type(t: &Type) -> JitType {
    match t {
        Type::Tensor => JitType::tensor(),
        Type::Int | Type::SymInt | Type::ScalarType | Type::Layout | Type::MemoryFormat => JitType::Int,
        Type::Float => JitType::Float,
        Type::Bool => JitType::Bool,
        Type::Str | Type::Dimname => JitType::Str,
        Type::Scalar => JitType::Number,
        Type::Device => JitType::Device,
        Type::Generator => JitType::Generator,
        Type::Storage | Type::Stream => JitType::None,
        Type::Optional(inner) => JitType::Optional(Box::new(jit_type(inner))),
        Type::List(inner, _) => JitType::List(Box::new(jit_type(inner))),
    }
}

/// A schema default as a constant of the argument's type.
pub(crate) fn default_constant(d: &DefaultValue, ty: &Type) -> std::result::Result<Constant, String> {
    let ty = match ty {
        Type::Optional(inner) if *d != DefaultValue::None => inner.as_ref(),
        t => t,
    };
    Ok(match (d, ty) {
        (DefaultValue::None, _) => Constant::None,
        (DefaultValue::Bool(b), _) => Constant::Bool(*b),
        (DefaultValue::Int(i), Type::Float) => Constant::Float(*i as f64),
        (DefaultValue::Int(i), Type::List(_, Some(n))) => Constant::IntList(vec![*i; *n]),
        (DefaultValue::Int(i), _) => Constant::Int(*i),
        (DefaultValue::Float(x), _) => Constant::Float(*x),
        (DefaultValue::Str(s), _) => Constant::Str(s.clone()),
        (DefaultValue::IntList(v), Type::List(e, _)) if **e == Type::Float => {
            Constant::FloatList(v.iter().map(|&i| i as f64).collect())
        }
        (DefaultValue::IntList(v), _) => Constant::IntList(v.clone()),
        (DefaultValue::FloatList(v), _) => Constant::FloatList(v.clone()),
        (DefaultValue::BoolList(v), _) => Constant::BoolList(v.clone()),
        (DefaultValue::Ident(name), Type::ScalarType) => {
            Constant::Int(c10::ScalarType::from_name(name).map_err(|e| e.to_string())? as i64)
        }
        (DefaultValue::Ident(name), Type::MemoryFormat) => Constant::Int(memory_format_code(match name.as_str() {
            "contiguous_format" => c10::MemoryFormat::Contiguous,
            "preserve_format" => c10::MemoryFormat::Preserve,
            "channels_last" => c10::MemoryFormat::ChannelsLast,
            "channels_last_3d" => c10::MemoryFormat::ChannelsLast3d,
            other => return Err(format!("unknown memory format '{other}'")),
        })),
        (DefaultValue::Ident(name), Type::Layout) if name == "strided" => Constant::Int(0),
        (DefaultValue::Ident(name), Type::Int) => Constant::Int(match name.as_str() {
            "None" => 0,
            "Mean" => 1,
            "Sum" => 2,
            other => return Err(format!("unknown int constant '{other}'")),
        }),
        (d, t) => return Err(format!("default {d:?} for an argument of type {t}")),
    })
}

/// Whether a TorchScript archive's pickles may name `global` beyond PyTorch's weights_only list
/// (see Note [Allowed globals] in `nn/src/pickle.rs`): the classes of the archive's own code
/// (`__torch__.*`, which become objects whose code is read from `code/`, never run as Python)
/// and the `torch.jit._pickle` helpers that tag typed containers. These are what PyTorch's
/// TorchScript loader resolves on top of tensors and containers; a `torch.load` checkpoint gets
/// no such extension. Anything else (`os.system`) is refused, naming the global.
fn torchscript_global(global: &nn::pickle::Global) -> bool {
    let module = global.module();
    module == "__torch__" || module.starts_with("__torch__.") || module == "torch.jit._pickle"
}

/// Loads a `torch.jit.save` archive of a traced module.
pub fn load_torchscript(archive: &mut PtArchive) -> Result<ScriptModule> {
    // Archives whose operators need version 6 or later keep it in `.data/version` (PyTorch's
    // readers look there first); older ones in `version`.
    let record = [".data/version", "version"]
        .into_iter()
        .find(|r| archive.has_record(r))
        .ok_or_else(|| load_error(archive, "the archive has no version record (.data/version or version)"))?;
    let version = String::from_utf8(archive.read_record(record)?).unwrap_or_default();
    match version.trim().parse::<u32>() {
        Ok(v) if (1..=10).contains(&v) => {}
        _ => {
            return Err(load_error(
                archive,
                format!(
                    "unsupported TorchScript archive version {:?} in {record} (this build reads 1 to 10)",
                    version.trim()
                ),
            ))
        }
    }
    let constants = if archive.has_record("constants.pkl") {
        match archive.unpickle_allowing("constants.pkl", &torchscript_global)? {
            Value::Tuple(t) => t.iter().cloned().collect::<Vec<_>>(),
            other => return Err(load_error(archive, format!("constants.pkl holds a {}, not a tuple", other.kind()))),
        }
    } else {
        Vec::new()
    };
    let root = match archive.unpickle_allowing("data.pkl", &torchscript_global)? {
        Value::Object(o) => o,
        other => return Err(load_error(archive, format!("data.pkl holds a {}, not a module", other.kind()))),
    };
    let origin = archive.path().display().to_string();
    let mut imp = Importer::new(Some(archive), origin, "jit::load");
    for c in constants {
        match c {
            Value::Tensor(t) => {
                let k = imp.graph.add_tensor_constant(t);
                imp.constants.push(k);
            }
            other => return Err(imp.err(format!("constants.pkl holds a {}", other.kind()))),
        }
    }
    imp.add_modules(&root)?;
    let forward = imp.mods[0]
        .class
        .methods
        .iter()
        .find(|m| m.name == "forward")
        .cloned()
        .ok_or_else(|| imp.err(format!("the root module ({}) has no forward", qualified_name(&root))))?;
    // Graph inputs: forward's arguments, then every parameter, then every buffer.
    let args = imp.inputs(&forward)?;
    let mut parameters = Vec::new();
    let mut buffers = Vec::new();
    for m in 0..imp.mods.len() {
        let class = imp.mods[m].class.clone();
        // An optional parameter or buffer set to None (`bias=False`, a norm without running
        // statistics) is not an input: reading it gives None.
        let is_none = |imp: &Importer<'_>, name: &str| matches!(imp.mods[m].state.get(name), Some(Value::None));
        for p in &class.parameters {
            if is_none(&imp, p) {
                continue;
            }
            let t = imp.tensor_attr(m, p)?;
            parameters.push((join(&imp.mods[m].path, p), t));
        }
        for b in &class.buffers {
            if is_none(&imp, b) {
                continue;
            }
            let t = imp.tensor_attr(m, b)?;
            buffers.push((join(&imp.mods[m].path, b), t));
        }
    }
    for (name, t) in parameters.iter().chain(&buffers) {
        let v = imp.graph.add_input(JitType::Tensor(crate::types::TensorType::of(t)), Some(name));
        imp.tensors.insert(name.clone(), v);
    }
    let out = imp.inline(0, "forward", args[1..].to_vec())?;
    let v = imp.value(out)?;
    imp.graph.add_output(v);
    imp.graph.lint()?;
    let parameters = parameters.into_iter().map(|(n, t)| Ok((n, Parameter::new(t)?))).collect::<Result<Vec<_>>>()?;
    let buffers = buffers.into_iter().map(|(n, t)| (n, Buffer::new(t))).collect();
    let defaults = imp.defaults(&forward.params[1..]);
    let mut m = ScriptModule::new(imp.graph, parameters, buffers)?;
    m.set_input_defaults(defaults)?;
    Ok(m)
}

impl Importer<'_> {
    /// The constant default of each of `params` (`tgt_is_causal: bool=False`), `None` where
    /// there is none or it is not a constant.
    fn defaults(&mut self, params: &[crate::script::Param]) -> Vec<Option<Constant>> {
        params
            .iter()
            .map(|p| {
                let d = p.default.as_ref()?;
                let v = self.expr(d, &mut Env::new()).ok()?;
                let v = self.value(v).ok()?;
                self.graph.constant_value(v).filter(|c| !matches!(c, Constant::Tensor(_)))
            })
            .collect()
    }

    /// Graph inputs for the parameters of `def` after its first (`self`), typed by their
    /// annotations (unannotated: `Tensor`, as in TorchScript); `args[0]` is the root module.
    fn inputs(&mut self, def: &Method) -> Result<Vec<Sym>> {
        let mut args = vec![Sym::Module(0)];
        for p in def.params.iter().skip(1) {
            let ty = match &p.ty {
                None => JitType::tensor(),
                Some(t) => annotation_type(t).ok_or_else(|| {
                    self.err(format!("{}'s argument {}: type {t:?} is not supported", def.name, p.name))
                })?,
            };
            args.push(Sym::Value(self.graph.add_input(ty, Some(&p.name))));
        }
        Ok(args)
    }
}

/// Compiles TorchScript source text: its function `name` (with the others it calls inlined)
/// becomes a [`ScriptModule`] without parameters, whose inputs are the function's arguments in
/// order (typed by their annotations; unannotated ones are tensors, as in TorchScript).
///
/// ```
/// use aten::{IValue, Tensor};
/// let m = jit::script_function(
///     "def f(x: Tensor, n: int) -> Tensor:\n    for i in range(n):\n        x = x * 2\n    return x\n",
///     "f",
/// )
/// .unwrap();
/// let out = m.forward_values(&[IValue::Tensor(Tensor::from_slice(&[1.0f32])), IValue::Int(3)]).unwrap();
/// assert!(matches!(&out[0], IValue::Tensor(t) if t.to_vec::<f32>().unwrap() == vec![8.0]));
/// ```
pub fn script_function(source: &str, name: &str) -> Result<ScriptModule> {
    let file = parse_source(source, "<script>")?;
    if let Some(c) = file.classes.first() {
        return Err(Error::invalid(
            "jit::script",
            format!(
                "<script>: class {}: classes are compiled from archives (jit::load); jit::script compiles functions",
                c.name
            ),
        ));
    }
    let mut imp = Importer::new(None, "<script>".into(), "jit::script");
    for f in file.functions {
        imp.functions.insert(f.name.clone(), Rc::new(f));
    }
    let def = imp.functions.get(name).cloned().ok_or_else(|| {
        let mut names: Vec<&String> = imp.functions.keys().collect();
        names.sort();
        Error::invalid("jit::script", format!("<script>: no function {name} (the source has {names:?})"))
    })?;
    let mut args = Vec::new();
    for p in &def.params {
        let ty = match &p.ty {
            None => JitType::tensor(),
            Some(t) => annotation_type(t)
                .ok_or_else(|| imp.err(format!("{name}'s argument {}: type {t:?} is not supported", p.name)))?,
        };
        args.push(Sym::Value(imp.graph.add_input(ty, Some(&p.name))));
    }
    let out = imp.inline_function(&def, args, Vec::new())?;
    let v = imp.value(out)?;
    imp.graph.add_output(v);
    let defaults = imp.defaults(&def.params);
    imp.graph.lint()?;
    let mut module = ScriptModule::new(imp.graph, Vec::new(), Vec::new())?;
    module.set_input_defaults(defaults)?;
    module.compile()?;
    Ok(module)
}

/// Compiles the last function of TorchScript source text ([`script_function`]).
pub fn script(source: &str) -> Result<ScriptModule> {
    let file = parse_source(source, "<script>")?;
    if file.functions.is_empty() && !file.classes.is_empty() {
        // The refusal for classes.
        return script_function(source, "");
    }
    let last = file
        .functions
        .last()
        .map(|f| f.name.clone())
        .ok_or_else(|| Error::invalid("jit::script", "<script>: the source has no function"))?;
    script_function(source, &last)
}
