//! Editing one member of one object in a JSON config file in place: every byte outside
//! holdline's entry stays as it was (comments, key order, indentation, line endings), so
//! install followed by uninstall gives the file back unchanged.
//!
//! The scanner knows JSON's structure plus JSONC's comments and trailing commas (VS Code
//! and Cursor accept them). Holdline's own entry must be plain JSON, since it is rewritten.

use serde_json::Value;

/// A byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

/// One `"key": value` of an object.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_start: usize,
    value: Span,
}

/// An object's members and where its braces are.
#[derive(Debug, Clone)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// Why a file could not be read as JSON: the line and column, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub expected: &'static str,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: expected {}",
            self.line, self.column, self.expected
        )
    }
}

/// A parsed config file: the text and its root object.
pub struct JsonDoc<'a> {
    text: &'a str,
    root: Option<Object>,
}

/// What went wrong reading holdline's entry.
#[derive(Debug)]
pub enum DocError {
    /// The file is not JSON (nor JSONC).
    Syntax(SyntaxError),
    /// `key` holds something other than an object.
    NotAnObject(String),
    /// Holdline's entry has comments or trailing commas, so it cannot be rewritten safely.
    EntryNotPlainJson,
}

impl<'a> JsonDoc<'a> {
    /// Parses `text`; an empty (or all-blank) text is an empty document.
    pub fn parse(text: &'a str) -> Result<JsonDoc<'a>, DocError> {
        let mut s = Scanner { text, pos: 0 };
        s.skip_ws().map_err(DocError::Syntax)?;
        if s.pos == text.len() {
            return Ok(JsonDoc { text, root: None });
        }
        if s.peek() != Some(b'{') {
            return Err(DocError::Syntax(s.error("an object `{` at the top")));
        }
        let root = s.object().map_err(DocError::Syntax)?;
        s.skip_ws().map_err(DocError::Syntax)?;
        if s.pos != text.len() {
            return Err(DocError::Syntax(s.error("the end of the file")));
        }
        Ok(JsonDoc {
            text,
            root: Some(root),
        })
    }

    /// The object at `root[servers_key]`, if there is one.
    fn servers(&self, servers_key: &str) -> Result<Option<Object>, DocError> {
        let Some(root) = &self.root else {
            return Ok(None);
        };
        let Some(m) = root.members.iter().find(|m| m.key == servers_key) else {
            return Ok(None);
        };
        let mut s = Scanner {
            text: self.text,
            pos: m.value.start,
        };
        if s.peek() != Some(b'{') {
            return Err(DocError::NotAnObject(servers_key.to_owned()));
        }
        s.object().map(Some).map_err(DocError::Syntax)
    }

    /// The current value of `root[servers_key][name]`.
    pub fn entry(&self, servers_key: &str, name: &str) -> Result<Option<Value>, DocError> {
        let Some(servers) = self.servers(servers_key)? else {
            return Ok(None);
        };
        let Some(m) = servers.members.iter().find(|m| m.key == name) else {
            return Ok(None);
        };
        serde_json::from_str(&self.text[m.value.start..m.value.end])
            .map(Some)
            .map_err(|_| DocError::EntryNotPlainJson)
    }

    /// The text with `root[servers_key][name]` set to `value`, everything else untouched.
    pub fn with_entry(
        &self,
        servers_key: &str,
        name: &str,
        value: &Value,
    ) -> Result<String, DocError> {
        let style = Style::of(self.text);
        let Some(root) = &self.root else {
            let mut doc = serde_json::Map::new();
            let mut servers = serde_json::Map::new();
            servers.insert(name.to_owned(), value.clone());
            doc.insert(servers_key.to_owned(), Value::Object(servers));
            let text = style.render(&Value::Object(doc), "");
            return Ok(format!("{text}{}", style.newline));
        };
        match self.servers(servers_key)? {
            None => {
                let mut servers = serde_json::Map::new();
                servers.insert(name.to_owned(), value.clone());
                Ok(self.insert_member(root, servers_key, &Value::Object(servers), &style))
            }
            Some(servers) => match servers.members.iter().find(|m| m.key == name) {
                Some(m) => {
                    let indent = line_indent(self.text, m.key_start);
                    let rendered = style.render(value, &indent);
                    Ok(splice(self.text, m.value, &rendered))
                }
                None => Ok(self.insert_member(&servers, name, value, &style)),
            },
        }
    }

    /// The text without `root[servers_key][name]`; `None` when there is no such entry.
    pub fn without_entry(&self, servers_key: &str, name: &str) -> Result<Option<String>, DocError> {
        let Some(servers) = self.servers(servers_key)? else {
            return Ok(None);
        };
        let Some(i) = servers.members.iter().position(|m| m.key == name) else {
            return Ok(None);
        };
        let members = &servers.members;
        let cut = if members.len() == 1 {
            let before = &self.text[servers.open + 1..members[0].key_start];
            if before.trim().is_empty() {
                Span {
                    start: servers.open + 1,
                    end: servers.close,
                }
            } else {
                // Comments stood in the object before install: keep them as they were.
                Span {
                    start: servers.open + 1 + before.trim_end().len(),
                    end: members[0].value.end,
                }
            }
        } else if i > 0 {
            // `, "holdline": {…}` after the previous member: exactly what install added.
            Span {
                start: members[i - 1].value.end,
                end: members[i].value.end,
            }
        } else {
            Span {
                start: members[0].key_start,
                end: members[1].key_start,
            }
        };
        Ok(Some(splice(self.text, cut, "")))
    }

    /// Adds `"key": value` as the last member of `obj`, laid out like its siblings.
    fn insert_member(&self, obj: &Object, key: &str, value: &Value, style: &Style) -> String {
        let key_json = Value::String(key.to_owned()).to_string();
        match obj.members.last() {
            Some(last) => {
                let first = &obj.members[0];
                if same_line(self.text, obj.open, first.key_start) {
                    // A one-line object: stay on one line.
                    let compact = serde_json::to_string(value).expect("json");
                    let at = Span {
                        start: last.value.end,
                        end: last.value.end,
                    };
                    return splice(self.text, at, &format!(",{key_json}:{compact}"));
                }
                let indent = line_indent(self.text, last.key_start);
                let rendered = style.render(value, &indent);
                let at = Span {
                    start: last.value.end,
                    end: last.value.end,
                };
                splice(
                    self.text,
                    at,
                    &format!(",{}{indent}{key_json}: {rendered}", style.newline),
                )
            }
            None => {
                let outer = line_indent(self.text, obj.open);
                let indent = format!("{outer}{}", style.unit);
                let rendered = style.render(value, &indent);
                let nl = style.newline;
                let inside = &self.text[obj.open + 1..obj.close];
                if inside.trim().is_empty() {
                    let inner = Span {
                        start: obj.open + 1,
                        end: obj.close,
                    };
                    splice(
                        self.text,
                        inner,
                        &format!("{nl}{indent}{key_json}: {rendered}{nl}{outer}"),
                    )
                } else {
                    // Only comments inside: add the member after them, keep them.
                    let at = obj.open + 1 + inside.trim_end().len();
                    splice(
                        self.text,
                        Span { start: at, end: at },
                        &format!("{nl}{indent}{key_json}: {rendered}"),
                    )
                }
            }
        }
    }
}

/// How the file is laid out: its indentation unit and line ending.
struct Style {
    unit: String,
    newline: &'static str,
}

impl Style {
    fn of(text: &str) -> Style {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        // The indentation of the first indented line that starts a key.
        let unit = text
            .lines()
            .map(|l| {
                let trimmed = l.trim_start_matches([' ', '\t']);
                (&l[..l.len() - trimmed.len()], trimmed)
            })
            .find(|(ws, rest)| !ws.is_empty() && rest.starts_with('"'))
            .map_or("  ".to_owned(), |(ws, _)| ws.to_owned());
        Style { unit, newline }
    }

    /// `value` pretty-printed with this unit, continuation lines indented by `base`.
    fn render(&self, value: &Value, base: &str) -> String {
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        serde::Serialize::serialize(value, &mut ser).expect("json");
        let text = String::from_utf8(out).expect("utf-8");
        text.replace('\n', &format!("{}{base}", self.newline))
    }
}

fn splice(text: &str, at: Span, with: &str) -> String {
    format!("{}{with}{}", &text[..at.start], &text[at.end..])
}

fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// The whitespace that starts the line holding `pos`.
fn line_indent(text: &str, pos: usize) -> String {
    let line = &text[line_start(text, pos)..];
    line[..line.len() - line.trim_start_matches([' ', '\t']).len()].to_owned()
}

fn same_line(text: &str, a: usize, b: usize) -> bool {
    !text[a.min(b)..a.max(b)].contains('\n')
}

struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn error(&self, expected: &'static str) -> SyntaxError {
        let before = &self.text[..self.pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - line_start(self.text, before.len()) + 1;
        SyntaxError {
            line,
            column,
            expected,
        }
    }

    /// Skips whitespace and `//` / `/* */` comments.
    fn skip_ws(&mut self) -> Result<(), SyntaxError> {
        let bytes = self.text.as_bytes();
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if bytes.get(self.pos + 1) == Some(&b'/') => {
                    self.pos = self.text[self.pos..]
                        .find('\n')
                        .map_or(self.text.len(), |i| self.pos + i);
                }
                Some(b'/') if bytes.get(self.pos + 1) == Some(&b'*') => {
                    match self.text[self.pos + 2..].find("*/") {
                        Some(i) => self.pos += 2 + i + 2,
                        None => return Err(self.error("the end of a /* comment */")),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos;
        if self.peek() != Some(b'"') {
            return Err(self.error("a string in double quotes"));
        }
        self.pos += 1;
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return serde_json::from_str(&self.text[start..self.pos]).map_err(|_| {
                        SyntaxError {
                            expected: "a valid string",
                            ..self.error("")
                        }
                    });
                }
                _ => self.pos += 1,
            }
        }
        Err(self.error("the closing quote of a string"))
    }

    fn value(&mut self) -> Result<Span, SyntaxError> {
        let start = self.pos;
        match self.peek() {
            Some(b'{') => {
                self.object()?;
            }
            Some(b'[') => {
                self.pos += 1;
                loop {
                    self.skip_ws()?;
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        break;
                    }
                    self.value()?;
                    self.skip_ws()?;
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            break;
                        }
                        _ => return Err(self.error("`,` or `]`")),
                    }
                }
            }
            Some(b'"') => {
                self.string()?;
            }
            Some(b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
                let rest = &self.text[self.pos..];
                let len = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
                    .unwrap_or(rest.len());
                serde_json::from_str::<Value>(&rest[..len])
                    .map_err(|_| self.error("a number, true, false or null"))?;
                self.pos += len;
            }
            _ => return Err(self.error("a value")),
        }
        Ok(Span {
            start,
            end: self.pos,
        })
    }

    /// Reads the object starting at `self.pos` (at its `{`).
    fn object(&mut self) -> Result<Object, SyntaxError> {
        let open = self.pos;
        self.pos += 1;
        let mut members = Vec::new();
        loop {
            self.skip_ws()?;
            if self.peek() == Some(b'}') {
                break;
            }
            let key_start = self.pos;
            let key = self.string()?;
            self.skip_ws()?;
            if self.peek() != Some(b':') {
                return Err(self.error("`:` after the key"));
            }
            self.pos += 1;
            self.skip_ws()?;
            let value = self.value()?;
            members.push(Member {
                key,
                key_start,
                value,
            });
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => break,
                _ => return Err(self.error("`,` or `}`")),
            }
        }
        let close = self.pos;
        self.pos += 1;
        Ok(Object {
            open,
            close,
            members,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn add(text: &str) -> String {
        JsonDoc::parse(text)
            .unwrap()
            .with_entry(
                "mcpServers",
                "holdline",
                &json!({"command": "h", "args": []}),
            )
            .unwrap()
    }

    fn remove(text: &str) -> String {
        JsonDoc::parse(text)
            .unwrap()
            .without_entry("mcpServers", "holdline")
            .unwrap()
            .unwrap()
    }

    #[test]
    fn install_then_uninstall_gives_the_same_bytes() {
        for original in [
            "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    }\n  }\n}\n",
            "{\r\n\t\"mcpServers\": {\r\n\t\t\"other\": {}\r\n\t}\r\n}",
            "// my config\n{\n  \"mcpServers\": { /* none yet */ },\n}\n",
            "{\"theme\":\"dark\",\"mcpServers\":{\"other\":{\"command\":\"x\"}}}",
        ] {
            let installed = add(original);
            assert!(installed.contains("\"holdline\""), "{installed}");
            assert_eq!(
                JsonDoc::parse(&installed)
                    .unwrap()
                    .entry("mcpServers", "holdline")
                    .unwrap(),
                Some(json!({"command": "h", "args": []}))
            );
            assert_eq!(remove(&installed), original, "from {installed}");
        }
    }

    #[test]
    fn new_servers_key_and_new_file_are_pretty() {
        assert_eq!(
            add(""),
            "{\n  \"mcpServers\": {\n    \"holdline\": {\n      \"command\": \"h\",\n      \"args\": []\n    }\n  }\n}\n"
        );
        let installed = add("{\n  \"a\": 1\n}\n");
        assert_eq!(
            installed,
            "{\n  \"a\": 1,\n  \"mcpServers\": {\n    \"holdline\": {\n      \"command\": \"h\",\n      \"args\": []\n    }\n  }\n}\n"
        );
        let v: Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(v["mcpServers"]["holdline"]["command"], "h");
    }

    #[test]
    fn replacing_an_entry_touches_nothing_else() {
        let text = "{\n  \"mcpServers\": {\n    \"holdline\": {\"command\": \"old\"},\n    \"z\": 1 // keep\n  }\n}\n";
        let out = add(text);
        assert!(out.ends_with(",\n    \"z\": 1 // keep\n  }\n}\n"), "{out}");
        assert!(
            out.contains("\"holdline\": {\n      \"command\": \"h\""),
            "{out}"
        );
        // First of several members: the next one moves up, nothing else changes.
        assert_eq!(
            remove(text),
            "{\n  \"mcpServers\": {\n    \"z\": 1 // keep\n  }\n}\n"
        );
    }

    #[test]
    fn bad_input_says_where() {
        let Err(DocError::Syntax(e)) = JsonDoc::parse("{\n  \"a\": 1,\n  b: 2\n}") else {
            panic!("accepted a bare key");
        };
        assert_eq!((e.line, e.column), (3, 3));
        let doc = JsonDoc::parse("{\"mcpServers\": {\"holdline\": {\"a\": 1, /* x */}}}").unwrap();
        assert!(matches!(
            doc.entry("mcpServers", "holdline"),
            Err(DocError::EntryNotPlainJson)
        ));
        let doc = JsonDoc::parse("{\"mcpServers\": []}").unwrap();
        assert!(matches!(
            doc.entry("mcpServers", "holdline"),
            Err(DocError::NotAnObject(_))
        ));
    }
}
