//! Tests of `IValue::from_default`, schema defaults as values (moved out of the crate: Note
//! [Tests outside aten]).

use aten::ivalue::IValue;
use c10::{MemoryFormat, Scalar, ScalarType};
use schema::parse_schema;

fn defaults(s: &str) -> Vec<IValue> {
    let f = parse_schema(s).unwrap();
    f.arguments.iter().map(|a| IValue::from_default(a.default.as_ref().unwrap(), &a.ty).unwrap()).collect()
}

#[test]
fn schema_defaults_become_the_arguments_values() {
    let v = defaults(
        "f(Scalar alpha=1, int[2] stride=1, ScalarType? dtype=long, int reduction=Mean, float eps=1, \
         float? p=None, str mode=\"mean\", MemoryFormat m=contiguous_format, Scalar b=0.5, bool[2] k=[True, False]) -> ()",
    );
    assert!(matches!(v[0], IValue::Scalar(Scalar::Int(1))));
    assert!(matches!(&v[1], IValue::IntList(l) if l == &[1, 1]));
    assert!(matches!(v[2], IValue::ScalarType(ScalarType::I64)));
    assert!(matches!(v[3], IValue::Int(1)));
    assert!(matches!(v[4], IValue::Double(x) if x == 1.0));
    assert!(matches!(v[5], IValue::None));
    assert!(matches!(&v[6], IValue::Str(s) if s == "mean"));
    assert!(matches!(v[7], IValue::MemoryFormat(MemoryFormat::Contiguous)));
    assert!(matches!(v[8], IValue::Scalar(Scalar::Float(x)) if x == 0.5));
    assert!(matches!(&v[9], IValue::BoolList(b) if b == &[true, false]));
    let f = parse_schema("f(int reduction=Median) -> ()").unwrap();
    assert!(IValue::from_default(f.arguments[0].default.as_ref().unwrap(), &f.arguments[0].ty).is_err());
}
