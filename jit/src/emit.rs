//! Statements and control flow: the second half of the TorchScript compiler (`import.rs` has
//! the expressions). A function body becomes nodes of the current block; `if` becomes a
//! `prim::If`, `for` and `while` a `prim::Loop`, with the values each assigns threaded through
//! block parameters and returns, as TorchScript's IR emitter builds them.
//!
//! Note [Control flow in the emitter]: the compiler keeps an environment (name → value) per
//! block, SSA style.
//! - `if c: A else: B` compiles A and B into the two blocks of a `prim::If`, each with a copy of
//!   the environment; every name either branch rebinds (or both bind anew) becomes an output of
//!   the `If`, with the two values unified (`Tensor` and `None` give `Optional[Tensor]`; an
//!   `int` and a `Tensor` leave the name unusable, with that reason). A branch that raises
//!   gives `prim::Uninitialized` for its outputs. A constant condition (`self.training`, `x is
//!   None` of a value that is never None) compiles only the branch taken, as TorchScript's
//!   metacompilation does; `x is not None` of an `Optional` refines `x` inside the branch.
//! - Loops: a `prim::Loop(trip_count, cond, carried...)` whose body block takes the iteration
//!   number and the carried values and returns the next condition and carried values. The
//!   carried values are the names the body assigns (or appends to) that are bound before the
//!   loop. `for` over `range`, lists, tensors (along dim 0), `enumerate` and `zip` of those;
//!   over a `ModuleList`, `Sequential` or tuple the body is unrolled, once per item, as
//!   TorchScript does. `while c` runs with an unbounded trip count and `c` evaluated before the
//!   loop and at the end of every iteration.
//! - `break` and `continue` are lowered as TorchScript's exit transform lowers them: they set
//!   the block-local flags `$exit` (and `$break`), the statements after an `if` that may have
//!   exited run in an `If` on `not $exit`, and a loop whose body breaks continues on
//!   `not $break` (and the `while` condition).
//! - An `if` one of whose branches always leaves (returns, raises, breaks, continues) takes the
//!   statements that follow it into its other branch, so early returns and `if eos: break`
//!   need no flags. A `return` inside a loop is refused.
//!
//! Note [Functional lists]: lists are values in the interpreter (`IValue` lists are not shared),
//! so `xs.append(y)` compiles to `xs' = aten::append(xs, y)` and rebinds `xs` — and every other
//! name bound to the same list — to the new value; a loop that appends carries the list. Since
//! the interpreter moves a register on its last use (Note [Register moves]), the append reuses
//! the list's buffer. Lists aliased through another list or a module attribute are not
//! tracked. `xs[i] = y` and `del xs[i]` are `aten::_set_item` and `aten::Delete` the same way.
//!
//! Note [Dicts]: `Dict[K, V]` values (keys `str`, `int`, `float`, `bool` or `Tensor`, by
//! identity for tensors) are functional in the same way: an `IValue::Dict` holds the entries in
//! insertion order, as Python's dicts keep them. `d[k] = v`, `del d[k]`, `d.update(e)`,
//! `d.clear()` give a new dict value (`aten::_set_item`, `aten::Delete`, `aten::update`,
//! `aten::clear`) and `d.pop(k[, default])` and `d.setdefault(k, v)` give the value and the new
//! dict; the names bound to the old dict are rebound. A dict that is not bound to a local name
//! (a module attribute, a list's item) cannot be changed: that is an error, not a lost write.
//! `{}` without an annotation is `Dict[str, Tensor]`; `for k in d` iterates over `d.keys()`.
//! Lookups scan the entries (dicts in scripted models hold a handful).

use c10::Result;

use crate::import::{annotation_type, unify, Env, Importer, Sym, MAX_COMPILE_DEPTH};
use crate::ir::{BlockId, Constant, NodeId, ValueId};
use crate::script::{BinOp, Expr, Method, Statement, Stmt};
use crate::types::JitType;

/// How a block of statements ends.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Flow {
    /// Goes on to what follows.
    Normal,
    /// Left the loop body (`break`/`continue`).
    Exit,
    /// Returned this value.
    Return(Sym),
    /// Raised an exception.
    Raise,
}

/// Whether some path through the current loop body has left it (Note [Control flow in the
/// emitter]).
const EXIT: &str = "$exit";
/// Whether some path through the current loop body has broken out of the loop.
const BREAK: &str = "$break";

fn is_raise_call(e: &Expr) -> bool {
    let Expr::Call(f, _, _) = e else { return false };
    let Expr::Attr(base, name) = f.as_ref() else { return false };
    name == "RaiseException"
        && matches!(base.as_ref(), Expr::Attr(ops, prim) if prim == "prim" && **ops == Expr::Name("ops".into()))
}

/// Whether every path through `stmts` leaves them (returns, raises, breaks or continues).
fn terminates(stmts: &[Statement]) -> bool {
    match stmts.last().map(|s| &s.kind) {
        Some(Stmt::Break | Stmt::Continue | Stmt::Return(_) | Stmt::Raise(_)) => true,
        Some(Stmt::If(_, a, b)) => terminates(a) && terminates(b),
        Some(Stmt::Expr(e)) => is_raise_call(e),
        Some(Stmt::Assert(Expr::Bool(false), _)) => true,
        _ => false,
    }
}

/// Whether `stmts` hold a `break` (or, with `any_exit`, a `continue`) of the loop around them
/// (not of a loop inside them).
fn exits(stmts: &[Statement], any_exit: bool) -> bool {
    stmts.iter().any(|s| match &s.kind {
        Stmt::Break => true,
        Stmt::Continue => any_exit,
        Stmt::If(_, a, b) => exits(a, any_exit) || exits(b, any_exit),
        _ => false,
    })
}

/// Whether `stmts` hold a `return` anywhere.
fn returns(stmts: &[Statement]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        Stmt::Return(_) => true,
        Stmt::If(_, a, b) => returns(a) || returns(b),
        Stmt::For(_, _, _, body) | Stmt::While(_, body) => returns(body),
        _ => false,
    })
}

/// The list and dict methods that change their value (Note [Functional lists], Note [Dicts]).
const MUTATORS: [&str; 7] = ["append", "_set_item", "Delete", "pop", "update", "clear", "setdefault"];

/// The names a list or dict method call in `e` mutates (`xs.append(y)`, `torch.append(xs, y)`,
/// `d.update(e)`, `torch._set_item(d, k, v)`).
fn mutated(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Call(f, args, kw) => {
            match (f.as_ref(), args.first()) {
                (Expr::Attr(base, m), _)
                    if MUTATORS.contains(&m.as_str()) && matches!(base.as_ref(), Expr::Name(n) if n != "torch") =>
                {
                    if let Expr::Name(n) = base.as_ref() {
                        out.push(n.clone());
                    }
                }
                (Expr::Attr(base, m), Some(Expr::Name(n)))
                    if MUTATORS.contains(&m.as_str()) && **base == Expr::Name("torch".into()) =>
                {
                    out.push(n.clone())
                }
                _ => {}
            }
            mutated(f, out);
            args.iter().for_each(|a| mutated(a, out));
            kw.iter().for_each(|(_, a)| mutated(a, out));
        }
        Expr::Attr(b, _) | Expr::Neg(b) | Expr::Not(b) => mutated(b, out),
        Expr::Subscript(a, b) | Expr::Binary(_, a, b) | Expr::BoolOp(_, a, b) => {
            mutated(a, out);
            mutated(b, out);
        }
        Expr::IfExp(a, b, c) => {
            mutated(a, out);
            mutated(b, out);
            mutated(c, out);
        }
        Expr::List(items) | Expr::Tuple(items) => items.iter().for_each(|i| mutated(i, out)),
        Expr::Dict(items) => items.iter().for_each(|(k, v)| {
            mutated(k, out);
            mutated(v, out);
        }),
        Expr::Slice(a, b, c) => [a, b, c].into_iter().flatten().for_each(|e| mutated(e, out)),
        _ => {}
    }
}

/// The names `stmts` assign or mutate, in order of first appearance.
fn assigned(stmts: &[Statement], out: &mut Vec<String>) {
    let push = |out: &mut Vec<String>, n: &String| {
        if !out.contains(n) {
            out.push(n.clone());
        }
    };
    for s in stmts {
        let mut m = Vec::new();
        match &s.kind {
            Stmt::Assign { targets, value, .. } => {
                mutated(value, &mut m);
                targets.iter().for_each(|t| push(out, t));
            }
            Stmt::AugAssign(t, _, value) => {
                mutated(value, &mut m);
                push(out, t);
            }
            Stmt::SetAttr(_, _, value) | Stmt::Expr(value) => mutated(value, &mut m),
            Stmt::SetItem(base, idx, value) => {
                mutated(value, &mut m);
                mutated(idx, &mut m);
                if let Expr::Name(n) = base {
                    m.push(n.clone());
                }
            }
            Stmt::Delete(base, idx) => {
                mutated(idx, &mut m);
                if let Expr::Name(n) = base {
                    m.push(n.clone());
                }
            }
            Stmt::If(c, a, b) => {
                mutated(c, &mut m);
                assigned(a, out);
                assigned(b, out);
            }
            Stmt::For(targets, _, iter, body) => {
                mutated(iter, &mut m);
                targets.iter().for_each(|t| push(out, t));
                assigned(body, out);
            }
            Stmt::While(c, body) => {
                mutated(c, &mut m);
                assigned(body, out);
            }
            Stmt::Return(Some(e)) | Stmt::Raise(Some(e)) => mutated(e, &mut m),
            Stmt::Assert(c, msg) => {
                mutated(c, &mut m);
                if let Some(e) = msg {
                    mutated(e, &mut m);
                }
            }
            _ => {}
        }
        m.iter().for_each(|n| push(out, n));
    }
}

/// What a `for` iterates over, when it compiles to a loop.
enum Seq {
    /// `range(...)`: the trip count, and the start and step when not 0 and 1.
    Range {
        trip: ValueId,
        lo_step: Option<(ValueId, ValueId)>,
    },
    List(ValueId),
    Tensor(ValueId),
    Enumerate(Box<Seq>, ValueId),
    Zip(Vec<Seq>),
}

enum Iterable {
    /// Compile-time items (submodules, a tuple's elements): the body is unrolled.
    Unrolled(Vec<Sym>),
    Seq(Seq),
}

enum LoopKind<'a> {
    For { targets: &'a [String], tuple: bool, seq: Seq },
    While(&'a Expr),
}

impl Importer<'_> {
    /// Compiles a function's body (its parameters bound in `env`) and returns what it returns.
    pub(crate) fn function_body(&mut self, def: &Method, mut env: Env) -> Result<Sym> {
        let saved = (std::mem::replace(&mut self.src, def.source.clone()), std::mem::replace(&mut self.in_loop, false));
        let flow = self.block(&def.body, &mut env);
        (self.src, self.in_loop) = saved;
        match flow? {
            Flow::Return(s) => Ok(s),
            Flow::Normal => Ok(Sym::Value(self.constant(Constant::None))),
            Flow::Raise => {
                let ty = def.returns.as_ref().and_then(annotation_type).unwrap_or(JitType::None);
                Ok(Sym::Value(self.node("prim::Uninitialized", &[], vec![ty])[0]))
            }
            Flow::Exit => Err(self.err("'break' outside a loop")),
        }
    }

    /// Compiles a block of statements (Note [Control flow in the emitter]); counts towards
    /// `MAX_COMPILE_DEPTH`, since the statements after an `if` that leaves compile inside it
    /// (see Note [Nesting limits]).
    fn block(&mut self, stmts: &[Statement], env: &mut Env) -> Result<Flow> {
        self.nesting += 1;
        let out = if self.nesting > MAX_COMPILE_DEPTH {
            Err(self.err(format!("blocks, expressions and calls nest more than {MAX_COMPILE_DEPTH} deep")))
        } else {
            self.block_inner(stmts, env)
        };
        self.nesting -= 1;
        out
    }

    fn block_inner(&mut self, stmts: &[Statement], env: &mut Env) -> Result<Flow> {
        for (i, s) in stmts.iter().enumerate() {
            self.at = format!("{}:{}", self.src, s.line);
            let rest = &stmts[i + 1..];
            if let Stmt::If(c, a, b) = &s.kind {
                if !rest.is_empty() && terminates(a) != terminates(b) {
                    // The statements after the `if` belong to the branch that goes on.
                    let (mut a, mut b) = (a.clone(), b.clone());
                    if terminates(&a) {
                        b.extend_from_slice(rest);
                    } else {
                        a.extend_from_slice(rest);
                    }
                    return self.if_stmt(c, &a, &b, env);
                }
            }
            let flow = self.stmt(s, env)?;
            if flow != Flow::Normal {
                return Ok(flow);
            }
            if !rest.is_empty() && self.in_loop && exits(std::slice::from_ref(s), true) {
                // Some path through `s` left the loop body: the rest runs where none did.
                let exited = env.get(EXIT).cloned().ok_or_else(|| self.err("a loop exit without its flag"))?;
                let c = self.value(exited)?;
                return self.branches(c, &[], rest, env, None);
            }
        }
        Ok(Flow::Normal)
    }

    fn stmt(&mut self, s: &Statement, env: &mut Env) -> Result<Flow> {
        match &s.kind {
            Stmt::Assign { targets, tuple, value, ann } => {
                let v = match ann {
                    Some(t) => self.annotated(t, value, env)?,
                    None => self.expr(value, env)?,
                };
                self.bind(targets, *tuple, v, env)?;
            }
            Stmt::AugAssign(name, op, value) => {
                let cur = match env.get(name) {
                    Some(Sym::Undefined(why)) => return Err(self.err(why.clone())),
                    Some(s) => s.clone(),
                    None => return Err(self.err(format!("name '{name}' is not defined"))),
                };
                let rhs = self.expr(value, env)?;
                let lhs = self.value(cur)?;
                let out = match crate::import::tensor_op(*op) {
                    // `x += y` of a tensor updates it in place, as in Python.
                    Some(f) if self.ty(lhs).is_tensor() && !matches!(*op, BinOp::MatMul) => {
                        self.schema_call(&format!("{f}_"), vec![Sym::Value(lhs), rhs], Vec::new())?
                    }
                    _ => self.binary(*op, Sym::Value(lhs), rhs)?,
                };
                let out = self.named(out, name);
                env.insert(name.clone(), out);
            }
            Stmt::SetAttr(base, attr, value) => {
                let b = self.expr(base, env)?;
                let v = self.expr_value(value, env)?;
                let Sym::Module(m) = b else {
                    return Err(self.err(format!("assigning attribute '{attr}' of a value")));
                };
                let path = crate::import::join(&self.mods[m].path, attr);
                let Some(&t) = self.tensors.get(&path) else {
                    return Err(
                        self.err(format!("assigning {path}: only a module's parameters and buffers can be written"))
                    );
                };
                // A buffer updated by a new value is written in place, so the module keeps it.
                if t != v {
                    self.schema_call("copy_", vec![Sym::Value(t), Sym::Value(v)], Vec::new())?;
                }
            }
            Stmt::SetItem(base, idx, value) => self.set_item(base, idx, value, env)?,
            Stmt::Delete(base, idx) => {
                let b = self.expr(base, env)?;
                let bv = self.value(b)?;
                let i = self.expr_value(idx, env)?;
                match self.ty(bv) {
                    JitType::Dict(..) => {
                        self.dict_method(bv, "Delete", vec![i], env)?;
                    }
                    JitType::List(_) => self.list_mutation(bv, "aten::Delete", &[i], env)?,
                    other => return Err(self.err(format!("'del' of an item of a {other}"))),
                }
            }
            Stmt::Expr(Expr::Str(_)) | Stmt::Pass => {}
            Stmt::Expr(e) => {
                self.expr(e, env)?;
                if is_raise_call(e) {
                    return Ok(Flow::Raise);
                }
            }
            Stmt::If(c, a, b) => return self.if_stmt(c, a, b, env),
            Stmt::For(targets, tuple, iter, body) => return self.for_stmt(targets, *tuple, iter, body, env, s.line),
            Stmt::While(c, body) => return self.emit_loop(LoopKind::While(c), body, env, s.line),
            Stmt::Break | Stmt::Continue => {
                if !self.in_loop {
                    return Err(self.err(format!(
                        "'{}' outside a loop",
                        if s.kind == Stmt::Break { "break" } else { "continue" }
                    )));
                }
                let yes = self.constant(Constant::Bool(true));
                env.insert(EXIT.into(), Sym::Value(yes));
                if s.kind == Stmt::Break {
                    env.insert(BREAK.into(), Sym::Value(yes));
                }
                return Ok(Flow::Exit);
            }
            Stmt::Return(e) => {
                if self.in_loop {
                    return Err(self.err("'return' inside a loop is not supported: break out of it and return after"));
                }
                let s = match e {
                    Some(e) => self.expr(e, env)?,
                    None => Sym::Value(self.constant(Constant::None)),
                };
                return Ok(Flow::Return(s));
            }
            Stmt::Raise(e) => {
                self.raise(e.as_ref(), env)?;
                return Ok(Flow::Raise);
            }
            Stmt::Assert(c, msg) => {
                let cs = self.expr(c, env)?;
                let cv = self.truth(cs)?;
                let class = Expr::Name("AssertionError".into());
                let exc = match msg {
                    Some(m) => Expr::Call(Box::new(class), vec![m.clone()], Vec::new()),
                    None => class,
                };
                let raise = [Statement { line: s.line, kind: Stmt::Raise(Some(exc)) }];
                return self.branches(cv, &[], &raise, env, None);
            }
        }
        Ok(Flow::Normal)
    }

    /// `raise E(msg)`: a `prim::RaiseException` with the message and `builtins.E`.
    fn raise(&mut self, e: Option<&Expr>, env: &mut Env) -> Result<()> {
        let (class, msg) = match e {
            None => ("Exception".to_string(), None),
            Some(Expr::Call(f, args, _)) if matches!(f.as_ref(), Expr::Name(_)) => {
                let Expr::Name(n) = f.as_ref() else { unreachable!("matched a name") };
                (n.clone(), args.first())
            }
            Some(Expr::Name(n)) => (n.clone(), None),
            Some(other) => ("Exception".to_string(), Some(other)),
        };
        let m = match msg {
            Some(m) => self.expr_value(m, env)?,
            None => self.constant(Constant::Str(String::new())),
        };
        if self.ty(m) != JitType::Str {
            return Err(self.err(format!("an exception's message is a {}, not a str", self.ty(m))));
        }
        let c = self.constant(Constant::Str(format!("builtins.{class}")));
        self.node("prim::RaiseException", &[m, c], Vec::new());
        Ok(())
    }

    /// Binds assignment targets (a tuple's items to several names).
    fn bind(&mut self, targets: &[String], tuple: bool, s: Sym, env: &mut Env) -> Result<()> {
        if !tuple {
            let s = self.named(s, &targets[0]);
            env.insert(targets[0].clone(), s);
            return Ok(());
        }
        let items = match s {
            Sym::Tuple(items) => items,
            Sym::Value(v) => match self.ty(v) {
                JitType::Tuple(types) => {
                    self.node("prim::TupleUnpack", &[v], types).into_iter().map(Sym::Value).collect()
                }
                JitType::List(e) => {
                    let types = vec![(*e).clone(); targets.len()];
                    self.node("prim::ListUnpack", &[v], types).into_iter().map(Sym::Value).collect()
                }
                other => return Err(self.err(format!("unpacking a {other}"))),
            },
            Sym::Undefined(why) => return Err(self.err(why)),
            _ => return Err(self.err("unpacking a module")),
        };
        if items.len() != targets.len() {
            return Err(self.err(format!("cannot unpack {} values into {}", items.len(), targets.len())));
        }
        for (t, s) in targets.iter().zip(items) {
            let s = self.named(s, t);
            env.insert(t.clone(), s);
        }
        Ok(())
    }

    /// `base[idx] = value`: a dict's entry or a list's element (a new value the name is rebound
    /// to, Note [Dicts]), or a tensor's part written in place (`copy_` of a tensor, `fill_` of a
    /// number into the view the index selects), as TorchScript compiles them.
    fn set_item(&mut self, base: &Expr, idx: &Expr, value: &Expr, env: &mut Env) -> Result<()> {
        // Python evaluates the value before the target.
        let x = self.expr_value(value, env)?;
        let b = self.expr(base, env)?;
        let bv = self.value(b)?;
        match self.ty(bv) {
            JitType::Dict(..) => {
                let k = self.expr_value(idx, env)?;
                self.dict_method(bv, "_set_item", vec![k, x], env)?;
            }
            JitType::List(elem) => {
                let i = self.expr_value(idx, env)?;
                if self.ty(i) != JitType::Int {
                    return Err(self.err(format!("list indices must be integers, not {}", self.ty(i))));
                }
                let xt = self.ty(x);
                if unify(&elem, &xt).is_none_or(|u| u.erased() != elem.erased()) {
                    return Err(self.err(format!("assigning a {xt} to an element of a {}", JitType::List(elem))));
                }
                self.list_mutation(bv, "aten::_set_item", &[i, x], env)?;
            }
            JitType::Tensor(_) => {
                let part = self.subscript(Sym::Value(bv), idx, env)?;
                let op = if self.ty(x).is_tensor() { "copy_" } else { "fill_" };
                self.schema_call(op, vec![part, Sym::Value(x)], Vec::new())?;
            }
            other => return Err(self.err(format!("assigning an item of a {other}"))),
        }
        Ok(())
    }

    fn if_stmt(&mut self, cond: &Expr, a: &[Statement], b: &[Statement], env: &mut Env) -> Result<Flow> {
        // `x is not None` / `x is None` of a name: refined inside the branch where it is not.
        let refine = match cond {
            Expr::Binary(op @ (BinOp::Is | BinOp::IsNot), x, none) if **none == Expr::None => match x.as_ref() {
                Expr::Name(name) => Some((name.clone(), *op == BinOp::IsNot)),
                _ => None,
            },
            _ => None,
        };
        let c = self.expr(cond, env)?;
        let c = self.truth(c)?;
        self.branches(c, a, b, env, refine)
    }

    /// `if c: a else: b` (Note [Control flow in the emitter]); `refine`: a name and whether it is
    /// not None in `a` (else in `b`).
    fn branches(
        &mut self,
        c: ValueId,
        a: &[Statement],
        b: &[Statement],
        env: &mut Env,
        refine: Option<(String, bool)>,
    ) -> Result<Flow> {
        if let Some(k) = self.const_bool(c) {
            return self.block(if k { a } else { b }, env);
        }
        let n = self.graph.append_node(self.cur, "prim::If", &[c], Vec::new());
        let outer = self.cur;
        let mut arms = Vec::new();
        for (k, stmts) in [a, b].into_iter().enumerate() {
            let blk = self.graph.add_block(n);
            self.cur = blk;
            let mut benv = env.clone();
            let mut refined = None;
            if let Some((name, then_not_none)) = &refine {
                if (k == 0) == *then_not_none {
                    if let Some(Sym::Value(v)) = env.get(name) {
                        if let JitType::Optional(inner) = self.ty(*v) {
                            let r = self.node("prim::unchecked_cast", &[*v], vec![(*inner).clone()])[0];
                            benv.insert(name.clone(), Sym::Value(r));
                            refined = Some((name.clone(), r));
                        }
                    }
                }
            }
            let flow = self.block(stmts, &mut benv);
            self.cur = outer;
            let flow = flow?;
            if let Some((name, r)) = refined {
                if benv.get(&name) == Some(&Sym::Value(r)) {
                    if let Some(s) = env.get(&name) {
                        benv.insert(name, s.clone());
                    }
                }
            }
            arms.push((blk, benv, flow));
        }
        let (eb, fb) = {
            let (_, e, f) = arms.pop().expect("two arms");
            (e, f)
        };
        let (ea, fa) = {
            let (_, e, f) = arms.pop().expect("two arms");
            (e, f)
        };
        let blocks = self.graph.blocks_of(n).to_vec();
        let (ba, bb) = (blocks[0], blocks[1]);
        let ret = |f: &Flow| match f {
            Flow::Return(s) => Some(s.clone()),
            _ => None,
        };
        match (&fa, &fb) {
            (Flow::Return(_), Flow::Return(_) | Flow::Raise) | (Flow::Raise, Flow::Return(_)) => {
                let out = self.join(n, (ba, ret(&fa).as_ref()), (bb, ret(&fb).as_ref()), "the returned value")?;
                return Ok(Flow::Return(out));
            }
            (Flow::Return(_), _) | (_, Flow::Return(_)) => {
                return Err(self.err(
                    "one branch of an if returns and the other goes on: TorchScript needs a return on every path",
                ));
            }
            (Flow::Raise, Flow::Raise) => return Ok(Flow::Raise),
            _ => {}
        }
        let (live_a, live_b) = (fa != Flow::Raise, fb != Flow::Raise);
        let mut names: Vec<&String> = ea.keys().chain(eb.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let before = env.get(name);
            let (sa, sb) = (ea.get(name).filter(|_| live_a), eb.get(name).filter(|_| live_b));
            if (!live_a || sa == before) && (!live_b || sb == before) {
                continue;
            }
            let merged = match (live_a, live_b, sa, sb) {
                (true, true, Some(x), Some(y)) if x == y => x.clone(),
                (true, true, Some(x), Some(y)) if is_value(x) && is_value(y) => {
                    match self.join(n, (ba, Some(x)), (bb, Some(y)), name) {
                        Ok(s) => s,
                        Err(e) => Sym::Undefined(e.to_string()),
                    }
                }
                (true, true, Some(_), Some(_)) => {
                    Sym::Undefined(format!("'{name}' is bound to different modules in the branches of an if"))
                }
                (true, true, _, _) => Sym::Undefined(format!("'{name}' is not defined in every branch of an if")),
                (true, false, Some(x), _) | (false, true, _, Some(x)) if !is_value(x) => x.clone(),
                (true, false, Some(x), _) => self.join(n, (ba, Some(x)), (bb, None), name)?,
                (false, true, _, Some(y)) => self.join(n, (ba, None), (bb, Some(y)), name)?,
                _ => continue,
            };
            env.insert(name.clone(), merged);
        }
        let exited = |f: &Flow| matches!(f, Flow::Exit | Flow::Raise);
        Ok(if exited(&fa) && exited(&fb) { Flow::Exit } else { Flow::Normal })
    }

    /// Adds an output to `If` node `n` that is `x` in its first block and `y` in its second
    /// (`None`: a branch that raised, given `prim::Uninitialized`).
    fn join(
        &mut self,
        n: NodeId,
        (ba, x): (BlockId, Option<&Sym>),
        (bb, y): (BlockId, Option<&Sym>),
        what: &str,
    ) -> Result<Sym> {
        let outer = self.cur;
        let mut vals = [None, None];
        for (k, (blk, s)) in [(ba, x), (bb, y)].into_iter().enumerate() {
            if let Some(s) = s {
                self.cur = blk;
                let v = self.value(s.clone());
                self.cur = outer;
                vals[k] = Some(v?);
            }
        }
        let ty = match vals {
            [Some(a), Some(b)] => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                unify(&ta, &tb).ok_or_else(|| {
                    self.err(format!("{what} is a {ta} in one branch of an if and a {tb} in the other"))
                })?
            }
            [Some(a), None] | [None, Some(a)] => self.ty(a),
            [None, None] => return Err(self.err("an if output from no branch")),
        };
        for (k, blk) in [ba, bb].into_iter().enumerate() {
            let v = match vals[k] {
                Some(v) => v,
                None => {
                    self.cur = blk;
                    let v = self.node("prim::Uninitialized", &[], vec![ty.clone()])[0];
                    self.cur = outer;
                    v
                }
            };
            self.graph.add_return(blk, v);
        }
        let out = self.graph.add_node_output(n, ty);
        if !what.starts_with('$') && !what.contains(' ') {
            self.graph.set_value_name(out, Some(what));
        }
        // The same constant from every branch that returns (`dim == 4 and mode == "lanczos"`
        // of a module's constant mode is False either way): the constant, so that an `if` on it
        // folds too. The output stays, unused, for dead-code elimination.
        let consts: Vec<Option<Constant>> = vals.iter().flatten().map(|&v| self.graph.constant_value(v)).collect();
        if let [Some(c), rest @ ..] = consts.as_slice() {
            if rest.iter().all(|r| r.as_ref().is_some_and(|r| r.same(c))) && !matches!(c, Constant::Tensor(_)) {
                return Ok(Sym::Value(self.constant(c.clone())));
            }
        }
        Ok(Sym::Value(out))
    }

    fn iterable(&mut self, e: &Expr, env: &mut Env) -> Result<Iterable> {
        if let Expr::Call(f, args, kw) = e {
            if let (Expr::Name(n), true) = (f.as_ref(), kw.is_empty()) {
                if !env.contains_key(n) {
                    match n.as_str() {
                        "range" => {
                            let mut vs = Vec::new();
                            for a in args {
                                let v = self.expr_value(a, env)?;
                                if self.ty(v) != JitType::Int {
                                    return Err(self.err(format!("range() of a {}", self.ty(v))));
                                }
                                vs.push(v);
                            }
                            return Ok(Iterable::Seq(match vs[..] {
                                [n] => Seq::Range { trip: n, lo_step: None },
                                [lo, hi] => {
                                    let one = self.constant(Constant::Int(1));
                                    let trip = self.node("aten::__range_length", &[lo, hi, one], vec![JitType::Int])[0];
                                    Seq::Range { trip, lo_step: Some((lo, one)) }
                                }
                                [lo, hi, step] => {
                                    let trip =
                                        self.node("aten::__range_length", &[lo, hi, step], vec![JitType::Int])[0];
                                    Seq::Range { trip, lo_step: Some((lo, step)) }
                                }
                                _ => return Err(self.err(format!("range() takes 1 to 3 arguments, got {}", vs.len()))),
                            }));
                        }
                        "enumerate" if !args.is_empty() && args.len() <= 2 => {
                            let inner = self.iterable(&args[0], env)?;
                            let start = match args.get(1) {
                                Some(s) => self.expr_value(s, env)?,
                                None => self.constant(Constant::Int(0)),
                            };
                            return match inner {
                                Iterable::Seq(s) => Ok(Iterable::Seq(Seq::Enumerate(Box::new(s), start))),
                                Iterable::Unrolled(items) => {
                                    let Some(Constant::Int(s0)) = self.graph.constant_value(start) else {
                                        return Err(self.err("enumerate() of a module list from a non-constant start"));
                                    };
                                    let items = items
                                        .into_iter()
                                        .enumerate()
                                        .map(|(i, s)| {
                                            Sym::Tuple(vec![Sym::Value(self.constant(Constant::Int(s0 + i as i64))), s])
                                        })
                                        .collect();
                                    Ok(Iterable::Unrolled(items))
                                }
                            };
                        }
                        "zip" if !args.is_empty() => {
                            let mut seqs = Vec::new();
                            let mut unrolled = Vec::new();
                            for a in args {
                                match self.iterable(a, env)? {
                                    Iterable::Seq(s) => seqs.push(s),
                                    Iterable::Unrolled(items) => unrolled.push(items),
                                }
                            }
                            if unrolled.is_empty() {
                                return Ok(Iterable::Seq(Seq::Zip(seqs)));
                            }
                            if !seqs.is_empty() {
                                return Err(self.err("zip() of a module list and a run-time sequence"));
                            }
                            let n = unrolled.iter().map(Vec::len).min().unwrap_or(0);
                            let items =
                                (0..n).map(|i| Sym::Tuple(unrolled.iter().map(|u| u[i].clone()).collect())).collect();
                            return Ok(Iterable::Unrolled(items));
                        }
                        _ => {}
                    }
                }
            }
        }
        match self.expr(e, env)? {
            Sym::Module(m) => Ok(Iterable::Unrolled(self.children(m).into_iter().map(Sym::Module).collect())),
            Sym::Tuple(items) => Ok(Iterable::Unrolled(items)),
            Sym::Value(v) => match self.ty(v) {
                JitType::List(_) => Ok(Iterable::Seq(Seq::List(v))),
                // A dict iterates over its keys, as Python's does.
                JitType::Dict(k, _) => {
                    Ok(Iterable::Seq(Seq::List(self.node("aten::keys", &[v], vec![JitType::List(k)])[0])))
                }
                JitType::Tensor(_) => Ok(Iterable::Seq(Seq::Tensor(v))),
                JitType::Tuple(types) => Ok(Iterable::Unrolled(
                    self.node("prim::TupleUnpack", &[v], types).into_iter().map(Sym::Value).collect(),
                )),
                other => Err(self.err(format!("iterating over a {other}"))),
            },
            Sym::Undefined(why) => Err(self.err(why)),
            Sym::Global(g) => Err(self.err(format!("iterating over '{g}'"))),
        }
    }

    /// How many iterations `seq` has (compiled before the loop).
    fn trip(&mut self, seq: &Seq) -> Result<ValueId> {
        Ok(match seq {
            Seq::Range { trip, .. } => *trip,
            Seq::List(v) => self.node("aten::len", &[*v], vec![JitType::Int])[0],
            Seq::Tensor(v) => {
                let zero = self.constant(Constant::Int(0));
                self.node("aten::size", &[*v, zero], vec![JitType::Int])[0]
            }
            Seq::Enumerate(s, _) => self.trip(s)?,
            Seq::Zip(seqs) => {
                let mut n: Option<ValueId> = None;
                for s in seqs {
                    let t = self.trip(s)?;
                    n = Some(match n {
                        None => t,
                        Some(m) => self.node("prim::min", &[m, t], vec![JitType::Int])[0],
                    });
                }
                n.ok_or_else(|| self.err("zip() of nothing"))?
            }
        })
    }

    /// Item `k` of `seq` (compiled inside the loop body).
    fn item(&mut self, seq: &Seq, k: ValueId) -> Result<Sym> {
        Ok(match seq {
            Seq::Range { lo_step: None, .. } => Sym::Value(k),
            Seq::Range { lo_step: Some((lo, step)), .. } => {
                Sym::Value(self.node("aten::__derive_index", &[k, *lo, *step], vec![JitType::Int])[0])
            }
            Seq::List(v) => {
                let JitType::List(e) = self.ty(*v) else { return Err(self.err("a list without its type")) };
                Sym::Value(self.node("aten::__getitem__", &[*v, k], vec![*e])[0])
            }
            Seq::Tensor(v) => {
                let zero = Sym::Value(self.constant(Constant::Int(0)));
                self.schema_call("select", vec![Sym::Value(*v), zero, Sym::Value(k)], Vec::new())?
            }
            Seq::Enumerate(s, start) => {
                let i = if self.graph.constant_value(*start) == Some(Constant::Int(0)) {
                    k
                } else {
                    self.node("aten::add", &[k, *start], vec![JitType::Int])[0]
                };
                Sym::Tuple(vec![Sym::Value(i), self.item(s, k)?])
            }
            Seq::Zip(seqs) => Sym::Tuple(seqs.iter().map(|s| self.item(s, k)).collect::<Result<_>>()?),
        })
    }

    fn for_stmt(
        &mut self,
        targets: &[String],
        tuple: bool,
        iter: &Expr,
        body: &[Statement],
        env: &mut Env,
        line: usize,
    ) -> Result<Flow> {
        match self.iterable(iter, env)? {
            Iterable::Unrolled(items) => {
                if exits(body, true) {
                    return Err(self.err("'break'/'continue' in a loop over a module list or tuple is not supported"));
                }
                for item in items {
                    self.bind(targets, tuple, item, env)?;
                    let flow = self.block(body, env)?;
                    if flow != Flow::Normal {
                        return Ok(flow);
                    }
                }
                Ok(Flow::Normal)
            }
            Iterable::Seq(seq) => self.emit_loop(LoopKind::For { targets, tuple, seq }, body, env, line),
        }
    }

    /// A `for` or `while` loop starting at `line`.
    fn emit_loop(&mut self, kind: LoopKind<'_>, body: &[Statement], env: &mut Env, line: usize) -> Result<Flow> {
        if returns(body) {
            return Err(self.err("'return' inside a loop is not supported: break out of it and return after"));
        }
        // An enclosing loop's exit flags are not this loop's.
        let outer_flags: Vec<(&str, Option<Sym>)> = [EXIT, BREAK].into_iter().map(|k| (k, env.remove(k))).collect();
        let r = self.emit_loop_inner(kind, body, env, line);
        for (k, s) in outer_flags {
            if let Some(s) = s {
                env.insert(k.into(), s);
            }
        }
        r
    }

    fn emit_loop_inner(&mut self, kind: LoopKind<'_>, body: &[Statement], env: &mut Env, line: usize) -> Result<Flow> {
        let (trip, cond) = match &kind {
            LoopKind::For { seq, .. } => (self.trip(seq)?, self.constant(Constant::Bool(true))),
            LoopKind::While(c) => {
                let s = self.expr(c, env)?;
                (self.constant(Constant::Int(i64::MAX)), self.truth(s)?)
            }
        };
        if self.const_bool(cond) == Some(false) {
            return Ok(Flow::Normal);
        }
        let mut names = Vec::new();
        assigned(body, &mut names);
        let mut carried = Vec::new();
        for name in names {
            if let Some(s @ (Sym::Value(_) | Sym::Tuple(_))) = env.get(&name).cloned() {
                let v = self.value(s)?;
                carried.push((name, v));
            }
        }
        let mut inputs = vec![trip, cond];
        inputs.extend(carried.iter().map(|(_, v)| *v));
        // Tensor details (sizes) may change from one iteration to the next.
        let types: Vec<JitType> = carried.iter().map(|(_, v)| self.ty(*v).erased()).collect();
        let n = self.graph.append_node(self.cur, "prim::Loop", &inputs, types.clone());
        let blk = self.graph.add_block(n);
        let k = self.graph.add_param(blk, JitType::Int, None);
        let mut benv = env.clone();
        for ((name, _), t) in carried.iter().zip(&types) {
            let p = self.graph.add_param(blk, t.clone(), Some(name));
            benv.insert(name.clone(), Sym::Value(p));
        }
        let outer = self.cur;
        self.cur = blk;
        let was = std::mem::replace(&mut self.in_loop, true);
        let r = self.loop_body(&kind, k, body, &mut benv, &carried, &types, blk, line);
        self.in_loop = was;
        self.cur = outer;
        r?;
        let outs = self.graph.outputs_of(n).to_vec();
        for ((name, _), out) in carried.iter().zip(outs) {
            self.graph.set_value_name(out, Some(name));
            env.insert(name.clone(), Sym::Value(out));
        }
        Ok(Flow::Normal)
    }

    #[allow(clippy::too_many_arguments)]
    fn loop_body(
        &mut self,
        kind: &LoopKind<'_>,
        k: ValueId,
        body: &[Statement],
        benv: &mut Env,
        carried: &[(String, ValueId)],
        types: &[JitType],
        blk: BlockId,
        line: usize,
    ) -> Result<()> {
        if let LoopKind::For { targets, tuple, seq } = kind {
            let item = self.item(seq, k)?;
            self.bind(targets, *tuple, item, benv)?;
        }
        let breaks = exits(body, false);
        let no = self.constant(Constant::Bool(false));
        if exits(body, true) {
            benv.insert(EXIT.into(), Sym::Value(no));
        }
        if breaks {
            benv.insert(BREAK.into(), Sym::Value(no));
        }
        let flow = self.block(body, benv)?;
        let cond = if flow == Flow::Raise {
            no
        } else {
            let broke = if breaks {
                let b = benv.get(BREAK).cloned().ok_or_else(|| self.err("a break without its flag"))?;
                Some(self.value(b)?)
            } else {
                None
            };
            match (kind, broke) {
                (LoopKind::For { .. }, None) => self.constant(Constant::Bool(true)),
                (LoopKind::For { .. }, Some(b)) => match self.const_bool(b) {
                    Some(x) => self.constant(Constant::Bool(!x)),
                    None => self.node("aten::__not__", &[b], vec![JitType::Bool])[0],
                },
                (LoopKind::While(c), None) => {
                    let s = self.expr(c, benv)?;
                    self.truth(s)?
                }
                (LoopKind::While(c), Some(_)) => {
                    // `not $break and c`: the condition is not evaluated once the body broke out.
                    let go = Expr::Not(Box::new(Expr::Name(BREAK.into())));
                    let e = Expr::BoolOp(true, Box::new(go), Box::new((*c).clone()));
                    let s = self.expr(&e, benv)?;
                    self.truth(s)?
                }
            }
        };
        self.graph.add_return(blk, cond);
        self.at = format!("{}:{line}", self.src);
        for ((name, _), t) in carried.iter().zip(types) {
            let s = benv.get(name).cloned().ok_or_else(|| self.err(format!("'{name}' is lost in the loop")))?;
            let v = self.value(s)?;
            let vt = self.ty(v);
            if unify(t, &vt).as_ref() != Some(t) {
                return Err(self.err(format!("'{name}' is a {t} before the loop and a {vt} after an iteration")));
            }
            self.graph.add_return(blk, v);
        }
        Ok(())
    }
}

fn is_value(s: &Sym) -> bool {
    matches!(s, Sym::Value(_) | Sym::Tuple(_))
}
