"""What of the person's environment reaches a confined agent: an allowlist, never the
whole (tokens, cloud keys and passwords stay outside).

Kept: the basics a program needs (`PATH`, `HOME`, the user's name, the terminal, the
locale, the time zone, the certificate and proxy settings), ralphstate's own variables,
git's identity and configuration file, the variables of the agent programs the run
starts (their own prefixes and their model API's key, `CLIENT_PREFIXES`), and what the
person names with `run --env NAME`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

BASICS = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "FORCE_COLOR",
        "COLUMNS",
        "LINES",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "NO_PROXY",
        "https_proxy",
        "http_proxy",
        "no_proxy",
        "VIRTUAL_ENV",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "IS_SANDBOX",
    }
)
PREFIXES = ("LC_", "RALPHSTATE_", "GIT_AUTHOR_", "GIT_COMMITTER_")
# Each agent program's own variables and its model API's key, by program name.
CLIENT_PREFIXES: dict[str, tuple[str, ...]] = {
    "claude": ("CLAUDE_", "ANTHROPIC_", "DISABLE_", "MCP_"),
    "codex": ("CODEX_", "OPENAI_"),
    "gemini": ("GEMINI_", "GOOGLE_API_KEY", "GOOGLE_GENAI_", "GOOGLE_CLOUD_"),
    "copilot": ("COPILOT_", "GH_TOKEN", "GITHUB_TOKEN"),
    "opencode": ("OPENCODE_", "ANTHROPIC_", "OPENAI_"),
    "cursor-agent": ("CURSOR_",),
    "aider": ("AIDER_", "ANTHROPIC_", "OPENAI_"),
}


def program_name(argv: list[str]) -> str:
    return Path(argv[0]).name.lower().removesuffix(".exe") if argv else ""


def allowed(
    env: Mapping[str, str], chain: Iterable[list[str]], named: Iterable[str] = ()
) -> dict[str, str]:
    """The variables of `env` a confined agent of the commands `chain` gets, with the
    ones the person `named`."""
    prefixes = [*PREFIXES]
    for argv in chain:
        prefixes += CLIENT_PREFIXES.get(program_name(argv), ())
    wanted = set(named)
    return {
        key: value
        for key, value in env.items()
        if key in BASICS or key in wanted or key.startswith(tuple(prefixes))
    }
