"""Python (and C++: the kernels of Inductor's CPU backend, `.cpp` files) syntax highlighting
one line at a time, on demand.

Lexing a whole 100,000-line wrapper takes seconds; the view lexes only the
lines it draws and caches them. Lines inside a triple-quoted string are
found once per file (a cheap scan) so docstrings still look like strings;
in wrappers the triple-quoted strings hold kernel source, which is lexed as
code.
"""
from __future__ import annotations

import re

from pygments.lexers import CppLexer, PythonLexer
from pygments.token import String
from rich.segment import Segment
from rich.style import Style
from rich.syntax import PygmentsSyntaxTheme

THEME = PygmentsSyntaxTheme("monokai")
_LEXERS = {"python": PythonLexer(stripnl=False, ensurenl=False), "cpp": CppLexer(stripnl=False, ensurenl=False)}
_QUOTES = re.compile(r"'''|\"\"\"")


def string_lines(lines: list[str]) -> list[bool]:
    """For each line, whether it starts inside a triple-quoted string."""
    inside: str | None = None
    starts_inside = []
    for line in lines:
        starts_inside.append(inside is not None)
        if "'''" not in line and '"""' not in line:
            continue
        for match in _QUOTES.finditer(line):
            quote = match.group()
            if inside is None:
                inside = quote
            elif inside == quote:
                inside = None
    return starts_inside


def language_of(path: str | None) -> str:
    """A stored file's language by its name: `.cpp` (a C++ wrapper or kernel) is C++."""
    return "cpp" if path is not None and path.endswith(".cpp") else "python"


def highlight(line: str, in_string: bool = False, language: str = "python") -> list[Segment]:
    """The line as styled segments (tabs expanded)."""
    line = line.expandtabs(4)
    if in_string:
        return [Segment(line, _style(String))]
    segments = []
    for token_type, value in _LEXERS[language].get_tokens(line):
        if value:
            segments.append(Segment(value, _style(token_type)))
    return segments


_styles: dict = {}


def _style(token_type) -> Style:
    style = _styles.get(token_type)
    if style is None:
        style = _styles[token_type] = Style(color=THEME.get_style_for_token(token_type).color)
    return style
