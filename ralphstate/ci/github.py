"""What a job tells GitHub Actions, and asks of it: the step's outputs
(`$GITHUB_OUTPUT`), the job's summary (`$GITHUB_STEP_SUMMARY`), the next job of the same
workflow (`gh workflow run`, with the inputs this job was given) and the pull request
(`gh pr`). Outside Actions (a container, a Kubernetes Job) the files are not named and
nothing is written; `gh` is asked only for what the job was told to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.storage.system import children

GH_TIMEOUT = 120.0
OUTPUT_BYTES = 64 * 1024
EVENT_BYTES = 1 << 20  # of the event file read (GitHub's payloads are far smaller)
# A value GITHUB_OUTPUT's heredoc form ends at: never inside an output here.
DELIMITER = "RALPHSTATE_OUTPUT_END"


def set_outputs(outputs: Mapping[str, str], environ: Mapping[str, str]) -> None:
    """Append `outputs` to the step's output file, when Actions names one."""
    target = environ.get("GITHUB_OUTPUT")
    if not target:
        return
    lines = []
    for name, value in outputs.items():
        if DELIMITER in value:
            raise RalphstateError(f"the output {name} holds {DELIMITER}.")
        lines.append(f"{name}<<{DELIMITER}\n{value}\n{DELIMITER}\n")
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write("".join(lines))


def add_summary(text: str, environ: Mapping[str, str]) -> None:
    """Append Markdown `text` to the job's summary, when Actions names the file."""
    target = environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")


def workflow_name(given: str | None, environ: Mapping[str, str]) -> str | None:
    """The workflow the next job is asked of: as given, else the file GITHUB_WORKFLOW_REF
    names (`owner/repo/.github/workflows/loop.yml@refs/heads/main`), else None."""
    if given:
        return given
    ref = environ.get("GITHUB_WORKFLOW_REF", "")
    path = ref.split("@", 1)[0]
    name = path.rsplit("/", 1)[-1]
    return name or None


def _event(environ: Mapping[str, str]) -> dict[str, Any]:
    """The event that started this job, as GitHub wrote it ({} where it cannot be read)."""
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with Path(path).open("rb") as file:
            event = orjson.loads(file.read(EVENT_BYTES))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return event if isinstance(event, dict) else {}


def _name(value: Any, key: str) -> str:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""


def default_branch(environ: Mapping[str, str]) -> str | None:
    """The repository's default branch, as the event that started this job names it."""
    return _name(_event(environ).get("repository"), "default_branch") or None


def refuse_forks(environ: Mapping[str, str]) -> None:
    """A job started by a pull request from a fork never runs a loop: its checkout and
    its workflow are the fork author's. RalphstateError for one. (`ralphstate prove`,
    the merge gate, runs on any pull request: its code is what is proved, by the base's
    contract, and no agent runs.)"""
    if environ.get("GITHUB_EVENT_NAME") not in ("pull_request", "pull_request_target"):
        return
    event = _event(environ)
    pull = event.get("pull_request")
    head = pull.get("head") if isinstance(pull, dict) else None
    head = _name(head.get("repo") if isinstance(head, dict) else None, "full_name")
    base = _name(event.get("repository"), "full_name")
    if not head or head != base:
        raise RalphstateError(
            f"this job was started by a pull request from {visible(head) or 'a fork'}: a"
            " fork's pull request never proves a loop, since its author wrote the checks it"
            " would run. Run the loop from the base repository."
        )


def started_by(environ: Mapping[str, str]) -> str | None:
    """Who started this job, and how: one sentence for the summary, since an agent with a
    token could have started it too."""
    if environ.get("GITHUB_ACTIONS") != "true":
        return None
    who = environ.get("GITHUB_TRIGGERING_ACTOR") or environ.get("GITHUB_ACTOR") or "somebody"
    event = environ.get("GITHUB_EVENT_NAME") or "an event"
    ref = environ.get("GITHUB_REF_NAME") or "?"
    return f"This job was started by {visible(who)} ({visible(event)}) on {visible(ref)}."


def event_inputs(environ: Mapping[str, str]) -> dict[str, str]:
    """The inputs of the `workflow_dispatch` that started this job ({} for any other
    event), to hand on to the next job unchanged."""
    if environ.get("GITHUB_EVENT_NAME") != "workflow_dispatch":
        return {}
    inputs = _event(environ).get("inputs")
    if not isinstance(inputs, dict):
        return {}
    return {
        str(k): v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in inputs.items()
    }


def _gh(args: list[str], root: Path, stdin: bytes | None = None) -> tuple[bool, str]:
    """`gh ARGS`: whether it succeeded, and what it said."""
    try:
        done = children.run(
            ["gh", *args], cwd=root, input=stdin, timeout=GH_TIMEOUT, limit=OUTPUT_BYTES
        )
    except OSError as exc:
        return False, f"gh could not be started: {exc.strerror or exc}"
    said = (done.out + done.err).decode("utf-8", "replace").strip()
    return done.code == 0, said


def dispatch(root: Path, workflow: str, ref: str, inputs: Mapping[str, str]) -> tuple[bool, str]:
    """Ask for the next job: `workflow` on `ref` with `inputs`, through `gh`."""
    body = orjson.dumps(dict(inputs))
    return _gh(["workflow", "run", workflow, "--ref", ref, "--json"], root, body)


def tell_pull_request(root: Path, branch: str, base: str, title: str, body: Path) -> str:
    """Open the loop branch's pull request with `body`, or comment on the open one;
    what happened, in one line."""
    found, _ = _gh(["pr", "view", branch, "--json", "url"], root)
    if found:
        ok, said = _gh(["pr", "comment", branch, "--body-file", str(body)], root)
        return "commented on the pull request" if ok else f"could not comment: {said}"
    args = ["pr", "create", "--head", branch, "--base", base, "--title", title]
    ok, said = _gh([*args, "--body-file", str(body)], root)
    return f"opened {said.splitlines()[-1]}" if ok and said else f"could not open one: {said}"
