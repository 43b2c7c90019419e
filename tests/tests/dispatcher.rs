//! The dispatcher's rules, each with test-only operators and keys: table precedence, alias keys,
//! fallthrough masks, thread-local include/exclude sets, redispatch, boxed fallbacks that see
//! every operator, both calling conventions, key extraction, and schema registration.

use std::cell::RefCell;

use aten::dispatcher::{dispatcher, KernelFunction, OperatorEntry};
use aten::{IValue, Stack, Tensor};
use c10::tensor_impl::{contiguous_strides, DimVec};
use c10::{
    DispatchKey as K, DispatchKeySet, Error, ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard, Result, Scalar,
    ScalarType, TensorImpl, VersionCounter,
};

/// A boxed kernel that pops the arguments and returns `marker`.
fn marker(m: i64) -> KernelFunction {
    KernelFunction::from_boxed(move |op: &'static OperatorEntry, _ks, stack: &mut Stack| -> Result<()> {
        let n = op.schema().map_or(0, |s| s.arguments.len());
        stack.truncate(stack.len() - n);
        stack.push(IValue::Int(m));
        Ok(())
    })
}

fn def(name: &str) {
    dispatcher().def(&format!("{name}(Tensor self) -> int")).unwrap();
}

fn call(name: &str, t: &Tensor) -> Result<i64> {
    let mut s: Stack = vec![IValue::Tensor(t.clone())];
    dispatcher().call_boxed(name, &mut s)?;
    assert_eq!(s.len(), 1);
    s.pop().unwrap().into_int(name)
}

fn cpu() -> Tensor {
    Tensor::from_slice(&[1.0f32, 2.0])
}

fn reg(name: &str, key: K, k: KernelFunction) {
    dispatcher().register_kernel(name, key, k).unwrap();
}

#[test]
fn key_kernel_beats_composite_explicit_beats_implicit() {
    def("dt_prec_a");
    reg("dt_prec_a", K::CompositeImplicitAutograd, marker(3));
    reg("dt_prec_a", K::CompositeExplicitAutograd, marker(2));
    reg("dt_prec_a", K::CPU, marker(1));
    assert_eq!(call("dt_prec_a", &cpu()).unwrap(), 1);

    def("dt_prec_b");
    reg("dt_prec_b", K::CompositeImplicitAutograd, marker(3));
    reg("dt_prec_b", K::CompositeExplicitAutograd, marker(2));
    assert_eq!(call("dt_prec_b", &cpu()).unwrap(), 2);
}

#[test]
fn composite_implicit_fills_backend_and_autograd_slots() {
    def("dt_cia");
    reg("dt_cia", K::CompositeImplicitAutograd, marker(3));
    // A CPU tensor's keys are {AutogradCPU, ADInplaceOrView, CPU}: the decomposition runs at the
    // autograd slot (so it gets autograd through the ops it calls).
    let op = dispatcher().find("dt_cia").unwrap();
    let ks = op.compute_key_set(cpu().key_set());
    assert_eq!(ks.highest_priority_type_id(), K::AutogradCPU);
    assert_eq!(call("dt_cia", &cpu()).unwrap(), 3);
}

#[test]
fn backend_kernel_disables_composite_implicit_on_its_autograd_key() {
    def("dt_cia_backend");
    reg("dt_cia_backend", K::CompositeImplicitAutograd, marker(3));
    reg("dt_cia_backend", K::CPU, marker(1));
    // AutogradCPU falls through (no autograd kernel), so the CPU kernel runs, not the decomposition.
    assert_eq!(call("dt_cia_backend", &cpu()).unwrap(), 1);
}

#[test]
fn autograd_alias_kernel_fills_autograd_keys() {
    def("dt_autograd_alias");
    reg("dt_autograd_alias", K::CPU, marker(1));
    reg("dt_autograd_alias", K::Autograd, marker(4));
    assert_eq!(call("dt_autograd_alias", &cpu()).unwrap(), 4);
    // Below autograd, the CPU kernel runs.
    let _g = ExcludeDispatchKeyGuard::below_autograd();
    assert_eq!(call("dt_autograd_alias", &cpu()).unwrap(), 1);
}

#[test]
fn missing_kernel_error_names_op_key_and_available_keys() {
    def("dt_missing");
    reg("dt_missing", K::CUDA, marker(1));
    reg("dt_missing", K::Meta, marker(1));
    let e = call("dt_missing", &cpu()).unwrap_err();
    match &e {
        Error::MissingKernel { op, key, available } => {
            assert_eq!(op, "aten::dt_missing");
            assert_eq!(key, "CPU");
            assert_eq!(available, "CUDA, Meta");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().starts_with("Could not run 'aten::dt_missing' with arguments from the 'CPU' backend."));
    assert!(matches!(dispatcher().call_boxed("dt_does_not_exist", &mut vec![]), Err(Error::UnknownOperator(_))));
}

thread_local! {
    static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// One boxed fallback on `TestingOnlyGenericMode` for every operator: records the name and
/// continues below its key. Registered once (registration is idempotent in effect).
fn install_recording_fallback() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let k = KernelFunction::from_boxed(|op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack| {
            SEEN.with(|s| s.borrow_mut().push(op.name().to_string()));
            op.redispatch_boxed(ks & DispatchKeySet::full_after(K::TestingOnlyGenericMode), stack)
        });
        dispatcher().register_fallback(K::TestingOnlyGenericMode, k).unwrap();
    });
}

#[test]
fn boxed_fallback_sees_every_operator_through_the_typed_path() {
    install_recording_fallback();
    SEEN.with(|s| s.borrow_mut().clear());
    let a = cpu();
    let (sum, prod) = {
        let _g = IncludeDispatchKeyGuard::new(K::TestingOnlyGenericMode);
        ((&a + &a).unwrap(), a.mul(&a).unwrap())
    };
    // The typed calls went through the boxed fallback (typed -> boxed adapter) and on to the CPU
    // kernels (boxed -> typed adapter), with the right results.
    assert_eq!(sum.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert_eq!(prod.to_vec::<f32>().unwrap(), vec![1.0, 4.0]);
    let seen = SEEN.with(|s| s.borrow().clone());
    assert!(seen.contains(&"add.Tensor".to_string()), "{seen:?}");
    assert!(seen.contains(&"mul.Tensor".to_string()), "{seen:?}");
    // Outside the guard the fallback is not consulted.
    SEEN.with(|s| s.borrow_mut().clear());
    let _ = (&a + &a).unwrap();
    assert!(SEEN.with(|s| s.borrow().is_empty()));
}

#[test]
fn kernel_for_a_key_beats_its_backend_fallback_and_fallthrough_skips_it() {
    install_recording_fallback();
    def("dt_mode_kernel");
    reg("dt_mode_kernel", K::CPU, marker(1));
    reg("dt_mode_kernel", K::TestingOnlyGenericMode, marker(5));
    def("dt_mode_fallthrough");
    reg("dt_mode_fallthrough", K::CPU, marker(1));
    reg("dt_mode_fallthrough", K::TestingOnlyGenericMode, KernelFunction::fallthrough());
    let _g = IncludeDispatchKeyGuard::new(K::TestingOnlyGenericMode);
    assert_eq!(call("dt_mode_kernel", &cpu()).unwrap(), 5);
    SEEN.with(|s| s.borrow_mut().clear());
    assert_eq!(call("dt_mode_fallthrough", &cpu()).unwrap(), 1);
    assert!(SEEN.with(|s| s.borrow().is_empty()), "a fallthrough kernel masks the key out");
    let op = dispatcher().find("dt_mode_fallthrough").unwrap();
    assert!(!op.mask_for(cpu().key_set()).has(K::TestingOnlyGenericMode));
}

#[test]
fn thread_local_exclusion_wins_over_inclusion() {
    def("dt_tls");
    reg("dt_tls", K::CPU, marker(1));
    reg("dt_tls", K::TestingOnlyGenericMode, marker(5));
    {
        let _i = IncludeDispatchKeyGuard::new(K::TestingOnlyGenericMode);
        assert_eq!(call("dt_tls", &cpu()).unwrap(), 5);
        let _e = ExcludeDispatchKeyGuard::new(K::TestingOnlyGenericMode);
        assert_eq!(call("dt_tls", &cpu()).unwrap(), 1);
    }
    assert_eq!(call("dt_tls", &cpu()).unwrap(), 1);
}

#[test]
fn redispatch_continues_below_the_current_key() {
    def("dt_wrapper");
    reg("dt_wrapper", K::CPU, marker(1));
    let wrapper = KernelFunction::from_boxed(|op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack| {
        op.redispatch_boxed(ks & DispatchKeySet::full_after(K::TestingOnlyGenericWrapper), stack)?;
        let below = stack.pop().unwrap().into_int(op.name())?;
        stack.push(IValue::Int(100 + below));
        Ok(())
    });
    reg("dt_wrapper", K::TestingOnlyGenericWrapper, wrapper);
    // A tensor that carries the wrapper key itself (as a wrapper subclass would).
    let base = cpu();
    let imp = TensorImpl::new(
        base.storage().clone(),
        DimVec::from_slice(&[2]),
        contiguous_strides(&[2]),
        0,
        ScalarType::F32,
        Some(VersionCounter::new()),
    );
    let ks = imp.key_set().add(K::TestingOnlyGenericWrapper);
    let wrapped = Tensor::from_impl(imp.with_key_set(ks));
    assert_eq!(call("dt_wrapper", &wrapped).unwrap(), 101);
    assert_eq!(call("dt_wrapper", &base).unwrap(), 1);
    // Key extraction looks inside tensor lists and optional tensors too.
    dispatcher().def("dt_wrapper_list(Tensor[] xs, Tensor? y) -> int").unwrap();
    reg("dt_wrapper_list", K::CPU, marker(1));
    reg("dt_wrapper_list", K::TestingOnlyGenericWrapper, marker(7));
    let mut s: Stack = vec![IValue::TensorList(vec![base.clone(), wrapped.clone()]), IValue::None];
    dispatcher().call_boxed("dt_wrapper_list", &mut s).unwrap();
    assert_eq!(s.pop().unwrap().into_int("t").unwrap(), 7);
    let mut s: Stack = vec![IValue::TensorList(vec![base.clone()]), IValue::Tensor(wrapped)];
    dispatcher().call_boxed("dt_wrapper_list", &mut s).unwrap();
    assert_eq!(s.pop().unwrap().into_int("t").unwrap(), 7);
    let mut s: Stack = vec![IValue::TensorList(vec![base]), IValue::None];
    dispatcher().call_boxed("dt_wrapper_list", &mut s).unwrap();
    assert_eq!(s.pop().unwrap().into_int("t").unwrap(), 1);
}

#[test]
fn any_operator_can_be_called_by_schema_name() {
    let a = cpu();
    let mut s: Stack = vec![IValue::Tensor(a.clone()), IValue::Tensor(a), IValue::Scalar(Scalar::Int(3))];
    dispatcher().call_boxed("aten::add.Tensor", &mut s).unwrap();
    let r = s.pop().unwrap().into_tensor("add").unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![4.0, 8.0]);
    // Wrong argument kinds are an error value, not a panic.
    let mut bad: Stack = vec![IValue::Tensor(cpu()), IValue::Int(2), IValue::Int(3)];
    let e = dispatcher().call_boxed("add.Tensor", &mut bad).unwrap_err();
    assert_eq!(e.to_string(), "add.Tensor: argument 'other': expected Tensor, got int");
    // Without any tensor the CPU kernel runs (Note [Calls without tensors]) and its argument
    // unpacking refuses the ints: an error value naming the argument.
    let mut no_tensor: Stack = vec![IValue::Int(1), IValue::Int(2), IValue::Int(3)];
    let e = dispatcher().call_boxed("add.Tensor", &mut no_tensor).unwrap_err();
    assert!(matches!(e, Error::BoxedArgument { .. }), "{e:?}");
    let mut short: Stack = vec![];
    assert!(dispatcher().call_boxed("add.Tensor", &mut short).is_err());
}

#[test]
fn schema_registration_is_idempotent_and_checked() {
    let s = "dt_schema(Tensor self, *, Scalar alpha=1) -> Tensor";
    dispatcher().def(s).unwrap();
    dispatcher().def(s).unwrap();
    let e = dispatcher().def("dt_schema(Tensor self) -> Tensor").unwrap_err();
    assert!(matches!(e, Error::Schema(_)), "{e}");
    assert!(matches!(dispatcher().def("dt_bad(Tensor self -> Tensor"), Err(Error::Schema(_))));
    let (_, schema) = dispatcher().find_schema("dt_schema").unwrap();
    assert_eq!(schema.to_string(), s);
    assert!(
        dispatcher().register_kernel("dt_schema", K::Dense, marker(1)).is_err(),
        "a bare functionality is not a runtime key"
    );
}
