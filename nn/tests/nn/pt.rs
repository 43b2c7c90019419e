//! `torch.save` files written by PyTorch (`pt/`, made by `gen_pt.py` next to this file) against
//! PyTorch's own values in `pt/expected.safetensors`: loose tensors of every dtype bit for bit
//! with their strides, offsets and storage sharing; state_dicts of an MLP, a CNN with
//! BatchNorm, a GRU and an Embedding loaded strictly into our modules, whose forward passes give
//! PyTorch's outputs; a protocol-4 checkpoint of plain Python values; and the unpickler on
//! handcrafted and damaged inputs, where every failure is an error naming its cause.

use std::collections::HashMap;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{bf16, f16, Device, ScalarType};
use nn::pickle::{self, Global, NoHooks, PickleHooks, Tuple, Value};
use nn::{
    BatchNorm2d, Conv2d, ConvOptions, Embedding, Forward, Linear, Module, PtArchive, RNNOptions, ReLU, Sequential,
    StateDict, GRU,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nn/pt").join(name)
}

/// PyTorch's values, and the per-tensor metadata of `gen_pt.py`.
fn expected() -> nn::serialize::Loaded {
    nn::serialize::load_file(fixture("expected.safetensors")).unwrap()
}

fn expect(e: &nn::serialize::Loaded, name: &str) -> Tensor {
    e.tensors.get(name).unwrap_or_else(|| panic!("expected.safetensors has no {name}")).clone()
}

/// Every element's bits, widened to u64, in row-major order.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        ScalarType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(|x| x.to_bits().into()).collect(),
        ScalarType::F64 => t.to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
        ScalarType::F16 => t.to_vec::<f16>().unwrap().into_iter().map(|x| x.to_bits().into()).collect(),
        ScalarType::BF16 => t.to_vec::<bf16>().unwrap().into_iter().map(|x| x.to_bits().into()).collect(),
        ScalarType::I64 => t.to_vec::<i64>().unwrap().into_iter().map(|x| x as u64).collect(),
        ScalarType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(|x| x as u32 as u64).collect(),
        ScalarType::I16 => t.to_vec::<i16>().unwrap().into_iter().map(|x| x as u16 as u64).collect(),
        ScalarType::I8 => t.to_vec::<i8>().unwrap().into_iter().map(|x| x as u8 as u64).collect(),
        ScalarType::U8 => t.to_vec::<u8>().unwrap().into_iter().map(u64::from).collect(),
        ScalarType::C64 | ScalarType::C128 => bits(&aten::ops::view_as_real(t).unwrap()),
        ScalarType::Bool => t.to_vec::<bool>().unwrap().into_iter().map(u64::from).collect(),
    }
}

fn assert_bit_equal(actual: &Tensor, expected: &Tensor, what: &str) {
    assert_eq!(actual.dtype(), expected.dtype(), "{what}: dtype");
    assert_eq!(actual.sizes(), expected.sizes(), "{what}: shape");
    assert_eq!(bits(actual), bits(expected), "{what}: values");
}

/// `|a - b| <= 1e-5 * |b| + 1e-6` element by element (the absolute term only matters near 0).
fn assert_close(actual: &Tensor, expected: &Tensor, what: &str) {
    assert_eq!(actual.sizes(), expected.sizes(), "{what}: shape");
    let a = actual.detach().to_vec::<f32>().unwrap();
    let e = expected.to_vec::<f32>().unwrap();
    assert!(!e.is_empty(), "{what}: nothing to compare");
    for (i, (x, y)) in a.iter().zip(&e).enumerate() {
        assert!((x - y).abs() <= 1e-5 * y.abs() + 1e-6, "{what}[{i}]: got {x}, PyTorch {y}");
    }
}

/// Every `<prefix>.state.*` entry of the expected file equals the loaded state_dict's, and the
/// loaded keys are exactly those.
fn check_state(state: &StateDict, e: &nn::serialize::Loaded, prefix: &str) {
    let want: Vec<(&str, &Tensor)> =
        e.tensors.iter().filter_map(|(k, t)| Some((k.strip_prefix(prefix)?.strip_prefix(".state.")?, t))).collect();
    assert!(!want.is_empty());
    let mut got: Vec<&str> = state.keys().collect();
    let mut names: Vec<&str> = want.iter().map(|(k, _)| *k).collect();
    got.sort();
    names.sort();
    assert_eq!(got, names, "{prefix}: state_dict keys");
    for (k, t) in want {
        assert_bit_equal(state.get(k).unwrap(), t, &format!("{prefix}.{k}"));
    }
}

/// Loads `<name>.pt` into `m` strictly, checks that the module's keys come in the file's order
/// and that no key is missing or unexpected, and checks the values.
fn load_into(m: &mut dyn Module, name: &str, e: &nn::serialize::Loaded) {
    let path = fixture(&format!("{name}.pt"));
    let state = nn::load_pt(&path).unwrap();
    let file_order: Vec<String> = state.keys().map(String::from).collect();
    let module_order: Vec<String> = m.state_dict().keys().map(String::from).collect();
    assert_eq!(module_order, file_order, "{name}: state_dict names and order");
    let keys = nn::load_pt_into(m, &path, true).unwrap();
    assert_eq!(keys, nn::IncompatibleKeys::default());
    check_state(&m.state_dict(), e, name);
}

// ---- models -------------------------------------------------------------------------------

#[test]
fn mlp_state_dict_loads_and_runs_as_in_pytorch() {
    let e = expected();
    aten::manual_seed(1);
    let mut net = Sequential::new().add(Linear::new(4, 8).unwrap()).add(ReLU::new()).add(Linear::new(8, 3).unwrap());
    load_into(&mut net, "mlp", &e);
    assert_close(&net.call(&expect(&e, "mlp.input")).unwrap(), &expect(&e, "mlp.output"), "mlp output");
}

#[test]
fn cnn_with_batchnorm_loads_and_runs_as_in_pytorch() {
    let e = expected();
    let conv = |i, o, opts: ConvOptions| Conv2d::with_options(i, o, &[3, 3], opts).unwrap();
    let mut net = Sequential::new()
        .add(conv(2, 4, ConvOptions::default().padding([1, 1])))
        .add(BatchNorm2d::new(4).unwrap())
        .add(ReLU::new())
        .add(conv(4, 3, ConvOptions::default().stride([2, 2])));
    load_into(&mut net, "cnn", &e);
    let tracked = net.state_dict().get("1.num_batches_tracked").unwrap().clone();
    assert_eq!((tracked.dtype(), tracked.item::<i64>().unwrap()), (ScalarType::I64, 3));
    net.eval();
    assert_close(&net.call(&expect(&e, "cnn.input")).unwrap(), &expect(&e, "cnn.output"), "cnn output");
}

#[test]
fn gru_loads_and_runs_as_in_pytorch() {
    let e = expected();
    let mut gru = GRU::with_options(3, 4, &RNNOptions::default().num_layers(2)).unwrap();
    load_into(&mut gru, "gru", &e);
    let (out, h_n) = gru.forward(&expect(&e, "gru.input"), None).unwrap();
    assert_close(&out, &expect(&e, "gru.output"), "gru output");
    assert_close(&h_n, &expect(&e, "gru.h_n"), "gru h_n");
}

#[test]
fn embedding_loads_and_runs_as_in_pytorch() {
    let e = expected();
    let mut emb = Embedding::new(10, 4).unwrap();
    load_into(&mut emb, "embedding", &e);
    let out = emb.call(&expect(&e, "embedding.input")).unwrap();
    assert_bit_equal(&out.detach(), &expect(&e, "embedding.output"), "embedding output");
}

#[test]
fn a_mismatched_module_is_reported_by_strict_loading() {
    let mut small = Sequential::new().add(Linear::new(4, 8).unwrap());
    let err = nn::load_pt_into(&mut small, fixture("mlp.pt"), true).unwrap_err().to_string();
    assert!(err.contains("Unexpected key(s) in state_dict: \"2.weight\", \"2.bias\""), "{err}");
    let keys = nn::load_pt_into(&mut small, fixture("mlp.pt"), false).unwrap();
    assert_eq!(keys.unexpected_keys, ["2.weight", "2.bias"]);
}

// ---- loose tensors ------------------------------------------------------------------------

/// The `stride=..;offset=..;requires_grad=..;storage=..` metadata of a loose tensor.
fn geometry(e: &nn::serialize::Loaded, name: &str) -> HashMap<String, String> {
    let text = e.metadata.get(&format!("tensors.{name}")).unwrap_or_else(|| panic!("no metadata for {name}"));
    text.split(';').map(|kv| kv.split_once('=').unwrap()).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn loose_tensors_match_pytorch_bit_for_bit_with_their_geometry() {
    check_loose_tensors(&nn::load_pt(fixture("tensors.pt")).unwrap());
}

/// `tensors.pt`'s tensors as PyTorch saved them: values, strides, offsets, `requires_grad` and
/// which of them share a storage.
fn check_loose_tensors(loaded: &StateDict) {
    let e = expected();
    let names: Vec<&str> = e.tensors.keys().filter_map(|k| k.strip_prefix("tensors.")).collect();
    assert_eq!(names.len(), 18);
    assert_eq!(loaded.len(), names.len());
    let mut storage_of: Vec<(String, &Tensor)> = Vec::new();
    for name in &names {
        let t = loaded.get(name).unwrap_or_else(|| panic!("tensors.pt has no {name}"));
        assert_bit_equal(t, &expect(&e, &format!("tensors.{name}")), name);
        let g = geometry(&e, name);
        let stride: Vec<i64> = g["stride"].split(',').filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
        assert_eq!(t.strides(), stride.as_slice(), "{name}: stride");
        assert_eq!(t.storage_offset().to_string(), g["offset"], "{name}: storage offset");
        assert_eq!(t.requires_grad(), g["requires_grad"] == "1", "{name}: requires_grad");
        storage_of.push((g["storage"].clone(), t));
    }
    // Tensors share a storage exactly when they did in PyTorch.
    for (i, (gi, ti)) in storage_of.iter().enumerate() {
        for (gj, tj) in &storage_of[i + 1..] {
            assert_eq!(gi == gj, ti.storage().is_same(tj.storage()), "storage sharing");
        }
    }
    let transposed = loaded.get("transposed").unwrap();
    assert!(!transposed.is_contiguous());
    assert_eq!((transposed.sizes(), transposed.strides()), (&[4, 3][..], &[1, 4][..]));
    assert_eq!(loaded.get("scalar").unwrap().sizes(), &[] as &[i64]);
    assert_eq!(loaded.get("empty").unwrap().sizes(), &[0, 3]);
    assert_eq!(loaded.get("i64").unwrap().to_vec::<i64>().unwrap()[..2], [i64::MIN, i64::MAX]);
}

#[test]
fn views_of_one_storage_share_their_data() {
    let loaded = nn::load_pt(fixture("tensors.pt")).unwrap();
    let (a, b) = (loaded.get("view_a").unwrap(), loaded.get("view_b").unwrap());
    // base = arange(10) * 1.5; a = base[1:7].view(2, 3), b = base[4:].
    assert_eq!((a.storage_offset(), b.storage_offset()), (1, 4));
    assert_eq!(a.to_vec::<f64>().unwrap(), [1.5, 3.0, 4.5, 6.0, 7.5, 9.0]);
    b.zero_().unwrap();
    assert_eq!(a.to_vec::<f64>().unwrap(), [1.5, 3.0, 4.5, 0.0, 0.0, 0.0]);
    a.fill_(c10::Scalar::Float(2.0)).unwrap();
    assert_eq!(b.to_vec::<f64>().unwrap(), [2.0, 2.0, 2.0, 0.0, 0.0, 0.0]);
}

// ---- writing: nn::save_pt ------------------------------------------------------------------

/// A fresh directory for one test (removed by the test when it passes).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nn-save-pt-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn save_pt_round_trips_every_dtype_with_its_geometry_and_sharing() {
    let theirs = nn::load_pt(fixture("tensors.pt")).unwrap();
    let dir = scratch("round_trip");
    let path = dir.join("tensors_again.pt");
    nn::save_pt(&theirs, &path).unwrap();
    let ours = nn::load_pt(&path).unwrap();
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "names in order");
    check_loose_tensors(&ours);
    // What PyTorch's writer does too: storages whole, 64-byte aligned, stored uncompressed.
    let bytes = std::fs::read(&path).unwrap();
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut storages = 0;
    for i in 0..zip.len() {
        let f = zip.by_index(i).unwrap();
        let name = f.name().unwrap().to_string();
        assert!(name.starts_with("tensors_again/"), "{name}");
        assert_eq!(f.compression(), zip::CompressionMethod::Stored, "{name}");
        if name.contains("/data/") {
            storages += 1;
            assert_eq!(f.data_start().unwrap() % 64, 0, "{name} is not 64-byte aligned");
        }
    }
    let distinct = theirs
        .iter()
        .enumerate()
        .filter(|(i, (_, t))| !theirs.iter().take(*i).any(|(_, u)| u.storage().is_same(t.storage())))
        .count();
    assert_eq!(storages, distinct, "one record per storage");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_module_saved_with_save_pt_loads_back_strictly_and_runs_the_same() {
    let e = expected();
    let conv = |i, o, opts: ConvOptions| Conv2d::with_options(i, o, &[3, 3], opts).unwrap();
    let make = || {
        Sequential::new()
            .add(conv(2, 4, ConvOptions::default().padding([1, 1])))
            .add(BatchNorm2d::new(4).unwrap())
            .add(ReLU::new())
            .add(conv(4, 3, ConvOptions::default().stride([2, 2])))
    };
    let mut net = make();
    load_into(&mut net, "cnn", &e);
    let dir = scratch("module");
    let path = dir.join("cnn_again.pt");
    nn::save_pt(&net.state_dict(), &path).unwrap();
    let mut again = make();
    let keys = nn::load_pt_into(&mut again, &path, true).unwrap();
    assert!(keys.missing_keys.is_empty() && keys.unexpected_keys.is_empty());
    for (name, t) in again.state_dict().iter() {
        let before = net.state_dict().get(name).unwrap().clone();
        assert_bit_equal(t, &before, name);
        assert_eq!(t.dtype(), before.dtype(), "{name}");
    }
    net.eval();
    again.eval();
    let x = expect(&e, "cnn.input");
    assert_bit_equal(&again.call(&x).unwrap().detach(), &net.call(&x).unwrap().detach(), "output");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn save_pt_to_a_bad_path_is_an_error_and_leaves_the_old_file() {
    let state: StateDict =
        [("w".to_string(), Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap())].into_iter().collect();
    let missing = std::env::temp_dir().join("no-such-dir-for-save-pt").join("x.pt");
    let err = nn::save_pt(&state, &missing).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    let dir = scratch("bad_path");
    let sub = dir.join("a_dir.pt");
    std::fs::create_dir_all(&sub).unwrap();
    assert!(nn::save_pt(&state, &sub).unwrap_err().to_string().contains("is a directory"));
    // A tensor whose data cannot be read (a meta tensor) fails the save; the file that was
    // there stays as it was, and no temporary file is left.
    let path = dir.join("kept.pt");
    nn::save_pt(&state, &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let meta = aten::ops::empty(&[2], None, None, Some(Device::META), None, None).unwrap();
    let bad: StateDict = [("m".to_string(), meta)].into_iter().collect();
    assert!(nn::save_pt(&bad, &path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(!dir.join("kept.pt.partial").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// PyTorch reads what `save_pt` writes: `torch.load(weights_only=True)` of `tensors.pt` saved
/// again by us gives PyTorch's own load of the original, value for value, with the same
/// strides, offsets, `requires_grad` flags and storage sharing. Needs Python with PyTorch
/// (`PYTHON`, `python3` by default); CI runs it with `-- --ignored pytorch_`.
#[test]
#[ignore = "needs Python with PyTorch: cargo test -p nn --test nn -- --ignored pytorch_"]
fn pytorch_reads_what_save_pt_writes() {
    let dir = scratch("pytorch");
    let path = dir.join("tensors_for_pytorch.pt");
    nn::save_pt(&nn::load_pt(fixture("tensors.pt")).unwrap(), &path).unwrap();
    let script = r#"
import sys, torch
theirs = torch.load(sys.argv[1], weights_only=True)
ours = torch.load(sys.argv[2], weights_only=True)
assert list(ours) == list(theirs), (list(ours), list(theirs))
def storage(t):
    return t.untyped_storage().data_ptr()
for k, t in theirs.items():
    o = ours[k]
    assert o.dtype == t.dtype and o.shape == t.shape, k
    assert o.stride() == t.stride() and o.storage_offset() == t.storage_offset(), k
    assert o.requires_grad == t.requires_grad, k
    assert o.untyped_storage().nbytes() == t.untyped_storage().nbytes(), k
    assert bytes(o.untyped_storage().tolist()) == bytes(t.untyped_storage().tolist()), k
for a in theirs:
    for b in theirs:
        assert (storage(theirs[a]) == storage(theirs[b])) == (storage(ours[a]) == storage(ours[b])), (a, b)
print("ok", len(ours))
"#;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(fixture("tensors.pt"))
        .arg(&path)
        .output()
        .expect("running Python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("ok 18"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- a checkpoint of plain values (pickle protocol 4) -------------------------------------

#[test]
fn a_protocol_4_checkpoint_unpickles_to_python_values() {
    let e = expected();
    let mut archive = PtArchive::open(fixture("misc.pt")).unwrap();
    assert_eq!(archive.prefix(), "misc");
    assert!(archive.record_names().iter().any(|n| n == "data/0"));
    let v = archive.unpickle("data.pkl").unwrap();
    let d = v.as_dict().unwrap();
    let model = d.get("model").unwrap();
    let model = model.as_dict().unwrap();
    let mut state = StateDict::new();
    for (k, t) in model.borrow().iter() {
        state.insert(k.as_str().unwrap(), t.as_tensor().unwrap().clone());
    }
    check_state(&state, &e, "mlp");
    assert_eq!(d.get("epoch").unwrap().as_int(), Some(3));
    assert_eq!(d.get("lr").unwrap().as_float(), Some(0.01));
    assert_eq!(d.get("name").unwrap().as_str(), Some("mlp"));
    let Value::BigInt(seed) = d.get("seed").unwrap() else { panic!("seed") };
    assert_eq!(&seed[..], [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]); // 2**64 - 1
    let Value::BigInt(neg) = d.get("neg_big").unwrap() else { panic!("neg_big") };
    assert_eq!(&neg[..], [0, 0, 0, 0, 0, 0, 0, 0, 0xc0]); // -2**70
    assert_eq!(d.get("bytes").unwrap().as_bytes(), Some(&b"\x00\xffab"[..]));
    let Value::Set(tags) = d.get("tags").unwrap() else { panic!("tags") };
    assert_eq!(tags.borrow()[0].as_str(), Some("a"));
    assert!(matches!(d.get("device").unwrap(), Value::Device(dev) if dev == Device::cuda(1)));
    let Value::Global(dtype) = d.get("dtype").unwrap() else { panic!("dtype") };
    assert_eq!(dtype.dtype(), Some(ScalarType::F16));
    let nested = format!("{:?}", d.get("nested").unwrap());
    assert_eq!(nested, "[1, (2, 3.5), None, True, {\"k\": -7}]");

    let err = nn::load_pt(fixture("misc.pt")).unwrap_err().to_string();
    assert!(err.contains("state_dict entry 'model' is a dict, not a tensor"), "{err}");
}

// ---- damaged and foreign files ------------------------------------------------------------

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// The records of a zip archive, in order.
fn records(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).unwrap();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            (f.name().unwrap().to_string(), data)
        })
        .collect()
}

/// A stored (uncompressed) zip archive of `records`, as torch writes.
fn zip_of(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in records {
        w.start_file(name.as_str(), opts).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// `mlp.pt` with `edit` applied to its records.
fn edited_mlp(edit: impl Fn(&str, &mut Vec<u8>)) -> Vec<u8> {
    let mut recs = records(&read("mlp.pt"));
    for (name, data) in &mut recs {
        edit(name, data);
    }
    zip_of(&recs)
}

fn load_err(bytes: Vec<u8>) -> String {
    let mut archive = match PtArchive::from_bytes(bytes, "damaged.pt") {
        Ok(a) => a,
        Err(e) => return e.to_string(),
    };
    archive.unpickle("data.pkl").map(|v| format!("unexpectedly loaded {v:?}")).unwrap_or_else(|e| e.to_string())
}

#[test]
fn a_rezipped_archive_loads_like_the_original() {
    // The helpers above are faithful: only the edits make the next tests fail.
    let bytes = edited_mlp(|_, _| {});
    let mut archive = PtArchive::from_bytes(bytes, "copy.pt").unwrap();
    assert!(archive.unpickle("data.pkl").unwrap().as_dict().is_some_and(|d| d.len() == 4));
}

#[test]
fn a_truncated_file_is_an_error() {
    let bytes = read("mlp.pt");
    for n in (0..bytes.len()).step_by(7) {
        let err = load_err(bytes[..n].to_vec());
        assert!(err.starts_with("damaged.pt: "), "{n}: {err}");
    }
    let path = std::env::temp_dir().join(format!("nn-pt-truncated-{}.pt", std::process::id()));
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = nn::load_pt(&path).unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(err.contains("not a valid zip archive"), "{err}");
}

#[test]
fn a_truncated_pickle_is_an_error_at_every_length() {
    let recs = records(&read("mlp.pt"));
    let data = &recs.iter().find(|(n, _)| n == "mlp/data.pkl").unwrap().1;
    let mut archive = PtArchive::open(fixture("mlp.pt")).unwrap();
    /// Storages from the archive, as a scripted-module reader would plug them in.
    struct Storages<'a>(&'a mut PtArchive);
    impl PickleHooks for Storages<'_> {
        fn persistent_load(&mut self, pid: &Value) -> c10::Result<Value> {
            self.0.persistent_load(pid, "data")
        }
    }
    let full = pickle::unpickle(data, "mlp/data.pkl", &mut Storages(&mut archive)).unwrap();
    assert_eq!(full.as_dict().unwrap().len(), 4);
    for n in 0..data.len() {
        let err = pickle::unpickle(&data[..n], "mlp/data.pkl", &mut Storages(&mut archive)).unwrap_err().to_string();
        assert!(err.starts_with("pickle data was truncated") && err.ends_with(" of mlp/data.pkl"), "{n}: {err}");
    }
}

#[test]
fn an_unsupported_opcode_is_named_with_its_position() {
    let bytes = edited_mlp(|name, data| {
        if name.ends_with("data.pkl") {
            *data = b"\x80\x02}q\x00\xff.".to_vec();
        }
    });
    let err = load_err(bytes);
    assert_eq!(err, "unsupported pickle opcode 0xff at byte 5 of mlp/data.pkl in damaged.pt");
    let err = pickle::unpickle(b"\x80\x02I01\n.", "x.pkl", &mut NoHooks).unwrap_err().to_string();
    assert_eq!(err, "unsupported pickle opcode 0x49 (a protocol 0 text opcode) at byte 2 of x.pkl");
}

#[test]
fn a_short_storage_record_is_an_error() {
    let bytes = edited_mlp(|name, data| {
        if name == "mlp/data/0" {
            data.truncate(data.len() - 4);
        }
    });
    let err = load_err(bytes);
    assert!(
        err.starts_with(
            "storage mlp/data/0 holds 124 bytes, but the pickle asks for 32 elements of float32 (128 bytes) at byte "
        ) && err.ends_with(" of mlp/data.pkl in damaged.pt"),
        "{err}"
    );
    let missing = zip_of(&records(&read("mlp.pt")).into_iter().filter(|(n, _)| n != "mlp/data/1").collect::<Vec<_>>());
    let err = load_err(missing);
    assert!(err.starts_with("the archive has no record mlp/data/1 at byte "), "{err}");
}

#[test]
fn a_big_endian_archive_is_byte_swapped() {
    let bytes = edited_mlp(|name, data| {
        if name.ends_with("byteorder") {
            *data = b"big".to_vec();
        } else if name.starts_with("mlp/data/") {
            data.chunks_exact_mut(4).for_each(|c| c.reverse()); // every mlp storage is float32
        }
    });
    let path = std::env::temp_dir().join(format!("nn-pt-big-endian-{}.pt", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let state = nn::load_pt(&path);
    std::fs::remove_file(&path).unwrap();
    check_state(&state.unwrap(), &expected(), "mlp");
}

#[test]
fn foreign_and_legacy_files_are_errors() {
    let path = std::env::temp_dir().join(format!("nn-pt-foreign-{}.pt", std::process::id()));
    std::fs::write(&path, "hello, world").unwrap();
    let err = nn::load_pt(&path).unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(
        err.ends_with(
            "not a PyTorch archive: torch.save (PyTorch 1.6 or later) writes a zip file, and this is not one"
        ),
        "{err}"
    );

    let err = nn::load_pt(fixture("legacy.pt")).unwrap_err().to_string();
    assert!(err.contains("legacy torch.save format"), "{err}");
    assert!(err.contains("_use_new_zipfile_serialization=True"), "{err}");

    let err = nn::load_pt(fixture("no-such-file.pt")).unwrap_err().to_string();
    assert!(err.contains("no-such-file.pt: "), "{err}");

    let not_torch = zip_of(&[("readme.txt".to_string(), b"hi".to_vec())]);
    let err = load_err(not_torch);
    assert_eq!(err, "damaged.pt: not a torch.save archive: it has no <name>/data.pkl record");
}

/// Mutates single bytes of a real pickle (a fixed pseudo-random sequence): every result is a
/// value or an error, never a panic.
#[test]
fn damaged_pickles_never_panic() {
    let recs = records(&read("tensors.pt"));
    let data = recs.iter().find(|(n, _)| n.ends_with("data.pkl")).unwrap().1.clone();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..3000 {
        let mut damaged = data.clone();
        for _ in 0..1 + next() % 3 {
            let i = (next() % damaged.len() as u64) as usize;
            damaged[i] = next() as u8;
        }
        let bytes = zip_of(
            &recs
                .iter()
                .map(|(n, d)| (n.clone(), if n.ends_with("data.pkl") { damaged.clone() } else { d.clone() }))
                .collect::<Vec<_>>(),
        );
        match PtArchive::from_bytes(bytes, "fuzz.pt").unwrap().unpickle("data.pkl") {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.to_string().contains(" at byte "), "{e}");
                failed += 1;
            }
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} loaded, {failed} failed");
}

// ---- the unpickler on handcrafted pickles -------------------------------------------------

/// A protocol-2 pickle written opcode by opcode.
struct P(Vec<u8>);

impl P {
    fn new() -> P {
        P(vec![0x80, 2])
    }
    fn op(mut self, bytes: &[u8]) -> P {
        self.0.extend_from_slice(bytes);
        self
    }
    fn str(self, s: &str) -> P {
        self.op(b"X").op(&(s.len() as u32).to_le_bytes()).op(s.as_bytes())
    }
    fn int(self, i: i32) -> P {
        self.op(b"J").op(&i.to_le_bytes())
    }
    fn global(self, module: &str, name: &str) -> P {
        self.op(b"c").op(module.as_bytes()).op(b"\n").op(name.as_bytes()).op(b"\n")
    }
    fn ints(self, v: &[i32]) -> P {
        v.iter().fold(self.op(b"("), |p, &i| p.int(i)).op(b"t")
    }
    fn stop(self) -> Vec<u8> {
        self.op(b".").0
    }
}

fn run(data: &[u8]) -> c10::Result<Value> {
    pickle::unpickle(data, "test.pkl", &mut NoHooks)
}

#[test]
fn mutation_through_the_memo_is_seen_by_every_reference() {
    // l = []; t = (l,); l.append(7) after t was built, through the memo.
    let data = P::new().op(b"]q\x00h\x00\x85q\x01").op(b"0K\x07a0").op(b"h\x01").stop();
    let v = run(&data).unwrap();
    let t = v.as_tuple().unwrap();
    assert_eq!(t[0].as_list().unwrap().borrow()[0].as_int(), Some(7));
    // A list containing itself prints finitely.
    let v = run(&P::new().op(b"]q\x00h\x00a").stop()).unwrap();
    let l = v.as_list().unwrap();
    assert!(l.borrow()[0].as_list().unwrap().ptr_eq(l));
    assert!(format!("{v:?}").contains("[[[[...]]]]"));
}

#[test]
fn deeply_nested_values_drop_without_recursion() {
    const DEPTH: usize = 1_000_000;
    let mut tuples = P::new().op(b"N");
    tuples.0.extend(std::iter::repeat_n(0x85u8, DEPTH)); // TUPLE1
    let v = run(&tuples.stop()).unwrap();
    assert!(format!("{v:?}").starts_with("(((((((((((((((((..."));
    drop(v);
    let mut lists = P::new();
    lists.0.extend(std::iter::repeat_n(b'(', DEPTH));
    lists.0.extend(std::iter::repeat_n(b'l', DEPTH));
    let v = run(&lists.op(b"}").stop());
    assert!(v.is_ok_and(|v| v.as_dict().is_some()));
    let mut lists = P::new();
    lists.0.extend(std::iter::repeat_n(b'(', DEPTH));
    lists.0.extend(std::iter::repeat_n(b'l', DEPTH));
    let err = run(&lists.op(b"\xff").stop()).unwrap_err(); // the error path drops the stack
    assert!(err.to_string().starts_with("unsupported pickle opcode 0xff"));
}

#[test]
fn scalars_strings_and_bytes_decode_as_python() {
    let long = |bytes: &[u8]| run(&P::new().op(&[0x8a, bytes.len() as u8]).op(bytes).stop()).unwrap();
    assert_eq!(long(&[]).as_int(), Some(0));
    assert_eq!(long(&[0xff]).as_int(), Some(-1));
    assert_eq!(long(&[0x00, 0x80]).as_int(), Some(-32768));
    assert_eq!(long(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0xff]).as_int(), Some(i64::MIN));
    assert_eq!(long(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00]).as_int(), Some(i64::MAX));
    assert!(matches!(long(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0x00]), Value::BigInt(_))); // 2**63
    assert_eq!(run(&P::new().int(-5).stop()).unwrap().as_int(), Some(-5));
    assert_eq!(run(&P::new().op(b"M\xff\xff").stop()).unwrap().as_int(), Some(65535));
    assert_eq!(run(&P::new().op(b"G\x3f\xf8\0\0\0\0\0\0").stop()).unwrap().as_float(), Some(1.5));
    assert_eq!(run(&P::new().str("h\u{e9}").stop()).unwrap().as_str(), Some("h\u{e9}"));
    assert_eq!(run(&P::new().op(b"U\x02hi").stop()).unwrap().as_str(), Some("hi"));
    assert_eq!(run(&P::new().op(b"C\x02\x00\xff").stop()).unwrap().as_bytes(), Some(&[0u8, 0xff][..]));
    // Protocol 2's bytes: _codecs.encode('\x00\xff', 'latin1').
    let v = run(&P::new().global("_codecs", "encode").str("\u{0}\u{ff}").str("latin1").op(b"\x86R").stop()).unwrap();
    assert_eq!(v.as_bytes(), Some(&[0u8, 0xff][..]));
    // Protocol 2's set: __builtin__.set([1, 2]).
    let v = run(&P::new().global("__builtin__", "set").op(b"](K\x01K\x02e\x85R").stop()).unwrap();
    assert_eq!(format!("{v:?}"), "{1, 2}");
    assert_eq!(format!("{:?}", run(&P::new().op(b"\x8f").stop()).unwrap()), "set()");
    let v = run(&P::new().global("torch", "device").str("cpu").op(b"\x85R").stop()).unwrap();
    assert!(matches!(v, Value::Device(d) if d == Device::CPU));
}

/// Hooks that allow the globals a predicate accepts beyond PyTorch's list (what
/// `torch.serialization.add_safe_globals` does).
struct Allow(fn(&Global) -> bool);

impl PickleHooks for Allow {
    fn persistent_load(&mut self, _: &Value) -> c10::Result<Value> {
        unreachable!("no persistent ids here")
    }
    fn allows_global(&self, global: &Global) -> bool {
        (self.0)(global)
    }
}

#[test]
fn unknown_classes_become_objects_and_hooks_can_resolve_them() {
    // Point.__new__(Point) with state {'x': 3}, as a scripted module's attributes are pickled.
    let data = P::new().global("__main__", "Point").op(b")\x81}").str("x").op(b"K\x03sb").stop();
    // Not on PyTorch's weights_only list: refused unless the hooks allow it.
    let err = run(&data).unwrap_err().to_string();
    assert_eq!(
        err,
        "unsupported global: GLOBAL __main__.Point is not an allowed global (PyTorch's weights_only unpickler \
         refuses it too) at byte 2 of test.pkl"
    );
    let v = pickle::unpickle(&data, "t", &mut Allow(|g| g.is("__main__", "Point"))).unwrap();
    let o = v.as_object().unwrap();
    assert!(o.class().is("__main__", "Point"));
    assert!(o.args().is_empty());
    assert_eq!(o.state().unwrap().as_dict().unwrap().get("x").unwrap().as_int(), Some(3));
    assert_eq!(format!("{v:?}"), "__main__.Point().__setstate__({\"x\": 3})");

    struct Points;
    impl PickleHooks for Points {
        fn persistent_load(&mut self, _: &Value) -> c10::Result<Value> {
            unreachable!("no persistent ids here")
        }
        fn allows_global(&self, global: &Global) -> bool {
            global.is("__main__", "Point")
        }
        fn reduce(&mut self, class: &Global, args: &Tuple) -> c10::Result<Option<Value>> {
            Ok(class.is("__main__", "Point").then(|| Value::Int(args.len() as i64 + 40)))
        }
    }
    let data = P::new().global("__main__", "Point").op(b"K\x01K\x02\x86\x81").stop();
    assert_eq!(pickle::unpickle(&data, "t", &mut Points).unwrap().as_int(), Some(42));
}

/// `{'w': _rebuild_tensor_v2(<storage 0 of mlp.pt: 32 floats>, offset, size, stride, False, {})}`.
fn rebuild(offset: i32, size: &[i32], stride: &[i32]) -> Vec<u8> {
    P::new()
        .op(b"}")
        .str("w")
        .global("torch._utils", "_rebuild_tensor_v2")
        .op(b"((")
        .str("storage")
        .global("torch", "FloatStorage")
        .str("0")
        .str("cpu")
        .int(32)
        .op(b"tQ")
        .int(offset)
        .ints(size)
        .ints(stride)
        .op(b"\x89}tR")
        .op(b"s")
        .stop()
}

fn load_rebuild(offset: i32, size: &[i32], stride: &[i32]) -> c10::Result<StateDict> {
    let data = rebuild(offset, size, stride);
    let bytes = edited_mlp(|name, d| {
        if name.ends_with("data.pkl") {
            *d = data.clone();
        }
    });
    let path =
        std::env::temp_dir().join(format!("nn-pt-rebuild-{}-{offset}-{size:?}-{stride:?}.pt", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let state = nn::load_pt(&path);
    std::fs::remove_file(&path).unwrap();
    state
}

#[test]
fn views_must_stay_inside_their_storage() {
    let w = load_rebuild(0, &[8, 4], &[4, 1]).unwrap();
    assert_bit_equal(w.get("w").unwrap(), &expect(&expected(), "mlp.state.0.weight"), "w");
    let t = load_rebuild(3, &[2, 2], &[1, 10]).unwrap();
    assert_eq!((t.get("w").unwrap().strides(), t.get("w").unwrap().storage_offset()), (&[1, 10][..], 3));
    assert!(load_rebuild(31, &[1], &[1]).is_ok());
    assert!(load_rebuild(40, &[0, 5], &[5, 1]).is_ok()); // empty: addresses nothing
    for (offset, size, stride, why) in [
        (0, &[33][..], &[1][..], "address 33 elements, but the storage holds 32 elements of float32"),
        (32, &[1], &[1], "address 33 elements"),
        (0, &[4, 9], &[9, 1], "address 36 elements"),
        (0, &[2], &[-1], "do not describe a tensor"),
        (-1, &[2], &[1], "negative storage offset -1"),
        (0, &[-2], &[1], "negative dimension -2"),
        (0, &[2, 2], &[1], "different lengths"),
    ] {
        let err = load_rebuild(offset, size, stride).unwrap_err().to_string();
        assert!(err.contains(why) && err.contains("torch._utils._rebuild_tensor_v2: "), "{size:?} {stride:?}: {err}");
    }
}

#[test]
fn malformed_pickles_are_errors_naming_the_cause() {
    for (data, why) in [
        (&b"\x80\x02h\x05."[..], "memo key 5 not found at byte 2"),
        (b"\x80\x02X\x01\x00\x00\x00\xff.", "a string is not valid UTF-8"),
        (b"\x80\x02X\xff\xff\xff\xff", "pickle data was truncated: 4294967295 bytes needed, 0 left at byte 2"),
        (b"\x80\x02\x8e\xff\xff\xff\xff\xff\xff\xff\x7f", "pickle data was truncated"),
        (b"\x80\x02\x8b\xff\xff\xff\xff", "negative length -1"),
        (b"\x80\x02\x95\x10\x00\x00\x00\x00\x00\x00\x00N.", "a frame of 16 bytes, 2 left"),
        (b"\x80\x06N.", "unsupported pickle protocol 6"),
        (b"\x80\x02.", "unpickling stack underflow at byte 2"),
        (b"\x80\x02K\x01(a.", "unpickling stack underflow at byte 5"),
        (b"\x80\x02t.", "could not find MARK"),
        (b"\x80\x02K\x01K\x02a.", "APPEND to a int"),
        (b"\x80\x02](K\x01u.", "1 items for a dict"),
        (b"\x80\x02K\x01)R.", "calling a int is not supported"),
        (b"\x80\x02N", "pickle data was truncated: no STOP opcode at byte 3"),
        (b"\x80\x02ctorch\nFloat", "a line has no end"),
        (b"\x80\x02K\x01Q.", "no resolver for persistent ids"),
        (b"\x80\x02ctorch._utils\n_rebuild_qtensor\n)R.", "this kind of tensor"),
    ] {
        let err = run(data).unwrap_err().to_string();
        assert!(err.contains(why) && err.ends_with("test.pkl"), "{data:?}: {err}");
    }
}

#[test]
fn globals_outside_the_weights_only_list_are_refused() {
    // A state_dict naming os.system where it names OrderedDict: torch.load refuses it, and so
    // does load_pt, naming the global, the pickle and the file.
    let bytes = edited_mlp(|name, data| {
        if name.ends_with("data.pkl") {
            let at = data.windows(24).position(|w| w == b"collections\nOrderedDict\n").unwrap();
            data.splice(at..at + 24, b"os\nsystem\n".iter().copied());
        }
    });
    let err = load_err(bytes.clone());
    assert!(
        err.starts_with("unsupported global: GLOBAL os.system is not an allowed global")
            && err.ends_with(" of mlp/data.pkl in damaged.pt"),
        "{err}"
    );
    let path = std::env::temp_dir().join(format!("nn-pt-system-{}.pt", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let err = nn::load_pt(&path).unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(err.contains("GLOBAL os.system is not an allowed global") && err.contains("nn-pt-system-"), "{err}");
    // Through STACK_GLOBAL (protocol 4), and for names a hook would allow: sys, os, posix and nt
    // are refused whatever the hooks say.
    let stack_global = P::new().str("builtins").str("eval").op(b"\x93").stop();
    let err = run(&stack_global).unwrap_err().to_string();
    assert!(err.starts_with("unsupported global: GLOBAL builtins.eval is not an allowed global"), "{err}");
    let mut allow_all = Allow(|_| true);
    for (module, name) in
        [("os", "system"), ("posix", "system"), ("nt", "system"), ("sys", "exit"), ("os.path", "join")]
    {
        let err = pickle::unpickle(&P::new().global(module, name).stop(), "t", &mut allow_all).unwrap_err().to_string();
        assert!(err.contains(&format!("GLOBAL {module}.{name} is not an allowed global")), "{err}");
    }
    assert!(pickle::unpickle(&P::new().global("__main__", "Point").stop(), "t", &mut allow_all).is_ok());
    // Everything on the list is accepted: dtypes, storages, containers, the rebuilders.
    for (module, name) in [
        ("torch", "float16"),
        ("torch", "FloatStorage"),
        ("torch.cuda", "HalfStorage"),
        ("collections", "Counter"),
        ("__builtin__", "set"),
        ("torch._utils", "_rebuild_parameter"),
        ("torch.nn.parameter", "Parameter"),
    ] {
        let v = run(&P::new().global(module, name).stop());
        assert!(v.is_ok(), "{module}.{name}: {v:?}");
    }
    for (module, name) in [("builtins", "frozenset"), ("torch", "float"), ("torch._utils", "_rebuild_nested_tensor")] {
        assert!(run(&P::new().global(module, name).stop()).is_err(), "{module}.{name}");
    }
}

#[test]
fn a_deeply_nested_build_state_is_walked_without_recursion() {
    // BUILD on a tensor with a state of a million nested 1-tuples around None: empty, so the
    // tensor loads; the check walks the tuples without recursing (a recursion would abort).
    let mut data = rebuild(0, &[8, 4], &[4, 1]);
    data.truncate(data.len() - 2); // before SETITEM and STOP
    data.push(b'N');
    data.extend(std::iter::repeat_n(0x85u8, 1_000_000)); // TUPLE1
    data.extend_from_slice(b"bs.");
    let bytes = edited_mlp(|name, d| {
        if name.ends_with("data.pkl") {
            *d = data.clone();
        }
    });
    let mut archive = PtArchive::from_bytes(bytes, "deep.pt").unwrap();
    let v = archive.unpickle("data.pkl").unwrap();
    assert_eq!(v.as_dict().unwrap().get("w").unwrap().as_tensor().unwrap().sizes(), [8, 4]);
}

/// Note [Zip archive offsets]: a file whose first record name has 30 characters, whose first
/// central directory entry is then as long as PyTorch's zip64 end records, was read from the
/// wrong offset and refused ("Invalid Central Directory header").
#[test]
fn an_archive_whose_first_directory_entry_is_76_bytes_loads() {
    let state = nn::load_pt(fixture("mymodel_checkpoint_v1.pt")).unwrap();
    assert_eq!(state.keys().collect::<Vec<_>>(), ["w", "b"]);
    assert_eq!(state.get("w").unwrap().to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(state.get("w").unwrap().sizes(), &[2, 3]);
    assert_eq!(state.get("b").unwrap().to_vec::<i64>().unwrap(), [1, -2]);
}
