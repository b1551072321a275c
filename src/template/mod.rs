//! The Go `text/template` engine as Helm v3.17.2 uses it, with Sprig and
//! Helm's own functions.
//!
//! Layout (lexer -> parser -> ast -> exec), values in [`value`], functions by
//! family under [`funcs`].
pub mod funcs;
pub mod value;

pub use value::{GoObject, ListKind, MapKind, Value};
