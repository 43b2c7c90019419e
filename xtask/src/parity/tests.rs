//! End-to-end tests of the runner on a small parity directory written to a temporary folder,
//! with test operators registered in the process-wide dispatcher.
//!
//! The runner calls `transpose.int`, `clone` and `slice.Tensor` to build non-contiguous inputs;
//! until aten registers them, these tests register minimal f32 versions (and keep aten's own
//! once it has them).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Once;

use aten::{IValue, KernelFunction, Stack, Tensor};
use c10::tensor_impl::DimVec;
use c10::{DispatchKey, Error, Result};
use safetensors::tensor::TensorView;
use safetensors::Dtype;

use super::*;

/// Declares an operator with a boxed CPU kernel. With `only_if_missing`, an operator that
/// already has a schema (a real aten operator) is left alone.
fn define(schema: &str, only_if_missing: bool, kernel: fn(&mut Stack) -> Result<()>) {
    let d = aten::dispatcher();
    let name = schema::parse_schema(schema).unwrap().full_name();
    if only_if_missing && d.find_schema(&name).is_ok() {
        return;
    }
    d.def(schema).unwrap();
    let boxed = KernelFunction::from_boxed(move |_op, _ks, stack| kernel(stack));
    d.register_kernel(&name, DispatchKey::CPU, boxed).unwrap();
}

fn tensor_arg(stack: &Stack, i: usize) -> Result<Tensor> {
    stack[i].to_tensor("test", "tensor").cloned()
}

/// `self + alpha * other` for equal shapes (f32), an error otherwise.
fn test_add(stack: &mut Stack) -> Result<()> {
    let (a, b) = (tensor_arg(stack, 0)?, tensor_arg(stack, 1)?);
    let alpha = stack[2].to_scalar("xtask_test_add", "alpha")?.to_f64() as f32;
    if a.sizes() != b.sizes() {
        return Err(Error::shape("xtask_test_add", format!("{:?} vs {:?}", a.sizes(), b.sizes())));
    }
    let (av, bv) = (a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    let out: Vec<f32> = av.iter().zip(&bv).map(|(x, y)| x + alpha * y).collect();
    *stack = vec![IValue::Tensor(Tensor::from_vec(out, a.sizes())?)];
    Ok(())
}

/// The rows of a 2-d f32 tensor, as a `Tensor[]`.
fn test_rows(stack: &mut Stack) -> Result<()> {
    let t = tensor_arg(stack, 0)?;
    let (rows, cols) = (t.sizes()[0], t.sizes()[1]);
    let v = t.to_vec::<f32>()?;
    let list = (0..rows as usize)
        .map(|r| Tensor::from_vec(v[r * cols as usize..(r + 1) * cols as usize].to_vec(), &[cols]))
        .collect::<Result<Vec<_>>>()?;
    *stack = vec![IValue::TensorList(list)];
    Ok(())
}

fn test_panic(_stack: &mut Stack) -> Result<()> {
    panic!("kernel exploded")
}

/// A view of `t` with new geometry over the same storage.
fn view(t: &Tensor, sizes: &[i64], strides: &[i64], offset: i64) -> Tensor {
    Tensor::from_storage(t.storage().clone(), sizes, DimVec::from_slice(strides), offset, t.dtype())
}

fn test_transpose(stack: &mut Stack) -> Result<()> {
    let t = tensor_arg(stack, 0)?;
    let d0 = aten::wrap_dim("transpose", stack[1].to_int("transpose", "dim0")?, t.dim())?;
    let d1 = aten::wrap_dim("transpose", stack[2].to_int("transpose", "dim1")?, t.dim())?;
    let (mut sizes, mut strides) = (t.sizes().to_vec(), t.strides().to_vec());
    sizes.swap(d0, d1);
    strides.swap(d0, d1);
    *stack = vec![IValue::Tensor(view(&t, &sizes, &strides, t.storage_offset()))];
    Ok(())
}

fn test_clone(stack: &mut Stack) -> Result<()> {
    let t = tensor_arg(stack, 0)?;
    *stack = vec![IValue::Tensor(Tensor::from_vec(t.to_vec::<f32>()?, t.sizes())?)];
    Ok(())
}

fn test_slice(stack: &mut Stack) -> Result<()> {
    let t = tensor_arg(stack, 0)?;
    let d = aten::wrap_dim("slice", stack[1].to_int("slice", "dim")?, t.dim())?;
    let size = t.sizes()[d];
    let start = stack[2].to_opt_int("slice", "start")?.unwrap_or(0);
    let end = stack[3].to_opt_int("slice", "end")?.unwrap_or(size).min(size);
    let step = stack[4].to_int("slice", "step")?;
    let (mut sizes, mut strides) = (t.sizes().to_vec(), t.strides().to_vec());
    sizes[d] = (end - start + step - 1) / step;
    let offset = t.storage_offset() + start * strides[d];
    strides[d] *= step;
    *stack = vec![IValue::Tensor(view(&t, &sizes, &strides, offset))];
    Ok(())
}

fn register_test_ops() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let d = aten::dispatcher();
        for key in [DispatchKey::ADInplaceOrView, DispatchKey::BackendSelect] {
            d.register_fallback(key, KernelFunction::fallthrough()).unwrap();
        }
        define("xtask_test_add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", false, test_add);
        define("xtask_test_rows(Tensor self) -> Tensor[]", false, test_rows);
        define("xtask_test_panic(Tensor self) -> Tensor", false, test_panic);
        define("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", true, test_transpose);
        define("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", true, test_clone);
        define(
            "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
            true,
            test_slice,
        );
    });
}

/// A fresh, empty temporary directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-parity-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn f32_entry(key: &str, shape: &[usize], v: &[f32]) -> (String, Dtype, Vec<usize>, Vec<u8>) {
    (key.to_string(), Dtype::F32, shape.to_vec(), v.iter().flat_map(|x| x.to_le_bytes()).collect())
}

/// Writes the test parity directory: cases exercising every path of the runner.
fn write_fixture(dir: &std::path::Path) {
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let b = [0.5f32, -1.0, 0.25, 2.0, 0.0, -3.5];
    let combo = |alpha: f32| -> Vec<f32> { a.iter().zip(&b).map(|(x, y)| x + alpha * y).collect() };
    let entries = vec![
        f32_entry("a", &[2, 3], &a),
        f32_entry("b", &[2, 3], &b),
        f32_entry("sum", &[2, 3], &combo(1.0)),
        f32_entry("alpha", &[2, 3], &combo(2.5)),
        f32_entry("alpha2", &[2, 3], &combo(2.0)),
        f32_entry("c", &[4], &[1.0, 2.0, 3.0, 4.0]),
        f32_entry("c2", &[4], &[2.0, 4.0, 6.0, 8.0]),
        f32_entry("row1", &[3], &a[3..]),
        f32_entry("g", &[2, 3], &[1.0; 6]),
        (
            "sum64".to_string(),
            Dtype::F64,
            vec![2, 3],
            combo(1.0).iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect(),
        ),
    ];
    let views: Vec<(String, TensorView<'_>)> = entries
        .iter()
        .map(|(k, dt, shape, bytes)| (k.clone(), TensorView::new(*dt, shape.clone(), bytes).unwrap()))
        .collect();
    std::fs::write(dir.join("tensors.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();

    let cases = r#"{"format": 1, "generator": "test", "cases": [
      {"id": "add/ok", "op": "add.Tensor", "args": [{"tensor": "a"}, {"tensor": "b"}], "kwargs": {},
       "outputs": ["sum"], "rtol": 1e-6, "atol": 1e-6,
       "grad": {"outputs": [0], "grad_outputs": ["g"], "expected": ["g", "g"], "rtol": 0, "atol": 0}},
      {"id": "add/noncontig", "op": "xtask_test_add", "args": [{"tensor": "a", "noncontig": true}, {"tensor": "b"}],
       "kwargs": {}, "outputs": ["sum"], "rtol": 1e-6, "atol": 1e-6},
      {"id": "add/noncontig_1d", "op": "xtask_test_add", "args": [{"tensor": "c", "noncontig": true}, {"tensor": "c"}],
       "kwargs": {}, "outputs": ["c2"], "rtol": 0, "atol": 0},
      {"id": "add/alpha", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "b"}],
       "kwargs": {"alpha": {"float": 2.5}}, "outputs": ["alpha"], "rtol": 1e-6, "atol": 1e-6},
      {"id": "add/int_alpha", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "b"}],
       "kwargs": {"alpha": {"int": 2}}, "outputs": ["alpha2"], "rtol": 1e-6, "atol": 1e-6},
      {"id": "add/wrong", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "b"}],
       "kwargs": {"alpha": {"float": 2.5}}, "outputs": ["sum"], "rtol": 1e-6, "atol": 1e-6},
      {"id": "add/bad_shape", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "c"}], "kwargs": {},
       "expect_error": true},
      {"id": "add/no_error", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "b"}], "kwargs": {},
       "expect_error": true},
      {"id": "nope/0", "op": "xtask_test_nope", "args": [], "kwargs": {}, "outputs": []},
      {"id": "add/missing", "op": "xtask_test_add", "args": [{"tensor": "a"}], "kwargs": {}, "outputs": ["sum"]},
      {"id": "panic/0", "op": "xtask_test_panic", "args": [{"tensor": "a"}], "kwargs": {}, "outputs": ["a"]},
      {"id": "rows/0", "op": "xtask_test_rows", "args": [{"tensor": "a"}], "kwargs": {}, "outputs": [null, "row1"]},
      {"id": "rows/count", "op": "xtask_test_rows", "args": [{"tensor": "a"}], "kwargs": {}, "outputs": ["row1"]},
      {"id": "add/dtype", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "b"}], "kwargs": {},
       "outputs": ["sum64"], "rtol": 1e-6, "atol": 1e-6},
      {"id": "add/no_key", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "zz"}], "kwargs": {},
       "outputs": ["sum"]},
      {"id": "add/grad_block", "op": "xtask_test_add", "args": [{"tensor": "a"}, {"tensor": "b"}], "kwargs": {},
       "outputs": ["sum"], "rtol": 1e-6, "atol": 1e-6,
       "grad": {"outputs": [0], "grad_outputs": ["g"], "expected": ["g"], "rtol": 0, "atol": 0}}
    ]}"#;
    std::fs::write(dir.join("cases.json"), cases).unwrap();
}

fn run_fixture(name: &str, filter: Option<&str>) -> (Report, Vec<String>) {
    register_test_ops();
    let dir = temp_dir(name);
    write_fixture(&dir);
    let mut out = Vec::new();
    let report = run_dir(&dir, filter, &mut out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (report, String::from_utf8(out).unwrap().lines().map(str::to_string).collect())
}

#[test]
fn runs_every_case_and_reports_failures() {
    let (report, lines) = run_fixture("all", None);
    let expected_prefixes = [
        "FAIL add/wrong: output 0: mismatch at [0, 0] (flat 0): got 2.25, expected 1.5; 5 of 6 elements differ",
        "FAIL add/no_error: expected an error, but the call succeeded",
        "FAIL nope/0: unknown operator 'xtask_test_nope'",
        "FAIL add/missing: missing argument 'other' of type Tensor (the schema has no default for it)",
        "FAIL panic/0: panicked: kernel exploded at ",
        "FAIL rows/count: returned 2 outputs, expected 1",
        "FAIL add/dtype: output 0: dtype float32, expected float64",
        "FAIL add/no_key: argument 1 'other': ",
        "FAIL-GRAD add/grad_block: the grad block lists 1 expected gradients, but the call has 2 differentiable inputs",
        "grads: 1 passed, 1 failed, 0 not run",
        "ops: 8 passed, 8 failed",
    ];
    assert_eq!(lines.len(), expected_prefixes.len(), "{lines:#?}");
    for (line, prefix) in lines.iter().zip(expected_prefixes) {
        assert!(line.starts_with(prefix), "{line:?} does not start with {prefix:?}");
    }
    assert!(lines[7].contains("'zz'"), "{}", lines[7]);
    assert_eq!((report.passed(), report.failed()), (8, 8));
    let passing: Vec<&str> =
        report.results.iter().filter(|(_, o, _)| *o == Outcome::Pass).map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        passing,
        [
            "add/ok",
            "add/noncontig",
            "add/noncontig_1d",
            "add/alpha",
            "add/int_alpha",
            "add/bad_shape",
            "rows/0",
            "add/grad_block"
        ]
    );
    assert_eq!(report.results[0].2, GradStatus::Passed);
}

#[test]
fn filter_selects_by_id_substring() {
    let (report, lines) = run_fixture("filter", Some("rows/"));
    assert_eq!(lines.last().map(String::as_str), Some("ops: 1 passed, 1 failed"));
    assert_eq!(report.results.len(), 2);
}

#[test]
fn noncontig_inputs_are_strided_views_with_the_same_values() {
    register_test_ops();
    let dir = temp_dir("noncontig");
    write_fixture(&dir);
    let bytes = std::fs::read(dir.join("tensors.safetensors")).unwrap();
    let store = TensorStore::new(&dir.join("tensors.safetensors"), &bytes).unwrap();
    for key in ["a", "c"] {
        let t = store.tensor(key, true).unwrap();
        assert!(!t.is_contiguous(), "{key}: {:?}", t.strides());
        assert_eq!(t.to_vec::<f32>().unwrap(), store.tensor(key, false).unwrap().to_vec::<f32>().unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ratchet_catches_regressions_and_updates() {
    register_test_ops();
    let dir = temp_dir("ratchet");
    write_fixture(&dir);
    let file = dir.join("ratchet.txt");
    let args = |update: bool| Args {
        dir: dir.clone(),
        filter: Some("add/".into()),
        ratchet: Some(file.clone()),
        update_ratchet: update,
        device: Device::CPU,
    };
    std::fs::write(&file, "# known good\nadd/ok\nadd/wrong\n").unwrap();
    assert_eq!(run(args(false)).unwrap(), ExitCode::FAILURE);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# known good\nadd/ok\nadd/wrong\n");

    assert_eq!(run(args(true)).unwrap(), ExitCode::FAILURE);
    let ids = ratchet::parse(&std::fs::read_to_string(&file).unwrap());
    // The passing cases, and add/ok's gradient check (add/grad_block's fails: the test op has
    // no derivative).
    assert_eq!(
        ids,
        [
            "add/alpha",
            "add/bad_shape",
            "add/grad_block",
            "add/int_alpha",
            "add/noncontig",
            "add/noncontig_1d",
            "add/ok",
            "add/ok#grad"
        ]
    );
    assert_eq!(run(args(false)).unwrap(), ExitCode::SUCCESS);

    // A gradient check listed as passing that fails breaks the ratchet though its case passes;
    // so does one that does not exist.
    for listed in ["add/grad_block#grad", "add/alpha#grad"] {
        std::fs::write(&file, format!("add/ok\nadd/ok#grad\n{listed}\n")).unwrap();
        assert_eq!(run(args(false)).unwrap(), ExitCode::FAILURE, "{listed}");
    }

    std::fs::remove_file(&file).unwrap();
    assert!(run(args(false)).unwrap_err().contains("ratchet.txt"));
    assert_eq!(run(args(true)).unwrap(), ExitCode::SUCCESS);
    assert_eq!(ratchet::parse(&std::fs::read_to_string(&file).unwrap()).len(), 8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreadable_files_are_errors_naming_the_file() {
    let dir = temp_dir("missing");
    let mut out = Vec::new();
    let e = run_dir(&dir, None, &mut out).unwrap_err();
    assert!(e.contains("cases.json"), "{e}");
    std::fs::write(dir.join("cases.json"), r#"{"format": 1, "cases": []}"#).unwrap();
    let e = run_dir(&dir, None, &mut out).unwrap_err();
    assert!(e.contains("tensors.safetensors"), "{e}");
    std::fs::write(dir.join("tensors.safetensors"), b"garbage").unwrap();
    let e = run_dir(&dir, None, &mut out).unwrap_err();
    assert!(e.contains("tensors.safetensors"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn devices_parse_and_the_device_line_counts_fallbacks() {
    assert_eq!(parse_device("cpu").unwrap(), Device::CPU);
    assert_eq!(parse_device("cuda").unwrap(), Device::cuda(0));
    assert_eq!(parse_device("cuda:1").unwrap(), Device::cuda(1));
    assert_eq!(parse_device("meta").unwrap(), Device::META);
    for bad in ["gpu", "cuda:-1", "cuda:x", ""] {
        assert!(parse_device(bad).unwrap_err().contains("expected cpu, meta, cuda or cuda:N"), "{bad}");
    }
    let results = ["a", "b", "c"].map(|id| (id.to_string(), Outcome::Pass, GradStatus::NotRun)).to_vec();
    let report = Report {
        results,
        placements: vec![Placement::Device, Placement::Fallback("aten::x".into()), Placement::Device],
        ..Default::default()
    };
    assert_eq!(report.device_line(Device::cuda(0)), "device: 2 on cuda, 1 without a cuda kernel");
    assert_eq!(report.fallbacks_line(), "fallbacks: b (aten::x)");
    // Only errors that mean "no kernel here" send a case back to the CPU.
    let cuda = Device::cuda(0);
    let missing = Error::MissingKernel { op: "aten::x".into(), key: "CUDA".into(), available: "CPU".into() };
    assert!(lacks_device_kernel(&missing, cuda));
    assert!(!lacks_device_kernel(&Error::invalid("x", "bad argument"), cuda));
    assert!(!lacks_device_kernel(&Error::Cuda("CUDA error: an illegal memory access".into()), cuda));
    assert!(!falls_back(&Error::invalid("x", "bad argument"), cuda));
    // On meta, reading values (a copy out of a meta tensor) falls back too; a shape or argument
    // error is the kernel's answer.
    let meta = Device::META;
    let no_data = Error::NotImplemented { op: "copy_".into(), msg: "Cannot copy out of meta tensor; no data!".into() };
    assert!(falls_back(&no_data, meta) && !falls_back(&no_data, cuda));
    assert!(!falls_back(&Error::invalid("x", "bad argument"), meta));
    assert!(falls_back(
        &Error::MissingKernel { op: "aten::x".into(), key: "Meta".into(), available: "CPU".into() },
        meta
    ));
    let cpu = aten::ops::zeros(&[1], None, None, None, None).unwrap();
    let on_meta = aten::ops::zeros(&[1], None, None, Some(meta), None).unwrap();
    assert!(all_on_meta(&[IValue::Tensor(on_meta.clone()), IValue::Int(1)]));
    assert!(!all_on_meta(&[IValue::TensorList(vec![on_meta, cpu])]));
}

/// Note [Outputs on the device]: a call whose tensor arguments were on a device and that
/// returned a tensor elsewhere fails; a call without tensor arguments (a factory) and a meta
/// run do not.
#[test]
fn outputs_off_the_inputs_device_fail_the_case() {
    let cpu = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let cuda = Device::cuda(0);
    let returned = [IValue::Int(3), IValue::Tuple(vec![IValue::TensorList(vec![cpu.clone()])])];
    assert_eq!(misplaced(&returned, cuda), Some(Device::CPU));
    assert_eq!(misplaced(&returned, Device::CPU), None);
    let with_tensor = ResolvedArgs { positional: vec![IValue::Tensor(cpu.clone())], kwargs: vec![] };
    let e = check_placement(&returned, &with_tensor, cuda).unwrap_err();
    assert_eq!(e, "the inputs were on cuda:0, but an output is on cpu");
    let factory = ResolvedArgs { positional: vec![IValue::Int(2)], kwargs: vec![("dtype".into(), IValue::None)] };
    assert_eq!(check_placement(&returned, &factory, cuda), Ok(()));
    // A `device="cpu"` argument moves with the tensors, and then binds the outputs too.
    let moved = args_on(
        &ResolvedArgs { positional: vec![], kwargs: vec![("device".into(), IValue::Device(Device::CPU))] },
        cuda,
    )
    .unwrap();
    assert!(matches!(moved.kwargs[0].1, IValue::Device(d) if d == cuda));
    assert!(check_placement(&returned, &moved, cuda).is_err());
    assert_eq!(check_placement(&returned, &with_tensor, Device::META), Ok(()));
    assert!(!all_on_meta(&returned));
}
