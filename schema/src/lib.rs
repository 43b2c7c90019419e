//! PyTorch's function-schema grammar (`add.Tensor(Tensor self, ...) -> Tensor`): the data model, a
//! parser with column-accurate errors, and a canonical printer whose output reparses to an equal value.
//!
//! A crate of its own, with no dependencies, because two sides need it: `codegen` reads the
//! schemas of `native_functions.yaml` with it, and `aten`'s dispatcher parses the schemas of
//! operators registered by strings at run time (PyTorch keeps `FunctionSchema` in ATen's core
//! for the same reason). Neither depends on the other.
//!
//! Grammar, as accepted here:
//!
//! ```text
//! schema   := [ident "::"] ident ["." ident] "(" [arg ("," arg)*] ")" "->" returns
//! arg      := "*" | type ident ["=" default]
//! type     := base ["(" alias ")"] suffix*        -- the alias only on `Tensor`
//! suffix   := "[" [digits] "]" | "?"
//! alias    := set ["!"] ["->" set]               -- set := (ident | "*") ("|" (ident | "*"))*
//! returns  := type | "(" [type [ident] ("," type [ident])*] ")"
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::str::FromStr;

/// A parsed operator schema, e.g. `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
///
/// The namespace (`aten::`) is accepted by the parser but not stored; the operator key used by the
/// dispatcher is [`FunctionSchema::full_name`].
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSchema {
    /// Base name without namespace or overload: `"add"`.
    pub name: String,
    /// Overload name, `""` when absent: `"Tensor"`.
    pub overload: String,
    /// Arguments in declaration order; keyword-only ones (after `*`) have `kwarg_only` set.
    pub arguments: Vec<Argument>,
    /// Returns; empty for `-> ()`.
    pub returns: Vec<Return>,
}

/// One argument of a schema: `Type[alias] name[=default]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    /// Argument name: `"self"`.
    pub name: String,
    /// Argument type, without the alias annotation.
    pub ty: Type,
    /// Default value, if any.
    pub default: Option<DefaultValue>,
    /// True for arguments after the `*` marker.
    pub kwarg_only: bool,
    /// The alias annotation of a `Tensor` argument: `Tensor(a!)` and so on.
    pub alias: Option<AliasInfo>,
}

/// One return value: a type, an optional alias annotation and (in tuples) an optional name.
#[derive(Debug, Clone, PartialEq)]
pub struct Return {
    /// Name of the return (`values` in `(Tensor values, Tensor indices)`); `None` when unnamed.
    pub name: Option<String>,
    /// Return type, without the alias annotation.
    pub ty: Type,
    /// The alias annotation: `Tensor(a!)`, `Tensor(a)[]`.
    pub alias: Option<AliasInfo>,
}

/// An alias annotation such as `a!` (aliases set `a` and writes it) or `a -> *` (aliases `a`,
/// and the elements enter the wildcard set).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AliasInfo {
    /// Alias sets before `->` (`["a"]` for `a!`; `["a", "b"]` for `a|b`).
    pub before: Vec<String>,
    /// Alias sets after `->` (`["*"]` for `a -> *`); empty when there is no arrow.
    pub after: Vec<String>,
    /// True when the annotation has `!`: the tensor is written to.
    pub is_write: bool,
}

/// A schema type. Alias annotations are kept on the [`Argument`] / [`Return`], not in the type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    /// `Tensor`
    Tensor,
    /// `int` (64-bit)
    Int,
    /// `SymInt` (a symbolic or concrete integer)
    SymInt,
    /// `float` (64-bit)
    Float,
    /// `bool`
    Bool,
    /// `str`
    Str,
    /// `Scalar` (a number of any kind)
    Scalar,
    /// `ScalarType` (a dtype)
    ScalarType,
    /// `Layout`
    Layout,
    /// `Device`
    Device,
    /// `MemoryFormat`
    MemoryFormat,
    /// `Generator`
    Generator,
    /// `Dimname`
    Dimname,
    /// `Storage`
    Storage,
    /// `Stream`
    Stream,
    /// `T?`
    Optional(Box<Type>),
    /// `T[]` (`None`) or `T[N]` (`Some(N)`).
    List(Box<Type>, Option<usize>),
}

/// A default value as written in the schema.
///
/// The variant follows the literal, not the argument type: `Scalar alpha=1` gives `Int(1)`,
/// `int[2] stride=1` gives `Int(1)` (the consumer broadcasts) and `[]` gives `IntList(vec![])`
/// whatever the element type.
///
/// Equality treats two NaN floats as equal, so that a schema with a `nan` default equals its
/// reparsed canonical form (see [`FunctionSchema`]'s `Display`).
#[derive(Debug, Clone)]
pub enum DefaultValue {
    /// `None`
    None,
    /// `True` / `False`
    Bool(bool),
    /// An integer literal: `0`, `-100`, `9223372036854775807`.
    Int(i64),
    /// A float literal: `1e-05`, `0.5`, `1.`, `inf`, `-inf`, `nan`.
    Float(f64),
    /// A string literal in single or double quotes, unescaped.
    Str(String),
    /// A list of integers: `[0, 0]`, and the empty list `[]`.
    IntList(Vec<i64>),
    /// A list of numbers with at least one float literal: `[0.5]`, `[1, 0.5]`.
    FloatList(Vec<f64>),
    /// A list of booleans: `[True, False]`.
    BoolList(Vec<bool>),
    /// A bare identifier: `Mean`, `Sum`, `contiguous_format`, `long`, ...
    Ident(String),
}

/// A schema syntax error, at a 1-based column (in characters) of the schema string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// 1-based column of the offending character (one past the end for a premature end).
    pub column: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for SchemaError {}

/// Parses a schema string such as `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
///
/// A leading namespace (`aten::`) is accepted and dropped.
///
/// ```
/// use schema::{parse_schema, DefaultValue, Type};
///
/// let s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor").unwrap();
/// assert_eq!(s.full_name(), "add.Tensor");
/// assert_eq!(s.arguments[2].ty, Type::Scalar);
/// assert!(s.arguments[2].kwarg_only);
/// assert!(matches!(s.arguments[2].default, Some(DefaultValue::Int(1))));
/// assert_eq!(s.to_string(), "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
/// ```
pub fn parse_schema(s: &str) -> Result<FunctionSchema, SchemaError> {
    Parser::new(s).schema()
}

impl FromStr for FunctionSchema {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_schema(s)
    }
}

impl FunctionSchema {
    /// The operator key: `name.overload`, or `name` when the overload is empty.
    pub fn full_name(&self) -> String {
        if self.overload.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }

    /// In-place variant: the name ends with `_` and the first argument is written (`Tensor(a!) self`).
    pub fn is_inplace(&self) -> bool {
        self.name.ends_with('_') && self.arguments.first().is_some_and(Argument::is_write)
    }

    /// out= variant: some keyword-only tensor argument is written (`*, Tensor(a!) out`).
    pub fn is_out_fn(&self) -> bool {
        self.arguments.iter().any(|a| a.kwarg_only && a.is_write() && a.ty.is_tensor_like())
    }

    /// Some argument is written (`(a!)` anywhere).
    pub fn is_mutable(&self) -> bool {
        self.arguments.iter().any(Argument::is_write)
    }

    /// The argument called `name`, if any.
    pub fn argument(&self, name: &str) -> Option<&Argument> {
        self.arguments.iter().find(|a| a.name == name)
    }
}

impl Argument {
    /// True when the alias annotation marks the argument as written (`Tensor(a!)`).
    pub fn is_write(&self) -> bool {
        self.alias.as_ref().is_some_and(|a| a.is_write)
    }
}

impl Type {
    /// Types whose values hold tensors and therefore take part in computing the dispatch key:
    /// `Tensor`, `Tensor?`, `Tensor[]`, `Tensor?[]` (and `Tensor[]?`).
    pub fn is_tensor_like(&self) -> bool {
        fn strip_optional(t: &Type) -> &Type {
            match t {
                Type::Optional(inner) => inner,
                other => other,
            }
        }
        let t = match strip_optional(self) {
            Type::List(elem, _) => strip_optional(elem),
            other => other,
        };
        *t == Type::Tensor
    }

    /// True for `T?`.
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// The base type for a name of the grammar (`"int"` gives [`Type::Int`]); `None` if unknown.
    pub fn from_base_name(name: &str) -> Option<Type> {
        Some(match name {
            "Tensor" => Type::Tensor,
            "int" => Type::Int,
            "SymInt" => Type::SymInt,
            "float" => Type::Float,
            "bool" => Type::Bool,
            "str" => Type::Str,
            "Scalar" => Type::Scalar,
            "ScalarType" => Type::ScalarType,
            "Layout" => Type::Layout,
            "Device" => Type::Device,
            "MemoryFormat" => Type::MemoryFormat,
            "Generator" => Type::Generator,
            "Dimname" => Type::Dimname,
            "Storage" => Type::Storage,
            "Stream" => Type::Stream,
            _ => return None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

/// Writes `ty` with `alias` right after the innermost base name: `Tensor(a!)[]`, `Tensor(a)?`.
fn write_type(f: &mut fmt::Formatter<'_>, ty: &Type, alias: Option<&AliasInfo>) -> fmt::Result {
    let base = match ty {
        Type::Optional(inner) => {
            write_type(f, inner, alias)?;
            return f.write_str("?");
        }
        Type::List(inner, size) => {
            write_type(f, inner, alias)?;
            return match size {
                Some(n) => write!(f, "[{n}]"),
                None => f.write_str("[]"),
            };
        }
        Type::Tensor => "Tensor",
        Type::Int => "int",
        Type::SymInt => "SymInt",
        Type::Float => "float",
        Type::Bool => "bool",
        Type::Str => "str",
        Type::Scalar => "Scalar",
        Type::ScalarType => "ScalarType",
        Type::Layout => "Layout",
        Type::Device => "Device",
        Type::MemoryFormat => "MemoryFormat",
        Type::Generator => "Generator",
        Type::Dimname => "Dimname",
        Type::Storage => "Storage",
        Type::Stream => "Stream",
    };
    f.write_str(base)?;
    match alias {
        Some(a) => write!(f, "({a})"),
        None => Ok(()),
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_type(f, self, None)
    }
}

impl fmt::Display for AliasInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.before.join("|"))?;
        if self.is_write {
            f.write_str("!")?;
        }
        if !self.after.is_empty() {
            write!(f, " -> {}", self.after.join("|"))?;
        }
        Ok(())
    }
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_type(f, &self.ty, self.alias.as_ref())?;
        write!(f, " {}", self.name)?;
        if let Some(d) = &self.default {
            write!(f, "={d}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Return {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_type(f, &self.ty, self.alias.as_ref())?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

/// Prints a float so that it reads back as a float literal with the same value: `{:?}` always
/// has a `.` or an exponent (`0.0`, `1e-5`) and round-trips exactly.
fn write_float(f: &mut fmt::Formatter<'_>, x: f64) -> fmt::Result {
    if x.is_nan() {
        f.write_str("nan")
    } else if x.is_infinite() {
        f.write_str(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        write!(f, "{x:?}")
    }
}

fn write_list<T>(
    f: &mut fmt::Formatter<'_>,
    items: &[T],
    mut item: impl FnMut(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    f.write_str("[")?;
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        item(f, x)?;
    }
    f.write_str("]")
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

impl fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::None => f.write_str("None"),
            DefaultValue::Bool(b) => f.write_str(py_bool(*b)),
            DefaultValue::Int(i) => write!(f, "{i}"),
            DefaultValue::Float(x) => write_float(f, *x),
            DefaultValue::Str(s) => {
                f.write_str("\"")?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        '\r' => f.write_str("\\r")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("\"")
            }
            DefaultValue::IntList(v) => write_list(f, v, |f, i| write!(f, "{i}")),
            DefaultValue::FloatList(v) => write_list(f, v, |f, x| write_float(f, *x)),
            DefaultValue::BoolList(v) => write_list(f, v, |f, b| f.write_str(py_bool(*b))),
            DefaultValue::Ident(s) => f.write_str(s),
        }
    }
}

/// Float equality for defaults: as `==`, except that NaN equals NaN.
fn same_float(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

impl PartialEq for DefaultValue {
    fn eq(&self, other: &Self) -> bool {
        use DefaultValue as D;
        match (self, other) {
            (D::None, D::None) => true,
            (D::Bool(a), D::Bool(b)) => a == b,
            (D::Int(a), D::Int(b)) => a == b,
            (D::Float(a), D::Float(b)) => same_float(*a, *b),
            (D::Str(a), D::Str(b)) | (D::Ident(a), D::Ident(b)) => a == b,
            (D::IntList(a), D::IntList(b)) => a == b,
            (D::FloatList(a), D::FloatList(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_float(*x, *y))
            }
            (D::BoolList(a), D::BoolList(b)) => a == b,
            _ => false,
        }
    }
}

/// Canonical form: no namespace, one space after each comma, `*` before the first keyword-only
/// argument, strings in double quotes, floats as Rust prints them (`1e-5`), `()` for no returns
/// and parentheses around several or named returns. It reparses to an equal value (provided the
/// keyword-only arguments come last, as they always do in a parsed schema).
impl fmt::Display for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full_name())?;
        f.write_str("(")?;
        let mut star_written = false;
        for (i, arg) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if arg.kwarg_only && !star_written {
                f.write_str("*, ")?;
                star_written = true;
            }
            write!(f, "{arg}")?;
        }
        f.write_str(") -> ")?;
        match self.returns.as_slice() {
            [single] if single.name.is_none() => write!(f, "{single}"),
            returns => {
                f.write_str("(")?;
                for (i, r) in returns.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{r}")?;
                }
                f.write_str(")")
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

type PResult<T> = Result<T, SchemaError>;

/// A recursive-descent parser over the characters of one schema; `pos` is a char index, so the
/// reported column is `pos + 1`.
struct Parser {
    chars: Vec<char>,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(is_ident_start) && chars.all(is_ident_char)
}

impl Parser {
    fn new(s: &str) -> Self {
        Parser { chars: s.chars().collect(), pos: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_is(&self, s: &str) -> bool {
        (self.pos..).zip(s.chars()).all(|(i, c)| self.chars.get(i) == Some(&c))
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if self.peek_is(s) {
            self.pos += s.chars().count();
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn ident(&mut self) -> Option<String> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.pos += 1;
        }
        Some(self.chars[start..self.pos].iter().collect())
    }

    /// What is at the cursor, for messages: `` `x` `` or `the end of the schema`.
    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("`{c}`"),
            None => "the end of the schema".to_string(),
        }
    }

    fn error<T>(&self, pos: usize, message: impl Into<String>) -> PResult<T> {
        Err(SchemaError { column: pos + 1, message: message.into() })
    }

    fn schema(&mut self) -> PResult<FunctionSchema> {
        self.skip_ws();
        let start = self.pos;
        let Some(mut name) = self.ident() else {
            return self.error(start, format!("expected an operator name, found {}", self.found()));
        };
        if self.eat_str("::") {
            let p = self.pos;
            name = match self.ident() {
                Some(n) => n,
                None => return self.error(p, format!("expected an operator name after `::`, found {}", self.found())),
            };
        }
        let mut overload = String::new();
        if self.eat('.') {
            let p = self.pos;
            overload = match self.ident() {
                Some(o) => o,
                None => return self.error(p, format!("expected an overload name after `.`, found {}", self.found())),
            };
        }
        self.skip_ws();
        let open = self.pos;
        if !self.eat('(') {
            return self.error(open, format!("expected `(` after the operator name, found {}", self.found()));
        }
        let arguments = self.arguments(open)?;
        self.skip_ws();
        let arrow = self.pos;
        if !self.eat_str("->") {
            if self.peek() == Some(')') {
                return self.error(arrow, "unmatched `)`");
            }
            return self.error(arrow, format!("expected `->` after the argument list, found {}", self.found()));
        }
        self.skip_ws();
        let returns = self.returns()?;
        self.skip_ws();
        match self.peek() {
            None => Ok(FunctionSchema { name, overload, arguments, returns }),
            Some(')') => self.error(self.pos, "unmatched `)`"),
            Some(c) => self.error(
                self.pos,
                format!("unexpected `{c}` after the returns (a named return needs parentheses: `(Tensor name)`)"),
            ),
        }
    }

    /// Parses the argument list; the cursor is just past the `(` at `open`.
    fn arguments(&mut self, open: usize) -> PResult<Vec<Argument>> {
        let mut args: Vec<Argument> = Vec::new();
        let mut star: Option<usize> = None;
        self.skip_ws();
        if self.eat(')') {
            return Ok(args);
        }
        loop {
            self.skip_ws();
            if self.peek() == Some('*') {
                let p = self.pos;
                if star.is_some() {
                    return self.error(p, "`*` may appear only once in an argument list");
                }
                star = Some(p);
                self.pos += 1;
                self.skip_ws();
                match self.peek() {
                    Some(',') => {
                        self.pos += 1;
                        continue;
                    }
                    Some(')') => return self.error(p, "`*` must be followed by keyword-only arguments"),
                    None => return self.error(open, "unclosed `(`: the argument list has no closing `)`"),
                    Some(_) => return self.error(self.pos, format!("expected `,` after `*`, found {}", self.found())),
                }
            }
            let (arg, name_pos) = self.argument(star.is_some())?;
            if args.iter().any(|a| a.name == arg.name) {
                return self.error(name_pos, format!("duplicate argument name `{}`", arg.name));
            }
            let name = arg.name.clone();
            args.push(arg);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(args);
                }
                None => return self.error(open, "unclosed `(`: the argument list has no closing `)`"),
                Some('-') if self.peek_is("->") => {
                    return self.error(open, "unclosed `(`: the argument list has no closing `)` before `->`")
                }
                Some(c) => {
                    return self.error(self.pos, format!("expected `,` or `)` after argument `{name}`, found `{c}`"))
                }
            }
        }
    }

    /// Parses `Type[alias] name[=default]`; returns the argument and the position of its name.
    fn argument(&mut self, kwarg_only: bool) -> PResult<(Argument, usize)> {
        let (ty, alias) = self.ty()?;
        self.skip_ws();
        let name_pos = self.pos;
        let Some(name) = self.ident() else {
            return self.error(name_pos, format!("expected an argument name after the type, found {}", self.found()));
        };
        self.skip_ws();
        let default = if self.eat('=') {
            self.skip_ws();
            Some(self.default_value(&name)?)
        } else {
            None
        };
        Ok((Argument { name, ty, default, kwarg_only, alias }, name_pos))
    }

    /// Parses a type with its optional alias annotation: `Tensor(a!)[]`, `int[2]`, `Tensor?[]`, `int[]?`.
    fn ty(&mut self) -> PResult<(Type, Option<AliasInfo>)> {
        let start = self.pos;
        let Some(name) = self.ident() else {
            return self.error(start, format!("expected a type, found {}", self.found()));
        };
        let Some(mut ty) = Type::from_base_name(&name) else {
            return self.error(start, format!("unknown type `{name}`"));
        };
        let mut alias = None;
        if self.peek() == Some('(') {
            if ty != Type::Tensor {
                return self
                    .error(self.pos, format!("alias annotations are only allowed on `Tensor`, not on `{name}`"));
            }
            alias = Some(self.alias()?);
        }
        loop {
            match self.peek() {
                Some('[') => {
                    let open = self.pos;
                    self.pos += 1;
                    let digits = self.pos;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    let size = if digits == self.pos {
                        None
                    } else {
                        let text: String = self.chars[digits..self.pos].iter().collect();
                        match text.parse::<usize>() {
                            Ok(n) => Some(n),
                            Err(_) => return self.error(digits, format!("list size `{text}` is too large")),
                        }
                    };
                    if !self.eat(']') {
                        if self.peek().is_none() {
                            return self.error(open, "unclosed `[` in a list type");
                        }
                        return self
                            .error(self.pos, format!("expected `]` after the list size, found {}", self.found()));
                    }
                    ty = Type::List(Box::new(ty), size);
                }
                Some('?') => {
                    if ty.is_optional() {
                        return self.error(self.pos, "a type can be made optional only once");
                    }
                    self.pos += 1;
                    ty = Type::Optional(Box::new(ty));
                }
                _ => return Ok((ty, alias)),
            }
        }
    }

    /// Parses `(a)`, `(a!)`, `(a -> *)`, `(a|b)`; the cursor is at the `(`.
    fn alias(&mut self) -> PResult<AliasInfo> {
        let open = self.pos;
        self.pos += 1;
        let before = self.alias_set()?;
        self.skip_ws();
        let is_write = self.eat('!');
        self.skip_ws();
        let mut after = Vec::new();
        if self.eat_str("->") {
            after = self.alias_set()?;
            self.skip_ws();
        }
        match self.peek() {
            Some(')') => {
                self.pos += 1;
                Ok(AliasInfo { before, after, is_write })
            }
            None => self.error(open, "unclosed `(` in an alias annotation"),
            Some(_) => {
                self.error(self.pos, format!("expected `)` to close the alias annotation, found {}", self.found()))
            }
        }
    }

    /// Parses `a`, `*` or `a|b|...`.
    fn alias_set(&mut self) -> PResult<Vec<String>> {
        let mut set = Vec::new();
        loop {
            self.skip_ws();
            let p = self.pos;
            if self.eat('*') {
                set.push("*".to_string());
            } else if let Some(id) = self.ident() {
                set.push(id);
            } else {
                return self.error(p, format!("expected an alias set (such as `a` or `*`), found {}", self.found()));
            }
            self.skip_ws();
            if !self.eat('|') {
                return Ok(set);
            }
        }
    }

    /// Parses the default value of argument `name`; the cursor is just past `=` and spaces.
    ///
    /// The literal extends to the next `,` or `)` outside quotes and brackets; the text is then
    /// classified as a whole, so a bad default is reported at its first column with all its text.
    fn default_value(&mut self, name: &str) -> PResult<DefaultValue> {
        let start = self.pos;
        let mut depth = 0usize;
        let mut quote: Option<(char, usize)> = None;
        let mut i = self.pos;
        while let Some(&c) = self.chars.get(i) {
            if let Some((q, _)) = quote {
                if c == '\\' {
                    i += 2;
                    continue;
                }
                if c == q {
                    quote = None;
                }
            } else {
                match c {
                    '"' | '\'' => quote = Some((c, i)),
                    '[' => depth += 1,
                    ']' => depth = depth.saturating_sub(1),
                    ',' if depth == 0 => break,
                    ')' => break,
                    _ => {}
                }
            }
            i += 1;
        }
        if let Some((_, q)) = quote {
            return self.error(q, format!("unterminated string in the default value of `{name}`"));
        }
        let i = i.min(self.chars.len());
        let raw: String = self.chars[start..i].iter().collect();
        let raw = raw.trim_end();
        if raw.is_empty() {
            return self.error(start, format!("missing default value after `=` for argument `{name}`"));
        }
        self.pos = start + raw.chars().count();
        parse_default_text(raw)
            .or_else(|why| self.error(start, format!("invalid default value `{raw}` for argument `{name}`: {why}")))
    }

    /// Parses the returns: `()`, a single type, or a parenthesised tuple with optional names.
    fn returns(&mut self) -> PResult<Vec<Return>> {
        if self.peek() != Some('(') {
            let (ty, alias) = self.ty()?;
            return Ok(vec![Return { name: None, ty, alias }]);
        }
        let open = self.pos;
        self.pos += 1;
        self.skip_ws();
        let mut returns: Vec<Return> = Vec::new();
        if self.eat(')') {
            return Ok(returns);
        }
        loop {
            self.skip_ws();
            let (ty, alias) = self.ty()?;
            self.skip_ws();
            let name_pos = self.pos;
            let name = self.ident();
            if let Some(n) = &name {
                if returns.iter().any(|r| r.name.as_ref() == Some(n)) {
                    return self.error(name_pos, format!("duplicate return name `{n}`"));
                }
            }
            returns.push(Return { name, ty, alias });
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(returns);
                }
                None => return self.error(open, "unclosed `(`: the return tuple has no closing `)`"),
                Some(c) => {
                    return self.error(self.pos, format!("expected `,` or `)` in the return tuple, found `{c}`"))
                }
            }
        }
    }
}

/// The reason a default literal is rejected (the caller adds the column and the text).
type Why = String;

const EXPECTED_DEFAULT: &str = "expected `None`, `True`, `False`, a number, a quoted string, a list or an identifier";

/// Classifies the complete text of a default value.
fn parse_default_text(s: &str) -> Result<DefaultValue, Why> {
    match s {
        "None" => return Ok(DefaultValue::None),
        "True" => return Ok(DefaultValue::Bool(true)),
        "False" => return Ok(DefaultValue::Bool(false)),
        _ => {}
    }
    if s.starts_with('"') || s.starts_with('\'') {
        return unquote(s).map(DefaultValue::Str);
    }
    if let Some(rest) = s.strip_prefix('[') {
        let Some(inner) = rest.strip_suffix(']') else {
            return Err("unclosed `[`".to_string());
        };
        return parse_list(inner.trim());
    }
    if let Some(v) = parse_number(s)? {
        return Ok(v);
    }
    if is_ident(s) {
        return Ok(DefaultValue::Ident(s.to_string()));
    }
    Err(EXPECTED_DEFAULT.to_string())
}

/// Parses the inside of a list literal: all booleans, all integers, or numbers with a float.
fn parse_list(inner: &str) -> Result<DefaultValue, Why> {
    if inner.is_empty() {
        return Ok(DefaultValue::IntList(Vec::new()));
    }
    let mut items = Vec::new();
    for part in inner.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err("empty list element".to_string());
        }
        let item = match part {
            "True" => DefaultValue::Bool(true),
            "False" => DefaultValue::Bool(false),
            _ => parse_number(part)?.ok_or_else(|| format!("list element `{part}` is not a number or a boolean"))?,
        };
        items.push(item);
    }
    let all = |pred: fn(&DefaultValue) -> bool| items.iter().all(pred);
    if all(|d| matches!(d, DefaultValue::Bool(_))) {
        return Ok(DefaultValue::BoolList(items.iter().map(|d| matches!(d, DefaultValue::Bool(true))).collect()));
    }
    if all(|d| matches!(d, DefaultValue::Int(_))) {
        let ints = items
            .iter()
            .filter_map(|d| match d {
                DefaultValue::Int(i) => Some(*i),
                _ => None,
            })
            .collect();
        return Ok(DefaultValue::IntList(ints));
    }
    if all(|d| matches!(d, DefaultValue::Int(_) | DefaultValue::Float(_))) {
        let floats = items
            .iter()
            .filter_map(|d| match d {
                DefaultValue::Int(i) => Some(*i as f64),
                DefaultValue::Float(x) => Some(*x),
                _ => None,
            })
            .collect();
        return Ok(DefaultValue::FloatList(floats));
    }
    Err("list elements must be all numbers or all booleans".to_string())
}

/// `Ok(None)` when `s` is not a number at all; `Err` when it is one that does not fit.
fn parse_number(s: &str) -> Result<Option<DefaultValue>, Why> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let negative = body.len() != s.len();
    match body {
        "inf" => {
            let x = if negative { f64::NEG_INFINITY } else { f64::INFINITY };
            return Ok(Some(DefaultValue::Float(x)));
        }
        "nan" if !negative => return Ok(Some(DefaultValue::Float(f64::NAN))),
        _ => {}
    }
    if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .map(|i| Some(DefaultValue::Int(i)))
            .map_err(|_| "integer literal does not fit in 64 bits".to_string());
    }
    if is_float_literal(body) {
        return s.parse::<f64>().map(|x| Some(DefaultValue::Float(x))).map_err(|e| format!("bad float literal: {e}"));
    }
    Ok(None)
}

/// `digits [. digits] [e [+-] digits]` with a digit in the mantissa and a `.` or an exponent.
fn is_float_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    let mut dot = false;
    if i < b.len() && b[i] == b'.' {
        dot = true;
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    let mut exponent = false;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
        exponent = true;
    }
    i == b.len() && (dot || exponent)
}

/// Unquotes `"..."` or `'...'`, resolving `\\`, `\"`, `\'`, `\n`, `\t` and `\r`.
fn unquote(s: &str) -> Result<String, Why> {
    let q = s.chars().next().unwrap_or('"');
    let inner = match s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
        Some(inner) if s.len() >= 2 => inner,
        _ => return Err("text after the closing quote".to_string()),
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(e @ ('\\' | '"' | '\'')) => out.push(e),
                Some(e) => return Err(format!("unknown escape `\\{e}` in string")),
                None => return Err("dangling `\\` at the end of the string".to_string()),
            },
            c if c == q => return Err("text after the closing quote".to_string()),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every schema from the brief: real `native_functions.yaml` entries.
    const REAL_SCHEMAS: &[&str] = &[
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
        "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
        "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
        "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
        "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
        "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",
        "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
        "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
        "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
        "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
        "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
        "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
        "upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
        "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
        "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
        "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
        "gelu(Tensor self, *, str approximate='none') -> Tensor",
        "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
        "_foreach_add.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]",
        "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
        "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
        "aten::relu_(Tensor(a!) self) -> Tensor(a!)",
        "_fused_adam_(Tensor(a!)[] self, Tensor(b!)[] grads, float lr, bool[3] output_mask) -> ()",
        "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
        "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
    ];

    /// More upstream schemas with less common forms (`long`, `Dimname[]?`, a 16-digit float,
    /// an overload ending in `_`, a zero-argument op).
    const MORE_REAL_SCHEMAS: &[&str] = &[
        "randperm(SymInt n, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "randn.names(SymInt[] size, *, Dimname[]? names, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "rrelu_(Tensor(a!) self, Scalar lower=0.125, Scalar upper=0.3333333333333333, bool training=False, Generator? generator=None) -> Tensor(a!)",
        "range.out_(Scalar start, Scalar end, *, Tensor(a!) out) -> Tensor(a!)",
        "_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)",
        "repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
        "_prelu_kernel_backward(Tensor grad_output, Tensor self, Tensor weight) -> (Tensor, Tensor)",
        "gelu.out(Tensor self, *, str approximate=\"none\", Tensor(a!) out) -> Tensor(a!)",
        "_nnpack_available() -> bool",
    ];

    fn parse(s: &str) -> FunctionSchema {
        parse_schema(s).unwrap_or_else(|e| panic!("`{s}` failed to parse: {e}"))
    }

    fn parse_err(s: &str) -> SchemaError {
        match parse_schema(s) {
            Ok(v) => panic!("`{s}` parsed but should not have: {v:?}"),
            Err(e) => e,
        }
    }

    /// The type of the single argument `x` declared as `decl x`.
    fn ty(decl: &str) -> Type {
        parse(&format!("f({decl} x) -> ()")).arguments[0].ty.clone()
    }

    /// The default of the single argument declared as `decl`.
    fn default(decl: &str) -> DefaultValue {
        parse(&format!("f({decl}) -> ()")).arguments[0].default.clone().expect("argument has a default")
    }

    fn opt(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    fn list(t: Type, n: Option<usize>) -> Type {
        Type::List(Box::new(t), n)
    }

    fn alias(before: &[&str], after: &[&str], is_write: bool) -> Option<AliasInfo> {
        Some(AliasInfo {
            before: before.iter().map(|s| s.to_string()).collect(),
            after: after.iter().map(|s| s.to_string()).collect(),
            is_write,
        })
    }

    fn assert_err(s: &str, column: usize, needle: &str) {
        let e = parse_err(s);
        assert_eq!(e.column, column, "column for `{s}`: {e}");
        assert!(e.message.contains(needle), "message for `{s}` should contain `{needle}`: {e}");
    }

    #[test]
    fn all_real_schemas_parse_and_round_trip() {
        for s in REAL_SCHEMAS.iter().chain(MORE_REAL_SCHEMAS) {
            let parsed = parse(s);
            let printed = parsed.to_string();
            let reparsed = parse(&printed);
            assert_eq!(parsed, reparsed, "round trip of `{s}` via `{printed}`");
            // Printing is a fixed point after one round.
            assert_eq!(printed, reparsed.to_string());
        }
    }

    #[test]
    fn canonical_schemas_print_verbatim() {
        // All but two of the real schemas are already canonical; those two differ only in the
        // namespace and the quote style.
        for s in REAL_SCHEMAS {
            let printed = parse(s).to_string();
            match *s {
                "gelu(Tensor self, *, str approximate='none') -> Tensor" => {
                    assert_eq!(printed, "gelu(Tensor self, *, str approximate=\"none\") -> Tensor")
                }
                "aten::relu_(Tensor(a!) self) -> Tensor(a!)" => {
                    assert_eq!(printed, "relu_(Tensor(a!) self) -> Tensor(a!)")
                }
                _ => assert_eq!(printed, *s),
            }
        }
    }

    #[test]
    fn more_real_schemas_print_verbatim() {
        for s in MORE_REAL_SCHEMAS {
            assert_eq!(parse(s).to_string(), *s);
        }
        let randperm = parse(MORE_REAL_SCHEMAS[0]);
        assert_eq!(randperm.argument("dtype").unwrap().default, Some(DefaultValue::Ident("long".into())));
        let names = parse(MORE_REAL_SCHEMAS[1]);
        assert_eq!(names.argument("names").unwrap().ty, opt(list(Type::Dimname, None)));
        let rrelu = parse(MORE_REAL_SCHEMAS[2]);
        assert_eq!(rrelu.argument("upper").unwrap().default, Some(DefaultValue::Float(1.0 / 3.0)));
        let range = parse(MORE_REAL_SCHEMAS[3]);
        assert_eq!((range.name.as_str(), range.overload.as_str()), ("range", "out_"));
        assert!(range.is_out_fn() && !range.is_inplace());
    }

    #[test]
    fn add_tensor_structure() {
        let s = parse(REAL_SCHEMAS[0]);
        assert_eq!(s.name, "add");
        assert_eq!(s.overload, "Tensor");
        assert_eq!(s.full_name(), "add.Tensor");
        assert_eq!(
            s.arguments,
            vec![
                Argument { name: "self".into(), ty: Type::Tensor, default: None, kwarg_only: false, alias: None },
                Argument { name: "other".into(), ty: Type::Tensor, default: None, kwarg_only: false, alias: None },
                Argument {
                    name: "alpha".into(),
                    ty: Type::Scalar,
                    default: Some(DefaultValue::Int(1)),
                    kwarg_only: true,
                    alias: None,
                },
            ]
        );
        assert_eq!(s.returns, vec![Return { name: None, ty: Type::Tensor, alias: None }]);
        assert!(!s.is_inplace() && !s.is_out_fn() && !s.is_mutable());
    }

    #[test]
    fn inplace_out_and_mutable_classification() {
        let inplace = parse(REAL_SCHEMAS[1]);
        assert!(inplace.is_inplace() && !inplace.is_out_fn() && inplace.is_mutable());
        assert_eq!(inplace.arguments[0].alias, alias(&["a"], &[], true));
        assert_eq!(inplace.returns[0].alias, alias(&["a"], &[], true));

        let out = parse(REAL_SCHEMAS[2]);
        assert!(!out.is_inplace() && out.is_out_fn() && out.is_mutable());
        let out_arg = out.argument("out").unwrap();
        assert!(out_arg.kwarg_only && out_arg.is_write());
        assert_eq!(out.full_name(), "add.out");

        let relu = parse("aten::relu_(Tensor(a!) self) -> Tensor(a!)");
        assert_eq!((relu.name.as_str(), relu.overload.as_str()), ("relu_", ""));
        assert_eq!(relu.full_name(), "relu_");
        assert!(relu.is_inplace());

        // `_fused_adam_` writes tensor lists in place; no returns.
        let adam = parse("_fused_adam_(Tensor(a!)[] self, Tensor(b!)[] grads, float lr, bool[3] output_mask) -> ()");
        assert!(adam.is_inplace() && adam.is_mutable() && !adam.is_out_fn());
        assert!(adam.returns.is_empty());
        assert_eq!(adam.arguments[0].ty, list(Type::Tensor, None));
        assert_eq!(adam.arguments[1].alias, alias(&["b"], &[], true));
        assert_eq!(adam.arguments[3].ty, list(Type::Bool, Some(3)));

        // A name ending in `_` without a written first argument is not in-place.
        let not_inplace = parse("__and__.Tensor(Tensor self, Tensor other) -> Tensor");
        assert!(!not_inplace.is_inplace() && !not_inplace.is_mutable());
        // A written positional argument makes a mutable op but not an out= one.
        let positional = parse("resize_as(Tensor(a!) self, Tensor other) -> Tensor(a!)");
        assert!(positional.is_mutable() && !positional.is_out_fn() && !positional.is_inplace());
    }

    #[test]
    fn returns_tuple_named_and_aliased() {
        let max = parse(REAL_SCHEMAS[5]);
        assert_eq!(
            max.returns,
            vec![
                Return { name: Some("values".into()), ty: Type::Tensor, alias: None },
                Return { name: Some("indices".into()), ty: Type::Tensor, alias: None },
            ]
        );
        let ln = parse(REAL_SCHEMAS[14]);
        assert_eq!(ln.returns.len(), 3);
        assert!(ln.returns.iter().all(|r| r.name.is_none() && r.ty == Type::Tensor));

        let out = parse(
            "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
        );
        assert_eq!(out.returns[0].alias, alias(&["a"], &[], true));
        assert_eq!(out.returns[1].alias, alias(&["b"], &[], true));
        assert_eq!(out.returns[1].name.as_deref(), Some("indices"));
        assert!(out.is_out_fn());

        // A one-element tuple is the same as a bare type; a named one keeps its parentheses.
        assert_eq!(parse("f() -> (Tensor)").returns, parse("f() -> Tensor").returns);
        let named = parse("f() -> (Tensor out)");
        assert_eq!(named.to_string(), "f() -> (Tensor out)");
        assert_eq!(parse("f() -> ( )").returns, vec![]);

        let list_ret = parse(REAL_SCHEMAS[6]);
        assert_eq!(list_ret.returns[0].ty, list(Type::Tensor, None));
        assert_eq!(list_ret.returns[0].alias, alias(&["a"], &[], false));
        assert_eq!(parse(REAL_SCHEMAS[26]).returns[0].ty, list(Type::Tensor, None));
    }

    #[test]
    fn every_base_type() {
        let cases = [
            ("Tensor", Type::Tensor),
            ("int", Type::Int),
            ("SymInt", Type::SymInt),
            ("float", Type::Float),
            ("bool", Type::Bool),
            ("str", Type::Str),
            ("Scalar", Type::Scalar),
            ("ScalarType", Type::ScalarType),
            ("Layout", Type::Layout),
            ("Device", Type::Device),
            ("MemoryFormat", Type::MemoryFormat),
            ("Generator", Type::Generator),
            ("Dimname", Type::Dimname),
            ("Storage", Type::Storage),
            ("Stream", Type::Stream),
        ];
        for (text, expected) in cases {
            assert_eq!(ty(text), expected, "{text}");
            assert_eq!(expected.to_string(), text);
            assert_eq!(Type::from_base_name(text), Some(expected.clone()));
            // Every base type also takes both suffixes.
            assert_eq!(ty(&format!("{text}?")), opt(expected.clone()));
            assert_eq!(ty(&format!("{text}[]")), list(expected.clone(), None));
        }
        assert_eq!(Type::from_base_name("Tensors"), None);
    }

    #[test]
    fn list_and_optional_suffixes_in_both_orders() {
        let cases = [
            ("int[]", list(Type::Int, None)),
            ("int[2]", list(Type::Int, Some(2))),
            ("SymInt[1]?", opt(list(Type::SymInt, Some(1)))),
            ("int[1]?", opt(list(Type::Int, Some(1)))),
            ("int[]?", opt(list(Type::Int, None))),
            ("float[]?", opt(list(Type::Float, None))),
            ("Tensor?[]", list(opt(Type::Tensor), None)),
            ("Tensor[]", list(Type::Tensor, None)),
            ("Tensor?", opt(Type::Tensor)),
            ("Dimname[]", list(Type::Dimname, None)),
            ("bool[3]", list(Type::Bool, Some(3))),
            ("int[0]", list(Type::Int, Some(0))),
            ("Tensor?[]?", opt(list(opt(Type::Tensor), None))),
            ("int[][]", list(list(Type::Int, None), None)),
        ];
        for (text, expected) in cases {
            assert_eq!(ty(text), expected, "{text}");
            assert_eq!(expected.to_string(), text, "printing {expected:?}");
        }
    }

    #[test]
    fn alias_annotations() {
        let arg = |decl: &str| parse(&format!("f({decl} x) -> ()")).arguments[0].clone();
        let cases = [
            ("Tensor(a)", Type::Tensor, alias(&["a"], &[], false)),
            ("Tensor(a!)", Type::Tensor, alias(&["a"], &[], true)),
            ("Tensor(a -> *)", Type::Tensor, alias(&["a"], &["*"], false)),
            ("Tensor(a!)[]", list(Type::Tensor, None), alias(&["a"], &[], true)),
            ("Tensor(b!)[]", list(Type::Tensor, None), alias(&["b"], &[], true)),
            ("Tensor(a)?", opt(Type::Tensor), alias(&["a"], &[], false)),
            ("Tensor(a|b)", Type::Tensor, alias(&["a", "b"], &[], false)),
            ("Tensor(*)", Type::Tensor, alias(&["*"], &[], false)),
            ("Tensor(a! -> a|b)", Type::Tensor, alias(&["a"], &["a", "b"], true)),
            ("Tensor( a ! )", Type::Tensor, alias(&["a"], &[], true)),
        ];
        for (text, expected_ty, expected_alias) in cases {
            let a = arg(text);
            assert_eq!(a.ty, expected_ty, "{text}");
            assert_eq!(a.alias, expected_alias, "{text}");
            assert_eq!(arg(&a.to_string()[..a.to_string().len() - 2]), a, "{text} reprints as {a}");
        }
        assert_eq!(arg("Tensor(a -> *)").to_string(), "Tensor(a -> *) x");
        assert_eq!(arg("Tensor(a!)[]").to_string(), "Tensor(a!)[] x");
        assert_eq!(arg("Tensor(a)?").to_string(), "Tensor(a)? x");
    }

    #[test]
    fn tensor_like_types() {
        for (text, expected) in [
            ("Tensor", true),
            ("Tensor?", true),
            ("Tensor[]", true),
            ("Tensor?[]", true),
            ("Tensor[]?", true),
            ("Tensor(a!)", true),
            ("int", false),
            ("int[]", false),
            ("Scalar", false),
            ("Scalar?", false),
            ("Storage", false),
            ("Tensor[][]", false),
        ] {
            assert_eq!(ty(text).is_tensor_like(), expected, "{text}");
        }
    }

    #[test]
    fn scalar_defaults() {
        use DefaultValue as D;
        let cases = [
            ("Tensor? bias=None", D::None),
            ("bool keepdim=True", D::Bool(true)),
            ("bool keepdim=False", D::Bool(false)),
            ("int dim=0", D::Int(0)),
            ("int dim=-1", D::Int(-1)),
            ("SymInt ignore_index=-100", D::Int(-100)),
            ("int big=9223372036854775807", D::Int(i64::MAX)),
            ("int small=-9223372036854775808", D::Int(i64::MIN)),
            ("float eps=1e-05", D::Float(1e-5)),
            ("float eps=1E+3", D::Float(1000.0)),
            ("float p=0.5", D::Float(0.5)),
            ("float p=-0.5", D::Float(-0.5)),
            ("float p=1.", D::Float(1.0)),
            ("float p=.25", D::Float(0.25)),
            ("float label_smoothing=0.0", D::Float(0.0)),
            ("float hi=inf", D::Float(f64::INFINITY)),
            ("float lo=-inf", D::Float(f64::NEG_INFINITY)),
            ("float v=nan", D::Float(f64::NAN)),
            ("Scalar alpha=1", D::Int(1)),
            ("float momentum=1", D::Int(1)),
            ("Scalar beta=1.0", D::Float(1.0)),
            ("str mode=\"valid\"", D::Str("valid".into())),
            ("str approximate='none'", D::Str("none".into())),
            ("str s=\"\"", D::Str(String::new())),
            ("str s=\"a, b)\"", D::Str("a, b)".into())),
            ("str s='it\\'s'", D::Str("it's".into())),
            ("str s=\"q\\\"\\\\\\n\"", D::Str("q\"\\\n".into())),
            ("int reduction=Mean", D::Ident("Mean".into())),
            ("int reduction=Sum", D::Ident("Sum".into())),
            ("MemoryFormat memory_format=contiguous_format", D::Ident("contiguous_format".into())),
            ("ScalarType dtype=long", D::Ident("long".into())),
        ];
        for (decl, expected) in cases {
            assert_eq!(default(decl), expected, "{decl}");
        }
        // NaN defaults compare equal so schemas holding them round-trip.
        assert_eq!(D::Float(f64::NAN), D::Float(f64::NAN));
        assert_ne!(D::Float(1.0), D::Int(1));
        assert_ne!(D::Str("Mean".into()), D::Ident("Mean".into()));
    }

    #[test]
    fn list_defaults() {
        use DefaultValue as D;
        let cases = [
            ("int[2] stride=[]", D::IntList(vec![])),
            ("int[2] padding=[0,0]", D::IntList(vec![0, 0])),
            ("int[2] dilation=[1, 1]", D::IntList(vec![1, 1])),
            ("int[2] d=[ -1 , 2 ]", D::IntList(vec![-1, 2])),
            ("float[] f=[0.5]", D::FloatList(vec![0.5])),
            ("float[] f=[1, 0.5, -inf]", D::FloatList(vec![1.0, 0.5, f64::NEG_INFINITY])),
            ("bool[3] m=[True, False]", D::BoolList(vec![true, false])),
            ("bool[3] m=[True,True,False]", D::BoolList(vec![true, true, false])),
            // A scalar default on a list type is kept as written.
            ("int[2] stride=1", D::Int(1)),
            ("SymInt[2] padding=0", D::Int(0)),
            ("int[1]? dim=None", D::None),
        ];
        for (decl, expected) in cases {
            assert_eq!(default(decl), expected, "{decl}");
        }
    }

    #[test]
    fn conv2d_and_friends() {
        let conv = parse(REAL_SCHEMAS[12]);
        let defaults: Vec<_> = conv.arguments.iter().map(|a| a.default.clone()).collect();
        assert_eq!(
            defaults,
            vec![
                None,
                None,
                Some(DefaultValue::None),
                Some(DefaultValue::Int(1)),
                Some(DefaultValue::Int(0)),
                Some(DefaultValue::Int(1)),
                Some(DefaultValue::Int(1)),
            ]
        );
        assert_eq!(conv.arguments[3].ty, list(Type::SymInt, Some(2)));
        assert!(conv.arguments.iter().all(|a| !a.kwarg_only));

        let sum = parse(REAL_SCHEMAS[4]);
        assert_eq!(sum.arguments[1].ty, opt(list(Type::Int, Some(1))));
        assert_eq!(sum.arguments[3].ty, opt(Type::ScalarType));
        assert!(sum.arguments[3].kwarg_only && !sum.arguments[2].kwarg_only);

        let split = parse(REAL_SCHEMAS[6]);
        assert_eq!(split.arguments[0].alias, alias(&["a"], &["*"], false));
        assert_eq!(split.arguments[1].ty, Type::SymInt);

        let index = parse(REAL_SCHEMAS[7]);
        assert_eq!(index.arguments[1].ty, list(opt(Type::Tensor), None));
        assert!(index.arguments[1].ty.is_tensor_like());

        let upsample = parse(REAL_SCHEMAS[20]);
        assert_eq!(upsample.arguments[2].ty, opt(list(Type::Float, None)));

        let einsum = parse(REAL_SCHEMAS[18]);
        assert_eq!(einsum.arguments[0].ty, Type::Str);
        assert_eq!(einsum.arguments[2].ty, opt(list(Type::Int, None)));
        assert_eq!(einsum.arguments[2].default, Some(DefaultValue::None));

        let ce = parse(REAL_SCHEMAS[13]);
        assert_eq!(ce.argument("reduction").unwrap().default, Some(DefaultValue::Ident("Mean".into())));
        assert_eq!(ce.argument("ignore_index").unwrap().default, Some(DefaultValue::Int(-100)));
        assert_eq!(ce.argument("label_smoothing").unwrap().default, Some(DefaultValue::Float(0.0)));

        let pad = parse(REAL_SCHEMAS[23]);
        assert_eq!(pad.argument("mode").unwrap().default, Some(DefaultValue::Str("constant".into())));

        let bern = parse(REAL_SCHEMAS[22]);
        assert_eq!(bern.arguments[1].ty, opt(Type::Generator));
        assert!(bern.arguments[1].kwarg_only);
    }

    #[test]
    fn whitespace_and_empty_argument_lists() {
        let s = parse("  aten::f.o ( Tensor  self , * , int  k = 3 )->( Tensor a , Tensor b )  ");
        assert_eq!(s.to_string(), "f.o(Tensor self, *, int k=3) -> (Tensor a, Tensor b)");
        let empty = parse("_nnpack_available() -> bool");
        assert!(empty.arguments.is_empty());
        assert_eq!(empty.returns[0].ty, Type::Bool);
        assert_eq!(empty.to_string(), "_nnpack_available() -> bool");
        // `*` may open the list.
        let kw = parse("empty.memory_format(*, ScalarType? dtype=None) -> Tensor");
        assert!(kw.arguments[0].kwarg_only);
        assert_eq!(kw.to_string(), "empty.memory_format(*, ScalarType? dtype=None) -> Tensor");
        assert_eq!("f() -> ()".parse::<FunctionSchema>().unwrap().returns, vec![]);
    }

    #[test]
    fn unusual_defaults_round_trip() {
        for s in [
            "f(float a=1e-05, float b=inf, float c=-inf, float d=nan, float e=1., float g=1e300) -> ()",
            "f(str a='x\"y', str b=\"it's\", str c=\"tab\\there\\\\\") -> ()",
            "f(float[] a=[0.5, -1], bool[2] b=[True, False], int[] c=[], int[2] d=[0,0]) -> ()",
            "f(int a=-9223372036854775808, int b=Mean) -> ()",
        ] {
            let parsed = parse(s);
            let printed = parsed.to_string();
            assert_eq!(parse(&printed), parsed, "`{s}` printed as `{printed}`");
        }
        assert_eq!(parse("f(float a=1e-05, float b=1.) -> ()").to_string(), "f(float a=1e-5, float b=1.0) -> ()");
    }

    #[test]
    fn error_unknown_type() {
        assert_err("add(Tensr self) -> Tensor", 5, "unknown type `Tensr`");
        assert_err("add(Tensor self, integer k) -> Tensor", 18, "unknown type `integer`");
        assert_err("add(Tensor self) -> Tensors", 21, "unknown type `Tensors`");
        assert_err("add(Tensor self) -> (Tensor a, Foo b)", 32, "unknown type `Foo`");
    }

    #[test]
    fn error_missing_arrow() {
        assert_err("add(Tensor self) Tensor", 18, "expected `->`");
        assert_err("add(Tensor self)", 17, "expected `->` after the argument list, found the end");
        assert_err("add(Tensor self) => Tensor", 18, "expected `->`");
    }

    #[test]
    fn error_unbalanced_parens() {
        // Unclosed argument list: reported at the opening parenthesis.
        assert_err("add(Tensor self -> Tensor", 4, "unclosed `(`");
        assert_err("add(Tensor self, int k", 4, "unclosed `(`");
        assert_err("add(Tensor self, *", 4, "unclosed `(`");
        // Unclosed return tuple and alias annotation.
        assert_err("max(Tensor self) -> (Tensor values, Tensor indices", 21, "unclosed `(`");
        assert_err("f(Tensor(a! self) -> ()", 13, "expected `)` to close the alias annotation");
        assert_err("f(Tensor(a!", 9, "unclosed `(` in an alias annotation");
        // Extra closing parentheses.
        assert_err("add(Tensor self)) -> Tensor", 17, "unmatched `)`");
        assert_err("add(Tensor self) -> Tensor)", 27, "unmatched `)`");
        assert_err("add(Tensor self) -> ())", 23, "unmatched `)`");
        // Missing opening parenthesis.
        assert_err("add Tensor self) -> Tensor", 5, "expected `(`");
        assert_err("f(int[2 x) -> ()", 8, "expected `]`");
        assert_err("f(int[", 6, "unclosed `[`");
    }

    #[test]
    fn error_bad_default() {
        assert_err("f(int x=1x) -> ()", 9, "invalid default value `1x` for argument `x`");
        assert_err("f(float x=1e) -> ()", 11, "invalid default value `1e`");
        assert_err("f(int x=) -> ()", 9, "missing default value");
        assert_err("f(int x=, int y) -> ()", 9, "missing default value");
        assert_err("f(int x=99999999999999999999) -> ()", 9, "does not fit in 64 bits");
        assert_err("f(int x=-9223372036854775809) -> ()", 9, "does not fit in 64 bits");
        assert_err("f(int[] x=[1,,2]) -> ()", 11, "empty list element");
        assert_err("f(int[] x=[1,]) -> ()", 11, "empty list element");
        assert_err("f(int[] x=[True, 1]) -> ()", 11, "all numbers or all booleans");
        assert_err("f(int[] x=[a]) -> ()", 11, "list element `a`");
        assert_err("f(int[] x=[1, 2) -> ()", 11, "unclosed `[`");
        assert_err("f(str x=\"abc) -> ()", 9, "unterminated string");
        assert_err("f(str x='abc'def) -> ()", 9, "text after the closing quote");
        assert_err("f(str x=\"a\\qb\") -> ()", 9, "unknown escape");
        assert_err("f(float x=-nan) -> ()", 11, "invalid default value `-nan`");
        assert_err("f(int x=a.b) -> ()", 9, "invalid default value `a.b`");
        assert_err("f(int x=--1) -> ()", 9, "invalid default value `--1`");
    }

    #[test]
    fn error_duplicate_argument_name() {
        assert_err("add(Tensor self, Tensor self) -> Tensor", 25, "duplicate argument name `self`");
        assert_err("add(Tensor self, *, Tensor(a!) self) -> Tensor", 32, "duplicate argument name `self`");
        assert_err("f() -> (Tensor a, Tensor a)", 26, "duplicate return name `a`");
    }

    #[test]
    fn error_star_twice_and_misplaced() {
        assert_err("f(Tensor a, *, int b, *, int c) -> ()", 23, "`*` may appear only once");
        assert_err("f(*, *, int c) -> ()", 6, "`*` may appear only once");
        assert_err("f(Tensor a, *) -> ()", 13, "must be followed by keyword-only arguments");
        assert_err("f(Tensor a, * int b) -> ()", 15, "expected `,` after `*`");
    }

    #[test]
    fn error_other_syntax() {
        assert_err("", 1, "expected an operator name, found the end of the schema");
        assert_err("(Tensor self) -> Tensor", 1, "expected an operator name");
        assert_err("add.(Tensor self) -> Tensor", 5, "expected an overload name");
        assert_err("aten::(Tensor self) -> Tensor", 7, "expected an operator name after `::`");
        assert_err("f(Tensor) -> ()", 9, "expected an argument name");
        assert_err("f(Tensor a,) -> ()", 12, "expected a type");
        assert_err("f(Tensor a b) -> ()", 12, "expected `,` or `)` after argument `a`");
        assert_err("f(int(a) x) -> ()", 6, "alias annotations are only allowed on `Tensor`");
        assert_err("f(int?? x) -> ()", 7, "optional only once");
        assert_err("f(Tensor() x) -> ()", 10, "expected an alias set");
        assert_err("f() -> Tensor out", 15, "named return needs parentheses");
        assert_err("f() ->", 7, "expected a type, found the end of the schema");
        assert_err("f() -> (Tensor a b)", 18, "expected `,` or `)` in the return tuple");
        assert_err("f(int[99999999999999999999999] x) -> ()", 7, "too large");
        // Columns count characters, not bytes.
        assert_err("f(str s=\"é\", Tensr t) -> ()", 14, "unknown type `Tensr`");
    }

    #[test]
    fn error_display() {
        let e = parse_err("add(Tensr self) -> Tensor");
        assert_eq!(e.to_string(), "column 5: unknown type `Tensr`");
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed.to_string().starts_with("column 5"));
    }
}
