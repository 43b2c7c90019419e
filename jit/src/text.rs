//! The text form of a graph, as PyTorch prints it (`print(traced.graph)`), and its parser:
//!
//! ```text
//! graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
//!       %y : Tensor):
//!   %2 : int = prim::Constant[value=1]()
//!   %3 : Tensor = aten::add(%x, %y, %2)
//!   %4 : Tensor = prim::If(%c)
//!     block0():
//!       -> (%3)
//!     block1():
//!       -> (%x)
//!   return (%4)
//! ```
//!
//! Note [Text round trip]: `print(parse(print(g)))` equals `print(g)`. Values keep their names
//! (unnamed ones are numbered in order of definition, skipping numbers used as names); bools
//! print as `0`/`1` and floats in Rust's shortest round-trip form; tensor constants print as
//! `<Tensor k>`, an index into the graph's tensor-constant table, which the parser is given
//! (`parse_with`). A `prim::FusionGroup`'s subgraph prints after the graph as
//! `with prim::FusionGroup_0 = graph(...)`, as PyTorch prints it. `#` starts a comment (PyTorch's
//! source locations).

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use aten::Tensor;
use c10::{Device, Error, Result};

use crate::ir::{Attr, BlockId, Constant, Graph, NodeId, ValueId};
use crate::types::{dtype_from_ir_name, JitType, TensorType};

/// The text form of a graph.
pub fn print(g: &Graph) -> String {
    let mut p = Printer { g, names: HashMap::new(), taken: HashSet::new(), next: 0, subgraphs: Vec::new() };
    p.collect_names(g.root());
    let mut out = String::new();
    p.graph(&mut out);
    let mut k = 0;
    while k < p.subgraphs.len() {
        let (name, sub) = (p.subgraphs[k].0.clone(), p.subgraphs[k].1);
        let _ = write!(out, "with {name} = ");
        // A subgraph's names are its own.
        out.push_str(&print(sub));
        k += 1;
    }
    out
}

struct Printer<'g> {
    g: &'g Graph,
    names: HashMap<ValueId, String>,
    taken: HashSet<String>,
    next: usize,
    subgraphs: Vec<(String, &'g Graph)>,
}

impl<'g> Printer<'g> {
    /// Names every value: its debug name, else the next unused number.
    fn collect_names(&mut self, root: BlockId) {
        let g = self.g;
        let mut order = Vec::new();
        fn walk(g: &Graph, b: BlockId, order: &mut Vec<ValueId>) {
            order.extend_from_slice(g.block_params(b));
            for &n in g.block_nodes(b) {
                for &c in g.blocks_of(n) {
                    walk(g, c, order);
                }
                order.extend_from_slice(g.outputs_of(n));
            }
        }
        walk(g, root, &mut order);
        for &v in &order {
            if let Some(n) = g.value_name(v) {
                self.taken.insert(n.to_string());
            }
        }
        let mut used = HashSet::new();
        for v in order {
            let name = match g.value_name(v) {
                Some(n) if used.insert(n.to_string()) => n.to_string(),
                _ => loop {
                    let cand = self.next.to_string();
                    self.next += 1;
                    if !self.taken.contains(&cand) && used.insert(cand.clone()) {
                        break cand;
                    }
                },
            };
            self.names.insert(v, name);
        }
    }

    fn name(&self, v: ValueId) -> String {
        format!("%{}", self.names.get(&v).map_or("?", String::as_str))
    }

    fn value_list(&self, vs: &[ValueId]) -> String {
        vs.iter().map(|&v| self.name(v)).collect::<Vec<_>>().join(", ")
    }

    fn typed(&self, v: ValueId) -> String {
        format!("{} : {}", self.name(v), self.g.value_type(v))
    }

    fn graph(&mut self, out: &mut String) {
        let g = self.g;
        let params: Vec<String> = g.inputs().iter().map(|&v| self.typed(v)).collect();
        let _ = writeln!(out, "graph({}):", params.join(",\n      "));
        self.nodes(out, g.root(), 1);
        let _ = writeln!(out, "  return ({})", self.value_list(g.outputs()));
    }

    fn nodes(&mut self, out: &mut String, b: BlockId, depth: usize) {
        let g = self.g;
        for &n in g.block_nodes(b) {
            self.node(out, n, depth);
        }
    }

    fn node(&mut self, out: &mut String, n: NodeId, depth: usize) {
        let g = self.g;
        let indent = "  ".repeat(depth);
        let outs: Vec<String> = g.outputs_of(n).iter().map(|&v| self.typed(v)).collect();
        let mut kind = g.kind(n).to_string();
        let mut attrs = Vec::new();
        for (k, a) in g.attrs(n) {
            match a {
                Attr::Const(c) => attrs.push(format!("{k}={}", constant_text(c))),
                Attr::Graph(sub) => {
                    kind = format!("{kind}_{}", self.subgraphs.len());
                    self.subgraphs.push((kind.clone(), sub));
                }
            }
        }
        let attrs = if attrs.is_empty() { String::new() } else { format!("[{}]", attrs.join(", ")) };
        let lhs = if outs.is_empty() { String::new() } else { format!("{} ", outs.join(", ")) };
        let _ = writeln!(out, "{indent}{lhs}= {kind}{attrs}({})", self.value_list(g.inputs_of(n)));
        for (i, &c) in g.blocks_of(n).iter().enumerate() {
            let params: Vec<String> = g.block_params(c).iter().map(|&v| self.typed(v)).collect();
            let _ = writeln!(out, "{indent}  block{i}({}):", params.join(", "));
            self.nodes(out, c, depth + 2);
            let _ = writeln!(out, "{indent}    -> ({})", self.value_list(g.block_returns(c)));
        }
    }
}

pub(crate) fn float_text(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}

pub(crate) fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn join<T>(xs: &[T], f: impl Fn(&T) -> String) -> String {
    format!("[{}]", xs.iter().map(f).collect::<Vec<_>>().join(", "))
}

/// The text of a constant attribute.
pub fn constant_text(c: &Constant) -> String {
    match c {
        Constant::None => "None".into(),
        Constant::Int(i) => i.to_string(),
        Constant::Float(x) => float_text(*x),
        Constant::Bool(b) => (*b as u8).to_string(),
        Constant::Str(s) => quote(s),
        Constant::IntList(v) => join(v, i64::to_string),
        Constant::FloatList(v) => join(v, |x| float_text(*x)),
        Constant::BoolList(v) => join(v, |b| (*b as u8).to_string()),
        Constant::Device(d) => quote(&d.to_string()),
        Constant::Tensor(k) => format!("<Tensor {k}>"),
    }
}

/// The string literal at the start of `text` (opened by `"` or `'`, with `\n`, `\t` and `\x`
/// escapes) and the bytes it spans, quotes included; `None` when it is not closed. Shared by
/// the graph parser and the TorchScript code parser (`script.rs`).
pub(crate) fn unquote(text: &str) -> Option<(String, usize)> {
    let mut chars = text.char_indices();
    let (_, q) = chars.next().filter(|(_, c)| *c == '"' || *c == '\'')?;
    let mut out = String::new();
    loop {
        match chars.next()? {
            (i, c) if c == q => return Some((out, i + 1)),
            (_, '\\') => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                c => out.push(c),
            },
            (_, c) => out.push(c),
        }
    }
}

/// Parses a graph whose tensor constants (if any) are in `constants`.
pub fn parse_with(text: &str, constants: Vec<Tensor>) -> Result<Graph> {
    let mut p = Parser { s: text.as_bytes(), pos: 0, text, depth: 0 };
    let mut g = Graph::new();
    g.tensor_constants = constants;
    let mut subs = Vec::new();
    p.graph(&mut g, &mut subs)?;
    p.skip_ws();
    // `with prim::FusionGroup_0 = graph(...)` sections.
    let mut named: HashMap<String, Graph> = HashMap::new();
    while p.eat_word("with") {
        let kind = p.kind()?;
        p.expect(b'=')?;
        let mut sub = Graph::new();
        sub.tensor_constants = g.tensor_constants.clone();
        let mut nested = Vec::new();
        p.graph(&mut sub, &mut nested)?;
        if !nested.is_empty() {
            return Err(p.err("a subgraph with subgraphs of its own"));
        }
        named.insert(kind, sub);
        p.skip_ws();
    }
    if p.pos < p.s.len() {
        return Err(p.err("text after the graph"));
    }
    for (n, kind) in subs {
        let sub = named.remove(&kind).ok_or_else(|| Error::invalid("jit::parse", format!("no subgraph for {kind}")))?;
        g.set_attr(n, "Subgraph", Attr::Graph(Box::new(sub)));
    }
    if let Some(k) = named.keys().next() {
        return Err(Error::invalid("jit::parse", format!("subgraph {k} is not used by any node")));
    }
    g.lint()?;
    Ok(g)
}

/// Parses a graph without tensor constants.
pub fn parse(text: &str) -> Result<Graph> {
    parse_with(text, Vec::new())
}

/// A constant literal before its type is known.
#[derive(Debug)]
enum Literal {
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Literal>),
    TensorRef(usize),
    ScalarTensor(f64, bool),
}

/// How deep blocks, list literals and types may nest in a graph's text (see Note [Nesting
/// limits] in `script.rs`).
pub const MAX_DEPTH: usize = 200;

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    text: &'a str,
    /// The nesting of what is being parsed.
    depth: usize,
}

type Scope = HashMap<String, ValueId>;

impl Parser<'_> {
    fn err(&self, what: &str) -> Error {
        let line = self.text[..self.pos.min(self.text.len())].matches('\n').count() + 1;
        let rest: String = self.text[self.pos.min(self.text.len())..].chars().take(30).collect();
        Error::invalid("jit::parse", format!("line {line}: expected {what} at '{rest}'"))
    }

    /// One level deeper, or an error past [`MAX_DEPTH`].
    fn nest(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(&format!("at most {MAX_DEPTH} levels of nested blocks, lists and types")));
        }
        Ok(())
    }

    /// `f` one level deeper (see [`Parser::nest`]).
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let depth = self.depth;
        let out = self.nest().and_then(|()| f(self));
        self.depth = depth;
        out
    }

    fn skip_ws(&mut self) {
        while self.pos < self.s.len() {
            match self.s[self.pos] {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'#' => {
                    while self.pos < self.s.len() && self.s[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(&format!("'{}'", c as char)))
        }
    }

    /// `open item, item, ... close` (possibly empty).
    fn sequence<T>(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        self.expect(open)?;
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(b',')?;
        }
    }

    fn eat_str(&mut self, w: &str) -> bool {
        self.skip_ws();
        if self.s[self.pos..].starts_with(w.as_bytes()) {
            self.pos += w.len();
            true
        } else {
            false
        }
    }

    /// A whole word (not the prefix of a longer identifier).
    fn eat_word(&mut self, w: &str) -> bool {
        self.skip_ws();
        let end = self.pos + w.len();
        if self.s[self.pos..].starts_with(w.as_bytes())
            && !self.s.get(end).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.pos = end;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Result<String> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || b"_.".contains(&self.s[self.pos]))
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err("a name"));
        }
        Ok(self.text[start..self.pos].to_string())
    }

    /// `aten::add`, `prim::FusionGroup_0`.
    fn kind(&mut self) -> Result<String> {
        let ns = self.ident()?;
        if !self.eat_str("::") {
            return Err(self.err("'::' in a node kind"));
        }
        let name = self.ident()?;
        Ok(format!("{ns}::{name}"))
    }

    fn value_name(&mut self) -> Result<String> {
        self.expect(b'%')?;
        self.ident()
    }

    fn use_value(&mut self, scopes: &[Scope]) -> Result<ValueId> {
        let name = self.value_name()?;
        scopes
            .iter()
            .rev()
            .find_map(|s| s.get(&name).copied())
            .ok_or_else(|| Error::invalid("jit::parse", format!("%{name} is used before it is defined")))
    }

    fn value_uses(&mut self, scopes: &[Scope]) -> Result<Vec<ValueId>> {
        self.sequence(b'(', b')', |p| p.use_value(scopes))
    }

    fn define(&self, scopes: &mut [Scope], name: String, v: ValueId) -> Result<()> {
        if scopes.iter().any(|s| s.contains_key(&name)) {
            return Err(Error::invalid("jit::parse", format!("%{name} is defined twice")));
        }
        scopes.last_mut().expect("a scope").insert(name, v);
        Ok(())
    }

    /// `(%a : T, %b : T)` as parameters of block `b`.
    fn params(&mut self, g: &mut Graph, b: BlockId, scopes: &mut [Scope]) -> Result<()> {
        self.expect(b'(')?;
        if self.eat(b')') {
            return Ok(());
        }
        loop {
            let name = self.value_name()?;
            let ty = if self.eat(b':') { self.ty()? } else { JitType::tensor() };
            let v = g.add_param(b, ty, Some(&name));
            self.define(scopes, name, v)?;
            if self.eat(b')') {
                return Ok(());
            }
            self.expect(b',')?;
        }
    }

    fn graph(&mut self, g: &mut Graph, subs: &mut Vec<(NodeId, String)>) -> Result<()> {
        if !self.eat_word("graph") {
            return Err(self.err("'graph'"));
        }
        let mut scopes = vec![Scope::new()];
        let root = g.root();
        self.params(g, root, &mut scopes)?;
        self.expect(b':')?;
        self.nodes(g, root, &mut scopes, subs)?;
        if !self.eat_word("return") {
            return Err(self.err("a node or 'return'"));
        }
        for v in self.value_uses(&scopes)? {
            g.add_output(v);
        }
        Ok(())
    }

    fn nodes(
        &mut self,
        g: &mut Graph,
        b: BlockId,
        scopes: &mut Vec<Scope>,
        subs: &mut Vec<(NodeId, String)>,
    ) -> Result<()> {
        loop {
            match self.peek() {
                Some(b'%') | Some(b'=') => self.node(g, b, scopes, subs)?,
                _ => return Ok(()),
            }
        }
    }

    fn node(
        &mut self,
        g: &mut Graph,
        b: BlockId,
        scopes: &mut Vec<Scope>,
        subs: &mut Vec<(NodeId, String)>,
    ) -> Result<()> {
        let mut outs = Vec::new();
        if self.peek() == Some(b'%') {
            loop {
                let name = self.value_name()?;
                let ty = if self.eat(b':') { self.ty()? } else { JitType::tensor() };
                outs.push((name, ty));
                if !self.eat(b',') {
                    break;
                }
            }
        }
        self.expect(b'=')?;
        let mut kind = self.kind()?;
        let mut attrs = Vec::new();
        if self.eat(b'[') {
            loop {
                let name = self.ident()?;
                self.expect(b'=')?;
                attrs.push((name, self.literal()?));
                if self.eat(b']') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        let inputs = self.value_uses(scopes)?;
        let mut sub = None;
        if let Some((base, k)) = kind.rsplit_once('_') {
            if base == "prim::FusionGroup" && k.bytes().all(|c| c.is_ascii_digit()) {
                sub = Some(kind.clone());
                kind = base.to_string();
            }
        }
        let types: Vec<JitType> = outs.iter().map(|(_, t)| t.clone()).collect();
        let n = g.append_node(b, &kind, &inputs, types.clone());
        if let Some(s) = sub {
            subs.push((n, s));
        }
        for (name, lit) in attrs {
            let ty = if kind == "prim::Constant" && name == "value" { types.first().cloned() } else { None };
            let c = self.constant(g, lit, ty.as_ref())?;
            g.set_attr(n, &name, Attr::Const(c));
        }
        // Blocks of this node.
        let mut i = 0;
        while self.eat_word(&format!("block{i}")) {
            let blk = g.add_block(n);
            scopes.push(Scope::new());
            self.nested(|p| {
                p.params(g, blk, scopes)?;
                p.expect(b':')?;
                p.nodes(g, blk, scopes, subs)?;
                if !p.eat_str("->") {
                    return Err(p.err("a node or '->' ending the block"));
                }
                for v in p.value_uses(scopes)? {
                    g.add_return(blk, v);
                }
                Ok(())
            })?;
            scopes.pop();
            i += 1;
        }
        let outputs = g.outputs_of(n).to_vec();
        for ((name, _), v) in outs.into_iter().zip(outputs) {
            g.set_value_name(v, Some(&name));
            self.define(scopes, name, v)?;
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Literal> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || b"+-.".contains(&self.s[self.pos]))
        {
            self.pos += 1;
        }
        let t = &self.text[start..self.pos];
        if let Ok(i) = t.parse::<i64>() {
            return Ok(Literal::Int(i));
        }
        match t.to_ascii_lowercase().as_str() {
            "nan" => return Ok(Literal::Float(f64::NAN)),
            "inf" => return Ok(Literal::Float(f64::INFINITY)),
            "-inf" => return Ok(Literal::Float(f64::NEG_INFINITY)),
            _ => {}
        }
        // PyTorch prints `1.` for 1.0.
        let t2 = if t.ends_with('.') { format!("{t}0") } else { t.to_string() };
        t2.parse::<f64>().map(Literal::Float).map_err(|_| {
            self.pos = start;
            self.err("a number")
        })
    }

    fn literal(&mut self) -> Result<Literal> {
        match self.peek() {
            Some(b'"') => {
                let (lit, len) = unquote(&self.text[self.pos..]).ok_or_else(|| self.err("a closing '\"'"))?;
                self.pos += len;
                Ok(Literal::Str(lit))
            }
            Some(b'[') => Ok(Literal::List(self.nested(|p| p.sequence(b'[', b']', Self::literal))?)),
            Some(b'<') => {
                self.pos += 1;
                if !self.eat_word("Tensor") {
                    return Err(self.err("'<Tensor k>'"));
                }
                let Literal::Int(k) = self.number()? else { return Err(self.err("a tensor-constant index")) };
                self.expect(b'>')?;
                Ok(Literal::TensorRef(k.max(0) as usize))
            }
            Some(b'{') => {
                self.pos += 1;
                let lit = self.number()?;
                self.expect(b'}')?;
                Ok(match lit {
                    Literal::Int(i) => Literal::ScalarTensor(i as f64, true),
                    Literal::Float(x) => Literal::ScalarTensor(x, false),
                    _ => unreachable!("number() returns numbers"),
                })
            }
            _ => self.number(),
        }
    }

    /// A literal as a constant of type `ty` (when known): ints are bools where a `bool` goes and
    /// floats where a `float` goes, strings are devices where a `Device` goes.
    fn constant(&self, g: &mut Graph, lit: Literal, ty: Option<&JitType>) -> Result<Constant> {
        let bad = |what: &str| {
            Error::invalid(
                "jit::parse",
                format!("constant {what} where {} goes", ty.map_or("a value".into(), |t| t.to_string())),
            )
        };
        Ok(match (lit, ty) {
            (Literal::Int(i), Some(JitType::Bool)) => Constant::Bool(i != 0),
            (Literal::Int(i), Some(JitType::Float)) => Constant::Float(i as f64),
            (Literal::Int(i), _) => Constant::Int(i),
            (Literal::Float(x), _) => Constant::Float(x),
            (Literal::Str(s), Some(JitType::Device)) => {
                Constant::Device(s.parse::<Device>().map_err(|_| bad(&format!("device \"{s}\"")))?)
            }
            (Literal::Str(s), _) => Constant::Str(s),
            (Literal::List(items), t) => {
                let elem = match t {
                    Some(JitType::List(e)) => Some(e.as_ref().clone()),
                    _ => None,
                };
                let is_float =
                    matches!(elem, Some(JitType::Float)) || items.iter().any(|l| matches!(l, Literal::Float(_)));
                let is_bool = matches!(elem, Some(JitType::Bool));
                let mut ints = Vec::new();
                let mut floats = Vec::new();
                for l in items {
                    match l {
                        Literal::Int(i) => {
                            ints.push(i);
                            floats.push(i as f64);
                        }
                        Literal::Float(x) => floats.push(x),
                        _ => return Err(bad("a nested list")),
                    }
                }
                if is_bool {
                    Constant::BoolList(ints.into_iter().map(|i| i != 0).collect())
                } else if is_float {
                    Constant::FloatList(floats)
                } else {
                    Constant::IntList(ints)
                }
            }
            (Literal::TensorRef(k), _) => {
                if k >= g.tensor_constants.len() {
                    return Err(Error::invalid(
                        "jit::parse",
                        format!("tensor constant {k} is not in the table of {} constants", g.tensor_constants.len()),
                    ));
                }
                Constant::Tensor(k)
            }
            (Literal::ScalarTensor(x, is_int), t) => {
                let dtype = match t {
                    Some(JitType::Tensor(TensorType { dtype: Some(d), .. })) => *d,
                    _ if is_int => c10::ScalarType::I64,
                    _ => c10::ScalarType::F32,
                };
                let t = Tensor::scalar_tensor(x).to(dtype).call()?;
                Constant::Tensor(g.add_tensor_constant(t))
            }
        })
    }

    fn ints(&mut self) -> Result<Vec<i64>> {
        self.sequence(b'[', b']', |p| match p.number()? {
            Literal::Int(i) => Ok(i),
            _ => Err(p.err("an integer")),
        })
    }

    /// A type; each `[]`, `?` and tuple nests one level (see [`MAX_DEPTH`]).
    fn ty(&mut self) -> Result<JitType> {
        self.nested(|p| {
            let mut t = p.base_type()?;
            loop {
                if p.eat_str("[]") {
                    p.nest()?;
                    t = JitType::List(Box::new(t));
                } else if p.peek() == Some(b'?') {
                    p.pos += 1;
                    p.nest()?;
                    t = JitType::Optional(Box::new(t));
                } else {
                    return Ok(t);
                }
            }
        })
    }

    fn base_type(&mut self) -> Result<JitType> {
        if self.peek() == Some(b'(') {
            return Ok(JitType::Tuple(self.sequence(b'(', b')', Self::ty)?));
        }
        let name = self.ident()?;
        Ok(match name.as_str() {
            "int" => JitType::Int,
            "float" => JitType::Float,
            "bool" => JitType::Bool,
            "str" => JitType::Str,
            "NoneType" => JitType::None,
            "Device" => JitType::Device,
            "Scalar" | "number" => JitType::Number,
            "Generator" => JitType::Generator,
            "Dict" => match self.sequence(b'(', b')', Self::ty)?.as_slice() {
                [k, v] => JitType::Dict(Box::new(k.clone()), Box::new(v.clone())),
                _ => return Err(self.err("a Dict type of a key and a value type")),
            },
            "Tensor" => JitType::Tensor(self.tensor_details(None)?),
            other => match dtype_from_ir_name(other) {
                Some(d) => JitType::Tensor(self.tensor_details(Some(d))?),
                None => return Err(Error::invalid("jit::parse", format!("unknown type '{other}'"))),
            },
        })
    }

    /// `(2, 3, strides=[3, 1], requires_grad=0, device=cpu)` after a dtype name.
    fn tensor_details(&mut self, dtype: Option<c10::ScalarType>) -> Result<TensorType> {
        let mut t = TensorType { dtype, ..TensorType::default() };
        if self.s.get(self.pos) != Some(&b'(') {
            return Ok(t);
        }
        self.pos += 1;
        if self.eat(b')') {
            return Ok(t);
        }
        let mut sizes = Vec::new();
        loop {
            if self.eat_word("strides") {
                self.expect(b'=')?;
                t.strides = Some(self.ints()?);
            } else if self.eat_word("requires_grad") {
                self.expect(b'=')?;
                t.requires_grad = Some(matches!(self.number()?, Literal::Int(1)));
            } else if self.eat_word("device") {
                self.expect(b'=')?;
                self.skip_ws();
                let start = self.pos;
                while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b':')
                {
                    self.pos += 1;
                }
                let d = &self.text[start..self.pos];
                t.device = Some(d.parse::<Device>().map_err(|_| self.err("a device"))?);
            } else {
                match self.number()? {
                    Literal::Int(i) => sizes.push(i),
                    _ => return Err(self.err("a size")),
                }
            }
            if self.eat(b')') {
                break;
            }
            self.expect(b',')?;
        }
        let complete = t.dtype.is_some() && t.requires_grad.is_some() && t.device.is_some();
        if !sizes.is_empty() || t.strides.is_some() || complete {
            t.sizes = Some(sizes);
        }
        if t.strides.is_none() && complete && t.sizes.as_ref().is_some_and(Vec::is_empty) {
            // PyTorch prints a 0-dim tensor without strides: `Long(requires_grad=0, device=cpu)`.
            t.strides = Some(Vec::new());
        }
        Ok(t)
    }
}
