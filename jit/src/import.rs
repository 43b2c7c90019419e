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

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use c10::{Error, Result};
use nn::pickle::{Dict, Object, Value};
use nn::{Buffer, Parameter, PtArchive};
use schema::{DefaultValue, FunctionSchema, Type};

use crate::interpreter::{fit, memory_format_code, overloads_of};
use crate::ir::{Constant, Graph, ValueId};
use crate::module::ScriptModule;
use crate::script::{parse_file, Class, Expr, Method, Stmt};
use crate::types::JitType;

fn load_error(archive: &PtArchive, msg: impl std::fmt::Display) -> Error {
    Error::invalid("jit::load", format!("{}: {msg}", archive.path().display()))
}

/// A module of the tree.
struct ModInfo {
    /// The dotted path from the root (`""` for the root).
    path: String,
    /// Its class's code.
    class: Rc<Class>,
    /// Its attributes.
    state: Dict,
}

/// What a name or expression stands for while compiling.
#[derive(Clone)]
enum Sym {
    Value(ValueId),
    Module(usize),
    Tuple(Vec<Sym>),
    /// `torch`, `ops.prim`, `torch.linear`, ... (resolved when called).
    Global(String),
}

struct Importer<'a> {
    archive: &'a mut PtArchive,
    graph: Graph,
    mods: Vec<ModInfo>,
    classes: HashMap<String, Rc<Class>>,
    /// `fc1.weight` → its graph input.
    tensors: HashMap<String, ValueId>,
    constants: Vec<usize>,
    /// How many submodule `forward`s are being inlined, one inside the other.
    inlined: usize,
    /// The recursion of the compiler: expressions being compiled plus inlined methods (see
    /// Note [Nesting limits]).
    nesting: usize,
}

/// How many submodules may be inlined one inside the other (the module tree's depth).
const MAX_MODULE_DEPTH: usize = 64;
/// How deep the compiler may recurse over expressions and inlined methods together (see Note
/// [Nesting limits]): an expression nests at most `script::MAX_EXPR_DEPTH` levels, and each
/// inlined call adds the depth of its call site.
const MAX_COMPILE_DEPTH: usize = 400;
/// How many modules a tree may have; a shared submodule counts once per path to it, so a
/// crafted `data.pkl` sharing one object under two names at every level would otherwise
/// describe 2^64 modules.
const MAX_MODULES: usize = 1 << 16;

fn qualified_name(o: &Object) -> String {
    let c = o.class();
    format!("{}.{}", c.module(), c.name())
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

impl Importer<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        load_error(self.archive, msg)
    }

    /// The code of a class (`__torch__.a.b.Cls` is class `Cls` of `code/__torch__/a/b.py`).
    fn class(&mut self, qualified: &str) -> Result<Rc<Class>> {
        if let Some(c) = self.classes.get(qualified) {
            return Ok(c.clone());
        }
        let (module, name) = qualified.rsplit_once('.').ok_or_else(|| self.err(format!("class name '{qualified}'")))?;
        let record = format!("code/{}.py", module.replace('.', "/"));
        if !self.archive.has_record(&record) {
            return Err(self.err(format!("no code for class {qualified} (expected {record})")));
        }
        let bytes = self.archive.read_record(&record)?;
        let text = String::from_utf8(bytes).map_err(|_| self.err(format!("{record} is not UTF-8")))?;
        let source = self.archive.source(&record);
        for c in parse_file(&text, &source)? {
            self.classes.insert(format!("{module}.{}", c.name), Rc::new(c));
        }
        self.classes.get(qualified).cloned().ok_or_else(|| self.err(format!("{record} has no class {name}")))
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

    fn tensor_attr(&self, m: usize, name: &str) -> Result<aten::Tensor> {
        match self.mods[m].state.get(name) {
            Some(Value::Tensor(t)) => Ok(t),
            Some(Value::None) => Err(self.err(format!("{} is None", join(&self.mods[m].path, name)))),
            _ => Err(self.err(format!("{} is not a tensor in data.pkl", join(&self.mods[m].path, name)))),
        }
    }

    fn constant(&mut self, c: Constant) -> ValueId {
        let b = self.graph.root();
        self.graph.insert_constant(b, None, c)
    }

    fn node(&mut self, kind: &str, inputs: &[ValueId], types: Vec<JitType>) -> Vec<ValueId> {
        let b = self.graph.root();
        let n = self.graph.append_node(b, kind, inputs, types);
        self.graph.outputs_of(n).to_vec()
    }

    /// A symbol as one graph value (tuples are constructed).
    fn value(&mut self, s: Sym) -> Result<ValueId> {
        match s {
            Sym::Value(v) => Ok(v),
            Sym::Tuple(items) => {
                let vs = items.into_iter().map(|i| self.value(i)).collect::<Result<Vec<_>>>()?;
                let ty = JitType::Tuple(vs.iter().map(|&v| self.graph.value_type(v).clone()).collect());
                Ok(self.node("prim::TupleConstruct", &vs, vec![ty])[0])
            }
            Sym::Module(m) => Err(self.err(format!("module {:?} used as a value", self.mods[m].path))),
            Sym::Global(g) => Err(self.err(format!("'{g}' used as a value"))),
        }
    }

    /// Compiles an expression; counts towards [`MAX_COMPILE_DEPTH`].
    fn expr(&mut self, e: &Expr, env: &HashMap<String, Sym>) -> Result<Sym> {
        self.nesting += 1;
        let out = if self.nesting > MAX_COMPILE_DEPTH {
            Err(self.err(format!("expressions and module calls nest more than {MAX_COMPILE_DEPTH} deep")))
        } else {
            self.expr_inner(e, env)
        };
        self.nesting -= 1;
        out
    }

    fn expr_inner(&mut self, e: &Expr, env: &HashMap<String, Sym>) -> Result<Sym> {
        Ok(match e {
            Expr::Name(n) => match env.get(n) {
                Some(s) => s.clone(),
                None if matches!(n.as_str(), "torch" | "ops" | "CONSTANTS" | "int" | "float" | "bool" | "len") => {
                    Sym::Global(n.clone())
                }
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
            Expr::Tuple(items) => Sym::Tuple(items.iter().map(|i| self.expr(i, env)).collect::<Result<_>>()?),
            Expr::Subscript(base, idx) => {
                let b = self.expr(base, env)?;
                let i = self.expr(idx, env)?;
                let iv = self.value(i)?;
                match b {
                    Sym::Tuple(items) => match self.graph.constant_value(iv) {
                        Some(Constant::Int(k)) => {
                            let n = items.len() as i64;
                            let k = if k < 0 { k + n } else { k };
                            items
                                .get(k as usize)
                                .cloned()
                                .ok_or_else(|| self.err(format!("tuple index {k} out of range")))?
                        }
                        _ => return Err(self.err("a tuple indexed by a non-constant")),
                    },
                    other => {
                        let v = self.value(other)?;
                        let elem = match self.graph.value_type(v) {
                            JitType::List(e) => (**e).clone(),
                            other => return Err(self.err(format!("indexing a {other}"))),
                        };
                        Sym::Value(self.node("aten::__getitem__", &[v, iv], vec![elem])[0])
                    }
                }
            }
            Expr::Neg(inner) => {
                let v = self.expr(inner, env)?;
                self.schema_call("neg", vec![v], Vec::new())?
            }
        })
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
                    Some(Value::None) => Ok(Sym::Value(self.constant(Constant::None))),
                    Some(Value::Tensor(t)) => {
                        let k = self.graph.add_tensor_constant(t);
                        Ok(Sym::Value(self.constant(Constant::Tensor(k))))
                    }
                    Some(other) => Err(self.err(format!("attribute {path} is a {}", other.kind()))),
                    None => Err(self.err(format!("module {:?} has no attribute '{attr}'", self.mods[m].path))),
                }
            }
            Sym::Value(_) | Sym::Tuple(_) => Err(self.err(format!("attribute '{attr}' of a value"))),
        }
    }

    fn list(&mut self, items: &[Expr], env: &HashMap<String, Sym>) -> Result<Sym> {
        let mut vs = Vec::new();
        for i in items {
            let s = self.expr(i, env)?;
            vs.push(self.value(s)?);
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
            None => JitType::Int,
        };
        Ok(Sym::Value(self.node("prim::ListConstruct", &vs, vec![JitType::List(Box::new(elem))])[0]))
    }

    fn call(&mut self, f: &Expr, args: &[Expr], kw: &[(String, Expr)], env: &HashMap<String, Sym>) -> Result<Sym> {
        // `(module).forward(x, )`: the submodule's forward, inlined.
        if let Expr::Attr(base, method) = f {
            if let Sym::Module(m) = self.expr(base, env)? {
                let mut argv = Vec::new();
                for a in args {
                    argv.push(self.expr(a, env)?);
                }
                return self.inline(m, method, argv);
            }
        }
        // `getattr(self, "0")`: a submodule or attribute whose name is not an identifier
        // (`nn.Sequential`'s and `nn.ModuleList`'s children).
        if let (Expr::Name(n), [base, Expr::Str(attr)]) = (f, args) {
            if n == "getattr" && !env.contains_key(n) && kw.is_empty() {
                let b = self.expr(base, env)?;
                return self.attr(b, attr);
            }
        }
        // `annotate(List[int], [])`: the type only matters for an empty list.
        if let (Expr::Name(n), [ty, value]) = (f, args) {
            if n == "annotate" && !env.contains_key(n) {
                if let (Expr::Subscript(outer, elem), Expr::List(items)) = (ty, value) {
                    if items.is_empty() && **outer == Expr::Name("List".into()) {
                        return Ok(Sym::Value(match elem.as_ref() {
                            Expr::Name(e) if e == "int" => self.constant(Constant::IntList(Vec::new())),
                            Expr::Name(e) if e == "float" => self.constant(Constant::FloatList(Vec::new())),
                            Expr::Name(e) if e == "bool" => self.constant(Constant::BoolList(Vec::new())),
                            Expr::Name(e) if e == "Tensor" => {
                                self.node("prim::ListConstruct", &[], vec![JitType::List(Box::new(JitType::tensor()))])
                                    [0]
                            }
                            other => return Err(self.err(format!("annotate(List[{other:?}], [])"))),
                        }));
                    }
                }
                return self.expr(value, env);
            }
        }
        let callee = match self.expr(f, env)? {
            Sym::Global(g) => g,
            _ => return Err(self.err(format!("calling {f:?}"))),
        };
        let mut argv = Vec::new();
        for a in args {
            argv.push(self.expr(a, env)?);
        }
        let mut kwv = Vec::new();
        for (k, a) in kw {
            kwv.push((k.clone(), self.expr(a, env)?));
        }
        let one = |s: &mut Self, kind: &str, argv: Vec<Sym>, ty: JitType| -> Result<Sym> {
            let vs = argv.into_iter().map(|a| s.value(a)).collect::<Result<Vec<_>>>()?;
            Ok(Sym::Value(s.node(kind, &vs, vec![ty])[0]))
        };
        match callee.as_str() {
            "int" => one(self, "aten::Int", argv, JitType::Int),
            "float" => one(self, "aten::Float", argv, JitType::Float),
            "bool" => one(self, "aten::Bool", argv, JitType::Bool),
            "len" => one(self, "aten::len", argv, JitType::Int),
            "ops.prim.NumToTensor" => one(self, "prim::NumToTensor", argv, JitType::tensor()),
            "torch.size" if argv.len() == 2 => one(self, "aten::size", argv, JitType::Int),
            "torch.size" => one(self, "aten::size", argv, JitType::List(Box::new(JitType::Int))),
            "torch.dim" => one(self, "aten::dim", argv, JitType::Int),
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
                    .strip_prefix("torch.")
                    .or_else(|| name.strip_prefix("ops.aten."))
                    .ok_or_else(|| self.err(format!("unsupported call of {name}")))?;
                self.schema_call(op, argv, kwv)
            }
        }
    }

    /// Note [Calls in TorchScript code].
    fn schema_call(&mut self, name: &str, args: Vec<Sym>, kw: Vec<(String, Sym)>) -> Result<Sym> {
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
        Ok(if outs.len() == 1 { Sym::Value(outs[0]) } else { Sym::Tuple(outs.into_iter().map(Sym::Value).collect()) })
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

    fn inline(&mut self, m: usize, method: &str, args: Vec<Sym>) -> Result<Sym> {
        let class = self.mods[m].class.clone();
        let def = class
            .methods
            .iter()
            .find(|d| d.name == method)
            .ok_or_else(|| self.err(format!("class {} has no method {method}", class.name)))?
            .clone();
        if def.params.len() != args.len() + 1 {
            return Err(self.err(format!(
                "{}.{method} takes {} arguments, got {}",
                class.name,
                def.params.len() - 1,
                args.len()
            )));
        }
        if self.inlined >= MAX_MODULE_DEPTH {
            return Err(
                self.err(format!("module calls nest more than {MAX_MODULE_DEPTH} deep (a module calling itself?)"))
            );
        }
        let mut env = HashMap::new();
        env.insert(def.params[0].0.clone(), Sym::Module(m));
        for ((name, _), a) in def.params[1..].iter().zip(args) {
            env.insert(name.clone(), a);
        }
        self.inlined += 1;
        self.nesting += 1;
        let out = if self.nesting > MAX_COMPILE_DEPTH {
            Err(self.err(format!("expressions and module calls nest more than {MAX_COMPILE_DEPTH} deep")))
        } else {
            self.body(&def, env)
        };
        self.inlined -= 1;
        self.nesting -= 1;
        out
    }

    fn body(&mut self, def: &Method, mut env: HashMap<String, Sym>) -> Result<Sym> {
        for stmt in &def.body {
            match stmt {
                Stmt::Return(e) => return self.expr(e, &env),
                Stmt::Assign(targets, tuple, e) => {
                    let s = self.expr(e, &env)?;
                    if !*tuple {
                        let s = self.named(s, &targets[0]);
                        env.insert(targets[0].clone(), s);
                        continue;
                    }
                    let items = match s {
                        Sym::Tuple(items) => items,
                        Sym::Value(v) => {
                            let types = match self.graph.value_type(v) {
                                JitType::Tuple(ts) => ts.clone(),
                                other => return Err(self.err(format!("unpacking a {other}"))),
                            };
                            self.node("prim::TupleUnpack", &[v], types).into_iter().map(Sym::Value).collect()
                        }
                        _ => return Err(self.err("unpacking a module")),
                    };
                    if items.len() != targets.len() {
                        return Err(self.err(format!("cannot unpack {} values into {}", items.len(), targets.len())));
                    }
                    for (t, s) in targets.iter().zip(items) {
                        let s = self.named(s, t);
                        env.insert(t.clone(), s);
                    }
                }
            }
        }
        Err(self.err(format!("method {} (line {}) does not return", def.name, def.line)))
    }

    /// Gives an unnamed value the Python name it is assigned to.
    fn named(&mut self, s: Sym, name: &str) -> Sym {
        if let Sym::Value(v) = s {
            if self.graph.value_name(v).is_none() && self.graph.producer(v).is_some() {
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
fn default_constant(d: &DefaultValue, ty: &Type) -> std::result::Result<Constant, String> {
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

fn input_type(annotation: &str) -> Option<JitType> {
    Some(match annotation {
        "Tensor" => JitType::tensor(),
        "int" => JitType::Int,
        "float" => JitType::Float,
        "bool" => JitType::Bool,
        _ => return None,
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
    let mut imp = Importer {
        archive,
        graph: Graph::new(),
        mods: Vec::new(),
        classes: HashMap::new(),
        tensors: HashMap::new(),
        constants: Vec::new(),
        inlined: 0,
        nesting: 0,
    };
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
    let mut args = Vec::new();
    for (name, ann) in &forward.params[1..] {
        let ty = input_type(ann)
            .ok_or_else(|| imp.err(format!("forward's argument {name}: type {ann} is not supported")))?;
        args.push(Sym::Value(imp.graph.add_input(ty, Some(name))));
    }
    let mut parameters = Vec::new();
    let mut buffers = Vec::new();
    for m in 0..imp.mods.len() {
        let class = imp.mods[m].class.clone();
        for p in &class.parameters {
            let t = imp.tensor_attr(m, p)?;
            parameters.push((join(&imp.mods[m].path, p), t));
        }
        for b in &class.buffers {
            let t = imp.tensor_attr(m, b)?;
            buffers.push((join(&imp.mods[m].path, b), t));
        }
    }
    for (name, t) in parameters.iter().chain(&buffers) {
        let v = imp.graph.add_input(JitType::Tensor(crate::types::TensorType::of(t)), Some(name));
        imp.tensors.insert(name.clone(), v);
    }
    let out = imp.inline(0, "forward", args)?;
    let v = imp.value(out)?;
    imp.graph.add_output(v);
    imp.graph.lint()?;
    let parameters = parameters.into_iter().map(|(n, t)| Ok((n, Parameter::new(t)?))).collect::<Result<Vec<_>>>()?;
    let buffers = buffers.into_iter().map(|(n, t)| (n, Buffer::new(t))).collect();
    ScriptModule::new(imp.graph, parameters, buffers)
}
