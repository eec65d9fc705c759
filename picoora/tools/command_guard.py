"""Checks on a shell command before ``exec`` runs it. BEST EFFORT, NOT ISOLATION.

Two checks, both reading the command as text, which a determined model can always get past
(interpreters, build tools, encoded scripts, files it wrote first):
  * ``destructive_reason``: refuses commands that wreck the machine outright (rm -r of / or home
    or the workspace root, mkfs, dd onto a device, shutdown/reboot, fork bombs, chmod/chown -R of
    /, piping a download into a shell). Always on.
  * ``path_escape_reason``: when exec is restricted to the workspace, refuses absolute paths
    outside it, ``~`` and ``$HOME``, ``..`` escapes, symlinks pointing out, and protected files.
They stop the common accidents and the obvious attempts; real isolation needs an OS sandbox.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from picoora.tools.sandbox import Sandbox, is_within, real

# Runs of these characters are shell operators; a newline or backtick also ends a command.
_PUNCTUATION = "();<>|&\n`"
_WRAPPERS = {"sudo", "doas", "env", "nohup", "time", "nice", "ionice", "command", "exec", "builtin", "busybox", "xargs"}
_NESTING_SHELLS = {"sh", "bash", "zsh", "dash", "ksh"}
_SHELLS = _NESTING_SHELLS | {"fish", "python", "python3", "perl", "ruby", "node"}
_DOWNLOADERS = {"curl", "wget", "fetch"}
_POWER = {"shutdown", "reboot", "poweroff", "halt"}
_SYSTEMCTL_POWER = {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate"}
_DISK_TOOLS = {"mke2fs", "wipefs", "mkswap"}
_SAFE_DEVICES = {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr",
                 "/dev/tty"}
_BLOCK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|loop|mem|kmem|port)")
# The patterns below run on the model's command, which outside text can shape, so each is linear: a
# fork bomb's or a script's parts are found one at a time instead of by one pattern with backreferences
# or a lazy gap (those took 13 s on 30 KB of "sh sh sh ...", on the event loop).
# A function definition, its name starting where a word starts: `:() {`, `bomb(){`.
_FUNCTION_DEFINITION = re.compile(r"(?<![\w:])([\w:]+)\s*\(\)\s*\{")
MAX_CHECKED_DEFINITIONS = 20  # each body is scanned up to its "}"; nested ones would rescan it
# A shell (or `source`/`.`) fed by a download: bash -c "$(curl ...)", sh <(wget ...), . <(curl ...).
_SHELL_WORD = re.compile(r"(?:\b(?:ba|z|da|k)?sh|\bsource|(?:^|\s)\.)\s")
_DOWNLOAD_SUBSTITUTION = re.compile(r"(?:<\(|\$\(|`)\s*(?:curl|wget)\b")
_SEPARATORS = re.compile(r"[;&|]")
# Absolute paths hidden inside a word ('/etc/passwd' in a python -c string); ':' excluded so URLs pass.
_EMBEDDED_ABSOLUTE = re.compile(r"(?:^|[\s\"'=(,\[])(/[^\s\"'`;|&<>(),\]]*)")
_HOME_REFERENCE = re.compile(r"\$\{?HOME\b")

REFUSED = ("Command blocked by safety guard: {reason}. (The guard is best effort; ask the user to run it themselves "
           "if it is really wanted.)")


@dataclass
class _Segment:
    words: list[str] = field(default_factory=list)
    redirect_targets: list[str] = field(default_factory=list)
    piped_from: _Segment | None = None  # the command whose output feeds this one


def _split(command: str) -> list[_Segment] | None:
    """The simple commands of ``command`` with their words, or None when it does not tokenize."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: sh will refuse it too
        return None
    segments = [_Segment()]
    redirect_next = False
    for token in tokens:
        if token and all(c in _PUNCTUATION for c in token):
            if ">" in token or "<" in token:
                redirect_next = True
                continue
            previous = segments[-1]
            segments.append(_Segment(piped_from=previous if token in ("|", "|&") else None))
            continue
        if redirect_next:
            segments[-1].redirect_targets.append(token)
            redirect_next = False
        else:
            segments[-1].words.append(token)
    return [s for s in segments if s.words or s.redirect_targets]


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a simple command runs (basename) and its arguments, past sudo/env/VAR=value."""
    i = 0
    while i < len(words) and (
        words[i] in _WRAPPERS or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]) or (i > 0 and words[i].startswith("-"))
    ):
        i += 1
    if i >= len(words):
        return "", []
    return Path(words[i]).name, words[i + 1 :]


def _is_recursive(args: list[str]) -> bool:
    return any(a in ("--recursive", "-R") or (a.startswith("-") and not a.startswith("--") and "r" in a.lower())
               for a in args)


def _operands(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]


def _is_vital(target: str, cwd: Path, workspace: Path) -> bool:
    """True when deleting or re-owning ``target`` would take out /, a top-level dir, home or the workspace."""
    if target.startswith("~") or _HOME_REFERENCE.match(target):
        return True
    stripped = re.sub(r"(/\*|\*)+$", "", target) or "."
    resolved = real(cwd / stripped)
    if len(resolved.parts) <= 2:  # "/" and "/usr", "/etc", ...
        return True
    return is_within(workspace, resolved) or is_within(Path.home().resolve(), resolved)


def _nested_commands(segments: list[_Segment]) -> list[str]:
    """Command strings run by ``eval ...`` or ``sh -c '...'``, so they get the same checks."""
    nested = []
    for seg in segments:
        program, args = _program(seg.words)
        if program == "eval":
            nested.append(" ".join(args))
        elif program in _NESTING_SHELLS and "-c" in args[:-1]:
            nested.append(args[args.index("-c") + 1])
    return nested


def _defines_fork_bomb(command: str) -> bool:
    """A function whose body (up to its first "}") pipes it into itself in the background: `f|f&`."""
    for count, match in enumerate(_FUNCTION_DEFINITION.finditer(command)):
        if count >= MAX_CHECKED_DEFINITIONS:
            return False
        close = command.find("}", match.end())
        if close < 0:
            return False  # no body closes after this one, nor after any later one
        name = re.escape(match.group(1))
        if re.search(rf"{name}\s*\|\s*{name}\s*&", command[match.end() : close]):
            return True
    return False


def _runs_downloaded_script(command: str) -> bool:
    """A shell word, then in the same simple command a download's output as its input or argument."""
    for part in _SEPARATORS.split(command):
        shell = _SHELL_WORD.search(part)
        if shell is not None and _DOWNLOAD_SUBSTITUTION.search(part, shell.end()):
            return True
    return False


def destructive_reason(command: str, cwd: Path, workspace: Path) -> str | None:
    """Why ``command`` looks destructive, or None. Best effort: see the module docstring."""
    if _defines_fork_bomb(command):
        return "fork bomb"
    if _runs_downloaded_script(command):
        return "running a downloaded script"
    segments = _split(command) or []
    for seg in segments:
        reason = _segment_destructive_reason(seg, cwd, workspace)
        if reason is not None:
            return reason
    for inner in _nested_commands(segments):
        reason = destructive_reason(inner, cwd, workspace)
        if reason is not None:
            return reason
    return None


def _segment_destructive_reason(seg: _Segment, cwd: Path, workspace: Path) -> str | None:
    if any(_BLOCK_DEVICE.match(t) for t in seg.redirect_targets):
        return "writing to a raw device"
    program, args = _program(seg.words)
    operands = _operands(args)
    if program == "rm" and _is_recursive(args) and any(_is_vital(t, cwd, workspace) for t in operands):
        return "recursive delete of /, a system directory, home or the workspace root"
    if program == "find" and "-delete" in args and operands and _is_vital(operands[0], cwd, workspace):
        return "find -delete over /, a system directory, home or the workspace root"
    recursive_owner_change = program in ("chmod", "chown", "chgrp") and _is_recursive(args)
    if recursive_owner_change and any(_is_vital(t, cwd, workspace) for t in operands[1:]):  # operands[0]: mode/owner
        return f"recursive {program} of /, a system directory, home or the workspace root"
    if program.startswith("mkfs") or program in _DISK_TOOLS:
        return "formatting a disk"
    if program == "dd" and any(a.startswith("of=/dev/") and a[3:] not in _SAFE_DEVICES for a in args):
        return "dd onto a device"
    if program in _POWER or (program in ("init", "telinit") and args[:1] in (["0"], ["6"])):
        return "shutting down or rebooting the machine"
    if program == "systemctl" and any(a in _SYSTEMCTL_POWER for a in args):
        return "shutting down or rebooting the machine"
    if program in _SHELLS and _fed_by_download(seg):
        return "piping a download into a shell"
    return None


def _fed_by_download(seg: _Segment) -> bool:
    upstream = seg.piped_from
    while upstream is not None:
        if _program(upstream.words)[0] in _DOWNLOADERS:
            return True
        upstream = upstream.piped_from
    return False


def _path_candidates(command: str, segments: list[_Segment]) -> list[str]:
    """Every word that may name a path: words, redirect targets, the value of key=value words,
    and absolute paths embedded in longer words."""
    found: list[str] = []
    for seg in segments:
        for word in seg.words + seg.redirect_targets:
            found.append(word)
            if "=" in word:
                found.append(word.split("=", 1)[1])
    found.extend(m.group(1) for m in _EMBEDDED_ABSOLUTE.finditer(command))
    return [w for w in found if w]


def path_escape_reason(command: str, cwd: Path, sandbox: Sandbox) -> str | None:
    """Why ``command`` reaches outside the workspace (restricted mode), or None. Best effort."""
    segments = _split(command)
    if segments is None:
        return "the command does not parse (unbalanced quotes)"
    for inner in _nested_commands(segments):
        reason = path_escape_reason(inner, cwd, sandbox)
        if reason is not None:
            return reason
    for word in _path_candidates(command, segments):
        if word.startswith("~") or _HOME_REFERENCE.search(word):
            return f"home directory reference {word!r} (exec is restricted to the workspace)"
        target = real(cwd / word)
        if word in _SAFE_DEVICES or str(target) in _SAFE_DEVICES or word.startswith("/dev/fd/"):
            continue
        if sandbox.is_protected(target):
            return f"{word!r} holds picoora's configuration or secrets"
        if not is_within(target, sandbox.workspace):
            if word.startswith("/"):
                kind = "absolute path outside the workspace"
            elif ".." in Path(word).parts:
                kind = "path escapes the workspace"
            else:
                kind = "symlink resolves outside the workspace"
            return f"{kind}: {word!r}"
    return None
