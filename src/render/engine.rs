//! [`TemplateSet`] over the crate's template engine, and [`render`], the
//! one-call entry point.
use super::pipeline::{
    execute_file, render_with, RenderError, RenderOptions, Rendered, TemplateSet,
};
use super::values::Map;
use crate::chart::Chart;
use crate::template::{Engine, EngineOptions, Source, TemplateError, Value, Visited};

impl TemplateSet for Engine {
    fn add_template(&mut self, name: &str, text: &str) -> Result<(), TemplateError> {
        Engine::add_template(self, name, text)
    }
    fn add_templates(&mut self, files: &[(&str, Source)]) -> Result<(), TemplateError> {
        Engine::add_templates(self, files)
    }
    fn execute(&mut self, name: &str, data: &Value) -> Result<String, TemplateError> {
        Engine::execute(self, name, data)
    }
    fn add_and_execute(
        &mut self,
        files: &[(&str, Source)],
        data: &mut dyn FnMut(usize) -> Option<Value>,
        done: &mut dyn FnMut(usize, String),
    ) -> Result<(), TemplateError> {
        let mut visit = |engine: &Engine, i: usize| -> Result<(), TemplateError> {
            execute_file(files, i, data, done, |name, d| engine.execute(name, d))
        };
        match Engine::add_templates_visiting(self, files, &mut visit) {
            Ok(()) => Ok(()),
            Err(Visited::Parse(e) | Visited::Visit(e)) => Err(e),
        }
    }
    fn parse_ahead(&mut self, likely: Vec<(String, Source)>) {
        Engine::parse_ahead(self, likely);
    }
    fn begin_render(&mut self) {
        self.reset_render_budget();
    }
}

/// The template engine [`render`] uses for `opts`; build it yourself and
/// pass it to [`render_with`] to keep it (its parsed templates) afterwards.
pub fn engine_for(opts: &RenderOptions) -> Engine {
    Engine::new(EngineOptions {
        strict: opts.strict,
        enable_dns: opts.enable_dns,
        ..EngineOptions::default()
    })
}

/// Renders `chart` with user-supplied values (what `-f`/`--set` produced),
/// as `helm template` does.
pub fn render(chart: &Chart, user: &Map, opts: &RenderOptions) -> Result<Rendered, RenderError> {
    render_with(&mut engine_for(opts), chart, user, opts)
}
