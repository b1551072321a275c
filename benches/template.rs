//! Template engine throughput: parsing a chart-like template set and
//! executing a Deployment-style template with includes, ranges and conditions.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rudder::template::{Engine, MapKind, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

const HELPERS: &str = r#"{{- define "app.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "app.labels" -}}
app.kubernetes.io/name: {{ include "app.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  labels:
{{ include "app.labels" . | indent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default "latest" }}"
          {{- if .Values.env }}
          env:
          {{- range $k, $v := .Values.env }}
            - name: {{ $k }}
              value: {{ printf "%q" (print $v) }}
          {{- end }}
          {{- end }}
          ports:
          {{- range .Values.ports }}
            - containerPort: {{ .port }}
              {{- with .name }}
              name: {{ . }}
              {{- end }}
          {{- end }}
"#;

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn data() -> Value {
    let env: Vec<(String, Value)> = (0..20)
        .map(|i| (format!("VAR_{i}"), Value::str(format!("value-{i}"))))
        .collect();
    let ports = (0..10)
        .map(|i| {
            map(vec![
                ("port", Value::Float(8000.0 + i as f64)),
                ("name", Value::str(format!("p{i}"))),
            ])
        })
        .collect();
    let values = map(vec![
        ("replicaCount", Value::Float(3.0)),
        (
            "image",
            map(vec![
                ("repository", Value::str("nginx")),
                ("tag", Value::str("1.25")),
            ]),
        ),
        ("env", Value::map(env.into_iter().collect())),
        ("ports", Value::list(ports)),
    ]);
    let Value::Map(vm, _) = values else {
        unreachable!()
    };
    let mut top = BTreeMap::new();
    top.insert("Values".to_string(), Value::Map(vm, MapKind::Values));
    top.insert(
        "Release".to_string(),
        map(vec![
            ("Name", Value::str("rel")),
            ("Service", Value::str("Helm")),
        ]),
    );
    top.insert("Chart".to_string(), map(vec![("Name", Value::str("app"))]));
    Value::Map(Rc::new(RefCell::new(top)), MapKind::Values)
}

fn engine() -> Option<Engine> {
    let mut e = Engine::default();
    e.add_template("app/templates/_helpers.tpl", HELPERS).ok()?;
    e.add_template("app/templates/deployment.yaml", DEPLOYMENT)
        .ok()?;
    Some(e)
}

fn bench(c: &mut Criterion) {
    c.bench_function("parse chart templates", |b| {
        b.iter(|| black_box(engine()));
    });
    // The helpers use Sprig functions; without them the set does not parse.
    if let Some(e) = engine() {
        let d = data();
        c.bench_function("execute deployment", |b| {
            b.iter(|| black_box(e.execute("app/templates/deployment.yaml", &d)));
        });
    }
    let mut plain = Engine::default();
    let text = "{{ range $i, $p := .Values.ports }}{{ if eq (len $p.name) 2 }}{{ $i }}:{{ $p.port }} {{ printf \"%s=%v\" $p.name $p.port }}{{ end }}\n{{ end }}";
    if plain.add_template("t", text).is_ok() {
        let d = data();
        c.bench_function("execute builtins-only loop", |b| {
            b.iter(|| black_box(plain.execute("t", &d)));
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
