//! The front-end model shared by the Rust and Python front ends: which overloads of an
//! operator share one user-facing name, which arguments are positional (required in every
//! overload) and which are options with defaults, and how a call picks its overload.
//!
//! Note [One name per PyTorch function]: PyTorch's users call `torch.sum(x)` and
//! `torch.sum(x, 1, keepdim=True)`, `x.pow(2)` and `x.pow(e)`: one name, the overload chosen by
//! the arguments. The YAML has one entry per overload (`sum`, `sum.dim_IntList`; `pow.Tensor_Tensor`,
//! `pow.Tensor_Scalar`). [`front_groups`] puts the non-out overloads of one base name into
//! *groups* that share a call: an overload joins the first group whose overloads return the
//! same types and whose arguments of the same name have the same type, a `Tensor` in one and a
//! `Scalar` in another giving a [`FieldTy::TensorOrScalar`]. In a group, an argument present
//! without a default in every overload, in the same relative order, is *positional* (the
//! call takes it); every other argument is an *option* (a setter in Rust, a keyword in Python),
//! and must have a default or be optional in every overload that has it: the call takes all
//! the required arguments, so a call that compiles never lacks one. A call uses the first
//! overload, in YAML order, that has every option that was set and agrees on
//! `Tensor`-or-`Scalar`. Overloads that cannot join (`max.dim` returns two tensors where `max`
//! returns one; `max.other` requires an `other` that `max` lacks; `squeeze.dim` requires a
//! `dim`) keep a group, and a name, of their own: the explicit layer's name (`max_dim`,
//! `max_other`, `squeeze_dim`).

use schema::{Argument, Type};

use crate::gen::Names;
use crate::yaml::NativeFunction;

/// The type of one argument of a group.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldTy {
    /// The same schema type in every overload that has the argument.
    Schema(Type),
    /// A `Tensor` in some overloads and a `Scalar` in others.
    TensorOrScalar,
}

/// One argument of a group, with what each overload makes of it.
#[derive(Debug, Clone)]
pub struct Field {
    /// The schema name (`self`, `dim`).
    pub name: String,
    /// Its type.
    pub ty: FieldTy,
    /// Required (no default) in every overload of the group: the call takes it.
    pub positional: bool,
    /// Per overload of the group (same order as [`Group::overloads`]): the argument, if that
    /// overload has it.
    pub per_overload: Vec<Option<Argument>>,
}

/// Overloads sharing one front-end call.
#[derive(Debug, Clone)]
pub struct Group {
    /// The call's name: the explicit layer's function name of the first overload (`sum`,
    /// `add_`, `max_dim`).
    pub name: String,
    /// Indices into the YAML's functions, in YAML order.
    pub overloads: Vec<usize>,
    /// Positional arguments first (in schema order), then the options in the order they first
    /// appear.
    pub fields: Vec<Field>,
    /// Some overload is a `Tensor` method (`variants: method`).
    pub method: bool,
    /// Some overload is a free function (`variants: function`).
    pub function: bool,
}

impl Group {
    /// The positional fields, in order.
    pub fn positional(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| f.positional)
    }
    /// The option fields.
    pub fn options(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| !f.positional)
    }
    /// No argument of any overload is a tensor: a factory (`zeros`, `arange`, `randperm`).
    pub fn is_factory(&self) -> bool {
        self.fields.iter().all(|f| match &f.ty {
            FieldTy::TensorOrScalar => false,
            FieldTy::Schema(t) => !t.is_tensor_like(),
        })
    }
}

/// Groups the non-out operators of `fns` (see Note [One name per PyTorch function]).
/// `ret_key` gives the return type an overload's group must agree on (the language's own
/// spelling of it); `names` are the explicit layer's names, parallel to `fns`.
pub fn front_groups(fns: &[NativeFunction], names: &[Names], ret_key: impl Fn(usize) -> String) -> Vec<Group> {
    let mut groups: Vec<(String, String, Vec<usize>)> = Vec::new(); // (base name, ret, overloads)
    for (i, f) in fns.iter().enumerate() {
        if f.func.is_out_fn() {
            continue;
        }
        let base = &f.func.name;
        let ret = ret_key(i);
        let slot = groups.iter().position(|(b, r, ovs)| {
            b == base && *r == ret && {
                let mut trial: Vec<usize> = ovs.clone();
                trial.push(i);
                fields_of(fns, &trial).is_some()
            }
        });
        match slot {
            Some(g) => groups[g].2.push(i),
            None => groups.push((base.clone(), ret, vec![i])),
        }
    }
    let mut groups: Vec<Group> = groups
        .into_iter()
        .map(|(_, _, overloads)| {
            let fields = fields_of(fns, &overloads).unwrap_or_default();
            Group {
                name: names[overloads[0]].function.clone(),
                method: overloads.iter().any(|&i| fns[i].variants_method),
                function: overloads.iter().any(|&i| fns[i].variants_function),
                overloads,
                fields,
            }
        })
        .collect();
    plain_name_to_plain_overload(fns, &mut groups);
    groups
}

/// The explicit layer names a base name's first overload in file order after the base name
/// (`prod.dim_int` is `prod`, the later `prod` is `prod_op`). In the front end the plain name
/// belongs to the group of the overload without an overload name, as `torch.prod(x)` is that
/// overload: `prod` is the plain product and `prod_dim_int` the other group, when that name is
/// free.
fn plain_name_to_plain_overload(fns: &[NativeFunction], groups: &mut [Group]) {
    let taken: std::collections::HashSet<String> = groups.iter().map(|g| g.name.clone()).collect();
    for p in 0..groups.len() {
        let plain = groups[p].overloads.iter().find(|&&i| fns[i].func.overload.is_empty()).copied();
        let Some(plain) = plain else { continue };
        let base = fns[plain].func.name.to_lowercase();
        if groups[p].name != format!("{base}_op") {
            continue;
        }
        let Some(b) = groups.iter().position(|g| g.name == base) else { continue };
        let first = &fns[groups[b].overloads[0]].func;
        let renamed = format!("{base}_{}", first.overload.to_lowercase());
        if first.overload.is_empty() || taken.contains(&renamed) {
            continue;
        }
        groups[b].name = renamed;
        groups[p].name = base;
    }
}

/// The fields of a would-be group, or `None` when its overloads cannot share a call.
fn fields_of(fns: &[NativeFunction], overloads: &[usize]) -> Option<Vec<Field>> {
    let mut fields: Vec<Field> = Vec::new();
    for (k, &i) in overloads.iter().enumerate() {
        for a in &fns[i].func.arguments {
            match fields.iter_mut().find(|f| f.name == a.name) {
                Some(f) => {
                    f.ty = unify(&f.ty, &a.ty)?;
                    f.per_overload[k] = Some(a.clone());
                }
                None => {
                    let mut per_overload = vec![None; overloads.len()];
                    per_overload[k] = Some(a.clone());
                    fields.push(Field {
                        name: a.name.clone(),
                        ty: FieldTy::Schema(a.ty.clone()),
                        positional: false,
                        per_overload,
                    });
                }
            }
        }
    }
    for f in &mut fields {
        f.positional = f.per_overload.iter().all(|a| a.as_ref().is_some_and(|a| a.default.is_none()));
    }
    // An argument an overload requires (no default, not optional) is positional: the call
    // takes the required arguments, its builder only defaulted ones, so a call that compiles
    // never lacks an argument (`max.other` keeps a call of its own rather than making
    // `other` a setter of `max`).
    let required_option = fields.iter().any(|f| {
        !f.positional
            && f.per_overload.iter().flatten().any(|a| a.default.is_none() && !matches!(a.ty, Type::Optional(_)))
    });
    if required_option {
        return None;
    }
    // The positional arguments must come in the same order in every overload.
    let order: Vec<String> = fields.iter().filter(|f| f.positional).map(|f| f.name.clone()).collect();
    for &i in overloads {
        let seen: Vec<&String> = fns[i].func.arguments.iter().map(|a| &a.name).filter(|n| order.contains(n)).collect();
        if !seen.iter().copied().eq(order.iter()) {
            return None;
        }
    }
    // Positional first, in the first overload's order; options after, in order of appearance.
    let (mut pos, opts): (Vec<Field>, Vec<Field>) = fields.into_iter().partition(|f| f.positional);
    pos.sort_by_key(|f| order.iter().position(|n| *n == f.name));
    pos.extend(opts);
    Some(pos)
}

fn unify(a: &FieldTy, b: &Type) -> Option<FieldTy> {
    match (a, b) {
        (FieldTy::Schema(x), y) if x == y => Some(a.clone()),
        (FieldTy::Schema(Type::Tensor), Type::Scalar) | (FieldTy::Schema(Type::Scalar), Type::Tensor) => {
            Some(FieldTy::TensorOrScalar)
        }
        (FieldTy::TensorOrScalar, Type::Tensor | Type::Scalar) => Some(FieldTy::TensorOrScalar),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::compute_names;
    use crate::yaml::parse_native_functions;

    fn groups(yaml: &str) -> Vec<Group> {
        let fns = parse_native_functions("n.yaml", yaml).unwrap();
        let names = compute_names(&fns).unwrap();
        // Stand-in return types: the number of returns.
        front_groups(&fns, &names, |i| fns[i].func.returns.len().to_string())
    }

    #[test]
    fn overloads_share_a_name_when_they_can() {
        let g = groups(
            "\
- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  variants: function, method
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  variants: function, method
- func: sum.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
- func: max(Tensor self) -> Tensor
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
- func: pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
- func: pow.Scalar(Scalar self, Tensor exponent) -> Tensor
- func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
- func: squeeze(Tensor self) -> Tensor
- func: squeeze.dim(Tensor self, int dim) -> Tensor
- func: squeeze.dims(Tensor self, int[] dim) -> Tensor
- func: prod.dim_int(Tensor self, int dim, bool keepdim=False) -> Tensor
- func: prod(Tensor self) -> Tensor
- func: randperm(int n, *, ScalarType? dtype=long) -> Tensor
- func: randperm.generator(int n, *, Generator? generator, ScalarType? dtype=long) -> Tensor
",
        );
        let names: Vec<(&str, usize)> = g.iter().map(|g| (g.name.as_str(), g.overloads.len())).collect();
        // The out= overload has no front-end call; max.dim returns two tensors, squeeze.dim
        // requires a `dim` squeeze lacks, squeeze.dims types it differently: each keeps a call
        // of its own, under the explicit layer's name. randperm.generator's generator is
        // optional, so it is an option of randperm. The plain `prod` takes the plain name
        // although prod.dim_int comes first.
        assert_eq!(
            names,
            [
                ("sum", 2),
                ("max", 1),
                ("max_dim", 1),
                ("pow", 3),
                ("squeeze", 1),
                ("squeeze_dim", 1),
                ("squeeze_dims", 1),
                ("prod_dim_int", 1),
                ("prod", 1),
                ("randperm", 2)
            ]
        );
        let sum = &g[0];
        let pos: Vec<&str> = sum.positional().map(|f| f.name.as_str()).collect();
        let opts: Vec<&str> = sum.options().map(|f| f.name.as_str()).collect();
        assert_eq!(pos, ["self"]);
        assert_eq!(opts, ["dtype", "dim", "keepdim"]);
        assert!(sum.method && sum.function);
        let pow = &g[3];
        assert!(pow.fields.iter().all(|f| f.positional && f.ty == FieldTy::TensorOrScalar));
        assert!(!pow.is_factory());
    }

    #[test]
    fn positional_arguments_must_keep_their_order() {
        // `b a` in one overload and `a b` in the other cannot be one positional call.
        let g = groups(
            "\
- func: f.x(Tensor a, Tensor b) -> Tensor
- func: f.y(Tensor b, Tensor a) -> Tensor
",
        );
        assert_eq!(g.len(), 2);
    }
}
