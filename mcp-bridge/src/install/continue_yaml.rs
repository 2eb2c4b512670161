//! Continue's `config.yaml`: holdline's item in the `mcpServers:` list (the one with
//! `name: holdline`) is found by its lines and replaced or removed as a block, so every
//! other line keeps its bytes. Each edit is checked by parsing the result.

use serde_json::Value;

use super::SERVER_NAME;

/// Why the file could not be edited.
#[derive(Debug)]
pub struct YamlError(pub String);

/// What a fresh `config.yaml` starts with: Continue refuses a config without these.
const FRESH_HEADER: &str = "name: Local config\nversion: 1.0.0\nschema: v1\n";

/// The lines of the `mcpServers:` block.
struct Block {
    /// Index of the `mcpServers:` line.
    key_line: usize,
    /// The key line's value is `[]` (flow style, empty).
    flow_empty: bool,
    /// Each item's first line and one past its last line.
    items: Vec<(usize, usize)>,
    /// The indentation of the items (`- ` starts after it).
    indent: String,
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn parse_doc(text: &str) -> Result<Value, YamlError> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_yaml_ng::from_str::<Value>(text).map_err(|e| YamlError(e.to_string()))
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

fn find_block(lines: &[&str]) -> Result<Option<Block>, YamlError> {
    let Some(key_line) = lines.iter().position(|l| {
        ["mcpServers:", "\"mcpServers\":", "'mcpServers':"]
            .iter()
            .any(|k| l.starts_with(k))
    }) else {
        return Ok(None);
    };
    let rest = lines[key_line].split_once(':').map_or("", |(_, r)| r);
    let rest = rest.split(" #").next().unwrap_or("").trim();
    let flow_empty = match rest {
        "" => false,
        "[]" => true,
        _ => {
            return Err(YamlError(
                "its `mcpServers` list is written on one line (flow style)".into(),
            ));
        }
    };
    // The block runs to the next line that starts a top-level key.
    let mut end = key_line + 1;
    while end < lines.len() {
        let l = lines[end];
        let top_level = !l.starts_with([' ', '\t', '-', '#', '\r', '\n']);
        if top_level {
            break;
        }
        end += 1;
    }
    while end > key_line + 1 && is_blank_or_comment(lines[end - 1]) {
        end -= 1;
    }
    let mut indent = None;
    let mut starts = Vec::new();
    for (i, l) in lines.iter().enumerate().take(end).skip(key_line + 1) {
        let trimmed = l.trim_start_matches([' ', '\t']);
        let ws = &l[..l.len() - trimmed.len()];
        if trimmed.starts_with('-') && indent.as_deref().is_none_or(|ind: &str| ind == ws) {
            indent = Some(ws.to_owned());
            starts.push(i);
        }
    }
    let mut items = Vec::new();
    for (n, &s) in starts.iter().enumerate() {
        let mut e = starts.get(n + 1).copied().unwrap_or(end);
        while e > s + 1 && is_blank_or_comment(lines[e - 1]) {
            e -= 1;
        }
        items.push((s, e));
    }
    Ok(Some(Block {
        key_line,
        flow_empty,
        items,
        indent: indent.unwrap_or_else(|| "  ".to_owned()),
    }))
}

/// The item's value, read from its own lines.
fn item_value(lines: &[&str], (s, e): (usize, usize), indent: &str) -> Option<Value> {
    let text: String = lines[s..e]
        .iter()
        .map(|l| l.strip_prefix(indent).unwrap_or(l))
        .collect();
    let list: Vec<Value> = serde_yaml_ng::from_str(&text).ok()?;
    list.into_iter().next()
}

fn holdline_item(lines: &[&str], block: &Block) -> Option<(usize, (usize, usize))> {
    block.items.iter().enumerate().find_map(|(i, &span)| {
        item_value(lines, span, &block.indent)
            .filter(|v| v.get("name").and_then(Value::as_str) == Some(SERVER_NAME))
            .map(|_| (i, span))
    })
}

/// Holdline's item, as block YAML at `indent`.
fn render(value: &Value, indent: &str) -> String {
    let body = serde_yaml_ng::to_string(value).expect("yaml");
    body.lines()
        .enumerate()
        .map(|(i, l)| {
            let lead = if i == 0 { "- " } else { "  " };
            format!("{indent}{lead}{l}\n")
        })
        .collect()
}

/// The current holdline item.
pub fn entry(text: &str) -> Result<Option<Value>, YamlError> {
    parse_doc(text)?;
    let lines = lines(text);
    let Some(block) = find_block(&lines)? else {
        return Ok(None);
    };
    Ok(holdline_item(&lines, &block).and_then(|(_, span)| item_value(&lines, span, &block.indent)))
}

/// The text with holdline's item equal to `value`.
pub fn with_entry(text: &str, value: &Value) -> Result<String, YamlError> {
    parse_doc(text)?;
    let lines = lines(text);
    let out = match find_block(&lines)? {
        None => {
            let mut out = if text.trim().is_empty() {
                FRESH_HEADER.to_owned()
            } else {
                text.to_owned()
            };
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("mcpServers:\n");
            out.push_str(&render(value, "  "));
            out
        }
        Some(block) => {
            let rendered = render(value, &block.indent);
            let (at, until) = match holdline_item(&lines, &block) {
                Some((_, span)) => span,
                None => {
                    let after = block.items.last().map_or(block.key_line + 1, |&(_, e)| e);
                    (after, after)
                }
            };
            let mut out: String = lines[..at].concat();
            if block.flow_empty {
                out = lines[..block.key_line].concat();
                out.push_str("mcpServers:\n");
                out.push_str(&lines[block.key_line + 1..at].concat());
            }
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&rendered);
            out.push_str(&lines[until..].concat());
            out
        }
    };
    check(&out, Some(value))?;
    Ok(out)
}

/// The text without holdline's item (and without `mcpServers:` when nothing else is
/// left in it); `None` when there is no holdline item.
pub fn without_entry(text: &str) -> Result<Option<String>, YamlError> {
    parse_doc(text)?;
    let lines = lines(text);
    let Some(block) = find_block(&lines)? else {
        return Ok(None);
    };
    let Some((_, (s, e))) = holdline_item(&lines, &block) else {
        return Ok(None);
    };
    let only_item = block.items.len() == 1
        && lines[block.key_line + 1..s]
            .iter()
            .all(|l| l.trim().is_empty());
    let from = if only_item { block.key_line } else { s };
    let out = format!("{}{}", lines[..from].concat(), lines[e..].concat());
    check(&out, None)?;
    Ok(Some(out))
}

/// The edited text parses, and holdline's item is `want` (or gone).
fn check(text: &str, want: Option<&Value>) -> Result<(), YamlError> {
    let doc = parse_doc(text)?;
    let found = doc
        .get("mcpServers")
        .and_then(Value::as_array)
        .and_then(|l| {
            l.iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(SERVER_NAME))
        });
    if found != want {
        return Err(YamlError(
            "its layout is one install cannot edit safely".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holdline() -> Value {
        json!({"name": "holdline", "command": "/x/holdline-mcp", "args": [], "env": {"A": "1"}})
    }

    #[test]
    fn install_then_uninstall_gives_the_same_bytes() {
        for original in [
            "name: mine\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: m\n    provider: openai\n",
            "name: mine\nmcpServers:\n  - name: other\n    command: x # keep\n\n# tail\nrules:\n  - be terse\n",
            "mcpServers:\n- name: other\n  command: x\n",
        ] {
            let installed = with_entry(original, &holdline()).unwrap();
            assert_eq!(entry(&installed).unwrap(), Some(holdline()), "{installed}");
            assert_eq!(
                without_entry(&installed).unwrap().as_deref(),
                Some(original),
                "{installed}"
            );
        }
    }

    #[test]
    fn a_changed_item_is_replaced_in_place() {
        let text = "mcpServers:\n  - name: holdline\n    command: old\n    mine: 1\n  - name: z\n    command: z\n";
        let mut v = holdline();
        v["mine"] = json!(1);
        let out = with_entry(text, &v).unwrap();
        assert!(out.ends_with("  - name: z\n    command: z\n"), "{out}");
        assert_eq!(entry(&out).unwrap(), Some(v));
        assert_eq!(entry("").unwrap(), None);
        let fresh = with_entry("", &holdline()).unwrap();
        assert!(fresh.starts_with(FRESH_HEADER));
    }

    #[test]
    fn flow_style_is_refused() {
        assert!(with_entry("mcpServers: [{name: a}]\n", &holdline()).is_err());
        let out = with_entry("mcpServers: []\n", &holdline()).unwrap();
        assert_eq!(entry(&out).unwrap(), Some(holdline()));
    }
}
