//! Writing pickles as PyTorch's readers take them: protocol 2 with only the opcodes
//! `torch.load(weights_only=True)` accepts (the list in
//! `shared/reference/formats-and-protocols.md`, section 3), so that one writer serves
//! `torch.save`-style state dicts ([`crate::pt::save_pt`]) and TorchScript archives (the `jit`
//! crate's `save_torchscript`).
//!
//! A [`Pickler`] is a stack machine's program written forwards: `mark()`, the items, then the
//! opcode that collects them (`tuple()`, `setitems()`, ...). It keeps no memo: a value written
//! twice is two values to the reader, which is what both writers want (shared storages are
//! shared through their persistent ids, which the reader caches by key).

use c10::ScalarType;

/// A protocol-2 pickle under construction.
pub struct Pickler {
    out: Vec<u8>,
}

impl Default for Pickler {
    fn default() -> Self {
        Pickler::new()
    }
}

impl Pickler {
    /// A pickle with its `PROTO 2` header.
    pub fn new() -> Pickler {
        Pickler { out: vec![0x80, 2] }
    }

    /// `MARK`: the start of the items a later `tuple`, `setitems` or `appends` collects.
    pub fn mark(&mut self) -> &mut Self {
        self.out.push(b'(');
        self
    }

    /// `GLOBAL module name`. Both must be free of newlines (they are identifiers in practice).
    pub fn global(&mut self, module: &str, name: &str) -> &mut Self {
        debug_assert!(!module.contains('\n') && !name.contains('\n'));
        self.out.push(b'c');
        self.out.extend_from_slice(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'\n');
        self
    }

    /// `None`.
    pub fn none(&mut self) -> &mut Self {
        self.out.push(b'N');
        self
    }

    /// `True` or `False`.
    pub fn bool(&mut self, b: bool) -> &mut Self {
        self.out.push(if b { 0x88 } else { 0x89 });
        self
    }

    /// An `int`: `BININT1`, `BININT2`, `BININT` or `LONG1`, the shortest that holds it.
    pub fn int(&mut self, v: i64) -> &mut Self {
        if (0..256).contains(&v) {
            self.out.extend_from_slice(&[b'K', v as u8]);
        } else if (0..65536).contains(&v) {
            self.out.push(b'M');
            self.out.extend_from_slice(&(v as u16).to_le_bytes());
        } else if i32::try_from(v).is_ok() {
            self.out.push(b'J');
            self.out.extend_from_slice(&(v as i32).to_le_bytes());
        } else {
            // Two's complement, little-endian, 8 bytes (always enough for an i64).
            self.out.extend_from_slice(&[0x8a, 8]);
            self.out.extend_from_slice(&v.to_le_bytes());
        }
        self
    }

    /// A `float` (`BINFLOAT`: big-endian IEEE double).
    pub fn float(&mut self, v: f64) -> &mut Self {
        self.out.push(b'G');
        self.out.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A `str` (`BINUNICODE`, UTF-8).
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.out.push(b'X');
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        self
    }

    /// `()`.
    pub fn empty_tuple(&mut self) -> &mut Self {
        self.out.push(b')');
        self
    }

    /// `TUPLE`: the items since the last mark.
    pub fn tuple(&mut self) -> &mut Self {
        self.out.push(b't');
        self
    }

    /// `{}`.
    pub fn empty_dict(&mut self) -> &mut Self {
        self.out.push(b'}');
        self
    }

    /// `SETITEMS`: the key/value pairs since the last mark into the dict below the mark.
    pub fn setitems(&mut self) -> &mut Self {
        self.out.push(b'u');
        self
    }

    /// `[]`.
    pub fn empty_list(&mut self) -> &mut Self {
        self.out.push(b']');
        self
    }

    /// `APPENDS`: the items since the last mark onto the list below the mark.
    pub fn appends(&mut self) -> &mut Self {
        self.out.push(b'e');
        self
    }

    /// `REDUCE`: calls the callable below the argument tuple on top.
    pub fn reduce(&mut self) -> &mut Self {
        self.out.push(b'R');
        self
    }

    /// `NEWOBJ`: `cls.__new__(cls, *args)` of the class below the argument tuple on top.
    pub fn newobj(&mut self) -> &mut Self {
        self.out.push(0x81);
        self
    }

    /// `BUILD`: sets the object's state (the value on top) on the object below it.
    pub fn build(&mut self) -> &mut Self {
        self.out.push(b'b');
        self
    }

    /// `BINPERSID`: the value on top is a persistent id, for the reader to resolve.
    pub fn persid(&mut self) -> &mut Self {
        self.out.push(b'Q');
        self
    }

    /// `collections.OrderedDict()`, empty.
    pub fn ordered_dict(&mut self) -> &mut Self {
        self.global("collections", "OrderedDict").empty_tuple().reduce()
    }

    /// The bytes, with the closing `STOP`.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(b'.');
        self.out
    }
}

/// The legacy storage class (`torch.FloatStorage`) a persistent id names for a dtype: its
/// element type and the unit of its `numel`. Every dtype we have has one.
pub fn storage_class(dtype: ScalarType) -> &'static str {
    match dtype {
        ScalarType::F64 => "DoubleStorage",
        ScalarType::F32 => "FloatStorage",
        ScalarType::F16 => "HalfStorage",
        ScalarType::BF16 => "BFloat16Storage",
        ScalarType::I64 => "LongStorage",
        ScalarType::I32 => "IntStorage",
        ScalarType::I16 => "ShortStorage",
        ScalarType::I8 => "CharStorage",
        ScalarType::U8 => "ByteStorage",
        ScalarType::Bool => "BoolStorage",
        ScalarType::C64 => "ComplexFloatStorage",
        ScalarType::C128 => "ComplexDoubleStorage",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pickle::{unpickle, NoHooks, Value};

    #[test]
    fn what_the_pickler_writes_our_unpickler_reads_back() {
        let mut p = Pickler::new();
        p.mark();
        for v in [0, 255, 256, 65535, 65536, -1, i32::MIN as i64, i32::MAX as i64 + 1, i64::MIN, i64::MAX] {
            p.int(v);
        }
        p.float(-0.1).str("é\"x").bool(true).bool(false).none();
        p.empty_list().mark().int(1).int(2).appends();
        p.empty_dict().mark().str("k").int(3).setitems();
        p.tuple();
        let bytes = p.finish();
        let Value::Tuple(t) = unpickle(&bytes, "test", &mut NoHooks).unwrap() else { panic!("not a tuple") };
        let ints: Vec<i64> = t.iter().take(10).map(|v| v.as_int().unwrap()).collect();
        assert_eq!(ints, [0, 255, 256, 65535, 65536, -1, i32::MIN as i64, i32::MAX as i64 + 1, i64::MIN, i64::MAX]);
        assert_eq!(t[10].as_float(), Some(-0.1));
        assert_eq!(t[11].as_str(), Some("é\"x"));
        assert_eq!(t[12].as_bool(), Some(true));
        assert_eq!(t[13].as_bool(), Some(false));
        assert!(matches!(t[14], Value::None));
        let l: Vec<i64> = t[15].as_list().unwrap().borrow().iter().map(|v| v.as_int().unwrap()).collect();
        assert_eq!(l, [1, 2]);
        assert_eq!(t[16].as_dict().unwrap().get("k").and_then(|v| v.as_int()), Some(3));
    }
}
