//! Mistral Vibe's `config.toml`: holdline's entry is the `[[mcp_servers]]` table whose
//! `name` is `holdline`, read as JSON and written back key by key (codex_toml's edit), so
//! comments, order, every other server and every other table keep their bytes.

use serde_json::{Map, Value};
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use super::SERVER_NAME;
use super::codex_toml::{TomlError, item_to_json, parse, update};

/// The `[[mcp_servers]]` array, if the file has one; refused when written any other way.
fn servers(doc: &DocumentMut) -> Result<Option<&ArrayOfTables>, TomlError> {
    match doc.get("mcp_servers") {
        None => Ok(None),
        Some(Item::ArrayOfTables(a)) => Ok(Some(a)),
        Some(_) => Err(TomlError(
            "its `mcp_servers` is not written as `[[mcp_servers]]` tables".into(),
        )),
    }
}

fn is_holdline(table: &Table) -> bool {
    table.get("name").and_then(Item::as_str) == Some(SERVER_NAME)
}

/// The current holdline table, as JSON (with its `name`).
pub fn entry(text: &str) -> Result<Option<Value>, TomlError> {
    let doc = parse(text)?;
    Ok(servers(&doc)?.and_then(|a| {
        a.iter()
            .find(|t| is_holdline(t))
            .map(|t| item_to_json(&Item::Table(t.clone())))
    }))
}

/// The text with holdline's `[[mcp_servers]]` table made equal to `value` (an object with
/// `name`); a new one goes after the others.
pub fn with_entry(text: &str, value: &Value) -> Result<String, TomlError> {
    let mut doc = parse(text)?;
    servers(&doc)?;
    let empty = Map::new();
    let fields = value.as_object().unwrap_or(&empty);
    let array = doc
        .entry("mcp_servers")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .expect("checked above");
    let found = array.iter().position(is_holdline);
    match found {
        Some(at) => update(array.get_mut(at).expect("found above"), fields),
        None => {
            let mut table = Table::new();
            update(&mut table, fields);
            array.push(table);
        }
    }
    Ok(doc.to_string())
}

/// The text without holdline's table; `None` when it has none.
pub fn without_entry(text: &str) -> Result<Option<String>, TomlError> {
    let mut doc = parse(text)?;
    let Some(at) = servers(&doc)?.and_then(|a| a.iter().position(is_holdline)) else {
        return Ok(None);
    };
    let array = doc["mcp_servers"]
        .as_array_of_tables_mut()
        .expect("checked above");
    array.remove(at);
    if array.is_empty() {
        doc.remove("mcp_servers");
    }
    Ok(Some(doc.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn local() -> Value {
        json!({"name": "holdline", "transport": "stdio", "command": "/bin/holdline-mcp",
               "args": [], "env": {"HOLDLINE_MAX_WAIT_SEC": "3570"}, "tool_timeout_sec": 3600})
    }

    #[test]
    fn install_then_uninstall_gives_the_same_bytes() {
        let original = "# mine\nactive_model = \"devstral\"\n\n[[mcp_servers]]\nname = \"other\"\ntransport = \"stdio\"\ncommand = \"x\"\n";
        let installed = with_entry(original, &local()).unwrap();
        assert!(installed.starts_with(original), "{installed}");
        assert!(
            installed.contains("[[mcp_servers]]\nname = \"holdline\""),
            "{installed}"
        );
        assert_eq!(entry(&installed).unwrap(), Some(local()));
        assert_eq!(
            without_entry(&installed).unwrap().as_deref(),
            Some(original)
        );
        assert_eq!(without_entry(original).unwrap(), None);
    }

    #[test]
    fn a_fresh_file_gets_one_table_and_loses_it_whole() {
        let installed = with_entry("", &local()).unwrap();
        let parsed: toml::Table = toml::from_str(&installed).unwrap();
        let servers = parsed["mcp_servers"].as_array().unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0]["tool_timeout_sec"].as_integer(), Some(3600));
        assert_eq!(without_entry(&installed).unwrap().as_deref(), Some(""));
    }

    #[test]
    fn switching_to_the_remote_entry_edits_the_table_in_place() {
        let text = "[[mcp_servers]]\nname = \"holdline\" # mine\ntransport = \"stdio\"\ncommand = \"h\"\n\n[[mcp_servers]]\nname = \"other\"\ntransport = \"http\"\nurl = \"http://o\"\n";
        let remote = json!({"name": "holdline", "transport": "streamable-http",
                            "url": "http://hub:13458/mcp",
                            "auth": {"type": "static", "headers": {"Authorization": "Bearer k"}}});
        let out = with_entry(text, &remote).unwrap();
        assert_eq!(entry(&out).unwrap(), Some(remote), "{out}");
        assert!(out.contains("name = \"holdline\" # mine"), "{out}");
        assert!(!out.contains("command"), "{out}");
        assert!(out.contains("name = \"other\""), "{out}");
    }

    #[test]
    fn an_inline_server_list_is_refused_not_rewritten() {
        let text = "mcp_servers = [{name = \"other\", transport = \"stdio\", command = \"x\"}]\n";
        assert!(entry(text).is_err());
        assert!(with_entry(text, &local()).is_err());
        assert!(without_entry(text).is_err());
    }
}
