//! Tests of the YAML module against expectations captured from real Helm.
use super::*;

#[test]
fn values_parse_like_helm() {
    let mut failures = Vec::new();
    for (input, want) in probe_parse::VALUES_TO_JSON {
        let got = match parse_values(input) {
            Ok(n) => to_json(&n, true),
            Err(e) => format!("ERR:{e}"),
        };
        if &got != want {
            failures.push(format!("{input:?}\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn values_numbers_are_float64() {
    let n = parse_values("a: 3\nb: [1, 2.5]\n").unwrap();
    let Node::Map(m) = n else { panic!() };
    assert_eq!(m["a"], Node::Float(3.0));
    assert_eq!(m["b"], Node::Seq(vec![Node::Float(1.0), Node::Float(2.5)]));
}

#[test]
fn values_empty_and_shapes() {
    assert_eq!(parse_values("").unwrap(), Node::Map(Default::default()));
    assert_eq!(
        parse_values("# c\n").unwrap(),
        Node::Map(Default::default())
    );
    assert_eq!(parse_values("~").unwrap(), Node::Map(Default::default()));
    assert_eq!(parse_values_array("").unwrap(), Node::Seq(vec![]));
    assert_eq!(
        parse_values_array("a: 1").unwrap_err().to_string(),
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type []interface {}"
    );
    // Only the first document counts.
    assert_eq!(
        to_json(&parse_values("a: 1\n---\nb: 2").unwrap(), true),
        "{\"a\":1}"
    );
}

#[test]
fn documents_keep_yaml_v2_types() {
    let docs = parse_documents("a: 1\nb: 1.5\nc: 0x10\n---\n# only a comment\n---\n- x\n").unwrap();
    assert_eq!(docs.len(), 3);
    let Node::Map(m) = &docs[0] else { panic!() };
    assert_eq!(m["a"], Node::Int(1));
    assert_eq!(m["b"], Node::Float(1.5));
    assert_eq!(m["c"], Node::Int(16));
    assert_eq!(docs[1], Node::Null);
    assert_eq!(docs[2], Node::Seq(vec![Node::Str("x".into())]));
}

#[test]
fn document_errors_have_index_and_position() {
    let e = parse_documents("a: 1\n---\nb: [\n").unwrap_err();
    assert_eq!(e.document(), Some(1));
    assert!(e.position().is_some());
    let e = parse_documents("a: 1\n---\nb: .inf\n").unwrap_err();
    assert_eq!(e.document(), Some(1));
    assert_eq!(
        e.to_string(),
        "error converting YAML to JSON: json: unsupported value: +Inf"
    );
}

#[test]
fn excessive_aliasing_fails() {
    let mut s = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    let mut prev = 'a';
    for c in "bcdefghi".chars() {
        s.push_str(&format!("{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        prev = c;
    }
    let e = parse_values(&s).unwrap_err();
    assert!(e.to_string().contains("excessive aliasing"), "{e}");
}

#[test]
fn emitters_match_helm() {
    let mut failures = Vec::new();
    for (kind, values, want) in probe_emit::EMIT {
        let n = parse_values(values).unwrap();
        let got = match *kind {
            "yaml" => to_yaml(&n).trim_end_matches('\n').to_string(),
            "yaml_s" => {
                let Node::Map(m) = &n else { panic!() };
                to_yaml(&m["s"]).trim_end_matches('\n').to_string()
            }
            "pretty" => to_yaml_pretty(&n).trim_end_matches('\n').to_string(),
            "json" => to_json(&n, true),
            "rawjson" => to_json(&n, false),
            "prettyjson" => to_json_pretty(&n, "  "),
            other => panic!("unknown kind {other}"),
        };
        // Helm's toYaml/toYamlPretty trim one trailing newline; a `|+`
        // block keeps the rest.
        if got != *want {
            failures.push(format!(
                "{kind} {values:?}\n  want {want:?}\n  got  {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn key_order_is_yaml_v2_natural_order() {
    let n =
        parse_values("zeta: 1\nAlpha: 2\nalpha: 3\n\"10\": 4\n\"9\": 5\n_x: 6\na10: 7\na2: 8\n")
            .unwrap();
    assert_eq!(
        to_yaml(&n),
        "_x: 6\n\"9\": 5\n\"10\": 4\nAlpha: 2\na2: 8\na10: 7\nalpha: 3\nzeta: 1\n"
    );
}

#[test]
fn emit_errors_give_empty_output() {
    assert_eq!(to_yaml(&Node::Float(f64::INFINITY)), "");
    assert_eq!(to_yaml(&Node::Str("\u{7f}".into())), "");
    assert_eq!(to_yaml(&Node::Str("a\u{85}b".into())), "a b\n");
    assert_eq!(to_yaml(&Node::Null), "null\n");
    assert_eq!(to_yaml(&Node::Map(Default::default())), "{}\n");
}
