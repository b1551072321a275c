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
            "yaml_a" => {
                let Node::Map(m) = &n else { panic!() };
                to_yaml(&m["a"]).trim_end_matches('\n').to_string()
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

/// Probed against Helm 3.17.2: yaml.v2 reads each JSON key as a simple key,
/// so a key with U+0085 or longer than 1024 characters of JSON text fails.
#[test]
fn json_keys_must_be_simple_keys() {
    let map = |k: &str| Node::Map([(k.to_string(), Node::Int(1))].into_iter().collect());
    assert_eq!(to_yaml(&map(&"a".repeat(1022))).len(), 1029);
    assert_eq!(to_yaml(&map(&"a".repeat(1023))), "");
    assert_eq!(to_yaml(&map(&"\u{e9}".repeat(1022))).len(), 2051);
    assert_eq!(to_yaml(&map(&"\u{e9}".repeat(1023))), "");
    assert_eq!(to_yaml(&map(&format!("{}\"", "a".repeat(1021)))), "");
    assert_eq!(to_yaml(&map("a\u{85}b")), "");
    assert_eq!(to_yaml(&map("a\u{2028}")), "? 'a\u{2028}'\n: 1\n");
    let nested = Node::Seq(vec![map(&"a".repeat(1030))]);
    assert_eq!(to_yaml(&nested), "");
}

/// Probed against Helm 3.17.2: yaml.v2 tests for a BOM at the start of the
/// value, so such a value has every character escaped.
#[test]
fn leading_bom_escapes_every_character() {
    let s = |x: &str| Node::Str(x.to_string());
    assert_eq!(to_yaml(&s("\u{feff}bom")), "\"\\uFEFF\\x62\\x6F\\x6D\"\n");
    assert_eq!(to_yaml(&s("a\u{feff}b")), "\"a\\uFEFFb\"\n");
    assert_eq!(
        to_yaml(&s("\u{feff}\u{e9}\u{1F600}\n")),
        "\"\\uFEFF\\xE9\\U0001F600\\n\"\n"
    );
    assert_eq!(to_yaml_pretty(&s("\u{feff}ab")), "\"\\uFEFF\\x61\\x62\"\n");
}

mod props {
    use super::super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Strings yaml.v2 can read back after Go's JSON encoding (no DEL, C1
    /// controls or non-characters, which make Helm's toYaml fail; no NEL,
    /// which yaml.v2 folds).
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9 _.:#'\"-]{0,12}",
            "(yes|no|on|off|y|n|true|null|~|0x1F|017|1e3|1:30|2024-01-01|- a|a: b| a |<<|\\.inf)",
            any::<String>().prop_map(|s| s
                .chars()
                .filter(|&c| {
                    let n = c as u32;
                    !(n == 0x7f || (0x80..0xa0).contains(&n) || n == 0xfffe || n == 0xffff)
                })
                .collect()),
        ]
    }

    fn scalar() -> impl Strategy<Value = Node> {
        prop_oneof![
            text().prop_map(Node::Str),
            any::<bool>().prop_map(Node::Bool),
            (-1_000_000_000i64..1_000_000_000).prop_map(|i| Node::Float(i as f64)),
            // -0 is written as 0, as Helm writes it.
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| Node::Float(if f == 0.0 { 0.0 } else { f })),
            Just(Node::Null),
        ]
    }

    fn tree() -> impl Strategy<Value = Node> {
        scalar().prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Node::Seq),
                prop::collection::btree_map(text(), inner, 0..5).prop_map(Node::Map),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parsers_never_panic(s in any::<String>()) {
            let _ = parse_values(&s);
            let _ = parse_documents(&s);
            let _ = parse_json(&s);
            let _ = parse_toml(&s);
        }

        #[test]
        fn parsers_never_panic_on_yamlish(s in "[-:{}\\[\\]&*!|>'\"%@`#?, \\n\\t\\\\a-z0-9<.~]{0,60}") {
            let _ = parse_values(&s);
            let _ = parse_documents(&s);
            let _ = parse_toml(&s);
        }

        #[test]
        fn to_yaml_round_trips(m in prop::collection::btree_map(text(), tree(), 0..6)) {
            // A `<<` key is written plain and read back as a merge key, in
            // Helm too; leave it out.
            fn no_merge_keys(n: Node) -> Node {
                match n {
                    Node::Map(m) => Node::Map(
                        m.into_iter()
                            .filter(|(k, _)| k != "<<")
                            .map(|(k, v)| (k, no_merge_keys(v)))
                            .collect(),
                    ),
                    Node::Seq(items) => Node::Seq(items.into_iter().map(no_merge_keys).collect()),
                    other => other,
                }
            }
            let n = no_merge_keys(Node::Map(m));
            let text = to_yaml(&n);
            let back = parse_values(&text);
            prop_assert!(back.is_ok(), "{text:?}: {back:?}");
            let back = back.unwrap_or_default();
            // The JSON round trip is the identity for these values.
            prop_assert_eq!(to_json(&back, true), to_json(&n, true), "{}", text);
        }

        #[test]
        fn json_round_trips(m in prop::collection::btree_map(text(), tree(), 0..6)) {
            let n = Node::Map(m);
            let text = to_json(&n, false);
            let back = parse_json(&text);
            prop_assert!(back.is_ok(), "{text:?}");
            prop_assert_eq!(back.unwrap_or_default(), n);
        }

        #[test]
        fn toml_round_trips(m in prop::collection::btree_map("[a-z]{1,5}", prop_oneof![
            "[a-zA-Z0-9 _.\"\\\\]{0,8}".prop_map(Node::Str),
            any::<bool>().prop_map(Node::Bool),
            any::<i64>().prop_map(Node::Int),
        ], 0..6)) {
            let n = Node::Map(m);
            let text = to_toml(&n);
            let back = parse_toml(&text);
            prop_assert!(back.is_ok(), "{text:?}: {back:?}");
            prop_assert_eq!(back.unwrap_or_default(), n);
        }
    }

    proptest! {
        // Cheap cases over a vocabulary of the constructs that decide
        // between the keyed loader's shortcut and the full decode.
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn keyed_parse_agrees_with_full_parse(
            lines in prop::collection::vec((
                prop::sample::select(vec![
                    "apiVersion", "kind", "metadata", "spec", "<<", "1", "~", "\"kind\"",
                    "!!str kind", "? [a]", "1.5", "2019-01-01", "&k kind",
                ]),
                prop::sample::select(vec![
                    "x", ".nan", "&a {b: 1}", "*a", "!!int x", "{<<: {c: 1}}", "[1, .inf]",
                    "{~: 1}", "{1: 2}", "{a: 1, a: .nan}", "{name: n, namespace: s}",
                    "!!float 1", "'q'", "-.Inf", "{annotations: {x: y}}", "[{a: [b]}]",
                    "18446744073709551615", "{? {a: 1} : b}",
                ]),
            ), 0..6),
            junk in prop_oneof![Just(String::new()), "[-:{}\\[\\]&*!|>'\"#?, \n.a-z0-9]{0,12}"],
        ) {
            let mut text: String = lines.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
            text.push_str(&junk);
            let keys = ["apiVersion", "kind", "metadata"];
            let full = parse_yaml_to_json(&text).map(|n| match n {
                Node::Map(mut m) => {
                    m.retain(|k, _| keys.contains(&k.as_str()));
                    Node::Map(m)
                }
                other => other,
            });
            let keyed = super::super::parse_yaml_to_json_keys(&text, &keys);
            match (full, keyed) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", text),
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string(), "{}", text),
                (a, b) => prop_assert!(false, "{text:?}: full {a:?}, keyed {b:?}"),
            }
        }
    }

    #[test]
    fn empty_map_round_trip() {
        let n = Node::Map(BTreeMap::new());
        assert_eq!(parse_values(&to_yaml(&n)).unwrap(), n);
    }
}

#[test]
fn keep_chomped_block_without_text() {
    // What helm 3.17.2's fromYaml gives (checked with helm-probe).
    let cases = [
        (
            "apiVersion:\n apiVersion: |+\n",
            "{\"apiVersion\":{\"apiVersion\":\"\"}}",
        ),
        (
            "apiVersion:\n apiVersion: |+",
            "{\"apiVersion\":{\"apiVersion\":\"\"}}",
        ),
        ("a: |+\n\n", "{\"a\":\"\\n\"}"),
    ];
    for (text, json) in cases {
        assert_eq!(
            to_json(&parse_values(text).unwrap(), false),
            json,
            "{text:?}"
        );
    }
}

/// Helm's depth limit and messages (helm v3.17.2): 10,000 levels read,
/// deeper flow collections refused with libyaml's message at their line (no
/// line on the first). Deeper block collections are refused with the same
/// message (Helm gives `encoding/json`'s `exceeded max depth` for some).
#[test]
fn depth_limit_is_helms() {
    // A deep mapping is dropped recursively (BTreeMap's own drop): 8 MiB,
    // a main thread's stack, holds 10,000 levels in debug builds.
    let stack = 8 << 20;
    let r = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let msg = |t: String| parse_values(&t).map(|_| ()).map_err(|e| e.to_string());
            (
                msg(format!("a:\n{}x\n", "- ".repeat(9_998))),
                msg(format!("a:\n{}x\n", "- ".repeat(10_000))),
                msg(format!("{}1{}", "[".repeat(10_001), "]".repeat(10_001))),
                msg(format!(
                    "x: 1\ny: 2\nz: {}1{}",
                    "[".repeat(10_001),
                    "]".repeat(10_001)
                )),
                msg(format!("a: {}1{}", "[".repeat(255), "]".repeat(255))),
                msg(format!("a: {}1{}", "[".repeat(300), "]".repeat(300))),
                msg(format!("a: {}1{}", "{a: ".repeat(250), "}".repeat(250))),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r.0, Ok(()));
    assert_eq!(
        r.1,
        Err("error converting YAML to JSON: yaml: line 2: exceeded max depth of 10000".into())
    );
    assert_eq!(
        r.2,
        Err("error converting YAML to JSON: yaml: exceeded max depth of 10000".into())
    );
    assert_eq!(
        r.3,
        Err("error converting YAML to JSON: yaml: line 3: exceeded max depth of 10000".into())
    );
    assert_eq!(r.4, Ok(()));
    // yaml-rust2 reads flow collections 255 deep at most: deeper ones that
    // Helm reads are refused with rudder's own message.
    assert_eq!(
        r.5,
        Err("error converting YAML to JSON: yaml: flow collections ([...], {...}) nested more than 255 deep are not supported (Helm reads up to 10000)".into())
    );
    assert_eq!(r.6, Ok(()));
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let deep_yaml = format!("{}x", "- ".repeat(100_000));
    let deep_flow = "[".repeat(100_000);
    let deep_json = "[".repeat(100_000) + &"]".repeat(100_000);
    let deep_toml = format!("a = {}", "[".repeat(100_000));
    let deep_toml_key = format!(
        "[{}]\n{} = 1",
        vec!["k"; 100_000].join("."),
        vec!["k"; 100].join(".")
    );
    let r = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let a = parse_values_array(&deep_yaml).is_err();
            let b = parse_values(&deep_flow).is_err();
            let c = parse_json(&deep_json).is_err();
            let d = parse_toml(&deep_toml).is_err() && parse_toml(&deep_toml_key).is_err();
            (a, b, c, d)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r, (true, true, true, true));
}

#[test]
fn alias_chains_and_limits() {
    let mut s = String::from("a0: &a0 [x]\n");
    for i in 1..3000 {
        s.push_str(&format!("a{i}: &a{i} [*a{}]\n", i - 1));
    }
    let r = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || parse_values(&s).map(|_| ()).map_err(|e| e.to_string()))
        .unwrap()
        .join()
        .unwrap();
    // Refused (by the alias budget or the depth limit), without a crash.
    assert!(r.is_err());
    // Deep but allowed (Helm's limit is 10,000 levels), written back and
    // dropped on a 2 MiB stack.
    let json = "[".repeat(10_000) + &"]".repeat(10_000);
    let yaml = format!("{}x", "- ".repeat(10_000));
    let r = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let j = parse_json(&json).unwrap();
            let y = parse_values_array(&yaml).unwrap();
            (
                to_json(&j, true).len(),
                to_yaml(&y).len(),
                to_yaml(&j).len(),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r.0, 20_000);
    assert!(r.1 > 0 && r.2 > 0);
    assert_eq!(
        parse_json(&"[".repeat(10_001)).unwrap_err().to_string(),
        "exceeded max depth"
    );
}

/// Windows line endings, as real Helm 3.17.2 reads them.
#[test]
fn crlf_values() {
    let cases = [
        (
            "a: |\r\n  x\r\n  y\r\nb: \"p\r\n  q\"\r\nc: >\r\n  f\r\n  g\r\n",
            "{\"a\":\"x\\ny\\n\",\"b\":\"p q\",\"c\":\"f g\\n\"}",
        ),
        (
            "a: 1\r\n# c\r\nb:\r\n  - x\r\n  - y\r\n",
            "{\"a\":1,\"b\":[\"x\",true]}",
        ),
        ("a: plain\r\n  more\r\n", "{\"a\":\"plain more\"}"),
        ("a: 's\r\n  t'\r\n", "{\"a\":\"s t\"}"),
        ("a: |-\r\n  x\r\n\r\n", "{\"a\":\"x\"}"),
        ("a: \"x\\\r\n  y\"\r\n", "{\"a\":\"xy\"}"),
    ];
    let mut failures = Vec::new();
    for (input, want) in cases {
        let got = match parse_values(input) {
            Ok(n) => to_json(&n, true),
            Err(e) => format!("ERR:{e}"),
        };
        if got != want {
            failures.push(format!("{input:?}\n  want {want}\n  got  {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Tabs, probed against Helm 3.17.2: libyaml skips tabs only where no simple
/// key may start, so a tab before the first token fails, a tab after a
/// simple key's ':' separates like a space, and a tab in a block scalar's
/// indentation is reported on its own line.
#[test]
fn tabs_follow_libyaml() {
    let err = |s: &str| parse_values(s).unwrap_err().to_string();
    assert_eq!(
        err("\ta: 1\n"),
        "error converting YAML to JSON: yaml: found character that cannot start any token"
    );
    assert_eq!(
        err("#c\n\t#c2\na: 1\n"),
        "error converting YAML to JSON: yaml: line 2: found character that cannot start any token"
    );
    assert_eq!(
        err("a: |\n\tx\n"),
        "error converting YAML to JSON: yaml: line 2: found a tab character where an indentation space is expected"
    );
    assert_eq!(
        to_json(&parse_values("a:\t1\n").unwrap(), true),
        r#"{"a":1}"#
    );
    assert_eq!(
        to_json(&parse_values("a:\tb\nc:\t[1,\t2]\n").unwrap(), true),
        r#"{"a":"b","c":[1,2]}"#
    );
    assert_eq!(
        to_json(&parse_values("a: \"x:\ty\"\n").unwrap(), true),
        r#"{"a":"x:\ty"}"#
    );
}

/// Probed against Helm 3.17.2: libyaml has no empty implicit keys; a ':'
/// with nothing before it fails (an explicit `?` may leave the key empty).
#[test]
fn empty_implicit_keys_fail() {
    let err = |s: &str| parse_values(s).unwrap_err().to_string();
    let prefix = "error converting YAML to JSON: yaml: ";
    assert_eq!(err(": x\n"), format!("{prefix}did not find expected key"));
    assert_eq!(
        err("a: 1\n: 2\n"),
        format!("{prefix}line 1: did not find expected key")
    );
    assert_eq!(
        err("a: {: x}\n"),
        format!("{prefix}did not find expected node content")
    );
    assert_eq!(
        err("a: [: x]\n"),
        format!("{prefix}did not find expected node content")
    );
    assert!(err("?\n: x\n").contains("unsupported map key"));
    assert_eq!(
        to_json(&parse_values("? a\n: x\nb: ':'\n").unwrap(), true),
        r#"{"a":"x","b":":"}"#
    );
}

/// Probed against Helm 3.17.2: yaml.v3 (`toYamlPretty`) puts a letter before
/// a non-letter when the runes before them end in a digit; yaml.v2
/// (`toYaml`) always puts the non-letter first.
#[test]
fn v3_key_order_after_digits() {
    let n = parse_values("\"1e3\": 1\n\"1~\": 2\na1b: 3\na1-: 4\n").unwrap();
    assert_eq!(to_yaml(&n), "1~: 2\n\"1e3\": 1\na1-: 4\na1b: 3\n");
    assert_eq!(to_yaml_pretty(&n), "\"1e3\": 1\n1~: 2\na1b: 3\na1-: 4\n");
}

/// Probed against Helm 3.17.2: `%#v` of a map key lists its entries in fmt's
/// order (nil, strings, uint64, int, float64, bool; each by value).
#[test]
fn invalid_map_key_lists_entries_in_fmt_order() {
    let text = "? {b: 1, 1: 2, 1.5: 3, true: 4, ~: 5, a: 6, 10: 7, 2: 8, false: 9, -1: 10, 9223372036854775808: 11, 0.5: 13}\n: x\n";
    assert_eq!(
        parse_values(text).unwrap_err().to_string(),
        "error converting YAML to JSON: yaml: invalid map key: map[interface {}]interface {}{interface {}(nil):5, \"a\":6, \"b\":1, 0x8000000000000000:11, -1:10, 1:2, 2:8, 10:7, 0.5:13, 1.5:3, false:9, true:4}"
    );
}

/// Probed against Helm 3.17.2: libyaml accepts tabs in the leading blanks
/// of a quoted scalar's continuation lines (they are folded away).
#[test]
fn tabs_in_quoted_continuation_lines() {
    let json = |s: &str| to_json(&parse_values(s).unwrap(), true);
    assert_eq!(json("a: \"x\n\ty\"\n"), r#"{"a":"x y"}"#);
    assert_eq!(json("a: 'x\n\t\ty'\n"), r#"{"a":"x y"}"#);
    assert_eq!(json("a: \"x\n\t\n\ty\"\n"), r#"{"a":"x\ny"}"#);
}

/// Probed against Helm 3.17.2: after a block entry '-' libyaml does not
/// skip tabs, and a '-' entry inside a flow collection is not node content.
#[test]
fn tab_after_block_entry_and_dash_in_flow() {
    let err = |s: &str| parse_values(s).unwrap_err().to_string();
    let prefix = "error converting YAML to JSON: yaml: ";
    assert_eq!(
        err("a:\n  - b\n  -\tc\n"),
        format!("{prefix}line 3: found character that cannot start any token")
    );
    assert_eq!(
        err("a:\n- \tx: 1\n"),
        format!("{prefix}line 2: found character that cannot start any token")
    );
    assert_eq!(
        err("a: [- 1]\n"),
        format!("{prefix}did not find expected node content")
    );
    assert_eq!(
        to_json(
            &parse_values("a: x -\tb\nc:\n  - |\n    -\tz\n").unwrap(),
            true
        ),
        r#"{"a":"x -\tb","c":["-\tz\n"]}"#
    );
}

/// Probed against Helm 3.17.2: a plain scalar ending its line reads on over
/// blank lines, where a tab left of its indentation + 1 fails; a tab further
/// right is a blank.
#[test]
fn tab_on_blank_line_after_plain_scalar() {
    let err = |s: &str| parse_values(s).unwrap_err().to_string();
    let prefix = "error converting YAML to JSON: yaml: ";
    let violates = "found a tab character that violates indentation";
    assert_eq!(
        err("a: 1\n\t\nb: 2\n"),
        format!("{prefix}line 2: {violates}")
    );
    assert_eq!(
        err("a:\n  b: 1\n\t\n"),
        format!("{prefix}line 3: {violates}")
    );
    assert_eq!(err("a: 1\n\n\t\n\n"), format!("{prefix}line 3: {violates}"));
    assert_eq!(err("a: 1\n\t# c\n"), format!("{prefix}line 2: {violates}"));
    let json = |s: &str| to_json(&parse_values(s).unwrap(), true);
    assert_eq!(json("a:\n  b: 1\n   \t\n"), r#"{"a":{"b":1}}"#);
    assert_eq!(json("a: x\n \t \ny: 2\n"), r#"{"a":"x","true":2}"#);
}

/// U+2028/U+2029 in single-quoted scalars fold as libyaml's line breaks
/// (expected values printed by Helm v3.17.2 for
/// `fromYaml "a: 'x \u2028    y'\nb: 'p\u2029 q'" | toJson`).
#[test]
fn unicode_line_separators_fold_like_libyaml() {
    let n = parse_values("a: 'x \u{2028}    y'\nb: 'p\u{2029} q'\n").expect("parses");
    assert_eq!(
        to_json(&n, true),
        "{\"a\":\"x\\u2028y\",\"b\":\"p\\u2029q\"}"
    );
}

/// A wide mapping decodes with Go's map assignment (a repeated key
/// replaces the value in place), indexed past a few entries: 100,000 keys in
/// a flow mapping, which the full parser reads, took minutes when every
/// assignment searched the keys before it.
#[test]
fn wide_mappings_keep_go_assignment() {
    let mut text = String::from("{");
    for i in 0..100 {
        text.push_str(&format!("k{i}: {i}, "));
    }
    text.push_str("k5: x, 1: a, 1.0: b, 0.0: c, -0.0: d, .nan: e, .nan: f, k99: last}");
    let docs = parse_documents(&text).unwrap();
    let Node::Map(m) = &docs[0] else {
        panic!("{docs:?}")
    };
    assert_eq!(m["k5"], Node::Str("x".into()));
    assert_eq!(m["k99"], Node::Str("last".into()));
    assert_eq!(m["k0"], Node::Int(0));
    // 1 (int) and 1.0 (float) are different keys in Go, as 0.0 and -0.0 are
    // the same; the stringified keys then collide as sigs.k8s.io/yaml's do.
    assert_eq!(m.len(), 100 + 3);
    let wide: String = format!(
        "{{{}}}",
        (0..100_000)
            .map(|i| format!("k{i}: {i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let Node::Map(m) = parse_values(&wide).unwrap() else {
        panic!("not a map")
    };
    assert_eq!(m.len(), 100_000);
}
