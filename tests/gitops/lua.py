"""Running an Argo CD health.lua with Debian's lua5.4, as Argo CD does: the resource is the
global ``obj`` and the script returns {status, message}."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Tuple


def lua_literal(value: Any) -> str:
    """A Lua table constructor for JSON-like data (what Argo CD's gopher-lua gets from the object)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string literal is a valid Lua string literal here
    if isinstance(value, list):
        return "{" + ", ".join(lua_literal(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {lua_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot pass {type(value).__name__} to Lua")


def lua_binary() -> str | None:
    return shutil.which("lua5.4")


def run_health(script: Path, obj: Any) -> Tuple[str, str]:
    lua = lua_binary()
    assert lua is not None
    program = (
        f"obj = {lua_literal(obj)}\n"
        f"local check = assert(loadfile({json.dumps(str(script))}))\n"
        "local hs = check()\n"
        "io.write(tostring(hs.status), '\\n', tostring(hs.message), '\\n')\n"
    )
    result = subprocess.run([lua, "-"], input=program, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    status, message = result.stdout.split("\n", 1)
    return status, message.rstrip("\n")
