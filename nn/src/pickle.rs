//! An unpickler for the pickles inside `torch.save` and `torch.jit.save` archives: Python's
//! pickle protocol 2 (what `torch.save` writes by default) and the opcodes of protocols 3 to 5
//! that other picklers emit, producing a [`Value`]. torch's reconstruction functions are resolved
//! here (`torch._utils._rebuild_tensor_v2` gives a [`Tensor`] viewing its storage,
//! `collections.OrderedDict` a [`Dict`], ...); classes it does not know become [`Object`]s, so
//! unpickling never runs anything a file names. Where storages come from is the caller's business,
//! through [`PickleHooks::persistent_load`] (see `crate::pt` for torch's zip archives).
//!
//! Note [Untrusted pickles]: a pickle is a program for a stack machine, and a file may hold any
//! program. Every length read from the input is checked against the bytes that remain before
//! anything is allocated, every pop checks the stack (and the current `MARK`, as Python does),
//! and strings, bytes and containers are shared through `Rc` rather than copied, so fetching a
//! memo entry a million times costs a million pointers: memory stays linear in the input's
//! length. A bad input is an error naming the cause, the opcode's byte offset and the source.
//!
//! Note [Shared pickle containers]: Python's memo holds references. A pickle memoizes a list, a
//! dict or an object (`BINPUT`) and fills it afterwards (`APPENDS`, `SETITEMS`, `BUILD`); every
//! earlier `BINGET` of it must see the items. torch's state_dict pickles do exactly that with
//! their `OrderedDict`. So lists, dicts, sets and objects are `Rc<RefCell<..>>` handles ([`List`],
//! [`Dict`], [`Object`]): a clone is another reference to the same container, as in Python.
//! Tuples, strings and bytes never change and are shared through a plain `Rc`. Two references to
//! one container can be told apart from two equal containers with `ptr_eq`.
//!
//! Note [Allowed globals]: a pickle names the functions and classes it calls (`GLOBAL`,
//! `STACK_GLOBAL`). Nothing named is ever run here (see above), but a checkpoint that names
//! `os.system` is hostile, and PyTorch's `torch.load(weights_only=True)` (the default since
//! 2.6) refuses it. So does this reader: a global is accepted only if it is on the allow-list of
//! PyTorch's weights_only unpickler ([`weights_only_allows`]: containers, `torch.Size`,
//! `torch.device`, dtypes, storage and tensor classes, the tensor rebuilders; the 144 names of
//! PyTorch 2.15) or the caller's [`PickleHooks::allows_global`] accepts it (what
//! `torch.serialization.add_safe_globals` is for PyTorch). The modules `sys`, `os`, `posix` and
//! `nt` are refused whatever the hooks say. The error names the global and where it is. Readers
//! of other kinds of pickle widen the list for their kind only: a TorchScript archive's
//! `data.pkl` names its modules' `__torch__.*` classes and `torch.jit._pickle` helpers (see
//! `jit/src/import.rs`), which PyTorch's TorchScript loader resolves itself; `torch.load`
//! checkpoints get exactly PyTorch's list.
//!
//! Note [Dropping deep values]: a pickle can nest containers a million deep at one byte per level
//! (`TUPLE1` repeated), and dropping such a value recursively would overflow the stack. The
//! container handles' `Drop` moves the items of a container it alone owns into a work list and
//! drops them in a loop, so a value of any depth is dropped without recursion. `Debug` prints at
//! most 16 levels, which also keeps it finite on cyclic values (a list that contains itself).

use std::cell::{Ref, RefCell, RefMut};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::rc::Rc;

use aten::Tensor;
use autograd::TensorAutograd;
use c10::tensor_impl::DimVec;
use c10::{Device, Error, Result, ScalarType, Storage};

/// One unpickled Python value. Cloning is cheap and shares containers (see Note [Shared pickle
/// containers]).
#[derive(Clone)]
pub enum Value {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An `int` that fits in 64 bits.
    Int(i64),
    /// An `int` beyond 64 bits: its little-endian two's-complement bytes, as `LONG1`/`LONG4`
    /// store them (`2**64 - 1` is `ff ff ff ff ff ff ff ff 00`).
    BigInt(Rc<[u8]>),
    /// A `float`.
    Float(f64),
    /// A `str`; protocol 2's Python 2 strings (`BINSTRING`) are decoded as UTF-8, as `torch.load`
    /// does.
    Str(Rc<str>),
    /// `bytes` or `bytearray` (protocol 2 writes `bytes` as `_codecs.encode(text, "latin1")`,
    /// which is resolved to this).
    Bytes(Rc<[u8]>),
    /// A `tuple` (also `torch.Size`).
    Tuple(Tuple),
    /// A `list`.
    List(List),
    /// A `dict` or `collections.OrderedDict`, in insertion order.
    Dict(Dict),
    /// A `set` or `frozenset`, in pickle order.
    Set(List),
    /// A module-level name that was not called, such as a dtype (`torch.float16`; see
    /// [`Global::dtype`]).
    Global(Global),
    /// An instance of a class this unpickler does not resolve (a `__torch__` class of a scripted
    /// module, a user's class, a NumPy scalar): the class, the constructor arguments and the
    /// state given by `BUILD`.
    Object(Object),
    /// A `torch.device`.
    Device(Device),
    /// A storage, what torch's persistent ids resolve to.
    Storage(StorageRef),
    /// A tensor (`torch._utils._rebuild_tensor_v2`, `_rebuild_parameter`, ...). A parameter
    /// keeps its `requires_grad` flag.
    Tensor(Tensor),
}

impl Value {
    /// The Python type name, for error messages: `int`, `str`, `dict`, `Tensor`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::Global(_) => "global",
            Value::Object(_) => "object",
            Value::Device(_) => "device",
            Value::Storage(_) => "storage",
            Value::Tensor(_) => "Tensor",
        }
    }

    /// The value of a `bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value of an `int` that fits in 64 bits.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value of a `float`.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(x) => Some(*x),
            _ => None,
        }
    }

    /// The text of a `str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes of a `bytes`.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The items of a `tuple`.
    pub fn as_tuple(&self) -> Option<&Tuple> {
        match self {
            Value::Tuple(t) => Some(t),
            _ => None,
        }
    }

    /// The handle of a `list`.
    pub fn as_list(&self) -> Option<&List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The handle of a `dict`.
    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// The handle of an unresolved object.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The tensor.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// A module-level name as `GLOBAL` and `STACK_GLOBAL` give it (`collections.OrderedDict`).
/// Python 2 module names that protocol 2 writes are mapped to Python 3's (`__builtin__` is
/// `builtins`, `copy_reg` is `copyreg`), as Python's unpickler does.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Global {
    module: Rc<str>,
    name: Rc<str>,
}

impl Global {
    /// `module.name`.
    pub fn new(module: &str, name: &str) -> Global {
        let module = match module {
            "__builtin__" => "builtins",
            "copy_reg" => "copyreg",
            other => other,
        };
        Global { module: module.into(), name: name.into() }
    }

    /// The module (`torch._utils`).
    pub fn module(&self) -> &str {
        &self.module
    }

    /// The name inside the module (`_rebuild_tensor_v2`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is `module.name`.
    pub fn is(&self, module: &str, name: &str) -> bool {
        *self.module == *module && *self.name == *name
    }

    /// The dtype a `torch.<dtype>` global names (`torch.float16` is how a pickled dtype looks).
    pub fn dtype(&self) -> Option<ScalarType> {
        if &*self.module != "torch" {
            return None;
        }
        ScalarType::from_name(&self.name).ok()
    }

    /// The element type of a storage class as torch's persistent ids name it
    /// (`torch.FloatStorage` is float32; `torch.UntypedStorage` counts bytes, so uint8).
    pub fn storage_dtype(&self) -> Option<ScalarType> {
        if &*self.module != "torch" {
            return None;
        }
        Some(match &*self.name {
            "DoubleStorage" => ScalarType::F64,
            "FloatStorage" => ScalarType::F32,
            "HalfStorage" => ScalarType::F16,
            "BFloat16Storage" => ScalarType::BF16,
            "LongStorage" => ScalarType::I64,
            "IntStorage" => ScalarType::I32,
            "ShortStorage" => ScalarType::I16,
            "CharStorage" => ScalarType::I8,
            "ByteStorage" | "UntypedStorage" => ScalarType::U8,
            "BoolStorage" => ScalarType::Bool,
            "ComplexFloatStorage" => ScalarType::C64,
            "ComplexDoubleStorage" => ScalarType::C128,
            _ => return None,
        })
    }
}

/// The globals PyTorch's weights_only unpickler allows by default (PyTorch 2.15's
/// `torch._weights_only_unpickler._get_allowed_globals()`), as `module.name`, sorted. See Note
/// [Allowed globals].
const WEIGHTS_ONLY_GLOBALS: [&str; 144] = [
    "_codecs.encode",
    "builtins.bytearray",
    "builtins.complex",
    "builtins.set",
    "collections.Counter",
    "collections.OrderedDict",
    "torch.BFloat16Storage",
    "torch.BFloat16Tensor",
    "torch.BoolStorage",
    "torch.BoolTensor",
    "torch.ByteStorage",
    "torch.ByteTensor",
    "torch.CharStorage",
    "torch.CharTensor",
    "torch.ComplexDoubleStorage",
    "torch.ComplexFloatStorage",
    "torch.DoubleStorage",
    "torch.DoubleTensor",
    "torch.FloatStorage",
    "torch.FloatTensor",
    "torch.HalfStorage",
    "torch.HalfTensor",
    "torch.IntStorage",
    "torch.IntTensor",
    "torch.LongStorage",
    "torch.LongTensor",
    "torch.QInt32Storage",
    "torch.QInt8Storage",
    "torch.QUInt2x4Storage",
    "torch.QUInt4x2Storage",
    "torch.QUInt8Storage",
    "torch.ShortStorage",
    "torch.ShortTensor",
    "torch.Size",
    "torch.Tensor",
    "torch._tensor._rebuild_from_type_v2",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor",
    "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_wrapper_subclass",
    "torch.bcomplex32",
    "torch.bfloat16",
    "torch.bits16",
    "torch.bits1x8",
    "torch.bits2x4",
    "torch.bits4x2",
    "torch.bits8",
    "torch.bool",
    "torch.complex128",
    "torch.complex32",
    "torch.complex64",
    "torch.cuda.BFloat16Storage",
    "torch.cuda.BFloat16Tensor",
    "torch.cuda.BoolStorage",
    "torch.cuda.BoolTensor",
    "torch.cuda.ByteStorage",
    "torch.cuda.ByteTensor",
    "torch.cuda.CharStorage",
    "torch.cuda.CharTensor",
    "torch.cuda.ComplexDoubleStorage",
    "torch.cuda.ComplexFloatStorage",
    "torch.cuda.DoubleStorage",
    "torch.cuda.DoubleTensor",
    "torch.cuda.FloatStorage",
    "torch.cuda.FloatTensor",
    "torch.cuda.HalfStorage",
    "torch.cuda.HalfTensor",
    "torch.cuda.IntStorage",
    "torch.cuda.IntTensor",
    "torch.cuda.LongStorage",
    "torch.cuda.LongTensor",
    "torch.cuda.ShortStorage",
    "torch.cuda.ShortTensor",
    "torch.cuda.sparse.BFloat16Tensor",
    "torch.cuda.sparse.ByteTensor",
    "torch.cuda.sparse.CharTensor",
    "torch.cuda.sparse.DoubleTensor",
    "torch.cuda.sparse.FloatTensor",
    "torch.cuda.sparse.HalfTensor",
    "torch.cuda.sparse.IntTensor",
    "torch.cuda.sparse.LongTensor",
    "torch.cuda.sparse.ShortTensor",
    "torch.device",
    "torch.float16",
    "torch.float32",
    "torch.float4_e2m1fn_x2",
    "torch.float64",
    "torch.float8_e4m3fn",
    "torch.float8_e4m3fnuz",
    "torch.float8_e5m2",
    "torch.float8_e5m2fnuz",
    "torch.float8_e8m0fnu",
    "torch.int1",
    "torch.int16",
    "torch.int2",
    "torch.int3",
    "torch.int32",
    "torch.int4",
    "torch.int5",
    "torch.int6",
    "torch.int64",
    "torch.int7",
    "torch.int8",
    "torch.nn.parameter.Parameter",
    "torch.per_channel_affine",
    "torch.per_channel_affine_float_qparams",
    "torch.per_channel_symmetric",
    "torch.per_tensor_affine",
    "torch.per_tensor_symmetric",
    "torch.qint32",
    "torch.qint8",
    "torch.quint2x4",
    "torch.quint4x2",
    "torch.quint8",
    "torch.serialization._get_layout",
    "torch.sparse.BFloat16Tensor",
    "torch.sparse.ByteTensor",
    "torch.sparse.CharTensor",
    "torch.sparse.DoubleTensor",
    "torch.sparse.FloatTensor",
    "torch.sparse.HalfTensor",
    "torch.sparse.IntTensor",
    "torch.sparse.LongTensor",
    "torch.sparse.ShortTensor",
    "torch.storage.TypedStorage",
    "torch.storage.UntypedStorage",
    "torch.uint1",
    "torch.uint16",
    "torch.uint2",
    "torch.uint3",
    "torch.uint32",
    "torch.uint4",
    "torch.uint5",
    "torch.uint6",
    "torch.uint64",
    "torch.uint7",
    "torch.uint8",
];

/// Whether PyTorch's weights_only unpickler allows `global` by default (see Note [Allowed
/// globals]).
pub fn weights_only_allows(global: &Global) -> bool {
    let full = global.to_string();
    WEIGHTS_ONLY_GLOBALS.binary_search(&full.as_str()).is_ok()
}

/// Modules a pickle may never name, whatever a reader allows (PyTorch refuses them too).
fn always_refused(global: &Global) -> bool {
    let top = global.module().split('.').next().unwrap_or("");
    matches!(top, "sys" | "os" | "posix" | "nt")
}

impl fmt::Display for Global {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.module, self.name)
    }
}

impl fmt::Debug for Global {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A `tuple`: immutable, shared by its clones. Derefs to its items.
#[derive(Clone)]
pub struct Tuple(Rc<Vec<Value>>);

impl Tuple {
    /// A tuple of `items`.
    pub fn new(items: Vec<Value>) -> Tuple {
        Tuple(Rc::new(items))
    }

    /// Whether both handles are the same tuple object.
    pub fn ptr_eq(&self, other: &Tuple) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Tuple {
    type Target = [Value];
    fn deref(&self) -> &[Value] {
        &self.0
    }
}

impl Drop for Tuple {
    fn drop(&mut self) {
        // See Note [Dropping deep values].
        if let Some(items) = Rc::get_mut(&mut self.0) {
            drop_iteratively(std::mem::take(items));
        }
    }
}

/// A `list` (or the items of a `set`): a shared, mutable handle (see Note [Shared pickle
/// containers]).
#[derive(Clone)]
pub struct List(Rc<RefCell<Vec<Value>>>);

impl List {
    /// A list of `items`.
    pub fn new(items: Vec<Value>) -> List {
        List(Rc::new(RefCell::new(items)))
    }

    /// The items. Like every `RefCell` borrow, it must end before the list is changed.
    pub fn borrow(&self) -> Ref<'_, Vec<Value>> {
        self.0.borrow()
    }

    /// The items, mutably; every handle of the list sees the change.
    pub fn borrow_mut(&self) -> RefMut<'_, Vec<Value>> {
        self.0.borrow_mut()
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }

    /// Whether both handles are the same list object.
    pub fn ptr_eq(&self, other: &List) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Drop for List {
    fn drop(&mut self) {
        // See Note [Dropping deep values].
        if let Some(items) = Rc::get_mut(&mut self.0) {
            drop_iteratively(std::mem::take(items.get_mut()));
        }
    }
}

/// A `dict` or `OrderedDict`: a shared, mutable handle on its `(key, value)` pairs in insertion
/// order (see Note [Shared pickle containers]).
///
/// Keys are not deduplicated: a pickle written by Python never repeats a key, and a forged one
/// that does keeps both pairs (lookups find the last, as Python's dict would hold it).
#[derive(Clone)]
pub struct Dict(Rc<RefCell<Vec<(Value, Value)>>>);

impl Dict {
    /// A dict of `items`.
    pub fn new(items: Vec<(Value, Value)>) -> Dict {
        Dict(Rc::new(RefCell::new(items)))
    }

    /// The pairs. Like every `RefCell` borrow, it must end before the dict is changed.
    pub fn borrow(&self) -> Ref<'_, Vec<(Value, Value)>> {
        self.0.borrow()
    }

    /// The pairs, mutably; every handle of the dict sees the change.
    pub fn borrow_mut(&self) -> RefMut<'_, Vec<(Value, Value)>> {
        self.0.borrow_mut()
    }

    /// The value stored under the string key `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.0.borrow().iter().rev().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v.clone())
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// Whether the dict is empty.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }

    /// Whether both handles are the same dict object.
    pub fn ptr_eq(&self, other: &Dict) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Drop for Dict {
    fn drop(&mut self) {
        // See Note [Dropping deep values].
        if let Some(pairs) = Rc::get_mut(&mut self.0) {
            let pairs = std::mem::take(pairs.get_mut());
            drop_iteratively(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect());
        }
    }
}

/// What an [`Object`] holds.
pub struct ObjectData {
    /// The class (`__torch__.MyModule`).
    pub class: Global,
    /// The arguments given to the class (`REDUCE` or `NEWOBJ`).
    pub args: Tuple,
    /// The state `BUILD` set (usually a dict of attributes), if any.
    pub state: Option<Value>,
}

/// An instance of a class the unpickler does not resolve: a shared, mutable handle (see Note
/// [Shared pickle containers]), since `BUILD` sets its state after it was memoized.
#[derive(Clone)]
pub struct Object(Rc<RefCell<ObjectData>>);

impl Object {
    /// `class(*args)` with no state yet.
    pub fn new(class: Global, args: Tuple) -> Object {
        Object(Rc::new(RefCell::new(ObjectData { class, args, state: None })))
    }

    /// The class.
    pub fn class(&self) -> Global {
        self.0.borrow().class.clone()
    }

    /// The constructor arguments.
    pub fn args(&self) -> Tuple {
        self.0.borrow().args.clone()
    }

    /// The state given by `BUILD`.
    pub fn state(&self) -> Option<Value> {
        self.0.borrow().state.clone()
    }

    /// Everything, borrowed.
    pub fn borrow(&self) -> Ref<'_, ObjectData> {
        self.0.borrow()
    }

    /// Everything, mutably; every handle of the object sees the change.
    pub fn borrow_mut(&self) -> RefMut<'_, ObjectData> {
        self.0.borrow_mut()
    }

    /// Whether both handles are the same object.
    pub fn ptr_eq(&self, other: &Object) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        // See Note [Dropping deep values].
        if let Some(data) = Rc::get_mut(&mut self.0) {
            let data = data.get_mut();
            let mut items = vec![Value::Tuple(std::mem::replace(&mut data.args, Tuple::new(Vec::new())))];
            items.extend(data.state.take());
            drop_iteratively(items);
        }
    }
}

/// Drops `pending` and everything only it holds, depth first, with an explicit stack (see Note
/// [Dropping deep values]): each container owned alone gives up its items before it is dropped,
/// so its own `Drop` finds nothing left to recurse into.
fn drop_iteratively(mut pending: Vec<Value>) {
    while let Some(mut v) = pending.pop() {
        match &mut v {
            Value::Tuple(t) => {
                if let Some(items) = Rc::get_mut(&mut t.0) {
                    pending.append(items);
                }
            }
            Value::List(l) | Value::Set(l) => {
                if let Some(items) = Rc::get_mut(&mut l.0) {
                    pending.append(items.get_mut());
                }
            }
            Value::Dict(d) => {
                if let Some(pairs) = Rc::get_mut(&mut d.0) {
                    pending.extend(pairs.get_mut().drain(..).flat_map(|(k, v)| [k, v]));
                }
            }
            Value::Object(o) => {
                if let Some(data) = Rc::get_mut(&mut o.0) {
                    let data = data.get_mut();
                    pending.push(Value::Tuple(std::mem::replace(&mut data.args, Tuple::new(Vec::new()))));
                    pending.extend(data.state.take());
                }
            }
            _ => {}
        }
    }
}

/// A storage: shared bytes holding `numel` elements of `dtype`, what torch's persistent ids
/// resolve to. Tensors made from one `StorageRef` share its data.
#[derive(Clone, Debug)]
pub struct StorageRef {
    storage: Storage,
    dtype: ScalarType,
    numel: i64,
}

impl StorageRef {
    /// Views `storage` as elements of `dtype`; its size must be a whole number of elements and
    /// its data aligned for the dtype.
    pub fn new(storage: Storage, dtype: ScalarType) -> Result<StorageRef> {
        let itemsize = dtype.size();
        let nbytes = storage.nbytes();
        if !nbytes.is_multiple_of(itemsize) || !(storage.data_ptr() as usize).is_multiple_of(itemsize) {
            return Err(Error::invalid(
                "StorageRef",
                format!(
                    "a storage of {nbytes} bytes at {:p} cannot hold {} elements",
                    storage.data_ptr(),
                    dtype.name()
                ),
            ));
        }
        Ok(StorageRef { storage, dtype, numel: (nbytes / itemsize) as i64 })
    }

    /// The shared bytes.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The element type.
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// The number of elements.
    pub fn numel(&self) -> i64 {
        self.numel
    }

    /// A tensor viewing the storage with `sizes`, `strides` and `offset` (in elements), as
    /// `torch.empty(0).set_(storage, offset, sizes, strides)`; it shares the data with every
    /// other tensor over the storage. Every element the view addresses must lie inside the
    /// storage, and strides must not be negative.
    pub fn tensor(&self, offset: i64, sizes: &[i64], strides: &[i64]) -> Result<Tensor> {
        let op = "_rebuild_tensor";
        if sizes.len() != strides.len() {
            return Err(Error::shape(op, format!("size {sizes:?} and stride {strides:?} have different lengths")));
        }
        c10::size::numel(op, sizes)?;
        if offset < 0 {
            return Err(Error::shape(op, format!("negative storage offset {offset}")));
        }
        let span = c10::size::storage_span(sizes, strides, offset).ok_or_else(|| {
            Error::shape(
                op,
                format!("size {sizes:?} and stride {strides:?} do not describe a tensor (negative or overflowing)"),
            )
        })?;
        if span > self.numel {
            return Err(Error::shape(
                op,
                format!(
                    "size {sizes:?}, stride {strides:?} and storage offset {offset} address {span} elements, but the \
                     storage holds {} elements of {}",
                    self.numel,
                    self.dtype.name()
                ),
            ));
        }
        Ok(Tensor::from_storage(self.storage.clone(), sizes, DimVec::from_slice(strides), offset, self.dtype))
    }
}

/// What a caller adds to the unpickler: the resolution of persistent ids (`BINPERSID`; torch's
/// archives name storages this way) and of classes beyond the built-in ones.
///
/// The built-ins are `collections.OrderedDict`, `dict`, `set`, `frozenset`, `_codecs.encode`
/// (protocol 2's `bytes`), `torch.device`, `torch.Size`, `torch._utils._rebuild_tensor`,
/// `_rebuild_tensor_v2`, `_rebuild_parameter`, `_rebuild_parameter_with_state` and
/// `torch._tensor._rebuild_from_type_v2`. Any other class becomes a [`Value::Object`].
pub trait PickleHooks {
    /// The value of a persistent id (`BINPERSID`), such as torch's
    /// `('storage', torch.FloatStorage, '0', 'cpu', 6)`.
    fn persistent_load(&mut self, pid: &Value) -> Result<Value>;

    /// Whether the pickle may name `global` although it is not on PyTorch's weights_only
    /// allow-list (see Note [Allowed globals]); by default, no global beyond the list is
    /// allowed. `sys`, `os`, `posix` and `nt` are refused whatever this says.
    fn allows_global(&self, global: &Global) -> bool {
        let _ = global;
        false
    }

    /// The value of `class(*args)` (`REDUCE`, `NEWOBJ`), asked before the built-ins; `Ok(None)`
    /// leaves it to them.
    fn reduce(&mut self, class: &Global, args: &Tuple) -> Result<Option<Value>> {
        let _ = (class, args);
        Ok(None)
    }
}

/// Hooks for a pickle that has no persistent ids and needs only the built-in classes.
pub struct NoHooks;

impl PickleHooks for NoHooks {
    fn persistent_load(&mut self, pid: &Value) -> Result<Value> {
        Err(Error::Io(format!("persistent id {pid:?}, but this pickle has no resolver for persistent ids")))
    }
}

/// Unpickles `data`. `source` names the pickle in errors (`archive/data.pkl in model.pt`); each
/// error says what is wrong, at which byte and in which source (see Note [Untrusted pickles]).
///
/// ```
/// use nn::pickle::{unpickle, NoHooks, Value};
/// // pickle.dumps({"a": [1, 2]}, protocol=2)
/// let data = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01]q\x02(K\x01K\x02es.";
/// let v = unpickle(data, "example", &mut NoHooks).unwrap();
/// let a = v.as_dict().unwrap().get("a").unwrap();
/// assert_eq!(a.as_list().unwrap().borrow()[1].as_int(), Some(2));
/// ```
pub fn unpickle(data: &[u8], source: &str, hooks: &mut dyn PickleHooks) -> Result<Value> {
    let mut m = Machine { data, pos: 0, stack: Vec::new(), marks: Vec::new(), memo: HashMap::new(), hooks };
    loop {
        let at = m.pos;
        match m.step() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => return Err(Error::Io(format!("{e} at byte {at} of {source}"))),
        }
    }
}

/// The opcodes, by their names in Python's `pickle` module.
mod op {
    pub const MARK: u8 = b'(';
    pub const STOP: u8 = b'.';
    pub const POP: u8 = b'0';
    pub const POP_MARK: u8 = b'1';
    pub const DUP: u8 = b'2';
    pub const BINFLOAT: u8 = b'G';
    pub const BININT: u8 = b'J';
    pub const BININT1: u8 = b'K';
    pub const BININT2: u8 = b'M';
    pub const NONE: u8 = b'N';
    pub const BINPERSID: u8 = b'Q';
    pub const REDUCE: u8 = b'R';
    pub const BINSTRING: u8 = b'T';
    pub const SHORT_BINSTRING: u8 = b'U';
    pub const BINUNICODE: u8 = b'X';
    pub const APPEND: u8 = b'a';
    pub const BUILD: u8 = b'b';
    pub const GLOBAL: u8 = b'c';
    pub const DICT: u8 = b'd';
    pub const EMPTY_DICT: u8 = b'}';
    pub const APPENDS: u8 = b'e';
    pub const BINGET: u8 = b'h';
    pub const LONG_BINGET: u8 = b'j';
    pub const LIST: u8 = b'l';
    pub const EMPTY_LIST: u8 = b']';
    pub const OBJ: u8 = b'o';
    pub const BINPUT: u8 = b'q';
    pub const LONG_BINPUT: u8 = b'r';
    pub const SETITEM: u8 = b's';
    pub const TUPLE: u8 = b't';
    pub const EMPTY_TUPLE: u8 = b')';
    pub const SETITEMS: u8 = b'u';
    // Protocol 2.
    pub const PROTO: u8 = 0x80;
    pub const NEWOBJ: u8 = 0x81;
    pub const TUPLE1: u8 = 0x85;
    pub const TUPLE2: u8 = 0x86;
    pub const TUPLE3: u8 = 0x87;
    pub const NEWTRUE: u8 = 0x88;
    pub const NEWFALSE: u8 = 0x89;
    pub const LONG1: u8 = 0x8a;
    pub const LONG4: u8 = 0x8b;
    // Protocol 3.
    pub const BINBYTES: u8 = b'B';
    pub const SHORT_BINBYTES: u8 = b'C';
    // Protocol 4.
    pub const SHORT_BINUNICODE: u8 = 0x8c;
    pub const BINUNICODE8: u8 = 0x8d;
    pub const BINBYTES8: u8 = 0x8e;
    pub const EMPTY_SET: u8 = 0x8f;
    pub const ADDITEMS: u8 = 0x90;
    pub const FROZENSET: u8 = 0x91;
    pub const NEWOBJ_EX: u8 = 0x92;
    pub const STACK_GLOBAL: u8 = 0x93;
    pub const MEMOIZE: u8 = 0x94;
    pub const FRAME: u8 = 0x95;
    // Protocol 5.
    pub const BYTEARRAY8: u8 = 0x96;
}

/// Opcodes that exist but are not read, with the reason given in the error.
fn unsupported(code: u8) -> &'static str {
    match code {
        b'I' | b'L' | b'F' | b'S' | b'V' | b'P' | b'g' | b'p' | b'i' => " (a protocol 0 text opcode)",
        0x82..=0x84 => " (EXT: the copyreg extension registry)",
        0x97 | 0x98 => " (out-of-band buffers)",
        _ => "",
    }
}

/// The pickle machine: the stack, the positions of the open `MARK`s and the memo.
struct Machine<'d, 'h> {
    data: &'d [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
    hooks: &'h mut dyn PickleHooks,
}

fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Io(msg.into()))
}

impl<'d> Machine<'d, '_> {
    /// The next `n` bytes (see Note [Untrusted pickles]).
    fn take(&mut self, n: u64) -> Result<&'d [u8]> {
        let left = self.data.len() - self.pos;
        if n > left as u64 {
            return fail(format!("pickle data was truncated: {n} bytes needed, {left} left"));
        }
        let bytes = &self.data[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A 4-byte signed length (`BINSTRING`, `LONG4`).
    fn len_i32(&mut self) -> Result<u64> {
        let n = i32::from_le_bytes(self.array()?);
        if n < 0 {
            return fail(format!("negative length {n}"));
        }
        Ok(n as u64)
    }

    /// A `\n`-terminated line of text (`GLOBAL`).
    fn line(&mut self) -> Result<&'d str> {
        let rest = &self.data[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return fail("pickle data was truncated: a line has no end");
        };
        self.pos += n + 1;
        std::str::from_utf8(&rest[..n]).or_else(|_| fail("a GLOBAL name is not UTF-8"))
    }

    fn text(&mut self, n: u64) -> Result<Value> {
        match std::str::from_utf8(self.take(n)?) {
            Ok(s) => Ok(Value::Str(s.into())),
            Err(e) => fail(format!("a string is not valid UTF-8 ({e})")),
        }
    }

    fn bytes(&mut self, n: u64) -> Result<Value> {
        Ok(Value::Bytes(self.take(n)?.into()))
    }

    /// Where the values above the innermost `MARK` start: pops may not go below it.
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self) -> Result<Value> {
        if self.stack.len() <= self.floor() {
            return fail("unpickling stack underflow");
        }
        Ok(self.stack.pop().expect("the stack is above its floor"))
    }

    fn top(&self) -> Result<&Value> {
        if self.stack.len() <= self.floor() {
            return fail("unpickling stack underflow");
        }
        Ok(self.stack.last().expect("the stack is above its floor"))
    }

    /// The values pushed since the innermost `MARK`, which is closed.
    fn pop_mark(&mut self) -> Result<Vec<Value>> {
        let Some(m) = self.marks.pop() else { return fail("could not find MARK") };
        Ok(self.stack.split_off(m))
    }

    fn push(&mut self, v: Value) {
        self.stack.push(v);
    }

    fn memo_put(&mut self, index: u32) -> Result<()> {
        let v = self.top()?.clone();
        self.memo.insert(index, v);
        Ok(())
    }

    fn memo_get(&mut self, index: u32) -> Result<()> {
        match self.memo.get(&index) {
            Some(v) => {
                let v = v.clone();
                self.push(v);
                Ok(())
            }
            None => fail(format!("memo key {index} not found")),
        }
    }

    /// Runs one opcode; `Some` is the result of `STOP`.
    fn step(&mut self) -> Result<Option<Value>> {
        let code = match self.take(1) {
            Ok(b) => b[0],
            Err(_) => return fail("pickle data was truncated: no STOP opcode"),
        };
        match code {
            op::PROTO => {
                let v = self.u8()?;
                if v > 5 {
                    return fail(format!("unsupported pickle protocol {v}"));
                }
            }
            op::FRAME => {
                // Frames only group opcodes for buffered reading; their content follows inline.
                let n = self.u64()?;
                let left = self.data.len() - self.pos;
                if n > left as u64 {
                    return fail(format!("pickle data was truncated: a frame of {n} bytes, {left} left"));
                }
            }
            op::STOP => return Ok(Some(self.pop()?)),
            op::MARK => self.marks.push(self.stack.len()),
            op::POP => {
                if self.stack.len() > self.floor() {
                    self.stack.pop();
                } else {
                    self.pop_mark()?;
                }
            }
            op::POP_MARK => {
                self.pop_mark()?;
            }
            op::DUP => {
                let v = self.top()?.clone();
                self.push(v);
            }
            op::NONE => self.push(Value::None),
            op::NEWTRUE => self.push(Value::Bool(true)),
            op::NEWFALSE => self.push(Value::Bool(false)),
            op::BININT => {
                let v = i32::from_le_bytes(self.array()?);
                self.push(Value::Int(v.into()));
            }
            op::BININT1 => {
                let v = self.u8()?;
                self.push(Value::Int(v.into()));
            }
            op::BININT2 => {
                let v = u16::from_le_bytes(self.array()?);
                self.push(Value::Int(v.into()));
            }
            op::LONG1 => {
                let n = self.u8()?;
                let v = long(self.take(n.into())?);
                self.push(v);
            }
            op::LONG4 => {
                let n = self.len_i32()?;
                let v = long(self.take(n)?);
                self.push(v);
            }
            op::BINFLOAT => {
                let v = f64::from_be_bytes(self.array()?);
                self.push(Value::Float(v));
            }
            op::SHORT_BINUNICODE | op::SHORT_BINSTRING => {
                let n = self.u8()?;
                let v = self.text(n.into())?;
                self.push(v);
            }
            op::BINUNICODE => {
                let n = self.u32()?;
                let v = self.text(n.into())?;
                self.push(v);
            }
            op::BINSTRING => {
                let n = self.len_i32()?;
                let v = self.text(n)?;
                self.push(v);
            }
            op::BINUNICODE8 => {
                let n = self.u64()?;
                let v = self.text(n)?;
                self.push(v);
            }
            op::SHORT_BINBYTES => {
                let n = self.u8()?;
                let v = self.bytes(n.into())?;
                self.push(v);
            }
            op::BINBYTES => {
                let n = self.u32()?;
                let v = self.bytes(n.into())?;
                self.push(v);
            }
            op::BINBYTES8 | op::BYTEARRAY8 => {
                let n = self.u64()?;
                let v = self.bytes(n)?;
                self.push(v);
            }
            op::EMPTY_LIST => self.push(Value::List(List::new(Vec::new()))),
            op::EMPTY_TUPLE => self.push(Value::Tuple(Tuple::new(Vec::new()))),
            op::EMPTY_DICT => self.push(Value::Dict(Dict::new(Vec::new()))),
            op::EMPTY_SET => self.push(Value::Set(List::new(Vec::new()))),
            op::LIST => {
                let items = self.pop_mark()?;
                self.push(Value::List(List::new(items)));
            }
            op::TUPLE => {
                let items = self.pop_mark()?;
                self.push(Value::Tuple(Tuple::new(items)));
            }
            op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                let n = (code - op::TUPLE1 + 1) as usize;
                if self.stack.len() < self.floor() + n {
                    return fail("unpickling stack underflow");
                }
                let items = self.stack.split_off(self.stack.len() - n);
                self.push(Value::Tuple(Tuple::new(items)));
            }
            op::FROZENSET => {
                let items = self.pop_mark()?;
                self.push(Value::Set(List::new(items)));
            }
            op::DICT => {
                let items = self.pop_mark()?;
                let pairs = pairs(items)?;
                self.push(Value::Dict(Dict::new(pairs)));
            }
            op::APPEND => {
                let v = self.pop()?;
                match self.top()? {
                    Value::List(l) => l.borrow_mut().push(v),
                    other => return fail(format!("APPEND to a {}", other.kind())),
                }
            }
            op::APPENDS => {
                let items = self.pop_mark()?;
                match self.top()? {
                    Value::List(l) => l.borrow_mut().extend(items),
                    other => return fail(format!("APPENDS to a {}", other.kind())),
                }
            }
            op::ADDITEMS => {
                let items = self.pop_mark()?;
                match self.top()? {
                    Value::Set(s) => s.borrow_mut().extend(items),
                    other => return fail(format!("ADDITEMS to a {}", other.kind())),
                }
            }
            op::SETITEM => {
                let v = self.pop()?;
                let k = self.pop()?;
                match self.top()? {
                    Value::Dict(d) => d.borrow_mut().push((k, v)),
                    other => return fail(format!("SETITEM on a {}", other.kind())),
                }
            }
            op::SETITEMS => {
                let items = self.pop_mark()?;
                let pairs = pairs(items)?;
                match self.top()? {
                    Value::Dict(d) => d.borrow_mut().extend(pairs),
                    other => return fail(format!("SETITEMS on a {}", other.kind())),
                }
            }
            op::BINPUT => {
                let i = self.u8()?;
                self.memo_put(i.into())?;
            }
            op::LONG_BINPUT => {
                let i = self.u32()?;
                self.memo_put(i)?;
            }
            op::MEMOIZE => {
                // Python uses the memo's length as the index, whatever earlier puts chose.
                let i = u32::try_from(self.memo.len()).or_else(|_| fail("the memo is full"))?;
                self.memo_put(i)?;
            }
            op::BINGET => {
                let i = self.u8()?;
                self.memo_get(i.into())?;
            }
            op::LONG_BINGET => {
                let i = self.u32()?;
                self.memo_get(i)?;
            }
            op::GLOBAL => {
                let module = self.line()?;
                let name = self.line()?;
                let g = self.allowed(Global::new(module, name))?;
                self.push(Value::Global(g));
            }
            op::STACK_GLOBAL => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(module), Some(name)) = (module.as_str(), name.as_str()) else {
                    return fail(format!("STACK_GLOBAL of a {} and a {}, not two str", module.kind(), name.kind()));
                };
                let g = self.allowed(Global::new(module, name))?;
                self.push(Value::Global(g));
            }
            op::REDUCE | op::NEWOBJ => {
                let args = self.pop()?;
                let class = self.pop()?;
                let v = self.call(class, args)?;
                self.push(v);
            }
            op::NEWOBJ_EX => {
                let kwargs = self.pop()?;
                let args = self.pop()?;
                let class = self.pop()?;
                if !matches!(&kwargs, Value::Dict(d) if d.is_empty()) {
                    return fail("NEWOBJ_EX with keyword arguments is not supported");
                }
                let v = self.call(class, args)?;
                self.push(v);
            }
            op::OBJ => {
                let mut items = self.pop_mark()?.into_iter();
                let Some(class) = items.next() else { return fail("OBJ without a class") };
                let v = self.call(class, Value::Tuple(Tuple::new(items.collect())))?;
                self.push(v);
            }
            op::BUILD => {
                let state = self.pop()?;
                build(self.top()?, state)?;
            }
            op::BINPERSID => {
                let pid = self.pop()?;
                let v = self.hooks.persistent_load(&pid)?;
                self.push(v);
            }
            other => return fail(format!("unsupported pickle opcode 0x{other:02x}{}", unsupported(other))),
        }
        Ok(None)
    }

    /// `global` if the pickle may name it (see Note [Allowed globals]).
    fn allowed(&self, global: Global) -> Result<Global> {
        if !always_refused(&global) && (weights_only_allows(&global) || self.hooks.allows_global(&global)) {
            return Ok(global);
        }
        fail(format!(
            "unsupported global: GLOBAL {global} is not an allowed global (PyTorch's weights_only unpickler refuses \
             it too)"
        ))
    }

    /// `class(*args)`: the hooks first, then the built-ins, else an [`Object`].
    fn call(&mut self, class: Value, args: Value) -> Result<Value> {
        let Value::Global(class) = class else {
            return fail(format!("calling a {} is not supported", class.kind()));
        };
        let Value::Tuple(args) = args else {
            return fail(format!("the arguments of {class} are a {}, not a tuple", args.kind()));
        };
        if let Some(v) = self.hooks.reduce(&class, &args)? {
            return Ok(v);
        }
        if let Some(v) = builtin(&class, &args)? {
            return Ok(v);
        }
        Ok(Value::Object(Object::new(class, args)))
    }
}

/// An `int` from `LONG1`/`LONG4`'s little-endian two's-complement bytes.
fn long(bytes: &[u8]) -> Value {
    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
    let fill = if negative { 0xff } else { 0 };
    // Bytes past the eighth that only repeat the sign still fit in an i64.
    let fits = bytes.len() <= 8 || (bytes[8..].iter().all(|&b| b == fill) && (bytes[7] & 0x80 != 0) == negative);
    if !fits {
        return Value::BigInt(bytes.into());
    }
    let mut le = [fill; 8];
    let n = bytes.len().min(8);
    le[..n].copy_from_slice(&bytes[..n]);
    Value::Int(i64::from_le_bytes(le))
}

/// Alternating keys and values (`DICT`, `SETITEMS`) as pairs.
fn pairs(items: Vec<Value>) -> Result<Vec<(Value, Value)>> {
    if !items.len().is_multiple_of(2) {
        return fail(format!("{} items for a dict, not key-value pairs", items.len()));
    }
    let mut it = items.into_iter();
    let mut out = Vec::with_capacity(it.len() / 2);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Ok(out)
}

/// Whether a `BUILD` state carries nothing (`None`, `{}`, or `(None, {})`/`({}, None)` slots).
/// Tuples are walked with a work list, not recursion: a pickle can nest them a million deep
/// (see Note [Dropping deep values]).
fn is_empty_state(state: &Value) -> bool {
    let mut pending = vec![state.clone()];
    while let Some(v) = pending.pop() {
        match v {
            Value::None => {}
            Value::Dict(d) if d.is_empty() => {}
            Value::Tuple(t) => pending.extend(t.iter().cloned()),
            _ => return false,
        }
    }
    true
}

/// `BUILD`: sets an object's state.
///
/// Note [Dict attributes]: `OrderedDict` subclasses carry Python attributes, set by `BUILD`
/// after the items; a state_dict's is `_metadata` (each module's `version`). A [`Dict`] has no
/// attributes, so they are dropped: nothing in a state_dict's values depends on them.
fn build(target: &Value, state: Value) -> Result<()> {
    match target {
        Value::Object(o) => o.borrow_mut().state = Some(state),
        Value::Dict(_) => {} // See Note [Dict attributes].
        Value::Tensor(_) if is_empty_state(&state) => {}
        other => return fail(format!("BUILD on a {} is not supported", other.kind())),
    }
    Ok(())
}

/// `e` as an error of a call to `class`.
fn in_call(class: &Global, e: Error) -> Error {
    let msg = match e {
        Error::Io(msg) | Error::Shape { msg, .. } | Error::InvalidArgument { msg, .. } => msg,
        other => other.to_string(),
    };
    Error::Io(format!("{class}: {msg}"))
}

/// The classes resolved without hooks (see [`PickleHooks`]); `None` for any other.
fn builtin(class: &Global, args: &Tuple) -> Result<Option<Value>> {
    let bad = |msg: String| Error::Io(format!("{class}: {msg}"));
    let v = match (class.module(), class.name()) {
        ("collections", "OrderedDict") | ("builtins", "dict") => Value::Dict(Dict::new(match &args[..] {
            [] => Vec::new(),
            [Value::Dict(d)] => d.borrow().clone(),
            [items] => {
                pairs_of(items).ok_or_else(|| bad(format!("expected key-value pairs, got a {}", items.kind())))?
            }
            _ => return Err(bad(format!("expected at most one argument, got {}", args.len()))),
        })),
        ("builtins", "set") | ("builtins", "frozenset") => Value::Set(List::new(match &args[..] {
            [] => Vec::new(),
            [Value::List(l) | Value::Set(l)] => l.borrow().clone(),
            [Value::Tuple(t)] => t.to_vec(),
            _ => return Err(bad("expected no argument or a list of items".into())),
        })),
        ("_codecs", "encode") => match &args[..] {
            // Protocol 2's `bytes`: each character is one byte.
            [Value::Str(text), Value::Str(enc)] if matches!(&**enc, "latin1" | "latin-1") => {
                let bytes: Option<Vec<u8>> = text.chars().map(|c| u8::try_from(c).ok()).collect();
                Value::Bytes(bytes.ok_or_else(|| bad("a character does not fit in latin-1".into()))?.into())
            }
            _ => return Err(bad("expected (str, 'latin1')".into())),
        },
        ("torch", "device") => {
            let name = match &args[..] {
                [Value::Str(ty)] => ty.to_string(),
                [Value::Str(ty), Value::Int(i)] => format!("{ty}:{i}"),
                [Value::Str(ty), Value::None] => ty.to_string(),
                _ => return Err(bad("expected (type[, index])".into())),
            };
            Value::Device(name.parse::<Device>().map_err(|e| in_call(class, e))?)
        }
        ("torch", "Size") => match &args[..] {
            [Value::Tuple(t)] => Value::Tuple(t.clone()),
            [Value::List(l)] => Value::Tuple(Tuple::new(l.borrow().clone())),
            _ => return Err(bad("expected a tuple of sizes".into())),
        },
        ("torch._utils", "_rebuild_tensor") | ("torch._utils", "_rebuild_tensor_v2") => {
            Value::Tensor(rebuild_tensor(args).map_err(|e| in_call(class, e))?)
        }
        ("torch._utils", "_rebuild_parameter") | ("torch._utils", "_rebuild_parameter_with_state") => {
            // (data, requires_grad, backward_hooks[, state]): the state is the parameter's Python
            // attributes, which a tensor cannot hold.
            match &args[..] {
                [Value::Tensor(t), Value::Bool(flag), _] | [Value::Tensor(t), Value::Bool(flag), _, _] => {
                    Value::Tensor(with_requires_grad(t.detach(), *flag).map_err(|e| in_call(class, e))?)
                }
                _ => return Err(bad("expected (tensor, requires_grad, backward_hooks[, state])".into())),
            }
        }
        ("torch._tensor", "_rebuild_from_type_v2") => match &args[..] {
            // (func, new_type, args, state): a tensor subclass, or a tensor with Python
            // attributes. The tensor `func(*args)` is kept; the subclass and attributes are not.
            [Value::Global(func), _, Value::Tuple(inner), _] if func.module() != "torch._tensor" => {
                match builtin(func, inner)? {
                    Some(v @ Value::Tensor(_)) => v,
                    _ => return Err(bad(format!("{func} is not a tensor constructor this reader knows"))),
                }
            }
            _ => return Err(bad("expected (func, new_type, args, state)".into())),
        },
        // `torch.serialization._get_layout("torch.sparse_coo")`: the layout's name stands for it.
        ("torch.serialization", "_get_layout") => match &args[..] {
            [Value::Str(name)] => Value::Str(name.clone()),
            _ => return Err(bad("expected the layout's name".into())),
        },
        ("torch._utils", "_rebuild_sparse_tensor") => {
            Value::Tensor(rebuild_sparse_tensor(args).map_err(|e| in_call(class, e))?)
        }
        ("torch._utils", name) if name.starts_with("_rebuild_") => {
            return Err(bad("this kind of tensor (quantized, sparse, nested, ...) is not supported".into()));
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `_rebuild_sparse_tensor(layout, data)`: a COO tensor from `(indices, values, size[,
/// is_coalesced])` or a CSR one from `(crow_indices, col_indices, values, size)`, through the
/// constructors, so the indices are checked (PyTorch checks them after loading).
fn rebuild_sparse_tensor(args: &[Value]) -> Result<Tensor> {
    let [Value::Str(layout), Value::Tuple(data)] = args else {
        return fail("expected (layout, data)");
    };
    let data = data.to_vec();
    let tensor = |v: &Value, what: &str| match v {
        Value::Tensor(t) => Ok(t.clone()),
        other => fail(format!("{what} is a {}, not a tensor", other.kind())),
    };
    match (&**layout, &data[..]) {
        ("torch.sparse_coo", [i, v, size, rest @ ..]) if rest.len() <= 1 => {
            let coalesced = match rest.first() {
                Some(Value::Bool(b)) => Some(*b),
                _ => None,
            };
            let size = int_list(size, "size")?;
            let (i, v) = (tensor(i, "indices")?, tensor(v, "values")?);
            aten::ops::sparse_coo_tensor(&i, &v, &size, None, None, None, None, coalesced)
        }
        ("torch.sparse_csr", [crow, col, v, size]) => {
            let size = int_list(size, "size")?;
            let (crow, col, v) = (tensor(crow, "crow_indices")?, tensor(col, "col_indices")?, tensor(v, "values")?);
            aten::ops::sparse_csr_tensor(&crow, &col, &v, &size, None, None, None, None)
        }
        (l, _) => fail(format!("sparse layout {l} with {} items is not supported", data.len())),
    }
}

/// Key-value pairs from a list or tuple of 2-item lists or tuples.
fn pairs_of(items: &Value) -> Option<Vec<(Value, Value)>> {
    let items: Vec<Value> = match items {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        _ => return None,
    };
    items
        .iter()
        .map(|p| match p {
            Value::Tuple(t) if t.len() == 2 => Some((t[0].clone(), t[1].clone())),
            Value::List(l) if l.len() == 2 => Some((l.borrow()[0].clone(), l.borrow()[1].clone())),
            _ => None,
        })
        .collect()
}

fn int_list(v: &Value, what: &str) -> Result<Vec<i64>> {
    let items: Vec<Value> = match v {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        _ => return fail(format!("{what} is a {}, not a tuple of ints", v.kind())),
    };
    items
        .iter()
        .map(|i| i.as_int().ok_or_else(|| Error::Io(format!("{what} holds a {}, not an int", i.kind()))))
        .collect()
}

/// `_rebuild_tensor(storage, storage_offset, size, stride)` and `_rebuild_tensor_v2(storage,
/// storage_offset, size, stride, requires_grad, backward_hooks[, metadata])`. Backward hooks
/// cannot be pickled meaningfully and are dropped, as `torch.load` does.
fn rebuild_tensor(args: &[Value]) -> Result<Tensor> {
    if !(4..=7).contains(&args.len()) || args.len() == 5 {
        return fail(format!("expected 4, 6 or 7 arguments, got {}", args.len()));
    }
    let Value::Storage(storage) = &args[0] else {
        return fail(format!("the storage is a {}", args[0].kind()));
    };
    let Some(offset) = args[1].as_int() else {
        return fail(format!("the storage offset is a {}", args[1].kind()));
    };
    let sizes = int_list(&args[2], "the size")?;
    let strides = int_list(&args[3], "the stride")?;
    let requires_grad = match args.get(4) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return fail(format!("requires_grad is a {}", other.kind())),
    };
    if let Some(meta) = args.get(6) {
        if !is_empty_state(meta) {
            return fail(format!("tensor metadata {meta:?} is not supported"));
        }
    }
    with_requires_grad(storage.tensor(offset, &sizes, &strides)?, requires_grad)
}

fn with_requires_grad(t: Tensor, flag: bool) -> Result<Tensor> {
    if !flag {
        return Ok(t);
    }
    if !t.is_floating_point() {
        return fail(format!("Only Tensors of floating point dtype can require gradients (got {})", t.dtype().name()));
    }
    t.requires_grad_(true)
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_value(self, f, 0)
    }
}

/// Python-like `repr`, at most 16 levels deep (see Note [Dropping deep values]).
fn debug_value(v: &Value, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
    const MAX_DEPTH: usize = 16;
    if depth > MAX_DEPTH {
        return f.write_str("...");
    }
    let seq = |f: &mut fmt::Formatter<'_>, open: &str, items: &[Value], close: &str| -> fmt::Result {
        f.write_str(open)?;
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            debug_value(item, f, depth + 1)?;
        }
        if open == "(" && items.len() == 1 {
            f.write_str(",")?;
        }
        f.write_str(close)
    };
    match v {
        Value::None => f.write_str("None"),
        Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
        Value::Int(i) => write!(f, "{i}"),
        Value::BigInt(b) => {
            f.write_str("int(0x")?;
            b.iter().rev().try_for_each(|byte| write!(f, "{byte:02x}"))?;
            f.write_str(")")
        }
        Value::Float(x) => write!(f, "{x:?}"),
        Value::Str(s) => write!(f, "{:?}", &**s),
        Value::Bytes(b) => write!(f, "b\"{}\"", b.escape_ascii()),
        Value::Tuple(t) => seq(f, "(", t, ")"),
        Value::List(l) => seq(f, "[", &l.borrow(), "]"),
        Value::Set(s) if s.is_empty() => f.write_str("set()"),
        Value::Set(s) => seq(f, "{", &s.borrow(), "}"),
        Value::Dict(d) => {
            f.write_str("{")?;
            for (i, (k, v)) in d.borrow().iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                debug_value(k, f, depth + 1)?;
                f.write_str(": ")?;
                debug_value(v, f, depth + 1)?;
            }
            f.write_str("}")
        }
        Value::Global(g) => write!(f, "{g}"),
        Value::Object(o) => {
            let o = o.borrow();
            write!(f, "{}", o.class)?;
            seq(f, "(", &o.args, ")")?;
            if let Some(state) = &o.state {
                f.write_str(".__setstate__(")?;
                debug_value(state, f, depth + 1)?;
                f.write_str(")")?;
            }
            Ok(())
        }
        Value::Device(d) => write!(f, "device('{d}')"),
        Value::Storage(s) => write!(f, "Storage(dtype={}, numel={})", s.dtype.name(), s.numel),
        Value::Tensor(t) => write!(f, "Tensor(size={:?}, dtype={})", t.sizes(), t.dtype().name()),
    }
}
