"""Claude Code's run-specific lines, neutralized for matching only (the stored request is unchanged).

Claude Code writes facts about the run into its prompt: the working directory, platform, shell, OS
version, model, today's date, the git status, additional working directories, `<total_tokens>`
reminders and the paths of the instruction files it read. They change between a capture on a laptop
and a replay in CI, so inside the places Claude Code writes them (its `# Environment` section, `<env>`
blocks, `# currentDate`, `gitStatus:` blocks and `<system-reminder>` blocks) their values are replaced
by a fixed token. Every other line still counts.
"""

from __future__ import annotations

import re

TOKEN = "{{volatile}}"

_MARKERS = ("# Environment", "<env>", "# currentDate", "gitStatus:", "<system-reminder>")

_LABELLED = re.compile(
    r"^(?P<label>\s*(?:[-*]\s*)?"
    r"(?:Primary working directory|Working directory|Additional working directories|Platform|Shell|OS Version"
    r"|Today's date)\s*:)(?P<value>.*?)(?P<cr>\r?)$"
)
_POWERED = re.compile(r"^(?P<label>\s*(?:[-*]\s*)?You are powered by the model)\b(?P<value>.*?)(?P<cr>\r?)$")
# "Contents of /Users/ana/src/app/CLAUDE.md (project instructions, ...):": the path is the working
# directory (or the home directory) again; the kind of instructions in parentheses still counts.
_CONTENTS_OF = re.compile(r"^(?P<label>Contents of) (?P<value>\S.*?) (?P<what>\([^()]*\):?\s*)$")
_TODAY = re.compile(r"(Today's date(?: is)?(?: now)?:?\s+)[0-9][0-9/.\-]*[0-9]")
_TOTAL_TOKENS = re.compile(r"<total_tokens>.*?</total_tokens>")
_HEADING = re.compile(r"^#{1,6}\s")
_ENVIRONMENT = re.compile(r"^#\s*Environment\b")
_CURRENT_DATE = re.compile(r"^#\s*currentDate\s*$")
_REMINDER_OPEN, _REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"


def neutralize(text: str) -> str:
    """`text` with Claude Code's run-specific values replaced by TOKEN, in the places it writes them."""
    if not might_change(text):
        return text
    return "\n".join(_Scanner().lines(text.split("\n")))


def might_change(text: str) -> bool:
    """False when `neutralize` leaves `text` as it is (it holds no place Claude Code writes facts in)."""
    # Every marker has "<", "# " or "gitStatus:": three quick scans spare most text the full check.
    if "<" not in text and "# " not in text and "gitStatus:" not in text:
        return False
    return any(marker in text for marker in _MARKERS)


def _neutral_line(line: str) -> str:
    m = _LABELLED.match(line) or _POWERED.match(line)
    if m is not None:
        return f"{m.group('label')} {TOKEN}{m.group('cr')}"
    if line.startswith("Contents of "):
        line = _CONTENTS_OF.sub(lambda c: f"{c.group('label')} {TOKEN} {c.group('what')}", line)
    if "Today's date" in line:
        line = _TODAY.sub(lambda d: d.group(1) + TOKEN, line)
    if "<total_tokens>" in line:
        line = _TOTAL_TOKENS.sub(f"<total_tokens>{TOKEN}</total_tokens>", line)
    return line


_GIT_PARTS = ("Current branch:", "Main branch", "Git user:", "Status:", "Recent commits:")
_GIT_LISTS = ("Status:", "Recent commits:")


class _GitStatus:
    """The content of a `gitStatus:` block: swallowed, and written back as one TOKEN line.

    The block is its labelled parts (branch, main branch, user, status list, recent commits list) and
    the blank lines between them; the first other line ends it.
    """

    def __init__(self) -> None:
        self.in_list = False
        self.swallowed = False
        self.blanks: list[str] = []

    def feed(self, line: str, out: list[str]) -> str | None:
        """None while `line` is git status; once the block has ended, the line to process normally."""
        stripped = line.strip()
        if _HEADING.match(line) or stripped.startswith("<"):
            return self.close(out, line)
        close = line.find(_REMINDER_CLOSE)
        if close > 0:  # the reminder closes on the status's last line
            self.swallowed = True
            return self.close(out, line[close:])
        if not stripped:
            self.in_list = False
            self.blanks.append(line)
            return None
        if not (self.in_list or stripped.startswith(_GIT_PARTS)):
            return self.close(out, line)
        self.swallowed = True
        self.blanks.clear()
        self.in_list = self.in_list or stripped.startswith(_GIT_LISTS)
        return None

    def close(self, out: list[str], rest: str | None = None) -> str | None:
        if self.swallowed:
            out.append(TOKEN)
        out.extend(self.blanks)
        return rest


class _Scanner:
    """Walks the lines once, knowing which of Claude Code's blocks each line is in."""

    def __init__(self) -> None:
        self.section: str | None = None  # "env", "environment" or "currentDate"
        self.env_tail = False  # the lines right after </env> ("You are powered by ...") up to a blank line
        self.reminders = 0  # <system-reminder> nesting depth
        self.git: _GitStatus | None = None

    def lines(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        for line in lines:
            if self.git is not None:
                rest = self.git.feed(line, out)
                if rest is None:
                    continue
                self.git, line = None, rest
            out.append(self._line(line))
        if self.git is not None:
            self.git.close(out)
        return out

    def _line(self, line: str) -> str:
        stripped = line.strip()
        self._enter_section(line, stripped)
        in_reminder = self.reminders > 0 or _REMINDER_OPEN in line
        self.reminders = max(0, self.reminders + line.count(_REMINDER_OPEN) - line.count(_REMINDER_CLOSE))
        if stripped.startswith("gitStatus:"):
            self.git = _GitStatus()
            return line
        scoped = in_reminder or self.section is not None or self.env_tail
        if self.env_tail and not stripped:
            self.env_tail = False
        if self.section == "env" and "</env>" in line:
            self.section, self.env_tail = None, True
        return _neutral_line(line) if scoped else line

    def _enter_section(self, line: str, stripped: str) -> None:
        if stripped.startswith("<env>"):
            self.section, self.env_tail = "env", False
        elif _ENVIRONMENT.match(line):
            self.section = "environment"
        elif _CURRENT_DATE.match(line):
            self.section = "currentDate"
        elif self.section in ("environment", "currentDate") and (
            _HEADING.match(line) or stripped.startswith(("<", "gitStatus:"))
        ):
            self.section = None
