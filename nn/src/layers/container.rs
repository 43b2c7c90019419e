//! Containers: Sequential, ModuleList, ModuleDict.

use aten::Tensor;
use c10::Result;

use crate::module::{Forward, Hooks, Member, MemberMut, Members, Module};

impl Members for Box<dyn Forward> {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        let m: &dyn Module = self.as_ref();
        f(name, Member::Module(m))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        let m: &mut dyn Module = self.as_mut();
        f(name, MemberMut::Module(m))
    }
}

/// `nn.Sequential(*modules)`: calls its children in order (each through `call`, so their hooks
/// run); children are named `0`, `1`, ...
///
/// ```
/// use nn::{Forward, Linear, Module, ReLU, Sequential};
/// let net = Sequential::new().add(Linear::new(2, 3).unwrap()).add(ReLU::new());
/// assert_eq!(net.len(), 2);
/// assert_eq!(net.named_parameters()[0].0, "0.weight");
/// ```
#[derive(Default)]
pub struct Sequential {
    modules: Vec<Box<dyn Forward>>,
    hooks: Hooks,
}

impl Module for Sequential {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        for (i, m) in self.modules.iter().enumerate() {
            m.members(&i.to_string(), f);
        }
    }
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        for (i, m) in self.modules.iter_mut().enumerate() {
            m.members_mut(&i.to_string(), f);
        }
    }
    fn type_name(&self) -> &'static str {
        "Sequential"
    }
    fn hooks(&self) -> Option<&Hooks> {
        Some(&self.hooks)
    }
}

impl Members for Sequential {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        f(name, Member::Module(self))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f(name, MemberMut::Module(self))
    }
}

impl Sequential {
    /// An empty Sequential.
    pub fn new() -> Sequential {
        Sequential::default()
    }
    /// Appends a module (builder style).
    #[allow(clippy::should_implement_trait)]
    pub fn add<M: Forward + 'static>(mut self, m: M) -> Sequential {
        self.modules.push(Box::new(m));
        self
    }
    /// `append(module)`.
    pub fn push<M: Forward + 'static>(&mut self, m: M) {
        self.modules.push(Box::new(m));
    }
    /// The number of children.
    pub fn len(&self) -> usize {
        self.modules.len()
    }
    /// Whether there are no children.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }
    /// The child at `i` (`seq[i]`).
    pub fn get(&self, i: usize) -> Option<&dyn Forward> {
        self.modules.get(i).map(|m| m.as_ref())
    }
    /// The child at `i`, mutably.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut (dyn Forward + 'static)> {
        self.modules.get_mut(i).map(|m| m.as_mut())
    }
    /// Appends a boxed module.
    pub fn push_boxed(&mut self, m: Box<dyn Forward>) {
        self.modules.push(m);
    }
    /// Takes the children out, in order (a wrapper that rebuilds the container, such as FSDP's
    /// auto-wrapping, puts them back with [`Sequential::push_boxed`]).
    pub fn take_modules(&mut self) -> Vec<Box<dyn Forward>> {
        std::mem::take(&mut self.modules)
    }
}

impl Forward for Sequential {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        for m in &self.modules {
            y = m.call(&y)?;
        }
        Ok(y)
    }
}

/// `nn.ModuleList`: a list of modules named `0`, `1`, ... (a plain `Vec<M>` field names its
/// items the same way).
pub struct ModuleList<M: Members + Send + Sync + 'static = Box<dyn Forward>> {
    items: Vec<M>,
}

impl<M: Members + Send + Sync + 'static> Module for ModuleList<M> {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        for (i, m) in self.items.iter().enumerate() {
            m.members(&i.to_string(), f);
        }
    }
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        for (i, m) in self.items.iter_mut().enumerate() {
            m.members_mut(&i.to_string(), f);
        }
    }
    fn type_name(&self) -> &'static str {
        "ModuleList"
    }
}

impl<M: Members + Send + Sync + 'static> Members for ModuleList<M> {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        f(name, Member::Module(self))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f(name, MemberMut::Module(self))
    }
}

impl<M: Members + Send + Sync + 'static> Default for ModuleList<M> {
    fn default() -> Self {
        ModuleList { items: Vec::new() }
    }
}

impl<M: Members + Send + Sync + 'static> ModuleList<M> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
    /// `append(module)`.
    pub fn push(&mut self, m: M) {
        self.items.push(m)
    }
    /// The number of modules.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Iterates over the modules.
    pub fn iter(&self) -> std::slice::Iter<'_, M> {
        self.items.iter()
    }
    /// Iterates mutably.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, M> {
        self.items.iter_mut()
    }
}

impl<M: Members + Send + Sync + 'static> std::ops::Index<usize> for ModuleList<M> {
    type Output = M;
    fn index(&self, i: usize) -> &M {
        &self.items[i]
    }
}

impl<M: Members + Send + Sync + 'static> FromIterator<M> for ModuleList<M> {
    fn from_iter<I: IntoIterator<Item = M>>(iter: I) -> Self {
        ModuleList { items: iter.into_iter().collect() }
    }
}

/// `nn.ModuleDict`: modules under string keys, in insertion order.
pub struct ModuleDict<M: Members + Send + Sync + 'static = Box<dyn Forward>> {
    items: Vec<(String, M)>,
}

impl<M: Members + Send + Sync + 'static> Default for ModuleDict<M> {
    fn default() -> Self {
        ModuleDict { items: Vec::new() }
    }
}

impl<M: Members + Send + Sync + 'static> ModuleDict<M> {
    /// An empty dict.
    pub fn new() -> Self {
        Self::default()
    }
    /// `dict[key] = module` (replaces an existing key in place).
    pub fn insert(&mut self, key: impl Into<String>, m: M) {
        let key = key.into();
        match self.items.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = m,
            None => self.items.push((key, m)),
        }
    }
    /// `dict[key]`.
    pub fn get(&self, key: &str) -> Option<&M> {
        self.items.iter().find(|(k, _)| k == key).map(|(_, m)| m)
    }
    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(|(k, _)| k.as_str())
    }
    /// The number of modules.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether the dict is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<M: Members + Send + Sync + 'static> Module for ModuleDict<M> {
    fn for_each_member<'a>(&'a self, f: &mut dyn FnMut(&str, Member<'a>)) {
        for (k, m) in &self.items {
            m.members(k, f);
        }
    }
    fn for_each_member_mut<'a>(&'a mut self, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        for (k, m) in &mut self.items {
            m.members_mut(k, f);
        }
    }
    fn type_name(&self) -> &'static str {
        "ModuleDict"
    }
}

impl<M: Members + Send + Sync + 'static> Members for ModuleDict<M> {
    fn members<'a>(&'a self, name: &str, f: &mut dyn FnMut(&str, Member<'a>)) {
        f(name, Member::Module(self))
    }
    fn members_mut<'a>(&'a mut self, name: &str, f: &mut dyn FnMut(&str, MemberMut<'a>)) {
        f(name, MemberMut::Module(self))
    }
}
