//! Upgrade plans as data: what changes, in which order, what to wait for,
//! and where to roll back.
//!
//! A [`Plan`] is a value: print it, snapshot it, review it, save it and
//! apply it later. The planner ([`planner`]) reads the release store and the
//! cluster and never writes to either.
pub mod crds;
pub mod file;
mod html;
pub mod input;
pub mod model;
pub mod order;
pub mod planner;
pub mod preflight;
pub mod view;

pub use input::{DesiredRelease, Need, ReleaseOptions, ReleaseRef, WaitStrategy};
// What a plan's reader meets; the rest of its parts (preconditions,
// recovery, revisions) stay in [`model`].
pub use model::{
    Counts, DesiredObject, HookPlan, ObjectAction, ObjectChange, Plan, PlannedCrd, ReleaseAction,
    ReleasePlan, Stage, WaitRule,
};
pub use planner::{PlanError, PlanOptions, Planner};
