#!/usr/bin/env python3
"""Writes holdline's Python wheel: both native binaries as the wheel's scripts.

maturin's binary packaging (`bindings = "bin"`) takes the binaries of one crate,
and holdline's two live in two crates of a workspace; so the wheel is written
here. A wheel is a zip (PEP 427) holding:

  holdline_mcp-VERSION.data/scripts/holdline-hub   pip installs these into the
  holdline_mcp-VERSION.data/scripts/holdline-mcp   venv's bin/, executable
  holdline_mcp-VERSION.dist-info/METADATA          name, version, summary
  holdline_mcp-VERSION.dist-info/WHEEL             the tag py3-none-PLATFORM
  holdline_mcp-VERSION.dist-info/RECORD            sha256 and size of every file

The distribution is `holdline-mcp` (the PyPI name `holdline` belongs to an unrelated
project); a wheel's file and folder names spell it `holdline_mcp` (PEP 427). The
description starts with `mcp-name: SERVER_NAME`, the line by which the MCP Registry
checks that the PyPI package belongs to the server.json of that name.

The tag says any Python 3 and no ABI: nothing is imported from Python, pip only
has to pick the wheel for the platform (e.g. manylinux_2_28_x86_64, the glibc
the binaries were linked against).

  dist-wheel.py --version V --platform TAG --bin PATH --bin PATH --readme README.md \
                --mcp-name io.github.OWNER/NAME --out DIR
"""

import argparse
import base64
import hashlib
import os
import zipfile

NAME = "holdline-mcp"
# The name in file and folder names (PEP 427: runs of -_. become one _).
FILE_NAME = "holdline_mcp"
SUMMARY = "holdline: keep an IDE agent's turn alive, answered from a browser panel on the LAN"
# Every entry gets this fixed time, so the same binaries give the same wheel.
ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def metadata(version: str, readme: str, mcp_name: str) -> bytes:
    head = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "License: MIT\n"
        "Requires-Python: >=3.7\n"
        "Description-Content-Type: text/markdown\n"
        "\n"
    )
    return (head + f"<!-- mcp-name: {mcp_name} -->\n\n" + readme).encode()


def wheel_file(platform: str) -> bytes:
    return (
        "Wheel-Version: 1.0\n"
        "Generator: holdline scripts/dist-wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: py3-none-{platform}\n"
    ).encode()


def add(zf: zipfile.ZipFile, path: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(path, date_time=ZIP_TIME)
    info.external_attr = (0o100000 | mode) << 16  # a regular file with these permissions
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", required=True)
    ap.add_argument("--platform", required=True, help="wheel platform tag, e.g. manylinux_2_28_x86_64")
    ap.add_argument("--bin", action="append", required=True, help="a binary to install as a script")
    ap.add_argument("--readme", required=True)
    ap.add_argument("--mcp-name", required=True, help="the server.json name, e.g. io.github.OWNER/NAME")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    data_dir = f"{FILE_NAME}-{args.version}.data/scripts"
    info_dir = f"{FILE_NAME}-{args.version}.dist-info"
    out = os.path.join(args.out, f"{FILE_NAME}-{args.version}-py3-none-{args.platform}.whl")
    with open(args.readme, encoding="utf-8") as f:
        readme = f.read()

    records = []
    with zipfile.ZipFile(out, "w") as zf:
        for binary in args.bin:
            with open(binary, "rb") as f:
                data = f.read()
            path = f"{data_dir}/{os.path.basename(binary)}"
            add(zf, path, data, 0o755)
            records.append(record_line(path, data))
        for name, data in (("METADATA", metadata(args.version, readme, args.mcp_name)), ("WHEEL", wheel_file(args.platform))):
            path = f"{info_dir}/{name}"
            add(zf, path, data, 0o644)
            records.append(record_line(path, data))
        records.append(f"{info_dir}/RECORD,,")  # RECORD lists itself without a hash
        add(zf, f"{info_dir}/RECORD", ("\n".join(records) + "\n").encode(), 0o644)
    print(f"dist: wrote {os.path.basename(out)}")


if __name__ == "__main__":
    main()
