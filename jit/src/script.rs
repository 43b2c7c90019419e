//! The TorchScript language's parser: the Python subset `torch.jit.script` accepts, both as users
//! write it (`jit::script(source)`) and as PyTorch prints it into an archive's `code/` (classes
//! with `__parameters__`, `__buffers__`, typed attributes and methods). Statements:
//! assignments (tuple targets, annotations, `+=` and the other augmented forms), expression
//! statements, `if`/`elif`/`else`, `for`, `while`, `break`, `continue`, `pass`, `return`,
//! `raise` and `assert`. Expressions: Python's operators at Python's precedences (`or`, `and`,
//! `not`, comparisons with `is`/`is not`/`in`, `|`, `^`, `&`, shifts, `+ -`, `* / // % @`,
//! unary `- + ~`, `**`), `a if c else b`, calls with keyword arguments, attributes, subscripts
//! with slices, lists, tuples, dicts and literals; `d[k] = v` and `del d[k]`. The emitter is `import.rs`.

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
    /// `{k: v, ...}`.
    Dict(Vec<(Expr, Expr)>),
    /// `value[index]` (a slice index is [`Expr::Slice`]; `x[a, b]` indexes by a tuple).
    Subscript(Box<Expr>, Box<Expr>),
    /// `lo:hi:step` inside a subscript, each part optional.
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `-value`.
    Neg(Box<Expr>),
    /// `not value`.
    Not(Box<Expr>),
    /// `a op b` for the arithmetic, bitwise and comparison operators.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a and b` (`true`) or `a or b` (`false`): short-circuiting.
    BoolOp(bool, Box<Expr>, Box<Expr>),
    /// `a if cond else b`: (cond, a, b).
    IfExp(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// A binary operator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `//`
    FloorDiv,
    /// `%`
    Mod,
    /// `**`
    Pow,
    /// `@`
    MatMul,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    LShift,
    /// `>>`
    RShift,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `is`
    Is,
    /// `is not`
    IsNot,
    /// `in`
    In,
    /// `not in`
    NotIn,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            MatMul => "@",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            LShift => "<<",
            RShift => ">>",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            Is => "is",
            IsNot => "is not",
            In => "in",
            NotIn => "not in",
        }
    }
}

/// A statement and the line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The 1-based line.
    pub line: usize,
    /// The statement.
    pub kind: Stmt,
}

/// A statement of a function body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `a = e`, `a, b = e`, `a, b, = e`, `a: T = e`: the targets, whether they were a tuple,
    /// the value and the annotation.
    Assign {
        /// The names assigned.
        targets: Vec<String>,
        /// Whether they were written as a tuple (`a, = e` unpacks one item).
        tuple: bool,
        /// The value.
        value: Expr,
        /// The annotation (`x: List[int] = []`).
        ann: Option<Expr>,
    },
    /// `self.attr = e` (a module attribute written: a buffer updated in place).
    SetAttr(Expr, String, Expr),
    /// `base[index] = e`: a dict's entry, a list's element, a tensor's slice.
    SetItem(Expr, Expr, Expr),
    /// `del base[index]`.
    Delete(Expr, Expr),
    /// `a op= e`.
    AugAssign(String, BinOp, Expr),
    /// An expression evaluated for its effect (`outs.append(y)`).
    Expr(Expr),
    /// `if cond: then else: otherwise` (`elif` nests another `If` in `otherwise`).
    If(Expr, Vec<Statement>, Vec<Statement>),
    /// `for targets in iter: body` (whether the targets were a tuple).
    For(Vec<String>, bool, Expr, Vec<Statement>),
    /// `while cond: body`.
    While(Expr, Vec<Statement>),
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `pass`.
    Pass,
    /// `return` or `return e`.
    Return(Option<Expr>),
    /// `raise` or `raise E(msg)`.
    Raise(Option<Expr>),
    /// `assert cond` or `assert cond, msg`.
    Assert(Expr, Option<Expr>),
}

/// A method or function: its parameters (name, annotated type text, default) and body.
#[derive(Clone, Debug)]
pub struct Method {
    /// The method's name.
    pub name: String,
    /// `(name, type, default)` per parameter (`self` first for methods).
    pub params: Vec<Param>,
    /// The annotated return type, if any.
    pub returns: Option<Expr>,
    /// The body.
    pub body: Vec<Statement>,
    /// The line of the `def`, for errors.
    pub line: usize,
    /// The file it is in, for errors.
    pub source: String,
}

/// A parameter of a `def`.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its annotation as an expression (`Optional[Tensor]`), if any.
    pub ty: Option<Expr>,
    /// Its default value, if any.
    pub default: Option<Expr>,
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
    /// Attribute annotations: `name : type` (with `Final[...]` constants' values).
    pub attributes: Vec<(String, Expr, Option<Expr>)>,
    /// The methods.
    pub methods: Vec<Method>,
}

/// A source file: its classes and top-level functions.
#[derive(Clone, Debug, Default)]
pub struct SourceFile {
    /// The classes.
    pub classes: Vec<Class>,
    /// The functions (`def` at the top level; decorators such as `@torch.jit.script` are read
    /// and ignored).
    pub functions: Vec<Method>,
}

/// How deep an expression may nest: brackets, calls, attribute reads, subscripts, unary and
/// binary operators all count, one level each; so do nested blocks of statements.
///
/// Note [Nesting limits]: a file may hold any text, and a parser (or a pass over what it built)
/// that recurses once per level would overflow the stack, which aborts the process, on ten
/// thousand nested parentheses or thirty thousand chained attribute reads. So every recursive
/// reader of an archive counts its depth and stops with an error past a fixed limit, well
/// below what a test thread's 2 MiB stack holds: here, `text.rs` for our graphs, the module
/// tree and the inlining in `import.rs`. What PyTorch prints for real models nests a handful of
/// levels (`torch.linear(x, self.fc1.weight, self.fc1.bias)` is four); Python itself refuses
/// more than 200 nested parentheses (and 100 nested blocks). Rejected: growing the stack (a
/// thread per parse) only moves the limit, and the trees built would still be dropped and
/// walked recursively.
pub const MAX_EXPR_DEPTH: usize = 200;
/// How deep blocks of statements may nest (`if` inside `for` inside ...); Python's own limit is
/// 100. See Note [Nesting limits].
pub const MAX_BLOCK_DEPTH: usize = 100;

fn syntax(source: &str, line: usize, msg: impl std::fmt::Display) -> Error {
    Error::invalid("jit::script", format!("{source}:{line}: {msg}"))
}

/// One logical line: its indentation, text and 1-based line number (continuation lines inside
/// brackets, after a backslash or inside a triple-quoted string are joined; comments dropped).
struct Line {
    indent: usize,
    text: String,
    no: usize,
}

fn logical_lines(text: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut depth = 0i32;
    // Inside a string: its quote character and whether it is triple-quoted.
    let mut in_str: Option<(char, bool)> = None;
    let mut continued = false;
    for (i, raw) in text.lines().enumerate() {
        let joining = depth > 0 || continued || in_str.is_some();
        if !joining {
            let t = raw.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            out.push(Line { indent: raw.len() - t.len(), text: String::new(), no: i + 1 });
        } else if let Some(last) = out.last_mut() {
            if in_str.is_some() {
                last.text.push('\n');
            } else if !last.text.ends_with(' ') {
                last.text.push(' ');
            }
        }
        let Some(line) = out.last_mut() else { continue };
        // Inside a triple-quoted string the line is kept as written.
        let body = if in_str.is_some() { raw } else { raw.trim_start() };
        let chars: Vec<char> = body.chars().collect();
        let mut k = 0;
        continued = false;
        while k < chars.len() {
            let c = chars[k];
            match in_str {
                Some((q, triple)) => {
                    line.text.push(c);
                    if c == '\\' && k + 1 < chars.len() {
                        line.text.push(chars[k + 1]);
                        k += 2;
                        continue;
                    }
                    if c == q {
                        if !triple {
                            in_str = None;
                        } else if chars.get(k + 1) == Some(&q) && chars.get(k + 2) == Some(&q) {
                            line.text.push(q);
                            line.text.push(q);
                            k += 2;
                            in_str = None;
                        }
                    }
                }
                None => match c {
                    '#' => break,
                    '"' | '\'' => {
                        let triple = chars.get(k + 1) == Some(&c) && chars.get(k + 2) == Some(&c);
                        line.text.push(c);
                        if triple {
                            line.text.push(c);
                            line.text.push(c);
                            k += 2;
                        }
                        in_str = Some((c, triple));
                    }
                    '\\' if k + 1 == chars.len() => continued = true,
                    _ => {
                        match c {
                            '(' | '[' | '{' => depth += 1,
                            ')' | ']' | '}' => depth -= 1,
                            _ => {}
                        }
                        line.text.push(c);
                    }
                },
            }
            k += 1;
        }
        // A single-quoted string does not continue past its line.
        if matches!(in_str, Some((_, false))) {
            in_str = None;
        }
        let trimmed = line.text.trim_end().len();
        if in_str.is_none() {
            line.text.truncate(trimmed);
        }
    }
    out
}

/// Parses a code file (an archive's `code/*.py` or a user's source); `source` names it in
/// errors.
pub fn parse_source(text: &str, source: &str) -> Result<SourceFile> {
    let lines = logical_lines(text);
    let mut file = SourceFile::default();
    let mut i = 0;
    while i < lines.len() {
        let l = &lines[i];
        if l.indent != 0 {
            return Err(syntax(source, l.no, "unexpected indentation"));
        }
        if l.text.starts_with("import ") || l.text.starts_with("from ") || l.text.starts_with('@') {
            i += 1;
            continue;
        }
        if l.text.starts_with("def ") {
            let (m, next) = parse_def(&lines, i, source)?;
            file.functions.push(m);
            i = next;
            continue;
        }
        if is_docstring(&l.text) {
            i += 1;
            continue;
        }
        let Some(rest) = l.text.strip_prefix("class ") else {
            return Err(syntax(source, l.no, format!("expected a class or a def, found '{}'", l.text)));
        };
        let name = rest.split(['(', ':']).next().unwrap_or("").trim().to_string();
        let mut class = Class { name, ..Class::default() };
        i += 1;
        while i < lines.len() && lines[i].indent > 0 {
            let l = &lines[i];
            if l.text.starts_with('@') || is_docstring(&l.text) {
                i += 1;
                continue;
            }
            if l.text.starts_with("def ") {
                let (m, next) = parse_def(&lines, i, source)?;
                class.methods.push(m);
                i = next;
                continue;
            }
            if let Some(v) = l.text.strip_prefix("__parameters__ =") {
                class.parameters = string_list(v, source, l.no)?;
            } else if let Some(v) = l.text.strip_prefix("__buffers__ =") {
                class.buffers = string_list(v, source, l.no)?;
            } else if let Some((name, rest)) = l.text.split_once(':') {
                // `weight : Tensor`, `x : Final[int] = 3`.
                let name = name.trim();
                if name.chars().all(|c| c.is_alphanumeric() || c == '_') && !name.is_empty() {
                    // Annotations only inform; one this parser cannot read is left out.
                    let (ty, value) = match split_assign(rest) {
                        Some(k) => (&rest[..k], Parser::new(&rest[k + 1..], source, l.no).expr_all().ok()),
                        None => (rest, None),
                    };
                    if let Ok(ty) = Parser::new(ty, source, l.no).expr_all() {
                        class.attributes.push((name.to_string(), ty, value));
                    }
                }
            }
            i += 1;
        }
        file.classes.push(class);
    }
    Ok(file)
}

/// Parses an archive's code file into its classes (see [`parse_source`]).
pub fn parse_file(text: &str, source: &str) -> Result<Vec<Class>> {
    Ok(parse_source(text, source)?.classes)
}

fn is_docstring(text: &str) -> bool {
    text.starts_with("\"\"\"") || text.starts_with("'''") || text.starts_with("r\"\"\"")
}

/// `def name(params) -> T:` at line `i` and its body: the method and the next line's index.
fn parse_def(lines: &[Line], i: usize, source: &str) -> Result<(Method, usize)> {
    let l = &lines[i];
    let sig = l.text.strip_prefix("def ").unwrap_or(&l.text);
    let open = sig.find('(').ok_or_else(|| syntax(source, l.no, "expected '(' in a def"))?;
    let name = sig[..open].trim().to_string();
    let mut p = Parser::new(&sig[open + 1..], source, l.no);
    let mut params = Vec::new();
    loop {
        if p.eat(b')') {
            break;
        }
        let pname = p.ident()?;
        let ty = if p.eat(b':') { Some(p.expr()?) } else { None };
        let default = if p.eat(b'=') { Some(p.expr()?) } else { None };
        params.push(Param { name: pname, ty, default });
        if !p.eat(b',') && p.peek() != Some(b')') {
            return Err(p.err("',' or ')' in the parameters"));
        }
    }
    let returns = if p.eat_str("->") { Some(p.expr()?) } else { None };
    if !p.eat(b':') {
        return Err(p.err("':' after the def"));
    }
    let inline = p.rest().trim().to_string();
    let (body, next) = if inline.is_empty() {
        parse_block(lines, i + 1, l.indent, source, 1)?
    } else {
        (parse_simple(&inline, source, l.no)?, i + 1)
    };
    if body.is_empty() {
        return Err(syntax(source, l.no, format!("def {name} has no body")));
    }
    Ok((Method { name, params, returns, body, line: l.no, source: source.to_string() }, next))
}

/// The statements indented deeper than `outer` from line `i` on, and the next line's index.
fn parse_block(
    lines: &[Line],
    mut i: usize,
    outer: usize,
    source: &str,
    depth: usize,
) -> Result<(Vec<Statement>, usize)> {
    if depth > MAX_BLOCK_DEPTH {
        let no = lines.get(i).map_or(0, |l| l.no);
        return Err(syntax(source, no, format!("blocks nest more than {MAX_BLOCK_DEPTH} deep")));
    }
    let Some(first) = lines.get(i).filter(|l| l.indent > outer) else {
        let no = lines.get(i.saturating_sub(1)).map_or(0, |l| l.no);
        return Err(syntax(source, no, "expected an indented block"));
    };
    let indent = first.indent;
    let mut out = Vec::new();
    while i < lines.len() && lines[i].indent > outer {
        let l = &lines[i];
        if l.indent != indent {
            return Err(syntax(source, l.no, "unindent does not match any outer indentation level"));
        }
        let (mut stmts, next) = parse_statement(lines, i, source, depth)?;
        out.append(&mut stmts);
        i = next;
    }
    Ok((out, i))
}

/// The keyword a compound statement starts with, if any.
fn compound(text: &str) -> Option<&'static str> {
    ["if", "elif", "else", "for", "while"]
        .into_iter()
        .find(|kw| text.strip_prefix(kw).is_some_and(|r| r.starts_with([' ', ':', '(']) || r.is_empty()))
}

/// The index of the first `:` outside brackets and strings (a compound statement's header end).
fn header_colon(text: &str) -> Option<usize> {
    top_level(text).into_iter().find(|&k| text.as_bytes()[k] == b':')
}

/// The byte offsets of `text` outside strings and brackets (the brackets themselves left out):
/// where the statement-level syntax (`:`, `=`, `;`, keywords) can be.
fn top_level(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let (mut depth, mut in_str, mut out, mut k) = (0i32, None, Vec::new(), 0);
    while k < b.len() {
        let c = b[k];
        match in_str {
            Some(_) if c == b'\\' => k += 1,
            Some(q) if c == q => in_str = None,
            Some(_) => {}
            None => match c {
                b'"' | b'\'' => in_str = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ if depth == 0 => out.push(k),
                _ => {}
            },
        }
        k += 1;
    }
    out
}

/// The body of a compound statement whose header is line `i`: an inline simple statement after
/// the colon, or the indented block below.
fn clause_body(
    lines: &[Line],
    i: usize,
    after_colon: &str,
    source: &str,
    depth: usize,
) -> Result<(Vec<Statement>, usize)> {
    let inline = after_colon.trim();
    if inline.is_empty() {
        parse_block(lines, i + 1, lines[i].indent, source, depth + 1)
    } else {
        Ok((parse_simple(inline, source, lines[i].no)?, i + 1))
    }
}

/// The statement(s) starting at line `i` and the next line's index.
fn parse_statement(lines: &[Line], i: usize, source: &str, depth: usize) -> Result<(Vec<Statement>, usize)> {
    let l = &lines[i];
    let Some(kw) = compound(&l.text) else {
        return Ok((parse_simple(&l.text, source, l.no)?, i + 1));
    };
    let colon = header_colon(&l.text).ok_or_else(|| syntax(source, l.no, format!("expected ':' after '{kw}'")))?;
    let header = l.text[kw.len()..colon].trim();
    let after = &l.text[colon + 1..];
    match kw {
        "if" => {
            let (s, next) = parse_if(lines, i, header, after, source, depth)?;
            Ok((vec![s], next))
        }
        "while" => {
            let cond = Parser::new(header, source, l.no).expr_all()?;
            let (body, next) = clause_body(lines, i, after, source, depth)?;
            Ok((vec![Statement { line: l.no, kind: Stmt::While(cond, body) }], next))
        }
        "for" => {
            let k = find_word(header, "in").ok_or_else(|| syntax(source, l.no, "expected 'in' in a for"))?;
            let (targets, tuple) = target_names(&header[..k], source, l.no)?;
            let iter = Parser::new(&header[k + 2..], source, l.no).expr_all()?;
            let (body, next) = clause_body(lines, i, after, source, depth)?;
            Ok((vec![Statement { line: l.no, kind: Stmt::For(targets, tuple, iter, body) }], next))
        }
        other => Err(syntax(source, l.no, format!("'{other}' without an 'if'"))),
    }
}

/// `if header: ... elif ...: ... else: ...` from line `i`.
fn parse_if(
    lines: &[Line],
    i: usize,
    header: &str,
    after: &str,
    source: &str,
    depth: usize,
) -> Result<(Statement, usize)> {
    let l = &lines[i];
    if depth > MAX_BLOCK_DEPTH {
        return Err(syntax(source, l.no, format!("blocks nest more than {MAX_BLOCK_DEPTH} deep")));
    }
    let cond = Parser::new(header, source, l.no).expr_all()?;
    let (then, mut next) = clause_body(lines, i, after, source, depth)?;
    let mut otherwise = Vec::new();
    if let Some(n) = lines.get(next).filter(|n| n.indent == l.indent) {
        match compound(&n.text) {
            Some("elif") => {
                let colon = header_colon(&n.text).ok_or_else(|| syntax(source, n.no, "expected ':' after 'elif'"))?;
                let (s, after_elif) =
                    parse_if(lines, next, n.text[4..colon].trim(), &n.text[colon + 1..], source, depth + 1)?;
                otherwise.push(s);
                next = after_elif;
            }
            Some("else") => {
                let colon = header_colon(&n.text).ok_or_else(|| syntax(source, n.no, "expected ':' after 'else'"))?;
                if !n.text[4..colon].trim().is_empty() {
                    return Err(syntax(source, n.no, "expected ':' after 'else'"));
                }
                let (body, after_else) = clause_body(lines, next, &n.text[colon + 1..], source, depth)?;
                otherwise = body;
                next = after_else;
            }
            _ => {}
        }
    }
    Ok((Statement { line: l.no, kind: Stmt::If(cond, then, otherwise) }, next))
}

/// The byte offset of `word` standing alone (not inside a name, brackets or a string).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let b = text.as_bytes();
    let name_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    top_level(text).into_iter().find(|&k| {
        let end = k + word.len();
        text[k..].starts_with(word) && (k == 0 || !name_char(b[k - 1])) && (end >= b.len() || !name_char(b[end]))
    })
}

/// `a`, `a, b`, `(a, b)`, `a, b,` → the names and whether they were a tuple.
fn target_names(text: &str, source: &str, line: usize) -> Result<(Vec<String>, bool)> {
    let t = text.trim();
    let inner = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')).unwrap_or(t);
    let tuple = inner.contains(',');
    let names: Vec<String> = inner.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
    if names.is_empty() || names.iter().any(|n| !is_name(n)) {
        return Err(syntax(source, line, format!("unsupported assignment target '{t}'")));
    }
    Ok((names, tuple))
}

fn is_name(n: &str) -> bool {
    !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_') && !n.starts_with(|c: char| c.is_ascii_digit())
}

/// The `=` of an assignment: the first one outside brackets and strings that is not part of
/// `==`, `!=`, `<=`, `>=` or an augmented operator.
fn split_assign(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    top_level(text).into_iter().find(|&k| {
        let prev = if k > 0 { b[k - 1] } else { b' ' };
        b[k] == b'=' && b.get(k + 1) != Some(&b'=') && !b"=!<>+-*/%&|^@".contains(&prev)
    })
}

const AUG_OPS: [(&str, BinOp); 12] = [
    ("//=", BinOp::FloorDiv),
    ("**=", BinOp::Pow),
    ("<<=", BinOp::LShift),
    (">>=", BinOp::RShift),
    ("+=", BinOp::Add),
    ("-=", BinOp::Sub),
    ("*=", BinOp::Mul),
    ("/=", BinOp::Div),
    ("%=", BinOp::Mod),
    ("&=", BinOp::BitAnd),
    ("|=", BinOp::BitOr),
    ("^=", BinOp::BitXor),
];

/// One or more simple statements (`a = 1; b = 2`) on one line.
fn parse_simple(text: &str, source: &str, line: usize) -> Result<Vec<Statement>> {
    let mut out = Vec::new();
    for part in split_semicolons(text) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        out.push(Statement { line, kind: parse_one(part, source, line)? });
    }
    Ok(out)
}

fn split_semicolons(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for k in top_level(text) {
        if text.as_bytes()[k] == b';' {
            parts.push(&text[start..k]);
            start = k + 1;
        }
    }
    parts.push(&text[start..]);
    parts
}

fn keyword_rest<'t>(text: &'t str, kw: &str) -> Option<&'t str> {
    let r = text.strip_prefix(kw)?;
    (r.is_empty() || r.starts_with([' ', '(', '['])).then_some(r)
}

fn parse_one(text: &str, source: &str, line: usize) -> Result<Stmt> {
    let expr = |t: &str| Parser::new(t, source, line).exprs_all();
    if let Some(r) = keyword_rest(text, "return") {
        return Ok(Stmt::Return(if r.trim().is_empty() { None } else { Some(expr(r)?) }));
    }
    if let Some(r) = keyword_rest(text, "raise") {
        // `raise E(msg) from e`: the cause is dropped.
        let r = find_word(r, "from").map_or(r, |k| &r[..k]);
        return Ok(Stmt::Raise(if r.trim().is_empty() { None } else { Some(expr(r)?) }));
    }
    if let Some(r) = keyword_rest(text, "assert") {
        let mut p = Parser::new(r, source, line);
        let cond = p.expr()?;
        let msg = if p.eat(b',') { Some(p.expr()?) } else { None };
        if p.peek().is_some() {
            return Err(p.err("the end of the assert"));
        }
        return Ok(Stmt::Assert(cond, msg));
    }
    match text {
        "break" => return Ok(Stmt::Break),
        "continue" => return Ok(Stmt::Continue),
        "pass" | "..." => return Ok(Stmt::Pass),
        _ => {}
    }
    if let Some(r) = text.strip_prefix("del ") {
        return match expr(r)? {
            Expr::Subscript(base, idx) => Ok(Stmt::Delete(*base, *idx)),
            _ => Err(syntax(source, line, format!("'del {}': only 'del x[key]' is supported", r.trim()))),
        };
    }
    for kw in ["global ", "nonlocal ", "with ", "try", "lambda", "yield", "async ", "import ", "class "] {
        if text.starts_with(kw) {
            return Err(syntax(source, line, format!("'{}' is not supported in TorchScript", kw.trim())));
        }
    }
    for (sym, op) in AUG_OPS {
        if let Some(k) = find_top(text, sym) {
            let target = text[..k].trim();
            if !is_name(target) {
                return Err(syntax(source, line, format!("unsupported augmented assignment target '{target}'")));
            }
            return Ok(Stmt::AugAssign(target.to_string(), op, expr(&text[k + sym.len()..])?));
        }
    }
    let Some(k) = split_assign(text) else { return Ok(Stmt::Expr(expr(text)?)) };
    let lhs = text[..k].trim();
    let value = expr(&text[k + 1..])?;
    // `x: int = 0`.
    if let Some(c) = header_colon(lhs) {
        let name = lhs[..c].trim();
        if !is_name(name) {
            return Err(syntax(source, line, format!("unsupported assignment target '{lhs}'")));
        }
        let ann = expr(&lhs[c + 1..])?;
        return Ok(Stmt::Assign { targets: vec![name.to_string()], tuple: false, value, ann: Some(ann) });
    }
    // `self.attr = value`.
    if let Some((base, attr)) = lhs.rsplit_once('.') {
        if is_name(attr.trim()) && !lhs.contains(',') {
            return Ok(Stmt::SetAttr(expr(base)?, attr.trim().to_string(), value));
        }
    }
    // `d[key] = value`, `xs[i] = value`, `x[1:, 0] = value`.
    if lhs.ends_with(']') {
        if let Ok(Expr::Subscript(base, idx)) = expr(lhs) {
            return Ok(Stmt::SetItem(*base, *idx, value));
        }
    }
    let (targets, tuple) = target_names(lhs, source, line)?;
    Ok(Stmt::Assign { targets, tuple, value, ann: None })
}

/// The offset of `sym` outside brackets and strings (`a <<= b` does not hold `<=`, nor `x == y`
/// a `?=` form).
fn find_top(text: &str, sym: &str) -> Option<usize> {
    let b = text.as_bytes();
    top_level(text).into_iter().find(|&k| text[k..].starts_with(sym) && (k == 0 || !b"<>*/=!".contains(&b[k - 1])))
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

/// The comparison operators, longest first.
const COMPARISONS: [(&str, BinOp); 6] =
    [("<=", BinOp::Le), (">=", BinOp::Ge), ("==", BinOp::Eq), ("!=", BinOp::Ne), ("<", BinOp::Lt), (">", BinOp::Gt)];

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

    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn peek(&mut self) -> Option<u8> {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
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

    fn eat_str(&mut self, t: &str) -> bool {
        self.peek();
        if self.rest().starts_with(t) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }

    /// The keyword `w` standing alone (not the start of a longer name).
    fn eat_word(&mut self, w: &str) -> bool {
        self.peek();
        let r = self.rest();
        if r.starts_with(w) && !r[w.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            self.pos += w.len();
            true
        } else {
            false
        }
    }

    /// `not in` (nothing consumed when the `not` is not followed by `in`).
    fn eat_not_in(&mut self) -> bool {
        let save = self.pos;
        let yes = self.eat_word("not") && self.eat_word("in");
        if !yes {
            self.pos = save;
        }
        yes
    }

    fn expr_all(mut self) -> Result<Expr> {
        let e = self.expr()?;
        if self.peek().is_some() {
            return Err(self.err("the end of the expression"));
        }
        Ok(e)
    }

    /// `a, b` (a tuple without brackets, as `return` and assignments take), or one expression.
    fn exprs_all(mut self) -> Result<Expr> {
        let first = self.expr()?;
        if self.peek() != Some(b',') {
            if self.peek().is_some() {
                return Err(self.err("the end of the expression"));
            }
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(b',') {
            if self.peek().is_none() {
                break;
            }
            items.push(self.expr()?);
        }
        if self.peek().is_some() {
            return Err(self.err("',' or the end of the expression"));
        }
        Ok(Expr::Tuple(items))
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

    /// An expression (a conditional expression at the lowest precedence); every level it
    /// nests counts towards [`MAX_EXPR_DEPTH`].
    fn expr(&mut self) -> Result<Expr> {
        let depth = self.depth;
        let e = self.ternary();
        self.depth = depth;
        e
    }

    fn ternary(&mut self) -> Result<Expr> {
        let a = self.or()?;
        let save = self.pos;
        if self.eat_word("if") {
            self.nest()?;
            let cond = self.or()?;
            if !self.eat_word("else") {
                self.pos = save;
                return Err(self.err("'else' in a conditional expression"));
            }
            let b = self.ternary()?;
            return Ok(Expr::IfExp(Box::new(cond), Box::new(a), Box::new(b)));
        }
        Ok(a)
    }

    fn or(&mut self) -> Result<Expr> {
        let mut a = self.and()?;
        while self.eat_word("or") {
            self.nest()?;
            let b = self.and()?;
            a = Expr::BoolOp(false, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn and(&mut self) -> Result<Expr> {
        let mut a = self.not()?;
        while self.eat_word("and") {
            self.nest()?;
            let b = self.not()?;
            a = Expr::BoolOp(true, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn not(&mut self) -> Result<Expr> {
        if self.eat_word("not") {
            self.nest()?;
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.comparison()
    }

    /// `a < b < c` is `a < b and b < c` (with `b` evaluated twice; TorchScript's printer never
    /// chains).
    fn comparison(&mut self) -> Result<Expr> {
        let first = self.binary(0)?;
        let mut out: Option<Expr> = None;
        let mut left = first.clone();
        loop {
            let op = if self.eat_word("is") {
                if self.eat_word("not") {
                    BinOp::IsNot
                } else {
                    BinOp::Is
                }
            } else if self.eat_word("in") {
                BinOp::In
            } else if self.eat_not_in() {
                BinOp::NotIn
            } else if let Some(op) = COMPARISONS.iter().find(|(s, _)| self.eat_str(s)).map(|(_, op)| *op) {
                op
            } else {
                break;
            };
            self.nest()?;
            let right = self.binary(0)?;
            let c = Expr::Binary(op, Box::new(left), Box::new(right.clone()));
            out = Some(match out {
                None => c,
                Some(prev) => Expr::BoolOp(true, Box::new(prev), Box::new(c)),
            });
            left = right;
        }
        Ok(out.unwrap_or(first))
    }

    /// The binary operators from `|` (level 0) to `* / // % @` (level 5), left-associative.
    fn binary(&mut self, level: usize) -> Result<Expr> {
        const LEVELS: [&[(&str, BinOp)]; 6] = [
            &[("|", BinOp::BitOr)],
            &[("^", BinOp::BitXor)],
            &[("&", BinOp::BitAnd)],
            &[("<<", BinOp::LShift), (">>", BinOp::RShift)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("//", BinOp::FloorDiv), ("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Mod), ("@", BinOp::MatMul)],
        ];
        let next = |p: &mut Self| if level + 1 < LEVELS.len() { p.binary(level + 1) } else { p.unary() };
        let mut a = next(self)?;
        loop {
            self.peek();
            let r = self.rest();
            let Some(&(sym, op)) = LEVELS[level].iter().find(|(s, _)| {
                r.starts_with(s)
                    // Not the start of `**`, `<=`, `>=`, `|=`, ... or a longer operator.
                    && !(*s == "*" && r.starts_with("**"))
                    && !(*s == "/" && r.starts_with("//"))
                    && !((*s == "<<" || *s == ">>") && r[2..].starts_with('='))
                    && !r[s.len()..].starts_with('=')
            }) else {
                return Ok(a);
            };
            self.pos += sym.len();
            self.nest()?;
            let b = next(self)?;
            a = Expr::Binary(op, Box::new(a), Box::new(b));
        }
    }

    fn unary(&mut self) -> Result<Expr> {
        if self.eat(b'-') {
            self.nest()?;
            return Ok(match self.unary()? {
                Expr::Int(i) => Expr::Int(i.wrapping_neg()),
                Expr::Float(x) => Expr::Float(-x),
                e => Expr::Neg(Box::new(e)),
            });
        }
        if self.eat(b'+') {
            self.nest()?;
            return self.unary();
        }
        if self.eat(b'~') {
            self.nest()?;
            let e = self.unary()?;
            let f = Expr::Attr(Box::new(Expr::Name("torch".into())), "bitwise_not".into());
            return Ok(Expr::Call(Box::new(f), vec![e], Vec::new()));
        }
        self.power()
    }

    /// `a ** b` binds tighter than a unary minus on its left and is right-associative.
    fn power(&mut self) -> Result<Expr> {
        let a = self.postfix()?;
        if self.eat_str("**") {
            self.nest()?;
            let b = self.unary()?;
            return Ok(Expr::Binary(BinOp::Pow, Box::new(a), Box::new(b)));
        }
        Ok(a)
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
                    let idx = self.subscript()?;
                    e = Expr::Subscript(Box::new(e), Box::new(idx));
                }
                _ => return Ok(e),
            }
        }
    }

    /// The inside of `[...]` after a value: an index, a slice, or several (a tuple), then `]`.
    fn subscript(&mut self) -> Result<Expr> {
        let mut items = Vec::new();
        let mut trailing = false;
        loop {
            if self.eat(b']') {
                break;
            }
            items.push(self.slice_item()?);
            trailing = self.eat(b',');
            if !trailing && self.peek() != Some(b']') {
                return Err(self.err("',' or ']'"));
            }
        }
        if items.is_empty() {
            return Err(self.err("an index"));
        }
        Ok(if items.len() == 1 && !trailing { items.pop().expect("one item") } else { Expr::Tuple(items) })
    }

    fn slice_item(&mut self) -> Result<Expr> {
        let part = |p: &mut Self| -> Result<Option<Box<Expr>>> {
            Ok(if matches!(p.peek(), Some(b':' | b',' | b']')) { None } else { Some(Box::new(p.expr()?)) })
        };
        let lo = part(self)?;
        if !self.eat(b':') {
            return lo.map(|e| *e).ok_or_else(|| self.err("an index"));
        }
        let hi = part(self)?;
        let step = if self.eat(b':') { part(self)? } else { None };
        Ok(Expr::Slice(lo, hi, step))
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

    fn string(&mut self) -> Result<String> {
        let rest = self.rest();
        for q in ["\"\"\"", "'''"] {
            if let Some(body) = rest.strip_prefix(q) {
                let end = body.find(q).ok_or_else(|| self.err("the end of a string"))?;
                self.pos += 2 * q.len() + end;
                return Ok(body[..end].to_string());
            }
        }
        let (lit, len) = crate::text::unquote(rest).ok_or_else(|| self.err("the end of a string"))?;
        self.pos += len;
        Ok(lit)
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
            Some(b'{') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.eat(b'}') {
                        break;
                    }
                    let k = self.expr()?;
                    if !self.eat(b':') {
                        return Err(self.err("':' after a dict key"));
                    }
                    let v = self.expr()?;
                    items.push((k, v));
                    if !self.eat(b',') && self.peek() != Some(b'}') {
                        return Err(self.err("',' or '}'"));
                    }
                }
                Ok(Expr::Dict(items))
            }
            Some(b'"' | b'\'') => {
                // Adjacent literals concatenate.
                let mut s = self.string()?;
                while matches!(self.peek(), Some(b'"' | b'\'')) {
                    s.push_str(&self.string()?);
                }
                Ok(Expr::Str(s))
            }
            Some(c)
                if c.is_ascii_digit() || (c == b'.' && self.s.get(self.pos + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                let start = self.pos;
                while self.pos < self.s.len() {
                    let c = self.s[self.pos];
                    let exp_sign = (c == b'-' || c == b'+') && matches!(self.s[self.pos - 1], b'e' | b'E');
                    if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exp_sign {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                let t = self.text[start..self.pos].replace('_', "");
                if let Ok(i) = t.parse::<i64>() {
                    return Ok(Expr::Int(i));
                }
                if let Some(h) = t.strip_prefix("0x") {
                    if let Ok(i) = i64::from_str_radix(h, 16) {
                        return Ok(Expr::Int(i));
                    }
                }
                let t = if t.ends_with('.') { format!("{t}0") } else { t };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Expr {
        Parser::new(s, "t", 1).expr_all().unwrap()
    }

    fn n(s: &str) -> Box<Expr> {
        Box::new(Expr::Name(s.into()))
    }

    #[test]
    fn operators_bind_as_in_python() {
        use BinOp::*;
        assert_eq!(e("a + b * c"), Expr::Binary(Add, n("a"), Box::new(Expr::Binary(Mul, n("b"), n("c")))));
        assert_eq!(e("-a ** 2"), Expr::Neg(Box::new(Expr::Binary(Pow, n("a"), Box::new(Expr::Int(2))))));
        assert_eq!(e("a - b - c"), Expr::Binary(Sub, Box::new(Expr::Binary(Sub, n("a"), n("b"))), n("c")));
        assert_eq!(
            e("not a == b and c"),
            Expr::BoolOp(true, Box::new(Expr::Not(Box::new(Expr::Binary(Eq, n("a"), n("b"))))), n("c"))
        );
        assert_eq!(e("h is not None"), Expr::Binary(IsNot, n("h"), Box::new(Expr::None)));
        assert_eq!(e("x if c else y"), Expr::IfExp(n("c"), n("x"), n("y")));
        assert_eq!(e("a // b"), Expr::Binary(FloorDiv, n("a"), n("b")));
        assert_eq!(
            e("x[1:, ::2]"),
            Expr::Subscript(
                n("x"),
                Box::new(Expr::Tuple(vec![
                    Expr::Slice(Some(Box::new(Expr::Int(1))), None, None),
                    Expr::Slice(None, None, Some(Box::new(Expr::Int(2)))),
                ]))
            )
        );
        assert_eq!(e("a <= b"), Expr::Binary(Le, n("a"), n("b")));
        assert_eq!(e("a not in b"), Expr::Binary(NotIn, n("a"), n("b")));
    }

    #[test]
    fn control_flow_parses_into_blocks() {
        let src = "def f(x: Tensor, n: int = 3) -> Tensor:\n    \"\"\"Doc\n    string.\"\"\"\n    for i in range(n):  # loop\n        if i == 2:\n            break\n        elif i > 5: continue\n        else:\n            x = x + 1\n    while n > 0:\n        n -= 1\n    return x\n";
        let f = parse_source(src, "t").unwrap();
        let m = &f.functions[0];
        assert_eq!(m.params.len(), 2);
        assert_eq!(m.params[1].default, Some(Expr::Int(3)));
        let kinds: Vec<&Stmt> = m.body.iter().map(|s| &s.kind).collect();
        assert!(matches!(kinds[0], Stmt::Expr(Expr::Str(_))));
        let Stmt::For(t, false, _, body) = kinds[1] else { panic!("{:?}", kinds[1]) };
        assert_eq!(t, &["i".to_string()]);
        let Stmt::If(_, then, otherwise) = &body[0].kind else { panic!() };
        assert_eq!(then[0].kind, Stmt::Break);
        let Stmt::If(_, c, e) = &otherwise[0].kind else { panic!() };
        assert_eq!(c[0].kind, Stmt::Continue);
        assert!(matches!(e[0].kind, Stmt::Assign { .. }));
        assert!(matches!(kinds[2], Stmt::While(..)));
        assert_eq!(m.body[3].line, 12);
    }

    #[test]
    fn bad_source_is_an_error_with_its_line() {
        let err = parse_source("def f(x):\n    if x\n        return x\n", "src.py").unwrap_err().to_string();
        assert!(err.contains("src.py:2") && err.contains("':'"), "{err}");
        let err = parse_source("def f(x):\n    return x\n      y = 1\n", "src.py").unwrap_err().to_string();
        assert!(err.contains("src.py:3"), "{err}");
        let deep = format!(
            "def f(x):\n{}",
            (0..150).map(|d| format!("{}if x:\n", " ".repeat(4 * (d + 1)))).collect::<String>()
        );
        let err = parse_source(&deep, "src.py").unwrap_err().to_string();
        assert!(err.contains("nest more than"), "{err}");
    }
}
