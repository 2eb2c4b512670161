//! Codex's `config.toml`: holdline's `[mcp_servers.holdline]` table read as JSON, written
//! back key by key so comments, order and every other table keep their bytes.

use serde_json::{Map, Value, json};
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike};

use super::SERVER_NAME;

/// Why the file could not be edited.
#[derive(Debug)]
pub struct TomlError(pub String);

pub(super) fn parse(text: &str) -> Result<DocumentMut, TomlError> {
    text.parse::<DocumentMut>()
        .map_err(|e| TomlError(e.to_string().trim().replace('\n', " ")))
}

/// The current `[mcp_servers.holdline]`, as JSON.
pub fn entry(text: &str) -> Result<Option<Value>, TomlError> {
    let doc = parse(text)?;
    Ok(doc
        .get("mcp_servers")
        .and_then(|t| t.get(SERVER_NAME))
        .map(item_to_json))
}

/// The text with `[mcp_servers.holdline]` made equal to `value` (an object).
pub fn with_entry(text: &str, value: &Value) -> Result<String, TomlError> {
    let mut doc = parse(text)?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let Some(servers) = servers.as_table_like_mut() else {
        return Err(TomlError("`mcp_servers` is not a table".into()));
    };
    let empty = Map::new();
    let fields = value.as_object().unwrap_or(&empty);
    match servers
        .get_mut(SERVER_NAME)
        .and_then(Item::as_table_like_mut)
    {
        Some(table) => update(table, fields),
        None => {
            let mut table = Table::new();
            update(&mut table, fields);
            servers.insert(SERVER_NAME, Item::Table(table));
        }
    }
    Ok(doc.to_string())
}

/// The text without `[mcp_servers.holdline]`; `None` when it has none.
pub fn without_entry(text: &str) -> Result<Option<String>, TomlError> {
    let mut doc = parse(text)?;
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) else {
        return Ok(None);
    };
    if servers.remove(SERVER_NAME).is_none() {
        return Ok(None);
    }
    Ok(Some(doc.to_string()))
}

/// Makes `table` equal to `fields`: sets each key whose value differs, recursing into
/// sub-tables, and removes the keys `fields` lacks (an entry that switched transport).
pub(super) fn update(table: &mut dyn TableLike, fields: &Map<String, Value>) {
    let gone: Vec<String> = table
        .iter()
        .map(|(k, _)| k.to_owned())
        .filter(|k| !fields.contains_key(k))
        .collect();
    for key in gone {
        table.remove(&key);
    }
    for (key, want) in fields {
        if want.is_null() {
            continue;
        }
        if let (Some(item), Value::Object(sub)) = (table.get_mut(key), want)
            && let Some(sub_table) = item.as_table_like_mut()
        {
            update(sub_table, sub);
            continue;
        }
        if table.get(key).map(item_to_json).as_ref() == Some(want) {
            continue;
        }
        table.insert(key, Item::Value(json_to_toml(want)));
    }
}

fn json_to_toml(v: &Value) -> toml_edit::Value {
    match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::Array(a) => {
            let mut arr = toml_edit::Array::new();
            for x in a.iter().filter(|x| !x.is_null()) {
                arr.push(json_to_toml(x));
            }
            toml_edit::Value::Array(arr)
        }
        Value::Object(o) => {
            let mut t = InlineTable::new();
            for (k, x) in o.iter().filter(|(_, x)| !x.is_null()) {
                t.insert(k, json_to_toml(x));
            }
            toml_edit::Value::InlineTable(t)
        }
        Value::Null => "".into(),
    }
}

/// A TOML item as JSON, to compare entries regardless of formatting.
pub(super) fn item_to_json(item: &Item) -> Value {
    fn from_value(v: &toml_edit::Value) -> Value {
        match v {
            toml_edit::Value::String(s) => json!(s.value()),
            toml_edit::Value::Integer(i) => json!(i.value()),
            toml_edit::Value::Float(f) => json!(f.value()),
            toml_edit::Value::Boolean(b) => json!(b.value()),
            toml_edit::Value::Datetime(d) => json!(d.value().to_string()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(from_value).collect()),
            toml_edit::Value::InlineTable(t) => Value::Object(
                t.iter()
                    .map(|(k, v)| (k.to_owned(), from_value(v)))
                    .collect(),
            ),
        }
    }
    match item {
        Item::Value(v) => from_value(v),
        Item::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), item_to_json(v)))
                .collect(),
        ),
        Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| item_to_json(&Item::Table(t.clone())))
                .collect(),
        ),
        Item::None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_then_uninstall_gives_the_same_bytes() {
        let original = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let entry_v =
            json!({"command": "h", "args": [], "env": {"A": "1"}, "tool_timeout_sec": 3600});
        let installed = with_entry(original, &entry_v).unwrap();
        assert!(installed.starts_with(original), "{installed}");
        assert_eq!(entry(&installed).unwrap(), Some(entry_v.clone()));
        assert_eq!(
            without_entry(&installed).unwrap().as_deref(),
            Some(original)
        );
        assert_eq!(without_entry(original).unwrap(), None);
    }

    #[test]
    fn a_person_s_sub_table_is_updated_in_place() {
        let text = "[mcp_servers.holdline]\ncommand = \"old\" # mine\n\n[mcp_servers.holdline.env]\nHOLDLINE_SECRET = \"s\"\n";
        let merged = json!({"command": "old", "env": {"HOLDLINE_SECRET": "s", "X": "1"}});
        let out = with_entry(text, &merged).unwrap();
        assert!(out.contains("command = \"old\" # mine"), "{out}");
        assert!(
            out.contains("[mcp_servers.holdline.env]\nHOLDLINE_SECRET = \"s\"\nX = \"1\""),
            "{out}"
        );
    }

    #[test]
    fn keys_the_value_lacks_are_removed() {
        let text = "[mcp_servers.holdline]\ncommand = \"h\" # mine\nargs = []\nmine = 1\n\n[mcp_servers.holdline.env]\nA = \"1\"\n";
        let remote = json!({"mine": 1, "url": "http://hub:13458/mcp",
                            "http_headers": {"Authorization": "Bearer k"}});
        let out = with_entry(text, &remote).unwrap();
        assert_eq!(entry(&out).unwrap(), Some(remote), "{out}");
        assert!(!out.contains("command") && !out.contains("[mcp_servers.holdline.env]"));
    }
}
