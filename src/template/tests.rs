//! Unit tests of the engine against behaviour verified with Helm.
use super::*;
use std::collections::BTreeMap;

fn run_with(text: &str, values: Value) -> Result<String, TemplateError> {
    let mut e = Engine::default();
    e.add_template("t.txt", text)?;
    let mut top = BTreeMap::new();
    top.insert("Values".to_string(), values);
    let data = Value::Map(Rc::new(RefCell::new(top)), MapKind::Values);
    e.execute("t.txt", &data)
}

fn vals(pairs: &[(&str, Value)]) -> Value {
    let m: BTreeMap<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Value::Map(Rc::new(RefCell::new(m)), MapKind::Values)
}

fn run(text: &str) -> String {
    match run_with(
        text,
        vals(&[("a", Value::Float(1.0)), ("s", Value::str("x"))]),
    ) {
        Ok(s) => s,
        Err(e) => format!("ERR {e}"),
    }
}

#[test]
fn plain_and_fields() {
    assert_eq!(run("hello {{ .Values.s }} {{ .Values.a }}"), "hello x 1");
    assert_eq!(run("{{ .Values.missing }}|"), "|");
    assert_eq!(
        run("{{ .Values.missing.sub }}"),
        "ERR template: t.txt:1:10: executing \"t.txt\" at <.Values.missing.sub>: nil pointer evaluating interface {}.sub"
    );
}

#[test]
fn control_flow() {
    let l = Value::list(vec![Value::Int(1), Value::Int(2), Value::Int(3)]);
    let r = |t: &str| run_with(t, vals(&[("l", l.clone())])).unwrap_or_else(|e| e.to_string());
    assert_eq!(r("{{ range $i, $v := .Values.l }}{{ if eq $v 2 }}{{ continue }}{{ end }}{{ $i }}{{ end }}"), "02");
    assert_eq!(
        r("{{ range .Values.l }}{{ if eq . 2 }}{{ break }}{{ end }}{{ . }}{{ end }}"),
        "1"
    );
    assert_eq!(
        run("{{ if false }}a{{ else if true }}b{{ else }}c{{ end }}"),
        "b"
    );
    assert_eq!(run("{{ with .Values.s }}{{ . }}{{ end }}"), "x");
    assert_eq!(run("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}"), "2");
    assert_eq!(
        run("{{ define \"d\" }}D{{ . }}{{ end }}{{ template \"d\" 3 }}"),
        "D3"
    );
}

#[test]
fn comparisons_and_errors() {
    assert_eq!(
        run("{{ eq 1 1 }} {{ lt 1 2 }} {{ eq \"a\" \"b\" \"a\" }}"),
        "true true true"
    );
    assert_eq!(
        run("{{ eq .Values.a 1 }}"),
        "ERR template: t.txt:1:3: executing \"t.txt\" at <eq .Values.a 1>: error calling eq: incompatible types for comparison"
    );
    assert_eq!(run("{{ and 1 0 2 }} {{ or 0 \"\" 3 }}"), "0 3");
    assert_eq!(run("{{ printf \"%d-%s\" 3 \"x\" }}"), "3-x");
    assert_eq!(run("{{ 3 | printf \"%d\" }}"), "3");
    assert_eq!(
        run("{{ fail \"boom\" }}"),
        "ERR execution error at (t.txt:1:3): boom"
    );
    assert_eq!(run("{{ 3-}}"), "ERR parse error at (t.txt:1): \"3-\"");
}

/// Go's number literals (`strconv` rules), as helm v3.17.2 renders them.
#[test]
fn number_literals_as_go_reads_them() {
    assert_eq!(
        run("{{ 0x1p-2 }} {{ 0b101 }} {{ 0o17 }} {{ 1_000 }} {{ -0 }} {{ 0x_1FFFp-16 }} {{ 017 }} {{ 1e3 }} {{ 0x10 }} {{ 1i }}"),
        "0.25 5 15 1000 0 0.1249847412109375 15 1000 16 (0+1i)"
    );
    // A hex mantissa needs a `p` exponent.
    assert_eq!(
        run("{{ 0x1.8 }}"),
        "ERR parse error at (t.txt:1): \"0x1.8\""
    );
}

#[test]
fn printf_matches_go() {
    assert_eq!(
        run(
            r#"{{ printf "%5.1f|%x|%X|%o|%e|%g|%8.3e|%+d|%x" 3.14159 255 "hi" 8 1234.5678 0.000012345 1234.5678 5 -255 }}"#
        ),
        "  3.1|ff|6869|10|1.234568e+03|1.2345e-05|1.235e+03|+5|-ff"
    );
    assert_eq!(
        run(
            r#"{{ printf "%q %v %t %c %U" "é\t" nil true 65 233 }}|{{ printf "%6.2f%%|%-6s|%06d" 12.345 "ab" -42 }}"#
        ),
        "\"é\\t\" <nil> true A U+00E9| 12.35%|ab    |-00042"
    );
}

#[test]
fn len_of_invalid_and_typed_nil() {
    assert!(run("{{ len (.Values.missing) }}")
        .ends_with("error calling len: reflect: call of reflect.Value.Type on zero Value"));
    assert!(run("{{ len .Values.missing }}").ends_with("error calling len: len of nil pointer"));
}

#[test]
fn no_value_grows_past_the_output_limit() {
    let e = |text: &str| {
        let mut e = Engine::new(EngineOptions {
            max_output_bytes: 1000,
            ..EngineOptions::default()
        });
        e.add_template("t", text).expect("parses");
        e.execute("t", &Value::Nil)
    };
    // Checked before allocating, in the functions that grow values...
    for text in [
        "{{ repeat 1000000000 \"x\" | repeat 1000000000 }}",
        "{{ repeat 1001 \"x\" }}",
        "{{ indent 100 (repeat 20 \"\\n\") }}",
        "{{ nindent 100 (repeat 20 \"\\n\") }}",
        "{{ replace \"a\" \"bbbb\" (repeat 300 \"a\") }}",
        "{{ $s := repeat 400 \"x\" }}{{ join \",\" (list $s $s $s) }}",
        "{{ $s := repeat 400 \"x\" }}{{ print $s $s $s }}",
        "{{ $s := repeat 400 \"x\" }}{{ cat $s $s $s }}",
        "{{ $s := repeat 400 \"x\" }}{{ toJson (list $s $s $s) }}",
        "{{ len (until 1000000000) }}",
        "{{ randAlpha 1000000000 }}",
    ] {
        let err = e(text).expect_err(text).to_string();
        assert!(
            err.contains("would exceed the limit of 1000 bytes"),
            "{text}: {err}"
        );
    }
    // ...and after every call, whatever the function.
    let err = e("{{ $s := \"x\" }}{{ range until 20 }}{{ $s = printf \"%s%s\" $s $s }}{{ end }}")
        .expect_err("doubling")
        .to_string();
    assert!(
        err.contains("would exceed the limit of 1000 bytes"),
        "{err}"
    );
    // Under the cap all is as before.
    assert_eq!(e("{{ repeat 3 \"ab\" | len }}").expect("renders"), "6");
}

/// A render's budget counts every execution until it is reset, and the
/// error names the template that crossed it.
#[test]
fn render_budget_spans_executions() {
    let mut e = Engine::new(EngineOptions {
        max_output_bytes: 100,
        max_render_bytes: 25,
        ..EngineOptions::default()
    });
    e.add_template("a", "0123456789").expect("parses");
    e.add_template("b", "{{ range until 3 }}0123456789{{ end }}")
        .expect("parses");
    assert_eq!(e.execute("a", &Value::Nil).expect("renders").len(), 10);
    assert_eq!(e.execute("a", &Value::Nil).expect("renders").len(), 10);
    let err = e.execute("b", &Value::Nil).unwrap_err();
    assert_eq!(err.kind, TemplateErrorKind::RenderBudget { budget: 25 });
    assert_eq!(
        err.to_string(),
        "template: b: rendering output exceeded the render's budget of 25 bytes (all templates together)"
    );
    // 20 bytes spent: 10 more cross the budget too.
    let err = e.execute("a", &Value::Nil).unwrap_err();
    assert_eq!(err.kind, TemplateErrorKind::RenderBudget { budget: 25 });
    // A new render starts with the whole budget; one execution past the
    // per-execution cap gives that cap's error.
    e.reset_render_budget();
    assert_eq!(e.execute("a", &Value::Nil).expect("renders").len(), 10);
    let mut small = Engine::new(EngineOptions {
        max_output_bytes: 10,
        max_render_bytes: 1000,
        ..EngineOptions::default()
    });
    small
        .add_template("b", "01234567890123456789")
        .expect("parses");
    let err = small.execute("b", &Value::Nil).unwrap_err();
    assert_eq!(err.kind, TemplateErrorKind::OutputLimit { limit: 10 });
}

#[test]
fn output_limit_and_strict_mode() {
    let mut e = Engine::new(EngineOptions {
        max_output_bytes: 10,
        ..EngineOptions::default()
    });
    e.add_template(
        "t",
        "{{ define \"x\" }}0123456789{{ end }}{{ template \"x\" }}{{ include \"x\" . }}",
    )
    .expect("parses");
    let err = e.execute("t", &Value::Nil).unwrap_err();
    assert_eq!(err.kind, TemplateErrorKind::OutputLimit { limit: 10 });
    assert_eq!((err.template.as_str(), err.line), ("t", None));
    assert_eq!(
        err.to_string(),
        "template: t: rendering output exceeded the limit of 10 bytes"
    );

    let mut strict = Engine::new(EngineOptions {
        strict: true,
        ..EngineOptions::default()
    });
    strict
        .add_template("s", "{{ .Values.nope }}")
        .expect("parses");
    let err = strict
        .execute("s", &vals(&[("Values", vals(&[]))]))
        .expect_err("strict");
    assert!(
        err.to_string()
            .ends_with("map has no entry for key \"nope\""),
        "{err}"
    );
}

#[test]
fn stray_bytes_count_and_come_out_raw() {
    // Go: len counts bytes; b64dec of "/w==" is the single invalid byte 0xff.
    assert_eq!(run("{{ len \"é\" }}"), "2");
    assert_eq!(run("{{ len (b64dec \"/w==\") }}"), "1");
    assert_eq!(run("{{ len (b64dec \"w6n/\") }}"), "3");
    let out = run("{{ b64dec \"w6n/\" }}");
    assert_eq!(output_bytes(&out).as_ref(), b"\xc3\xa9\xff");
    assert!(matches!(
        output_bytes("plain é"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn chunk_is_a_slice_of_slices() {
    assert_eq!(
        run("{{ typeOf (chunk 2 (list 1 2 3)) }}|{{ printf \"%T\" (chunk 1 (list 1)) }}"),
        "[][]interface {}|[][]interface {}"
    );
    assert_eq!(run("{{ chunk 2 (list 1 2 3) }}"), "[[1 2] [3]]");
}

/// Files big enough that [`Engine::parse_ahead`] parses on threads.
fn big_file(define: &str, body: &str) -> String {
    let filler = "k: {{ .Values.s }}\n".repeat(PARALLEL_PARSE_MIN_BYTES / 16);
    format!("{{{{ define \"shared\" }}}}{define}{{{{ end }}}}{body}\n{filler}")
}

/// Adds `files` (after parsing `guess` ahead, if any) and executes each
/// file in order, as a render does; returns the outputs or the error.
fn add_and_run(
    guess: Option<&[(&str, Source)]>,
    files: &[(&str, Source)],
) -> Result<Vec<String>, String> {
    let mut e = Engine::default();
    if let Some(guess) = guess {
        e.parse_ahead(
            guess
                .iter()
                .map(|(n, s)| (n.to_string(), s.clone()))
                .collect(),
        );
        if crate::par::threads() > 1 {
            assert!(e.ahead.is_some());
        }
    }
    let data = vals(&[("s", Value::str("x"))]);
    let mut top = BTreeMap::new();
    top.insert("Values".to_string(), data);
    let data = Value::Map(Rc::new(RefCell::new(top)), MapKind::Values);
    let mut out = vec![String::new(); files.len()];
    let mut visit = |e: &Engine, i: usize| -> Result<(), TemplateError> {
        out[i] = e.execute(files[i].0, &data)?;
        Ok(())
    };
    let r = e.add_templates_visiting(files, &mut visit);
    assert!(e.ahead.is_none());
    match r {
        Ok(()) => Ok(out),
        Err(Visited::Parse(e) | Visited::Visit(e)) => Err(e.to_string()),
    }
}

#[test]
fn parsing_ahead_never_changes_the_outcome() {
    let src = |s: String| Source::from_bytes(s.into_bytes());
    let a = src(big_file("one", "a: {{ include \"shared\" . }}"));
    let b = src(big_file("two", "b: {{ include \"shared\" . }}"));
    let b_old = src(big_file("old", "b: stale"));
    // c runs a file template that comes later and defines nothing: its
    // first visit may find it missing.
    let c = src("c: {{ template \"r/z.yaml\" . }} {{ template \"shared\" . }}".to_string());
    let z = src(format!(
        "z{}",
        "{{ .Values.s }}".repeat(PARALLEL_PARSE_MIN_BYTES / 8)
    ));
    let broken = src("{{ if }}".repeat(3));
    let used = [
        ("r/c.yaml", c.clone()),
        ("r/a.yaml", a.clone()),
        ("r/b.yaml", b),
        ("r/z.yaml", z.clone()),
    ];
    // A guess with the same bytes (a, c, z), other bytes under a used
    // name (b), a file never used with a parse error.
    let guess = [
        ("r/c.yaml", c.clone()),
        ("r/a.yaml", a.clone()),
        ("r/b.yaml", b_old),
        ("r/gone.yaml", broken.clone()),
        ("r/z.yaml", z.clone()),
    ];
    let plain = add_and_run(None, &used);
    let out = plain.clone().unwrap();
    assert!(out[0].starts_with("c: zx") && out[0].ends_with("two"));
    assert_eq!(add_and_run(Some(&guess), &used), plain);

    // A parse error in a later file wins over what ran before it, and
    // over a later execution error.
    let failing = src("{{ fail \"no\" }}".to_string());
    let with_error = [
        ("r/c.yaml", c.clone()),
        ("r/a.yaml", a.clone()),
        ("r/y.yaml", failing.clone()),
        ("r/x.yaml", broken.clone()),
        ("r/z.yaml", z.clone()),
    ];
    let plain = add_and_run(None, &with_error);
    assert!(
        plain.as_ref().unwrap_err().contains("parse error"),
        "{plain:?}"
    );
    let mut guess_all: Vec<(&str, Source)> = with_error.to_vec();
    assert_eq!(add_and_run(Some(&guess_all), &with_error), plain);
    guess_all.truncate(2);
    assert_eq!(add_and_run(Some(&guess_all), &with_error), plain);

    // Without parse errors, the first execution error.
    let exec_error = [
        ("r/c.yaml", c),
        ("r/a.yaml", a),
        ("r/y.yaml", failing),
        ("r/z.yaml", z),
    ];
    let plain = add_and_run(None, &exec_error);
    assert!(plain.as_ref().unwrap_err().contains("no"), "{plain:?}");
    assert_eq!(add_and_run(Some(&exec_error), &exec_error), plain);
}
