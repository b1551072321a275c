//! The engine never panics, hangs or overflows the stack on arbitrary
//! template text and values. 10 000 cases by default; `PROPTEST_CASES`
//! overrides the count.
use proptest::prelude::*;
use rudder::template::{Engine, EngineOptions, MapKind, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Fragments that exercise every lexer and parser path, mixed with noise.
const PIECES: &[&str] = &[
    "{{",
    "}}",
    "{{- ",
    " -}}",
    "{{/* c */}}",
    "(",
    ")",
    "|",
    " ",
    "\n",
    ".",
    ".Values",
    ".a",
    ".b",
    "$",
    "$x",
    ":=",
    "=",
    ",",
    "\"s\"",
    "`r`",
    "'c'",
    "1",
    "-2",
    "3.5",
    "0x1F",
    "1e3",
    "1i",
    "nil",
    "true",
    "if",
    "else",
    "end",
    "range",
    "with",
    "define \"d\"",
    "template \"d\"",
    "block \"b\" .",
    "break",
    "continue",
    "and",
    "or",
    "not",
    "len",
    "index",
    "slice",
    "print",
    "printf \"%v %d\"",
    "eq",
    "ne",
    "lt",
    "include \"d\"",
    "tpl",
    "required \"r\"",
    "fail \"f\"",
    "html",
    "js",
    "urlquery",
    "call",
    "-",
    "%",
    "{",
    "}",
    "é",
    "\\",
];

fn template_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(PIECES).prop_map(|s| s.to_string()),
            1 => "[ -~]{0,6}",
        ],
        0..40,
    )
    .prop_map(|v| v.concat())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        "[a-z]{0,4}".prop_map(Value::str),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::list),
            prop::collection::btree_map("[a-b]", inner, 0..3).prop_map(Value::map),
        ]
    })
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn engine_never_panics(text in template_text(), vals in value(), other in template_text()) {
        let mut engine = Engine::new(EngineOptions { max_output_bytes: 1 << 20, ..EngineOptions::default() });
        let _ = engine.add_template("other.tpl", &other);
        if engine.add_template("t.txt", &text).is_ok() {
            let mut top = BTreeMap::new();
            top.insert("Values".to_string(), vals);
            let data = Value::Map(Rc::new(RefCell::new(top)), MapKind::Values);
            let _ = engine.execute("t.txt", &data);
            let _ = engine.execute("d", &data);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let mut engine = Engine::default();
    let deep = format!("{{{{ {}1{} }}}}", "(".repeat(5000), ")".repeat(5000));
    assert!(engine.add_template("deep.txt", &deep).is_err());
    let ifs = format!("{}x{}", "{{if 1}}".repeat(5000), "{{end}}".repeat(5000));
    assert!(engine.add_template("ifs.txt", &ifs).is_err());
    engine
        .add_template(
            "rec.txt",
            "{{define \"a\"}}{{template \"a\" .}}{{end}}{{template \"a\" .}}",
        )
        .expect("parses");
    let err = engine
        .execute("rec.txt", &Value::Nil)
        .expect_err("recursion is bounded");
    assert!(
        err.to_string().contains("exceeded maximum template depth"),
        "{err}"
    );
    engine
        .add_template(
            "inc.txt",
            "{{define \"i\"}}{{tpl \"{{include \\\"i\\\" .}}\" .}}{{end}}{{include \"i\" .}}",
        )
        .expect("parses");
    assert!(engine.execute("inc.txt", &Value::Nil).is_err());
}
