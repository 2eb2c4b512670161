#!/usr/bin/env python3
"""Checks that every install command the READMEs show names what scripts/dist.sh builds.

Reads README.md and README.zh-CN.md and finds each registry install (`pipx install`,
`pip install`, `uvx --from`, `npm install -g`, `npx -y`) and each artifact file name
they mention (the archive, the wheel, the npm tarballs, the MCP Bundle); then opens the
artifacts in DIST (written by `scripts/dist.sh`) and checks that every name shown is one
they carry: the wheel's METADATA Name, the npm packages' package.json names, the file
names with VERSION / TRIPLE / PLATFORM in place. It also checks that
  - both READMEs show the pipx, npm, uvx and npx ways under those names (so the check
    cannot pass on a README that shows nothing),
  - each README's first shell block is the source path (clone and scripts/install.sh),
    which works before any release is published,
  - server.json names the same packages at the workspace version, and the npm package's
    `mcpName` and the wheel's `mcp-name:` line are server.json's name (the MCP Registry's
    proof of ownership), and server.json has the fields the registry's schema requires,
  - install.sh's closing list of clients is the one `holdline-mcp install --help` offers,
  - docs/clients.md's "Add to Cursor" and VS Code install links carry the entry the built
    `holdline-mcp install --client cursor|vscode --command holdline-mcp --print` writes.

  check-install-names.py DIST HOLDLINE_MCP_BINARY

Prints one line per check and exits 1 when any failed.
"""

import base64
import fnmatch
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READMES = ("README.md", "README.zh-CN.md")
FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else f": {detail}"))
    if not ok:
        FAILED.append(name)


def workspace_version():
    text = open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8").read()
    section = text.split("[workspace.package]", 1)[1]
    return re.search(r'^version\s*=\s*"([^"]+)"', section, re.M).group(1)


def built_names(dist):
    """What dist.sh wrote: the PyPI name, the npm names, and every artifact's file name."""
    files = sorted(os.listdir(dist)) + sorted("npm/" + f for f in os.listdir(os.path.join(dist, "npm")))
    wheel = next(f for f in files if f.endswith(".whl"))
    with zipfile.ZipFile(os.path.join(dist, wheel)) as z:
        meta_path = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = z.read(meta_path).decode()
    pypi = re.search(r"^Name: (.+)$", metadata, re.M).group(1).strip()
    npm = {}
    for f in files:
        if f.startswith("npm/") and f.endswith(".tgz"):
            with tarfile.open(os.path.join(dist, f)) as t:
                npm[f] = json.load(t.extractfile("package/package.json"))
    return {"files": files, "pypi": pypi, "metadata": metadata, "npm": npm}


# A shown command and the name it installs; the name may be a path to a built file.
COMMANDS = [
    ("pipx install", re.compile(r"pipx install\s+(?:--\S+\s+)*([^\s`)]+)")),
    ("pip install", re.compile(r"(?<!x )pip install\s+(?:--user\s+)?([^\s`)]+)")),
    ("uvx --from", re.compile(r"uvx --from\s+([^\s`)]+)")),
    ("npm install -g", re.compile(r"npm install -g\s+([^`\n#]+)")),
    ("npx -y", re.compile(r"npx -y\s+([^\s`)]+)")),
]
# Names of other tools a README installs the same way (not holdline's).
OTHERS = {"pipx"}
ARTIFACT = re.compile(r"holdline[\w.-]*?(?:\.tar\.gz|\.whl|\.tgz|\.mcpb)")


def as_pattern(name, version):
    """A README's file name as a glob over dist's files (VERSION, TRIPLE, PLATFORM, *)."""
    name = name.replace("VERSION", version)
    return re.sub(r"TRIPLE|PLATFORM", "*", name)


def check_readme(path, built, version):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    npm_names = {p["name"] for p in built["npm"].values()}
    seen = set()
    for label, rx in COMMANDS:
        for m in rx.finditer(text):
            for name in m.group(1).split():
                if name in OTHERS or name.startswith("-"):
                    continue
                seen.add(label)
                if "/" in name or name.endswith((".whl", ".tgz")):
                    pattern = os.path.basename(as_pattern(name, version))
                    ok = any(fnmatch.fnmatch(os.path.basename(f), pattern) for f in built["files"])
                    check(f"{path}: `{label} {name}` is a file dist.sh builds", ok, f"dist has {built['files']}")
                elif label.startswith(("pip", "uvx")):
                    check(f"{path}: `{label} {name}` is the wheel's name", name == built["pypi"], f"the wheel is {built['pypi']}")
                else:
                    check(f"{path}: `{label} {name}` is an npm package dist.sh builds", name in npm_names, f"npm packages: {sorted(npm_names)}")
    for label in ("pipx install", "uvx --from", "npm install -g", "npx -y"):
        check(f"{path} shows `{label}`", label in seen)
    for m in set(ARTIFACT.findall(text)):
        pattern = as_pattern(m, version)
        ok = any(fnmatch.fnmatch(os.path.basename(f), os.path.basename(pattern)) for f in built["files"])
        check(f"{path}: the file name {m} matches an artifact", ok, f"dist has {built['files']}")
    first = re.search(r"```sh\n(.*?)```", text, re.S)
    first_text = first.group(1) if first else ""
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    source = next((i for i, b in enumerate(blocks) if "scripts/install.sh" in b), None)
    registry = next((i for i, b in enumerate(blocks) if re.search(r"pipx install|npm install -g", b)), None)
    check(f"{path}: the source path (scripts/install.sh) comes before any registry install",
          source is not None and (registry is None or source < registry),
          f"first block: {first_text.strip()[:80]!r}")
    check(f"{path}: says the registry installs wait for a release",
          bool(re.search(r"[Oo]nce a release is published|发布版发布之后", text)))


def check_server_json(built, version):
    """The fields the MCP Registry's server.json schema (2025-09-29) requires and limits."""
    server = json.load(open(os.path.join(ROOT, "server.json"), encoding="utf-8"))
    name = server.get("name", "")
    check("server.json: name is NAMESPACE/NAME", bool(re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", name)) and 3 <= len(name) <= 200, name)
    check("server.json: description has 1 to 100 characters", 1 <= len(server.get("description", "")) <= 100)
    check("server.json: version is the workspace version", server.get("version") == version, server.get("version"))
    packages = {p.get("registryType"): p for p in server.get("packages", [])}
    for p in server.get("packages", []):
        missing = [k for k in ("registryType", "identifier", "version", "transport") if k not in p]
        check(f"server.json: the {p.get('registryType')} package has every required field", not missing, f"missing {missing}")
        check(f"server.json: the {p.get('registryType')} package is at the workspace version", p.get("version") == version)
        check(f"server.json: the {p.get('registryType')} package runs over stdio", p.get("transport", {}).get("type") == "stdio")
    check("server.json: the PyPI package is the wheel's name", packages.get("pypi", {}).get("identifier") == built["pypi"])
    main = next((p for p in built["npm"].values() if "bin" in p), {})
    check("server.json: the npm package is the launcher package", packages.get("npm", {}).get("identifier") == main.get("name"))
    check("npm: the launcher package's mcpName is server.json's name", main.get("mcpName") == name, main.get("mcpName"))
    check("wheel: its description says mcp-name: server.json's name", f"mcp-name: {name}" in built["metadata"])
    remotes = server.get("remotes", [])
    check("server.json: one streamable-http remote at /mcp with an Authorization header",
          len(remotes) == 1 and remotes[0].get("type") == "streamable-http" and remotes[0].get("url", "").endswith("/mcp")
          and any(h.get("name") == "Authorization" for h in remotes[0].get("headers", [])))


def check_install_sh_clients(binary):
    text = open(os.path.join(ROOT, "scripts/install.sh"), encoding="utf-8").read()
    block = re.search(r"\(clients: (.*?); --print", text, re.S).group(1)
    listed = re.findall(r"[a-z][a-z-]*", re.sub(r'say "\s*', " ", block.replace('"\n', " ")))
    help_text = subprocess.run([binary, "install", "--help"], capture_output=True, text=True, check=True).stdout
    values = help_text.split("Possible values:", 1)[1].split("\n\n", 1)[0]
    offered = re.findall(r"^\s+- ([a-z-]+)", values, re.M)
    check("install.sh's closing list of clients is install --help's", listed == offered, f"install.sh {listed}, --help {offered}")


def printed_entry(binary, client):
    """The entry `install --client CLIENT --command holdline-mcp --print` writes."""
    with tempfile.TemporaryDirectory() as home:
        out = subprocess.run([binary, "install", "--client", client, "--command", "holdline-mcp", "--print"],
                             capture_output=True, text=True, check=True, env={**os.environ, "HOME": home}).stdout
    doc = json.loads(out)
    return next(iter(doc.values()))["holdline"]


def check_install_links(binary):
    text = open(os.path.join(ROOT, "docs/clients.md"), encoding="utf-8").read()
    cursor = re.search(r"\(cursor://anysphere\.cursor-deeplink/mcp/install\?name=holdline&config=([A-Za-z0-9+/=]+)\)", text)
    vscode = re.search(r"\(vscode:mcp/install\?([^)\s]+)\)", text)
    check("docs/clients.md has an Add to Cursor link", cursor is not None)
    check("docs/clients.md has a VS Code install link", vscode is not None)
    if cursor:
        entry = json.loads(base64.b64decode(cursor.group(1)))
        check("the Cursor link's entry is install's", entry == printed_entry(binary, "cursor"), entry)
    if vscode:
        entry = json.loads(urllib.parse.unquote(vscode.group(1)))
        name = entry.pop("name", None)
        check("the VS Code link's entry is install's, named holdline",
              name == "holdline" and entry == printed_entry(binary, "vscode"), entry)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[-2])
    dist, binary = sys.argv[1:]
    version = workspace_version()
    built = built_names(dist)
    for readme in READMES:
        check_readme(readme, built, version)
    check_server_json(built, version)
    check_install_sh_clients(binary)
    check_install_links(binary)
    print(f"names: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
