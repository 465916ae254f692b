"""Render `tmux capture-pane -e -p` output (text + SGR colors) as a PNG, for the README.

    tmux capture-pane -e -p -t demo > screen.ansi
    python ansi2png.py screen.ansi screenshot.png [--font DejaVuSansMono.ttf] [--size 15]

Only what capture-pane emits is handled: SGR attributes (bold, italic, underline, reverse,
16/256/24-bit colors). Needs Pillow.
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FG, BG = (224, 226, 234), (20, 22, 27)  # Neovim's default dark colorscheme
BASE16 = [
    (0, 0, 0), (205, 49, 49), (13, 188, 121), (229, 229, 16),
    (36, 114, 200), (188, 63, 188), (17, 168, 205), (229, 229, 229),
    (102, 102, 102), (241, 76, 76), (35, 209, 139), (245, 245, 67),
    (59, 142, 234), (214, 112, 214), (41, 184, 219), (255, 255, 255),
]  # fmt: skip
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
#: Box-drawing characters drawn as lines across the whole cell (the font's glyphs leave gaps):
#: which of (left, right, up, down) each one connects.
BOX = {
    "─": "lr", "│": "ud", "╭": "rd", "┌": "rd", "╮": "ld", "┐": "ld",
    "╰": "ru", "└": "ru", "╯": "lu", "┘": "lu", "├": "udr", "┤": "udl",
}  # fmt: skip


@dataclass(frozen=True)
class Style:
    fg: tuple[int, int, int] | None = None
    bg: tuple[int, int, int] | None = None
    bold: bool = False
    italic: bool = False
    underline: bool = False
    reverse: bool = False


def color256(n: int) -> tuple[int, int, int]:
    """The xterm 256-color palette."""
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return steps[n // 36], steps[(n // 6) % 6], steps[n % 6]
    gray = 8 + 10 * (n - 232)
    return gray, gray, gray


def apply_sgr(style: Style, params: str) -> Style:
    """The style after one SGR sequence."""
    codes = [int(p) if p else 0 for p in re.split(r"[;:]", params)] if params else [0]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            style = Style()
        elif c in (1, 22):
            style = replace(style, bold=c == 1)
        elif c in (3, 23):
            style = replace(style, italic=c == 3)
        elif c in (4, 24):
            style = replace(style, underline=c == 4)
        elif c in (7, 27):
            style = replace(style, reverse=c == 7)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            style = replace(style, fg=BASE16[c - 30 if c < 90 else c - 82])
        elif 40 <= c <= 47 or 100 <= c <= 107:
            style = replace(style, bg=BASE16[c - 40 if c < 100 else c - 92])
        elif c == 39:
            style = replace(style, fg=None)
        elif c == 49:
            style = replace(style, bg=None)
        elif c in (38, 48) and i + 1 < len(codes):
            if codes[i + 1] == 5 and i + 2 < len(codes):
                rgb, i = color256(codes[i + 2]), i + 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                rgb, i = (codes[i + 2], codes[i + 3], codes[i + 4]), i + 4
            else:
                break
            style = replace(style, **{"fg" if c == 38 else "bg": rgb})
        i += 1
    return style


def parse(text: str) -> list[list[tuple[str, Style]]]:
    """Rows of (character, style) cells; wide characters take two cells."""
    rows = []
    style = Style()
    for line in text.rstrip("\n").split("\n"):
        row: list[tuple[str, Style]] = []
        pos = 0
        for match in SGR.finditer(line + "\x1b[m"):
            for ch in line[pos : match.start()]:
                row.append((ch, style))
                if unicodedata.east_asian_width(ch) in ("W", "F"):
                    row.append(("", style))
            style = apply_sgr(style, match.group(1))
            pos = match.end()
        rows.append(row)
    return rows


def render(rows: list[list[tuple[str, Style]]], font_path: Path, size: int) -> Image.Image:
    """Draw the cells with a monospace font."""
    fonts = {
        (False, False): ImageFont.truetype(str(font_path / "DejaVuSansMono.ttf"), size),
        (True, False): ImageFont.truetype(str(font_path / "DejaVuSansMono-Bold.ttf"), size),
        (False, True): ImageFont.truetype(str(font_path / "DejaVuSansMono-Oblique.ttf"), size),
        (True, True): ImageFont.truetype(str(font_path / "DejaVuSansMono-BoldOblique.ttf"), size),
    }
    regular = fonts[(False, False)]
    cell_w = round(regular.getlength("M"))
    ascent, descent = regular.getmetrics()
    cell_h = ascent + descent + 2
    cols = max(len(r) for r in rows)
    pad = 12
    img = Image.new("RGB", (cols * cell_w + 2 * pad, len(rows) * cell_h + 2 * pad), BG)
    draw = ImageDraw.Draw(img)
    for y, row in enumerate(rows):
        for x, (ch, st) in enumerate(row):
            fg, bg = st.fg or FG, st.bg or BG
            if st.reverse:
                fg, bg = bg, fg
            left, top = pad + x * cell_w, pad + y * cell_h
            if bg != BG:
                draw.rectangle([left, top, left + cell_w - 1, top + cell_h - 1], fill=bg)
            if ch in BOX:
                cx, cy = left + cell_w // 2, top + cell_h // 2
                ends = {"l": (left, cy), "r": (left + cell_w, cy)}
                ends |= {"u": (cx, top), "d": (cx, top + cell_h)}
                for side in BOX[ch]:
                    draw.line([(cx, cy), ends[side]], fill=fg, width=1)
            elif ch.strip():
                draw.text((left, top + 1), ch, font=fonts[(st.bold, st.italic)], fill=fg)
            if st.underline:
                draw.line([left, top + cell_h - 2, left + cell_w - 1, top + cell_h - 2], fill=fg)
    return img


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ansi", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--fonts", type=Path, default=FONT_DIR, help="folder of DejaVuSansMono*")
    parser.add_argument("--size", type=int, default=15)
    args = parser.parse_args()
    rows = parse(args.ansi.read_text(encoding="utf-8"))
    render(rows, args.fonts, args.size).save(args.png, optimize=True)


if __name__ == "__main__":
    main()
