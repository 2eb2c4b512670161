//! Integration tests of the hub's HTTP API, one file per behaviour: a real hub
//! (`holdline_hub::run`) on an ephemeral port with a temp home, spoken to over real HTTP;
//! and the real binary for restarts, SIGKILL and logs.

use crate::realhub;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::inproc::{Options, TestHub};
use realhub::{RealHub, free_addr};
use reqwest::StatusCode;
use serde_json::{Value, json};

mod access;
mod bad_inputs;
mod binding;
mod keep_alive;
mod merge_archive;
mod reading;
mod restart;
mod waits;

/// An error answer's `code`.
fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}
