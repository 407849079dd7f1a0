"""Re-record the agents' own outputs in tests/fixtures/outputs/ with the pinned clients.

Run by hand after upgrading a client (its pin in tests/e2e/*/package.json), then run
`pytest tests/run/test_usage.py tests/run/test_ratelimits.py` and read the diff:

    python tests/e2e/record_outputs.py            # every recording
    python tests/e2e/record_outputs.py gemini_    # the ones whose file name starts so

Each client runs offline against the scripted API of its end-to-end tests
(fake_api.py, fake_responses.py, fake_gemini.py), which answers with a model turn or
with the error a recording names. The clients' own retries are switched off so that an
error ends the run at once (Claude Code `CLAUDE_CODE_MAX_RETRIES=0`, Codex
`request_max_retries = 0` and `stream_max_retries = 0`, Gemini CLI
`general.maxAttempts = 1`); what they print at the end is the same with retries.

A fixture is what the runner's log would hold: stdout and stderr together, in the order
they came. Paths of this machine (the temporary directory, the installed client) and
the loopback port are replaced by fixed placeholders. The exit code and where the
output went are printed in a summary, for the table in tests/fixtures/outputs/README.md.
Needs the clients installed (`npm ci` in tests/e2e, tests/e2e/codex, tests/e2e/gemini).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# Run as a script, this directory is the first on sys.path: the e2e helpers import.
import codex_fixtures
import e2e_support
import gemini_fixtures
from fake_api import FakeAnthropicAPI, bash
from fake_api import api_error as claude_error
from fake_api import text as claude_text
from fake_gemini import FakeGeminiAPI
from fake_gemini import api_error as gemini_error
from fake_gemini import text as gemini_text
from fake_responses import FakeResponsesAPI, message, response_failed
from fake_responses import api_error as responses_error

HERE = Path(__file__).resolve().parent
OUTPUTS = HERE.parent / "fixtures" / "outputs"
PROMPT = "Say hello."


@dataclass
class Output:
    merged: str
    stdout: int
    stderr: int
    exit: int
    requests: int


@dataclass(frozen=True)
class Recording:
    name: str
    client: str  # claude, codex, gemini
    # The scripted turns: the API's answer to each request the client makes.
    turns: Callable[[], list[Any]]
    args: tuple[str, ...] = ()


def _pump(stream: IO[bytes], sink: list[bytes], lock: threading.Lock, count: list[int]) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
        with lock:
            sink.append(chunk)
        count[0] += len(chunk)


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[str, int, int, int]:
    """Run a client; its stdout and stderr merged as they came, their sizes, its exit."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    merged: list[bytes] = []
    lock = threading.Lock()
    sizes = ([0], [0])
    pumps = [
        threading.Thread(target=_pump, args=(stream, merged, lock, size))
        for stream, size in zip((process.stdout, process.stderr), sizes, strict=True)
    ]
    for pump in pumps:
        pump.start()
    code = process.wait(timeout=300)
    for pump in pumps:
        pump.join()
    return b"".join(merged).decode("utf-8", "replace"), sizes[0][0], sizes[1][0], code


# -- the API's answers ---------------------------------------------------------------------

CLAUDE_RATE = "This request would exceed your account's rate limit. Please try again later."
CLAUDE_CREDIT = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)
OPENAI_RATE = {
    "message": "Rate limit reached for gpt-test in organization org-test on tokens per min "
    "(TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more.",
    "type": "tokens",
    "param": None,
    "code": "rate_limit_exceeded",
}
OPENAI_USAGE_LIMIT = {
    "type": "usage_limit_reached",
    "message": "The usage limit has been reached",
    "plan_type": "plus",
    "resets_at": 1798797600,  # 2027-01-01 10:00 UTC
}
OPENAI_NO_CREDIT = {
    "message": "You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    "type": "insufficient_quota",
    "param": None,
    "code": "insufficient_quota",
}
OPENAI_503 = {
    "message": "The server is overloaded or not ready yet.",
    "type": "server_error",
    "param": None,
    "code": None,
}
OPENAI_OVERLOADED = {
    "code": "server_is_overloaded",
    "message": "Our servers are currently overloaded. Please try again later.",
}


def google_quota(per: str, limit: int, retry: str) -> dict[str, Any]:
    """The Gemini API's 429 for a free-tier request quota (`per`: Minute or Day)."""
    return {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing "
        "details. For more information on this error, head to: "
        "https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, "
        "head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: "
        "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: "
        f"{limit}, model: gemini-2.5-flash\nPlease retry in {retry}.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [
                    {
                        "description": "Learn more about Gemini API quotas",
                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                    }
                ],
            },
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests",
                        "quotaId": f"GenerateRequestsPer{per}PerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                        "quotaValue": str(limit),
                    }
                ],
            },
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{int(float(retry.rstrip('s')))}s",
            },
        ],
    }


GEMINI_CAPACITY = {
    "code": 429,
    "message": "You have exhausted your capacity on this model. "
    "Your quota will reset after 2h14m33s.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [],
}
GEMINI_503 = {
    "code": 503,
    "message": "The model is overloaded. Please try again later.",
    "status": "UNAVAILABLE",
}

STREAM = ("--output-format", "stream-json", "--verbose")
JSON = ("--output-format", "json")

RECORDINGS = [
    Recording(
        "claude_json_ok.json",
        "claude",
        lambda: [[bash("echo hi")], [claude_text("All done.")]],
        JSON,
    ),
    Recording(
        "claude_stream_ok.jsonl",
        "claude",
        lambda: [[bash("echo hi")], [claude_text("All done.")]],
        STREAM,
    ),
    Recording(
        "claude_json_429.json",
        "claude",
        lambda: [[claude_error(429, "rate_limit_error", CLAUDE_RATE, {"retry-after": "30"})]],
        JSON,
    ),
    Recording(
        "claude_stream_429.jsonl",
        "claude",
        lambda: [[claude_error(429, "rate_limit_error", CLAUDE_RATE, {"retry-after": "30"})]],
        STREAM,
    ),
    Recording(
        "claude_json_529.json",
        "claude",
        lambda: [[claude_error(529, "overloaded_error", "Overloaded")]],
        JSON,
    ),
    Recording(
        "claude_json_credit.json",
        "claude",
        lambda: [[claude_error(400, "invalid_request_error", CLAUDE_CREDIT)]],
        JSON,
    ),
    Recording("codex_exec_json_ok.jsonl", "codex", lambda: [[message("All done.")]]),
    Recording(
        "codex_exec_json_usage_limit.jsonl",
        "codex",
        lambda: [[responses_error(429, OPENAI_USAGE_LIMIT)]],
    ),
    Recording(
        "codex_exec_json_429.jsonl",
        "codex",
        lambda: [[responses_error(429, OPENAI_RATE, {"retry-after": "2"})]],
    ),
    Recording(
        "codex_exec_json_insufficient_quota.jsonl",
        "codex",
        lambda: [[responses_error(429, OPENAI_NO_CREDIT)]],
    ),
    Recording("codex_exec_json_503.jsonl", "codex", lambda: [[responses_error(503, OPENAI_503)]]),
    Recording(
        "codex_exec_json_overloaded.jsonl",
        "codex",
        lambda: [[response_failed(OPENAI_OVERLOADED)]],
    ),
    Recording("gemini_json_ok.json", "gemini", lambda: [[gemini_text("All done.")]]),
    Recording(
        "gemini_json_quota.json",
        "gemini",
        lambda: [[gemini_error(429, google_quota("Minute", 10, "39.033478657s"))]],
    ),
    Recording(
        "gemini_json_daily_quota.json",
        "gemini",
        lambda: [[gemini_error(429, google_quota("Day", 250, "24.545235313s"))]],
    ),
    Recording(
        "gemini_json_capacity.json", "gemini", lambda: [[gemini_error(429, GEMINI_CAPACITY)]]
    ),
    Recording("gemini_json_503.json", "gemini", lambda: [[gemini_error(503, GEMINI_503)]]),
]


# -- the clients ---------------------------------------------------------------------------


def claude(recording: Recording, tmp: Path) -> tuple[Output, str]:
    binary, detail = e2e_support.find_claude()
    if binary is None:
        raise SystemExit(f"Claude Code: {detail}")
    project, home, scratch = tmp / "project", tmp / "home", tmp / "tmp"
    for path in (project, home, scratch):
        path.mkdir()
    with FakeAnthropicAPI() as api:
        api.add_turns(*recording.turns())
        search = os.environ.get("PATH", "")
        env = e2e_support.claude_client_env(search, home, scratch, api.base_url)
        env["CLAUDE_CODE_MAX_RETRIES"] = "0"
        argv = [str(binary), "-p", PROMPT, "--allowedTools", "Bash", *recording.args]
        merged, out, err, code = run(argv, project, env)
        posts = sum(1 for request in api.requests if request.method == "POST")
        port = str(api.port)
    return Output(merged, out, err, code, posts), port


def codex(recording: Recording, tmp: Path) -> tuple[Output, str]:
    binary, detail = codex_fixtures.find_codex()
    if binary is None or not binary.is_file():
        raise SystemExit(f"Codex CLI: {detail}")
    project = tmp / "project"
    project.mkdir()
    api = FakeResponsesAPI(recording.turns()).start()
    try:
        codex_home = tmp / "codex-home"
        codex_fixtures.write_config(codex_home, api, project, retries=False)
        env = codex_fixtures.base_env(tmp, codex_home)
        argv = [str(binary), "exec", "--json", "--skip-git-repo-check", PROMPT]
        merged, out, err, code = run(argv, project, env)
        port = api.base_url.rsplit(":", 1)[1].split("/")[0]
        return Output(merged, out, err, code, len(api.requests)), port
    finally:
        api.stop()


def gemini(recording: Recording, tmp: Path) -> tuple[Output, str]:
    command, detail = gemini_fixtures.find_gemini()
    if command is None:
        raise SystemExit(f"Gemini CLI: {detail}")
    project, scratch = tmp / "project", tmp / "tmp"
    project.mkdir()
    scratch.mkdir()
    api = FakeGeminiAPI(recording.turns()).start()
    try:
        env = gemini_fixtures.base_env(tmp, api, retries=False)
        env["TMPDIR"] = str(scratch)  # where it writes its error reports
        argv = [*command, "-p", PROMPT, "--output-format", "json"]
        merged, out, err, code = run(argv, project, env)
        port = api.base_url.rsplit(":", 1)[1]
        return Output(merged, out, err, code, len(api.requests)), port
    finally:
        api.stop()


CLIENTS = {"claude": claude, "codex": codex, "gemini": gemini}


def normalise(text: str, tmp: Path, port: str) -> str:
    """The output without what belongs to this machine and this run's server."""
    for path in {str(tmp.resolve()), str(tmp)}:
        text = text.replace(path, "/tmp/record")
    text = re.sub(r"file:///\S*?/node_modules/", "file:///e2e/node_modules/", text)
    return text.replace(f"127.0.0.1:{port}", "127.0.0.1:PORT")


def main(argv: list[str]) -> int:
    os.environ.setdefault("RALPHSTATE_HOME", tempfile.mkdtemp(prefix="ralphstate-home-"))
    chosen = [r for r in RECORDINGS if not argv or any(r.name.startswith(a) for a in argv)]
    if not chosen:
        print(f"no recording matches {' '.join(argv)}", file=sys.stderr)
        return 1
    print(f"{'file':42} {'exit':>4} {'requests':>8} {'stdout':>7} {'stderr':>7}")
    for recording in chosen:
        with tempfile.TemporaryDirectory(prefix="record-") as scratch:
            tmp = Path(scratch)
            output, port = CLIENTS[recording.client](recording, tmp)
            fixture = normalise(output.merged, tmp, port)
        (OUTPUTS / recording.name).write_text(fixture, encoding="utf-8")
        print(
            f"{recording.name:42} {output.exit:>4} {output.requests:>8} "
            f"{output.stdout:>7} {output.stderr:>7}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
