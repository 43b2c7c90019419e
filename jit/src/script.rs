//! The TorchScript code of `torch.jit.save` archives (`code/__torch__/....py`): a parser for what
//! PyTorch prints for traced modules — classes with `__parameters__`, `__buffers__`, typed
//! attributes and `forward` methods made of assignments (tuple targets included) and a `return`,
//! whose expressions are calls of `torch.*`, `ops.prim.*`, `int`/`float`/`bool`, submodule
//! `forward`s, attribute reads, literals, lists, tuples and subscripts. Control flow
//! (`if`/`for`, which only scripted modules have) is reported as unsupported, with its line.

use c10::{Error, Result};

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A name: `x`, `torch`, `self`.
    Name(String),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal.
    Str(String),
    /// `True` / `False`.
    Bool(bool),
    /// `None`.
    None,
    /// `value.attr`.
    Attr(Box<Expr>, String),
    /// `f(args, name=value)`.
    Call(Box<Expr>, Vec<Expr>, Vec<(String, Expr)>),
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `(a, b)` or `(a,)`.
    Tuple(Vec<Expr>),
    /// `value[index]`.
    Subscript(Box<Expr>, Box<Expr>),
    /// `-value`.
    Neg(Box<Expr>),
}

/// A statement of a method body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `a = e`, `a, b = e`, `a, b, = e` (the targets, and whether they were a tuple).
    Assign(Vec<String>, bool, Expr),
    /// `return e`.
    Return(Expr),
}

/// A method: its parameters (name and annotated type text, `self` first) and body.
#[derive(Clone, Debug)]
pub struct Method {
    /// The method's name.
    pub name: String,
    /// `(name, type)` per parameter.
    pub params: Vec<(String, String)>,
    /// The body.
    pub body: Vec<Stmt>,
    /// The line of the `def`, for errors.
    pub line: usize,
}

/// A class of a code file.
#[derive(Clone, Debug, Default)]
pub struct Class {
    /// Its name (unqualified).
    pub name: String,
    /// `__parameters__`.
    pub parameters: Vec<String>,
    /// `__buffers__`.
    pub buffers: Vec<String>,
    /// The methods.
    pub methods: Vec<Method>,
}

/// How deep an expression may nest: brackets, calls, attribute reads, subscripts and unary
/// minuses all count, one level each.
///
/// Note [Nesting limits]: a file may hold any text, and a parser (or a pass over what it built)
/// that recurses once per level would overflow the stack, which aborts the process, on ten
/// thousand nested parentheses or thirty thousand chained attribute reads. So every recursive
/// reader of an archive counts its depth and stops with an error past a fixed limit, well
/// below what a test thread's 2 MiB stack holds: here, `text.rs` for our graphs, the module
/// tree and the inlining in `import.rs`. What PyTorch prints for real models nests a handful of
/// levels (`torch.linear(x, self.fc1.weight, self.fc1.bias)` is four); Python itself refuses
/// more than 200 nested parentheses. Rejected: growing the stack (a thread per parse) only moves
/// the limit, and the trees built would still be dropped and walked recursively.
pub const MAX_EXPR_DEPTH: usize = 200;

fn syntax(source: &str, line: usize, msg: impl std::fmt::Display) -> Error {
    Error::invalid("jit::load", format!("{source}:{line}: {msg}"))
}

/// One logical line: its indentation, text and 1-based line number (continuation lines inside
/// brackets are joined).
struct Line {
    indent: usize,
    text: String,
    no: usize,
}

fn logical_lines(text: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut depth = 0i32;
    for (i, raw) in text.lines().enumerate() {
        let stripped = raw.trim_end();
        if depth > 0 {
            if let Some(last) = out.last_mut() {
                last.text.push(' ');
                last.text.push_str(stripped.trim_start());
            }
        } else {
            if stripped.trim().is_empty() || stripped.trim_start().starts_with('#') {
                continue;
            }
            let indent = stripped.len() - stripped.trim_start().len();
            out.push(Line { indent, text: stripped.trim_start().to_string(), no: i + 1 });
        }
        let mut in_str: Option<char> = None;
        for ch in stripped.chars() {
            match (in_str, ch) {
                (Some(q), c) if c == q => in_str = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => in_str = Some(ch),
                (None, '(' | '[' | '{') => depth += 1,
                (None, ')' | ']' | '}') => depth -= 1,
                _ => {}
            }
        }
    }
    out
}

/// Parses a code file into its classes; `source` names it in errors.
pub fn parse_file(text: &str, source: &str) -> Result<Vec<Class>> {
    let lines = logical_lines(text);
    let mut classes = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = &lines[i];
        if l.indent == 0 && (l.text.starts_with("import ") || l.text.starts_with("from ")) {
            i += 1;
            continue;
        }
        let Some(rest) = l.text.strip_prefix("class ") else {
            return Err(syntax(source, l.no, format!("expected a class, found '{}'", l.text)));
        };
        let name = rest.split(['(', ':']).next().unwrap_or("").trim().to_string();
        let mut class = Class { name, ..Class::default() };
        i += 1;
        while i < lines.len() && lines[i].indent > 0 {
            let l = &lines[i];
            let body_indent = l.indent;
            if let Some(sig) = l.text.strip_prefix("def ") {
                let (name, params) = parse_signature(sig, source, l.no)?;
                let line = l.no;
                i += 1;
                let mut body = Vec::new();
                while i < lines.len() && lines[i].indent > body_indent {
                    body.push(parse_stmt(&lines[i].text, source, lines[i].no)?);
                    i += 1;
                }
                class.methods.push(Method { name, params, body, line });
                continue;
            }
            if let Some(v) = l.text.strip_prefix("__parameters__ =") {
                class.parameters = string_list(v, source, l.no)?;
            } else if let Some(v) = l.text.strip_prefix("__buffers__ =") {
                class.buffers = string_list(v, source, l.no)?;
            }
            // Other lines are attribute annotations (`weight : Tensor`, `x : Final[int] = 3`).
            i += 1;
        }
        classes.push(class);
    }
    Ok(classes)
}

fn string_list(v: &str, source: &str, line: usize) -> Result<Vec<String>> {
    match Parser::new(v, source, line).expr_all()? {
        Expr::List(items) => items
            .into_iter()
            .map(|e| match e {
                Expr::Str(s) => Ok(s),
                other => Err(syntax(source, line, format!("expected a name, found {other:?}"))),
            })
            .collect(),
        other => Err(syntax(source, line, format!("expected a list of names, found {other:?}"))),
    }
}

/// `forward(self: T, x: Tensor) -> Tensor:` → the name and `(param, type)` pairs.
fn parse_signature(sig: &str, source: &str, line: usize) -> Result<(String, Vec<(String, String)>)> {
    let open = sig.find('(').ok_or_else(|| syntax(source, line, "expected '(' in a def"))?;
    let close = sig.rfind(')').ok_or_else(|| syntax(source, line, "expected ')' in a def"))?;
    let name = sig[..open].trim().to_string();
    let mut params = Vec::new();
    let mut depth = 0;
    let mut start = open + 1;
    let inner = &sig[..close];
    for (k, ch) in inner.char_indices().skip(open + 1) {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                params.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    params.push(&inner[start..]);
    let params = params
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once(':') {
            Some((n, t)) => (n.trim().to_string(), t.trim().to_string()),
            None => (p.to_string(), String::new()),
        })
        .collect();
    Ok((name, params))
}

fn parse_stmt(text: &str, source: &str, line: usize) -> Result<Stmt> {
    if let Some(e) = text.strip_prefix("return ") {
        return Ok(Stmt::Return(Parser::new(e, source, line).expr_all()?));
    }
    for kw in ["if ", "for ", "while ", "else", "elif "] {
        if text.starts_with(kw) {
            return Err(syntax(
                source,
                line,
                format!("'{}' is not supported (a scripted module's control flow)", kw.trim()),
            ));
        }
    }
    // `targets = value`: the first `=` outside brackets that is not part of `==`.
    let bytes = text.as_bytes();
    let mut depth = 0;
    let mut eq = None;
    for (k, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'"' | b'\'' => break,
            b'=' if depth == 0 && bytes.get(k + 1) != Some(&b'=') && k > 0 && !b"=!<>".contains(&bytes[k - 1]) => {
                eq = Some(k);
                break;
            }
            _ => {}
        }
    }
    let Some(k) = eq else { return Err(syntax(source, line, format!("unsupported statement '{text}'"))) };
    let lhs = text[..k].trim();
    let tuple = lhs.contains(',');
    let targets: Vec<String> = lhs.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect();
    if targets.iter().any(|t| !t.chars().all(|c| c.is_alphanumeric() || c == '_')) {
        return Err(syntax(source, line, format!("unsupported assignment target '{lhs}'")));
    }
    Ok(Stmt::Assign(targets, tuple, Parser::new(&text[k + 1..], source, line).expr_all()?))
}

/// Positional arguments, keyword arguments, and whether a trailing comma closed them.
type Args = (Vec<Expr>, Vec<(String, Expr)>, bool);

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    source: &'a str,
    line: usize,
    /// The nesting of what is being parsed (see Note [Nesting limits]).
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, source: &'a str, line: usize) -> Self {
        Parser { s: text.as_bytes(), text, pos: 0, source, line, depth: 0 }
    }

    /// One level deeper, or an error past [`MAX_EXPR_DEPTH`] (see Note [Nesting limits]).
    fn nest(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return Err(syntax(
                self.source,
                self.line,
                format!("the expression nests more than {MAX_EXPR_DEPTH} levels deep (column {})", self.pos + 1),
            ));
        }
        Ok(())
    }

    /// `expected <what> at '<the next 60 characters>'`.
    fn err(&self, what: &str) -> Error {
        let rest = self.text.get(self.pos..).unwrap_or("");
        let shown: String = rest.chars().take(60).collect();
        let more = if shown.len() < rest.len() { "..." } else { "" };
        syntax(self.source, self.line, format!("expected {what} at '{shown}{more}'"))
    }

    fn peek(&mut self) -> Option<u8> {
        while self.pos < self.s.len() && self.s[self.pos] == b' ' {
            self.pos += 1;
        }
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

    fn expr_all(mut self) -> Result<Expr> {
        let e = self.expr()?;
        if self.peek().is_some() {
            return Err(self.err("the end of the expression"));
        }
        Ok(e)
    }

    /// `args)` after an opening bracket: positional and keyword arguments.
    fn args(&mut self, close: u8) -> Result<Args> {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        let mut trailing_comma = false;
        loop {
            if self.eat(close) {
                return Ok((pos, kw, trailing_comma));
            }
            let start = self.pos;
            let e = self.expr()?;
            if let (Expr::Name(n), Some(b'=')) = (&e, self.peek()) {
                if self.s.get(self.pos + 1) != Some(&b'=') {
                    self.pos += 1;
                    kw.push((n.clone(), self.expr()?));
                } else {
                    self.pos = start;
                    return Err(self.err("an argument"));
                }
            } else {
                pos.push(e);
            }
            trailing_comma = self.eat(b',');
            if !trailing_comma && self.peek() != Some(close) {
                return Err(self.err(&format!("',' or '{}'", close as char)));
            }
        }
    }

    /// An expression; every level it nests, inside brackets or along a chain of attribute
    /// reads, calls and subscripts, counts towards [`MAX_EXPR_DEPTH`].
    fn expr(&mut self) -> Result<Expr> {
        let depth = self.depth;
        let e = self.postfix();
        self.depth = depth;
        e
    }

    fn postfix(&mut self) -> Result<Expr> {
        self.nest()?;
        let mut e = self.atom()?;
        loop {
            if matches!(self.peek(), Some(b'.' | b'(' | b'[')) {
                self.nest()?;
            }
            match self.peek() {
                Some(b'.') => {
                    self.pos += 1;
                    e = Expr::Attr(Box::new(e), self.ident()?);
                }
                Some(b'(') => {
                    self.pos += 1;
                    let (pos, kw, _) = self.args(b')')?;
                    e = Expr::Call(Box::new(e), pos, kw);
                }
                Some(b'[') => {
                    self.pos += 1;
                    let idx = self.expr()?;
                    if !self.eat(b']') {
                        return Err(self.err("']'"));
                    }
                    e = Expr::Subscript(Box::new(e), Box::new(idx));
                }
                _ => return Ok(e),
            }
        }
    }

    fn ident(&mut self) -> Result<String> {
        self.peek();
        let start = self.pos;
        while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_') {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err("a name"));
        }
        Ok(self.text[start..self.pos].to_string())
    }

    fn atom(&mut self) -> Result<Expr> {
        match self.peek() {
            None => Err(self.err("an expression")),
            Some(b'(') => {
                self.pos += 1;
                let (items, kw, trailing) = self.args(b')')?;
                if !kw.is_empty() {
                    return Err(self.err("a tuple"));
                }
                Ok(if items.len() == 1 && !trailing {
                    items.into_iter().next().expect("one item")
                } else {
                    Expr::Tuple(items)
                })
            }
            Some(b'[') => {
                self.pos += 1;
                let (items, kw, _) = self.args(b']')?;
                if !kw.is_empty() {
                    return Err(self.err("a list"));
                }
                Ok(Expr::List(items))
            }
            Some(b'-') => {
                self.pos += 1;
                self.nest()?;
                Ok(match self.atom()? {
                    Expr::Int(i) => Expr::Int(i.wrapping_neg()),
                    Expr::Float(x) => Expr::Float(-x),
                    e => Expr::Neg(Box::new(e)),
                })
            }
            Some(b'"' | b'\'') => {
                let (lit, len) =
                    crate::text::unquote(&self.text[self.pos..]).ok_or_else(|| self.err("the end of a string"))?;
                self.pos += len;
                Ok(Expr::Str(lit))
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let start = self.pos;
                while self.pos < self.s.len() {
                    let c = self.s[self.pos];
                    let exp_sign = (c == b'-' || c == b'+') && matches!(self.s[self.pos - 1], b'e' | b'E');
                    if c.is_ascii_alphanumeric() || c == b'.' || exp_sign {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                let t = &self.text[start..self.pos];
                if let Ok(i) = t.parse::<i64>() {
                    return Ok(Expr::Int(i));
                }
                let t = if t.ends_with('.') { format!("{t}0") } else { t.to_string() };
                t.parse::<f64>().map(Expr::Float).map_err(|_| self.err("a number"))
            }
            Some(_) => {
                let name = self.ident()?;
                Ok(match name.as_str() {
                    "True" => Expr::Bool(true),
                    "False" => Expr::Bool(false),
                    "None" => Expr::None,
                    "inf" => Expr::Float(f64::INFINITY),
                    "nan" => Expr::Float(f64::NAN),
                    _ => Expr::Name(name),
                })
            }
        }
    }
}
