"""`ralphstate install --tasks`: Claude Code's task tools turned on in the settings file
it writes the task hooks to, and turned off again by `--uninstall`.

The tools are on when the file's `env` sets `CLAUDE_CODE_ENABLE_TODO_TOOLS` to 1
(`agents.claude`); a value the person set is kept. What install added is recorded in
`storage.installed`, so `--uninstall` removes it only while it still has the value
install wrote. The same record holds the `permissions.allow` rules install adds
(`install.permissions`), which `update` adds and removes with the hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ralphstate.agents.claude import FALSY, ON, TASKS_ENV, TASKS_OFF_ENV, TRUTHY
from ralphstate.core.errors import RalphstateError
from ralphstate.install import permissions, settings
from ralphstate.install.settings import InstallResult
from ralphstate.storage.peruser import installed
from ralphstate.storage.peruser.installed import Added


def update(
    path: Path,
    load: Callable[[bytes, Path], dict[str, Any]],
    edit: Callable[[dict[str, Any]], list[str]],
    *,
    tasks: bool,
    uninstall: bool,
    allow: bool = False,
    hooks: bool = True,
    within: Path | None = None,
) -> InstallResult:
    """`settings.update` of the hooks' `edit`; with `tasks`, the task tools turned on in
    the file's `env` too, unless it says something already; with `allow`, the agent's
    `permissions.allow` rules (`install.permissions`). With `uninstall`, the `env` keys
    install added removed (unless `hooks` is False: the rules alone), if they still have
    the value install wrote, and with `allow` the rules it added.

    Idempotent: when nothing needs to change the file is not written at all.
    """
    before = installed.added(path)
    after: list[Added] = []

    def edit_all(data: dict[str, Any]) -> list[str]:
        after.clear()
        actions = edit(data)
        now = replace(before)
        if uninstall:
            if hooks:
                actions += _remove_env(data, before)
                now = replace(now, env={}, made_env=False)
            if allow:
                actions += permissions.remove(data, before)
                now = replace(now, allow=[], made=(False, False))
        else:
            if tasks:
                made, env_now = _add_env(data, path, before)
                actions += made
                now = replace(now, env=env_now.env, made_env=env_now.made_env)
            if allow:
                made, rules_now = permissions.add(data, path, before)
                actions += made
                now = replace(now, allow=rules_now.allow, made=rules_now.made)
        after.append(now)
        return actions

    result = settings.update(path, load, edit_all, within=within)
    now = after[0] if after else before
    if now != before:
        try:
            installed.remember(path, None if now.nothing() else now)
        except RalphstateError as exc:
            result.actions.append(f"note: {exc}")
    return result


def _add_env(data: dict[str, Any], path: Path, before: Added) -> tuple[list[str], Added]:
    """Turn the task tools on in the file's `env`, unless it says something already:
    (what was done, what install has added to this file now)."""
    env = data.get("env")
    if env is not None and not isinstance(env, dict):
        raise RalphstateError(f'"env" in {path} is not an object; nothing was changed.')
    made_env = env is None
    env = data.setdefault("env", {})
    actions: list[str] = []
    value = env.get(TASKS_ENV)
    if value is None:
        env[TASKS_ENV] = ON
        actions.append(f'turned the task tools on: env.{TASKS_ENV} = "{ON}"')
        now = Added({**before.env, TASKS_ENV: ON}, before.made_env or made_env)
    else:
        shown = json_value(value)
        if str(value).strip().lower() in TRUTHY:
            actions.append(f"the task tools are on already: env.{TASKS_ENV} = {shown}")
        else:
            actions.append(
                f"note: env.{TASKS_ENV} is {shown} in this file, left as it is; the task tools"
                " are on only when it is 1"
            )
        now = before
    off = env.get(TASKS_OFF_ENV)
    if off is not None and str(off).strip().lower() in FALSY:
        actions.append(
            f"note: env.{TASKS_OFF_ENV} is {json_value(off)}: Claude Code offers TodoWrite"
            " instead of TaskCreate and TaskUpdate"
        )
    return actions, now


def _remove_env(data: dict[str, Any], before: Added) -> list[str]:
    """Remove the `env` keys install added, those that still have the value it wrote,
    and the `env` object when install made it and nothing is left in it."""
    env = data.get("env")
    if not before.env or not isinstance(env, dict):
        return []
    actions: list[str] = []
    for key, value in before.env.items():
        if key in env and env[key] == value:
            del env[key]
            actions.append(f"removed env.{key}")
    if before.made_env and not env:
        del data["env"]
    return actions


def json_value(value: object) -> str:
    """A settings value as JSON writes it, on one line."""
    import json

    return json.dumps(value, ensure_ascii=False)
